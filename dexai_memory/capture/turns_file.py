"""Reading a conversation from a JSONL file, one turn per line (``dexai memory ingest``).

The turns it returns enter memory like any other: through
:func:`dexai_memory.capture.admit.admit` (redaction, then the gate) in
:meth:`dexai_memory.pipeline.Pipeline.ingest`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from ..errors import InvalidMemory
from ..models import Turn, as_utc


def read_turns_jsonl(path: str | Path, *, user_id: str, session_id: str | None = None,
                     project: str | None = None) -> list[Turn]:
    """Turns of a JSONL file, one ``{"id", "role", "speaker"?, "content", "timestamp"?}`` per line.

    Extra keys (``caption`` ...) go to the turn's metadata. Blank lines are
    skipped; anything else that is not a valid turn raises
    :class:`InvalidMemory` naming the file and line number.
    """
    from ..text.dates import parse_locomo_timestamp

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidMemory(f"cannot read {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise InvalidMemory(f"{path} is not UTF-8 text: {exc}") from exc
    turns: list[Turn] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path.name} line {number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidMemory(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(data, Mapping):
            raise InvalidMemory(f"{where}: expected a JSON object, got {type(data).__name__}")
        missing = [k for k in ("id", "role", "content") if data.get(k) in (None, "")]
        if missing:
            raise InvalidMemory(f"{where}: missing {', '.join(repr(k) for k in missing)}")
        if not isinstance(data["content"], str):
            raise InvalidMemory(f"{where}: 'content' must be a string")
        turn_id = str(data["id"])
        if turn_id in seen:
            raise InvalidMemory(f"{where}: duplicate turn id {turn_id!r}")
        seen.add(turn_id)
        stamp = data.get("timestamp")
        try:
            when = as_utc(stamp) if stamp not in (None, "") else None
        except InvalidMemory:
            when = parse_locomo_timestamp(str(stamp))
            if when is None:
                raise InvalidMemory(f"{where}: unreadable timestamp {stamp!r}") from None
        speaker = data.get("speaker")
        extra = {k: v for k, v in data.items() if k not in ("id", "role", "speaker", "content", "timestamp")}
        turns.append(Turn(id=turn_id, user_id=user_id, content=data["content"], role=str(data["role"]),
                          speaker=str(speaker) if speaker else None, timestamp=when, session_id=session_id,
                          project=project, metadata=extra))
    return turns
