"""LoCoMo conversations as dexai-memory turns (shared by the ingest and retrieval benchmarks).

:func:`load_conversations` reads the LoCoMo JSON (``/work/shared/bench/locomo``,
see its README); :func:`conversation_turns` turns one conversation into
:class:`~dexai_memory.models.Turn` objects: id = the turn's ``dia_id``
("D1:3"), speaker, content = text (plus `` [image: <blip_caption>]`` when the
turn shared an image), timestamp = its session's ``date_time``, session id =
``<sample_id>:session_<n>``. :func:`to_jsonl` writes turns in the format of
``dexai memory ingest``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import LOCOMO_PATH
from dexai_memory.models import Turn
from dexai_memory.text.dates import parse_locomo_timestamp

_SESSION_KEY = re.compile(r"^session_(\d+)$")


@dataclass
class Session:
    """One session of a conversation: its number, date and raw turns."""

    number: int
    date_time: str
    turns: list[dict[str, Any]]


@dataclass
class Conversation:
    """One LoCoMo sample: two speakers, dated sessions, and the QA set."""

    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: list[Session]
    qa: list[dict[str, Any]] = field(default_factory=list)

    @property
    def turn_count(self) -> int:
        return sum(len(s.turns) for s in self.sessions)


def load_conversations(path: str | Path = LOCOMO_PATH) -> list[Conversation]:
    """Every conversation of a LoCoMo JSON file, sessions in order (empty sessions skipped)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out = []
    for sample in data:
        conv = sample["conversation"]
        numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY.match(k)))
        sessions = [Session(n, str(conv.get(f"session_{n}_date_time") or ""), list(conv[f"session_{n}"]))
                    for n in numbers if conv.get(f"session_{n}")]
        out.append(Conversation(str(sample["sample_id"]), str(conv.get("speaker_a") or ""),
                                str(conv.get("speaker_b") or ""), sessions, list(sample.get("qa") or [])))
    return out


def conversation_turns(conv: Conversation, user_id: str | None = None) -> list[Turn]:
    """The conversation's turns in order (see the module docstring). ``user_id`` defaults to the sample id."""
    user = user_id or conv.sample_id
    turns: list[Turn] = []
    for session in conv.sessions:
        when = parse_locomo_timestamp(session.date_time)
        for raw in session.turns:
            text = str(raw.get("text") or "").strip()
            caption = str(raw.get("blip_caption") or "").strip()
            if caption:
                text = f"{text} [image: {caption}]".strip()
            if not text:
                continue
            meta = {k: raw[k] for k in ("img_url", "query") if raw.get(k)}
            role = "user" if raw.get("speaker") == conv.speaker_a else "assistant"
            turns.append(Turn(id=str(raw["dia_id"]), user_id=user, content=text, role=role,
                              speaker=raw.get("speaker"), timestamp=when,
                              session_id=f"{conv.sample_id}:session_{session.number}", metadata=meta))
    return turns


def to_jsonl(turns: Iterable[Turn], path: str | Path) -> Path:
    """Write turns as ``dexai memory ingest`` JSONL (one object a line); returns the path."""
    path = Path(path)
    with path.open("w", encoding="utf-8") as fh:
        for t in turns:
            row: dict[str, Any] = {"id": t.id, "role": t.role, "speaker": t.speaker, "content": t.content,
                                   "timestamp": t.timestamp.isoformat() if t.timestamp else None}
            row.update(dict(t.metadata))
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def all_turns(conversations: Sequence[Conversation]) -> list[Turn]:
    """Every turn of every conversation, each conversation its own user."""
    return [t for c in conversations for t in conversation_turns(c)]
