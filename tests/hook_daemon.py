"""A real daemon for the hook tests, and the ways a hook event reaches it.

* :func:`running_daemon`: a :class:`~dexai_memory.daemon.core.MemoryDaemon` on a real
  :class:`~dexai_memory.providers.native.NativeProvider` in the test's data directory (no
  schedule); with ``serve_socket`` it answers the hook processes too;
* :func:`event`: a :class:`~dexai_memory.daemon.event.HookEvent` as a front end builds it;
* :func:`launch`: the plugin's launcher (``hooks/dexai-hook``) as Claude Code runs it, in a
  thread so a daemon on the test's event loop can answer it;
* :func:`queued_turns`: what reached ``queue.db`` (every job, whatever its status).
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from dexai_memory.capture.gate import Gate
from dexai_memory.config import Settings
from dexai_memory.daemon.core import MemoryDaemon
from dexai_memory.daemon.event import HookEvent
from dexai_memory.extraction.base import Extractor
from dexai_memory.providers.base import MemoryProvider
from dexai_memory.supersession.rules import OfflineClassifier
from tests.pipeline_fakes import JoinSummarizer

LAUNCHER = Path(__file__).resolve().parents[1] / "hooks" / "dexai-hook"


@asynccontextmanager
async def running_daemon(settings: Settings, provider: MemoryProvider | None = None, *,
                         serve_socket: bool = False, extractor: Extractor | None = None,
                         gate: Gate | None = None) -> AsyncIterator[MemoryDaemon]:
    """A started daemon on ``provider`` (the configured one when None), stopped on the way out."""
    daemon = MemoryDaemon(settings, provider, extractor=extractor, gate=gate, classifier=OfflineClassifier(),
                          summarizer=JoinSummarizer(), serve_socket=serve_socket, schedule=False)
    async with daemon:
        yield daemon


def event(name: str, payload: Mapping[str, Any], *, user: str = "alice", background: bool = False,
          received: float | None = None, **env: str) -> HookEvent:
    """The event a command hook of ``user`` sends (``env``: more of the hook's variables)."""
    extra: dict[str, Any] = {"background": background}
    if received is not None:
        extra["received"] = received
    return HookEvent.make(name, dict(payload), env={"DEXAI_MEMORY_USER": user, **env}, **extra)


async def handle(daemon: MemoryDaemon, name: str, payload: Mapping[str, Any], **kw: Any) -> Any:
    """The daemon's answer to one hook event (what every door gets)."""
    return await daemon.executor.handle(event(name, payload, **kw))


def context_of(answer: Any, hook_event: str) -> str:
    """The text a hook answer adds to the model's context ("" for none)."""
    if not answer:
        return ""
    assert answer["hookSpecificOutput"]["hookEventName"] == hook_event
    return str(answer["hookSpecificOutput"]["additionalContext"])


def launch_sync(name: str, payload: Mapping[str, Any] | str, home: Path, *args: str,
                timeout: float = 90, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the plugin's launcher for one hook event (Python: this interpreter)."""
    child = {**os.environ, "DEXAI_MEMORY_HOME": str(home), "DEXAI_MEMORY_USER": "alice",
             "DEXAI_HOOK_PYTHON": sys.executable, **env}
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run([str(LAUNCHER), name, *args], input=data, capture_output=True, text=True, env=child,
                          timeout=timeout, check=False)


async def launch(name: str, payload: Mapping[str, Any] | str, home: Path, *args: str,
                 **env: str) -> subprocess.CompletedProcess[str]:
    """:func:`launch_sync` in a thread (a daemon on this event loop answers it)."""
    return await asyncio.to_thread(launch_sync, name, payload, home, *args, **env)


def answer_of(proc: subprocess.CompletedProcess[str], hook_event: str) -> str:
    """The context text a hook process answered (it must exit 0 with valid JSON)."""
    assert proc.returncode == 0, proc.stderr
    return context_of(json.loads(proc.stdout), hook_event)


def queued_turns(home: Path) -> dict[str, str]:
    """turn id -> content of every job in ``queue.db`` (pending or done)."""
    if not (home / "queue.db").exists():
        return {}
    with sqlite3.connect(home / "queue.db") as conn:
        rows = conn.execute("SELECT turn_id, payload FROM jobs").fetchall()
    return {tid: json.loads(payload)["turn"]["content"] for tid, payload in rows}


def queued_events(home: Path) -> list[dict[str, Any]]:
    """The hook events waiting in ``queue.db`` for a daemon to replay them, oldest first."""
    from dexai_memory.capture.queue_file import queue_path
    from dexai_memory.capture.queue_file import queued_events as rows

    if not queue_path(home).exists():
        return []
    return [data for _row, data in rows(queue_path(home))]


def write_transcript(path: Path, turns: list[tuple[str, str]]) -> Path:
    """A Claude Code transcript (JSONL) of ``(role, text)`` turns."""
    with path.open("w") as fh:
        for role, text in turns:
            fh.write(json.dumps({"type": role, "message": {"role": role, "content": text}}) + "\n")
    return path


async def hook_block(settings: Settings, provider: MemoryProvider, user: str, *, query: str | None = None,
                     after_compaction: bool = False, session: str = "hook-block") -> str:
    """What the hooks inject, from a daemon on ``provider``: SessionStart's L1 block (startup, or
    compact: after a compaction whose last prompt was ``query``), or with ``query`` and no
    compaction the prompt's auto-recall (UserPromptSubmit)."""
    from dexai_memory.daemon.session_state import write_marker

    async with running_daemon(settings, provider) as daemon:
        if after_compaction:
            write_marker(settings, session, {"recent_prompts": [query] if query else []})
            answer = await handle(daemon, "session-start", {"session_id": session, "source": "compact"}, user=user)
            return context_of(answer, "SessionStart")
        if query is None:
            answer = await handle(daemon, "session-start", {"session_id": session, "source": "startup"}, user=user)
            return context_of(answer, "SessionStart")
        answer = await handle(daemon, "user-prompt-submit", {"session_id": session, "prompt": query}, user=user)
        return context_of(answer, "UserPromptSubmit")
