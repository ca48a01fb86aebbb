"""Catching up from the transcript: the prompts a fault kept from the queue.

Claude Code's transcript (the hook payload's ``transcript_path``) is the source of truth of
what was said. A prompt normally reaches the extraction queue in two steps: UserPromptSubmit
records it in the session's state file, Stop queues it. While the data directory cannot be
written (a full disk, a read-only mount, a broken ``hooks/`` directory) either step can fail,
and the hook still answers (a hook never fails the agent). So the next Stop (and SessionEnd)
reads the transcript's user prompts and queues those that are neither pending, nor handled
before (the session state's ``handled`` keys), nor already in ``queue.db``.

Turn ids are the ones the normal path gives: ``<session>:user:<promptId>`` when the transcript
line carries Claude Code's ``promptId``, else the hash of the redacted text
(:func:`~dexai_memory.daemon.session_state.turn_id`), and both forms are looked up in the
queue, so a prompt is queued once whichever path got it there. Stdlib only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..capture.episodes import user_text
from .session_state import (
    TRANSCRIPT_TAIL_BYTES,
    redact_for_state,
    safe_id,
    text_of,
    transcript_tail,
    turn_id,
)

#: Longest prompt kept (the session state's cut, so keys of both paths agree).
MAX_PROMPT = 4000


def prompt_key(text: str) -> str:
    """The key of a prompt already redacted and cut (:func:`prompt_text`): its text's hash."""
    return turn_id(None, "p", text).rsplit(":", 1)[1]


def prompt_text(raw: str) -> str:
    """A prompt as the session state keeps it: redacted, cut to :data:`MAX_PROMPT` characters."""
    return str(redact_for_state(raw))[:MAX_PROMPT]


@dataclass(frozen=True, slots=True)
class TranscriptPrompt:
    """A user prompt of the transcript: its text (redacted and cut), Claude Code's ``promptId``
    (None in older transcripts) and whether an assistant message followed it."""

    text: str
    prompt_id: str | None
    answered: bool

    @property
    def key(self) -> str:
        return prompt_key(self.text)

    def turn_ids(self, session_id: str | None) -> list[str]:
        """The ids this prompt may have in the queue (the ``promptId`` form first)."""
        ids = [f"{safe_id(session_id)}:user:{self.prompt_id}"] if self.prompt_id else []
        return [*ids, turn_id(session_id, "user", self.text)]


def transcript_prompts(path: Any, *, max_bytes: int = TRANSCRIPT_TAIL_BYTES) -> list[TranscriptPrompt]:
    """The user prompts at the end of a transcript JSONL (the last ``max_bytes``), oldest first;
    [] when there is no readable transcript. Tool results, meta lines and slash commands are not
    prompts, nor is Claude Code's compaction summary."""
    lines = transcript_tail(path, max_bytes=max_bytes)
    found: list[tuple[str, str | None]] = []
    last_answered = -1  # the last prompt an assistant message followed
    for raw in lines:
        try:
            entry = json.loads(raw) if raw.strip() else None
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant"):
            continue
        if entry["type"] == "assistant":
            if text_of((entry.get("message") or {}).get("content")).strip():
                last_answered = len(found) - 1
            continue
        text = user_text(entry)  # the one reading of a typed prompt (not the compaction summary)
        if not text:
            continue
        pid = entry.get("promptId")
        found.append((text, str(pid) if isinstance(pid, str | int) and str(pid) else None))
    return [TranscriptPrompt(prompt_text(text), pid, i <= last_answered) for i, (text, pid) in enumerate(found)]


def queued_ids(queue_db: Path, user_id: str, ids: Iterable[str]) -> set[str]:
    """Which of ``ids`` are rows of ``queue.db``'s jobs for ``user_id`` (pending, done or dead).
    Raises :class:`~dexai_memory.errors.QueueError` when the file cannot be read."""
    import sqlite3

    from ..capture.queue_file import connect
    from ..errors import QueueError

    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return set()
    conn = connect(queue_db)
    try:
        found: set[str] = set()
        for start in range(0, len(wanted), 500):
            part = wanted[start:start + 500]
            marks = ",".join("?" * len(part))
            rows = conn.execute(f"SELECT turn_id FROM jobs WHERE user_id = ? AND turn_id IN ({marks})",  # noqa: S608
                                (user_id, *part)).fetchall()
            found.update(str(r[0]) for r in rows)
        return found
    except sqlite3.Error as exc:
        raise QueueError(f"cannot read the extraction queue {queue_db}: {exc}") from exc
    finally:
        conn.close()


def missing_prompts(prompts: Sequence[TranscriptPrompt], *, session_id: str | None, user_id: str,
                    queue_db: Path, pending: Sequence[dict[str, Any]], handled: Iterable[str],
                    answered_only: bool) -> list[TranscriptPrompt]:
    """The ``prompts`` no path queued yet: not pending, not ``handled``, not in ``queue.db``
    (``answered_only``: only prompts an assistant message followed, so the prompt of a turn
    still running is left to its own UserPromptSubmit). Oldest first, each once."""
    skip = {prompt_key(str(p.get("prompt") or "")) for p in pending} | set(handled)
    todo: list[TranscriptPrompt] = []
    for prompt in prompts:
        if prompt.key in skip or (answered_only and not prompt.answered):
            continue
        skip.add(prompt.key)
        todo.append(prompt)
    if not todo:
        return []
    known = queued_ids(queue_db, user_id, (tid for p in todo for tid in p.turn_ids(session_id)))
    return [p for p in todo if not known.intersection(p.turn_ids(session_id))]
