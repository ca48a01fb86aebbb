"""One past Claude Code session read from its transcript, as the hooks would have read it live.

A transcript (``<config>/projects/<slug>/<session>.jsonl``, see
:mod:`dexai_memory.capture.history_log`) holds every entry of a session: typed prompts, the
assistant's text and tool calls, tool results, Claude Code's own lines. :func:`read_session`
keeps what the live hooks capture:

* the **typed prompts**, read by :func:`~dexai_memory.capture.episodes.user_text` (the one
  reading of a prompt: not tool results, slash commands, system reminders, meta lines, the
  compaction summary, a subagent's lines), cut and redacted as UserPromptSubmit records them
  (:func:`~dexai_memory.daemon.catch_up.prompt_text`), each with its time;
* before each prompt, the assistant's **last reply** (what Stop hands the daemon), kept only as
  the context the prompt is read with ("yes, use pnpm" answers it): evidence, never a memory
  (:mod:`dexai_memory.capture.evidence`);
* its **episodes**: one per stretch between compactions, the files, commands, commits and fixes
  of it (:mod:`dexai_memory.capture.episodes`), as PreCompact and SessionEnd record them;
* the session's **project**: the one the hooks store it under, from its ``cwd``
  (:func:`~dexai_memory.daemon.session_state.project_key`: ``$DEXAI_MEMORY_PROJECT``, else the
  git root, else the directory).

Tool results are read only for the episodes' artifacts. :meth:`HistorySession.turns` gives the turns
:meth:`~dexai_memory.pipeline.Pipeline.ingest` replays, with the live hooks' turn ids (a
prompt the hooks already captured is not stored twice) and the note metadata that marks what
is learned from history (:mod:`dexai_memory.lifecycle.learned`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..capture.episodes import Episode, build_episode, user_text
from ..capture.history_log import Fingerprint
from ..daemon.catch_up import prompt_text
from ..daemon.session_state import PROJECT_ENV, project_key, safe_id, text_of, turn_id
from ..errors import InvalidMemory
from ..lifecycle.learned import HISTORY_SESSION, HISTORY_SOURCE
from ..models import Turn, as_utc
from ..pipeline import NOTE_METADATA

#: Longest assistant reply kept as a prompt's context (characters, its end).
MAX_REPLY = 2000


@dataclass(frozen=True, slots=True)
class HistoryPrompt:
    """A typed prompt of a past session: its text (redacted, cut), Claude Code's ``promptId``,
    its time, and the assistant's reply before it (context only; "" for the first)."""

    text: str
    prompt_id: str | None
    at: datetime | None
    reply: str = ""


