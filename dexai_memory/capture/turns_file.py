"""Reading a conversation from a JSONL file, one turn per line (``dexai memory ingest``).

A line may carry its session (``session_id``, and ``session_date``: the date of a turn without
its own ``timestamp``), so one file holds a whole history of sessions; a line without them is
of the session the caller names. A turn with empty content is skipped with a warning naming
its line (:attr:`TurnsFile.skipped`), not a reason to refuse the file.

The turns it returns enter memory like any other: through
:func:`dexai_memory.capture.admit.admit` (redaction, then the gate) in
:meth:`dexai_memory.pipeline.Pipeline.ingest`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..errors import InvalidMemory
from ..models import Turn, as_utc

logger = logging.getLogger(__name__)

#: The keys of a line the turn is made of; any other key goes to the turn's metadata.
TURN_KEYS = ("id", "role", "speaker", "content", "timestamp", "session_id", "session_date")


@dataclass(frozen=True)
class TurnsFile:
    """What :func:`read_turns_file` read: the turns, and one ``"<file> line N: why"`` per line skipped."""

    turns: list[Turn] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def read_turns_jsonl(path: str | Path, *, user_id: str, session_id: str | None = None,
                     project: str | None = None) -> list[Turn]:
    """The turns of :func:`read_turns_file` (lines skipped are logged there)."""
    return read_turns_file(path, user_id=user_id, session_id=session_id, project=project).turns


def _when(value: object, where: str, what: str) -> datetime | None:
    from ..text.dates import parse_locomo_timestamp

    if value in (None, ""):
        return None
    try:
        return as_utc(value)  # type: ignore[arg-type]
    except InvalidMemory:
        when = parse_locomo_timestamp(str(value))
        if when is None:
            raise InvalidMemory(f"{where}: unreadable {what} {value!r}") from None
        return when


def read_turns_file(path: str | Path, *, user_id: str, session_id: str | None = None,
                    project: str | None = None) -> TurnsFile:
    """Turns of a JSONL file, one ``{"id", "role", "speaker"?, "content", "timestamp"?,
    "session_id"?, "session_date"?}`` per line.

    ``session_id`` of a line is its turn's session (else the ``session_id`` argument);
    ``session_date`` dates a turn that has no ``timestamp``. Extra keys (``caption`` ...) go
    to the turn's metadata. Blank lines are skipped; a turn whose content is empty (or only
    white space, or null) is skipped with a warning naming its line (in ``skipped``);
    anything else that is not a valid turn raises :class:`InvalidMemory` naming the file and
    line number.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidMemory(f"cannot read {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise InvalidMemory(f"{path} is not UTF-8 text: {exc}") from exc
    out = TurnsFile()
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
        missing = [k for k in ("id", "role") if data.get(k) in (None, "")] + (
            [] if "content" in data else ["content"])
        if missing:
            raise InvalidMemory(f"{where}: missing {', '.join(repr(k) for k in missing)}")
        if data["content"] is not None and not isinstance(data["content"], str):
            raise InvalidMemory(f"{where}: 'content' must be a string")
        turn_id = str(data["id"])
        if turn_id in seen:
            raise InvalidMemory(f"{where}: duplicate turn id {turn_id!r}")
        seen.add(turn_id)
        when = _when(data.get("timestamp"), where, "timestamp") or _when(data.get("session_date"), where,
                                                                          "session_date")
        if not (data["content"] or "").strip():
            out.skipped.append(f"{where}: turn {turn_id!r} has empty content")
            logger.warning("%s: turn %r has empty content: skipped", where, turn_id)
            continue
        speaker = data.get("speaker")
        session = data.get("session_id")
        extra = {k: v for k, v in data.items() if k not in TURN_KEYS}
        if data.get("session_date") not in (None, ""):
            extra["session_date"] = data["session_date"]
        out.turns.append(Turn(id=turn_id, user_id=user_id, content=str(data["content"]), role=str(data["role"]),
                              speaker=str(speaker) if speaker else None, timestamp=when,
                              session_id=str(session) if session not in (None, "") else session_id,
                              project=project, metadata=extra))
    return out