@dataclass(frozen=True)
class HistorySession:
    """One transcript file, read (see the module docstring)."""

    path: Path
    session_id: str
    #: The folder Claude Code keeps the project's sessions in (``-home-dana-shop``).
    slug: str
    cwd: str | None
    project: str | None
    fingerprint: Fingerprint
    prompts: tuple[HistoryPrompt, ...] = ()
    first_at: datetime | None = None
    last_at: datetime | None = None
    #: Lines of the file (entries of every kind).
    lines: int = 0
    #: Prompts that had no time of their own (dated at the previous entry with one).
    undated: int = field(default=0, compare=False)
    #: One per stretch between compactions, as PreCompact and SessionEnd record them live
    #: (:func:`~dexai_memory.capture.episodes.build_episode`: the same ids).
    episodes: tuple[Episode, ...] = field(default=(), compare=False)

    @property
    def turn_count(self) -> int:
        """How many turns :meth:`turns` gives (at most)."""
        return len(self.prompts) + sum(1 for p in self.prompts if p.reply.strip())

    def turns(self, user_id: str) -> list[Turn]:
        """The turns to replay, oldest first: each prompt after its context (the reply before it)."""
        mark = {"source": HISTORY_SOURCE, HISTORY_SESSION: self.session_id}
        out: list[Turn] = []
        seen: set[str] = set()
        for p in self.prompts:
            tid = f"{safe_id(self.session_id)}:user:{p.prompt_id}" if p.prompt_id else \
                turn_id(self.session_id, "user", p.text)
            if tid in seen:  # the same prompt again ("yes", "continue"): one turn, as the live queue keeps it
                continue
            seen.add(tid)
            if p.reply.strip():
                out.append(Turn(id=turn_id(self.session_id, "assistant", p.reply), user_id=user_id,
                                content=p.reply, role="assistant", timestamp=p.at, session_id=self.session_id,
                                project=self.project, metadata={"source": "claude-code:assistant"}))
            out.append(Turn(id=tid, user_id=user_id, content=p.text, role="user", timestamp=p.at,
                            session_id=self.session_id, project=self.project,
                            metadata={"source": "claude-code:user", NOTE_METADATA: mark}))
        return out

    def entry(self) -> dict[str, Any]:
        """The session as :class:`~dexai_memory.capture.history_log.HistoryLog` records it."""
        return {"file": str(self.path), "slug": self.slug, "cwd": self.cwd, "project": self.project,
                "prompts": len(self.prompts), "first_at": _iso(self.first_at), "last_at": _iso(self.last_at),
                "size": self.fingerprint.size, "mtime_ns": self.fingerprint.mtime_ns,
                "last_line": self.fingerprint.last_line}


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _when(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return as_utc(value)
    except InvalidMemory:
        return None


def _reply(entry: Mapping[str, Any]) -> str:
    text = text_of((entry.get("message") or {}).get("content")).strip()
    return text[-MAX_REPLY:]


def read_session(path: Path, env: Mapping[str, str] | None = None) -> HistorySession:
    """Read the transcript at ``path`` (see the module docstring); an unreadable line is skipped.
    Raises OSError when the file cannot be read."""
    fingerprint = Fingerprint.of(path)
    session_id: str | None = None
    cwd: str | None = None
    first: datetime | None = None
    last: datetime | None = None
    prompts: list[HistoryPrompt] = []
    reply = ""
    lines = undated = 0
    stretch: list[dict[str, Any]] = []  # the entries since the last compaction: one episode
    ended: list[list[dict[str, Any]]] = []
    with path.open("rb") as fh:
        for raw in fh:
            if not raw.strip():
                continue
            lines += 1
            if b'"compact_boundary"' in raw:  # as the live PreCompact cuts it (capture.episodes.stretch_entries)
                ended.append(stretch)
                stretch = []
                continue
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(entry, dict):
                continue
            stretch.append(entry)
            when = _when(entry.get("timestamp"))
            if when is not None:
                first = first or when
                last = when
            if entry.get("isSidechain"):  # a subagent's conversation, not the user's
                continue
            if session_id is None and isinstance(entry.get("sessionId"), str) and entry["sessionId"]:
                session_id = entry["sessionId"]
            if cwd is None and isinstance(entry.get("cwd"), str) and entry["cwd"]:
                cwd = entry["cwd"]
            kind = entry.get("type")
            if kind == "assistant":
                text = _reply(entry)
                if text:
                    reply = text
                continue
            if kind != "user":
                continue
            text = user_text(entry)
            if not text:
                continue
            clean = prompt_text(text)
            if not clean.strip():
                continue
            pid = entry.get("promptId")
            undated += when is None
            prompts.append(HistoryPrompt(clean, str(pid) if isinstance(pid, str | int) and str(pid) else None,
                                         when or last, reply))
            reply = ""
    sid = session_id or path.stem
    episodes = tuple(e for e in (build_episode(part, sid) for part in [*ended, stretch] if part) if e is not None)
    return HistorySession(path=path, session_id=sid, slug=path.parent.name, cwd=cwd, project=_project(cwd, env),
                          fingerprint=fingerprint, prompts=tuple(prompts), first_at=first, last_at=last,
                          lines=lines, undated=undated, episodes=episodes)


def _project(cwd: str | None, env: Mapping[str, str] | None) -> str | None:
    """The project the hooks would store a session of ``cwd`` under; a directory of another system
    (``C:\\Users\\...`` read on Linux) is kept as written, not made relative to this one."""
    if not cwd:
        return None
    if os.path.isabs(cwd):
        return project_key({"cwd": cwd}, env)
    return (os.environ if env is None else env).get(PROJECT_ENV) or cwd
