"""Learning from the Claude Code sessions a user already had (``dexai memory learn-history``).

Two steps, so nothing is read into memory before the user agrees:

1. :func:`plan` finds the transcripts (:mod:`dexai_memory.capture.history_log`), reads each
   one not learned before (:func:`~.transcripts.read_session`), keeps those of ``project`` and
   active ``since`` (and none of a project in ``hooks.disabled_projects``: the hooks would not
   have captured it; nor one the hooks did capture, live), and estimates the cost: the time, and the model tokens when a model
   extracts (``extraction.daily_token_budget`` caps them; past it the offline rules answer).
2. :func:`learn` replays the planned sessions, oldest first (so the newest statement
   supersedes what an older one said), through the warm path's bulk form,
   :meth:`~dexai_memory.pipeline.Pipeline.ingest`: redaction and ``<private>``, the evidence
   rule and the live gate (``extraction.gate_threshold``), the configured extractor,
   supersession (dated at the turn: ``valid_from`` is when it was said), the store. Sessions go
   in batches of about :data:`BATCH_TURNS` turns, each session's episodes (the files, commands
   and fixes of each stretch, as PreCompact and SessionEnd record them live) stored after its
   batch; after each batch the :class:`HistoryLog`
   records them, so an interrupted run resumes where it stopped (a batch cut short is replayed,
   and adds nothing twice: every id is deterministic) and a second run skips them.

It writes to the store from its own process, as ``dexai memory ingest`` does: beside a running
daemon that is safe (SQLite's locks; the daemon embeds the memories left without vectors).
One run at a time per data directory (``<home>/history/learn.lock``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..capture.history_log import (
    Fingerprint,
    HistoryLog,
    claude_config_dir,
    projects_dir,
    transcript_files,
)
from ..daemon.session_state import memory_disabled
from ..errors import DexaiMemoryError, InvalidMemory, MemoryNotFound
from ..pipeline import PipelineReport
from ..text.tokens import count_tokens
from .transcripts import HistorySession, read_session

if TYPE_CHECKING:
    from ..config import Settings
    from ..models import Memory
    from ..providers.base import MemoryProvider

logger = logging.getLogger(__name__)

#: Turns replayed per batch (one :meth:`Pipeline.ingest` call, then the sessions are recorded).
BATCH_TURNS = 1000
#: Offline: seconds per prompt replayed (extraction, supersession, storing) and per MB of transcript
#: read (``benchmarks/history_bench.py``: 17,044 prompts, 143 MB in 302 s on two busy cores).
OFFLINE_SECONDS_PER_PROMPT = 0.02
READ_SECONDS_PER_MB = 0.12
#: With a model: seconds per extraction call (one batch of ``extraction.batch_size`` prompts).
MODEL_SECONDS_PER_CALL = 4.0
#: Tokens of one extraction call besides its turns (instructions, tool schema, answer).
CALL_OVERHEAD_TOKENS = 1800


class LearnBusy(DexaiMemoryError):
    """Another ``learn-history`` run holds this data directory."""


@dataclass
class LearnPlan:
    """What :func:`learn` would read, and what it would cost (see the module docstring)."""

    projects_dir: Path
    #: Sessions to learn, oldest first.
    todo: list[HistorySession] = field(default_factory=list)
    #: Transcripts already learned and unchanged since (skipped).
    learned: int = 0
    #: Sessions left out by ``project``, ``since`` or ``hooks.disabled_projects``, or with no prompt.
    excluded: int = 0
    #: Sessions the live hooks captured (their memories are in the store already): left out.
    live: int = 0
    #: ``"<file>: why"`` for each transcript that could not be read.
    unreadable: list[str] = field(default_factory=list)
    #: Where extraction goes: ``offline``, ``api_key`` or ``claude_code``.
    backend: str = "offline"
    est_seconds: float = 0.0
    #: Model tokens (0 offline).
    est_tokens: int = 0
    #: Tokens left in today's budget (None: no limit, or offline).
    budget_left: int | None = None

    @property
    def prompts(self) -> int:
        return sum(len(s.prompts) for s in self.todo)

    @property
    def turns(self) -> int:
        """Turns replayed: the prompts and the replies before them (context only)."""
        return sum(s.turn_count for s in self.todo)

    @property
    def size(self) -> int:
        return sum(s.fingerprint.size for s in self.todo)

    def by_project(self) -> list[dict[str, Any]]:
        """One row per project: sessions, prompts, bytes, first and last activity."""
        rows: dict[str, dict[str, Any]] = {}
        for s in self.todo:
            key = s.project or s.slug
            row = rows.setdefault(key, {"project": key, "sessions": 0, "prompts": 0, "bytes": 0,
                                        "first": None, "last": None})
            row["sessions"] += 1
            row["prompts"] += len(s.prompts)
            row["bytes"] += s.fingerprint.size
            for name, when in (("first", s.first_at), ("last", s.last_at)):
                if when is not None:
                    stamp = when.date().isoformat()
                    row[name] = stamp if row[name] is None else (min if name == "first" else max)(row[name], stamp)
        return sorted(rows.values(), key=lambda r: (-r["sessions"], r["project"]))

    def to_dict(self) -> dict[str, Any]:
        firsts = [s.first_at for s in self.todo if s.first_at]
        lasts = [s.last_at for s in self.todo if s.last_at]
        return {"projects_dir": str(self.projects_dir), "sessions": len(self.todo), "prompts": self.prompts,
                "bytes": self.size, "first": min(firsts).isoformat() if firsts else None,
                "last": max(lasts).isoformat() if lasts else None, "already_learned": self.learned,
                "captured_live": self.live, "excluded": self.excluded, "unreadable": self.unreadable, "extractor": self.backend,
                "estimated_seconds": round(self.est_seconds, 3), "estimated_tokens": self.est_tokens,
                "budget_left_today": self.budget_left, "projects": self.by_project()}


def _matches(session: HistorySession, project: str) -> bool:
    """Whether ``project`` (a directory, its name, or Claude Code's folder slug) names the session's."""
    wanted = project.rstrip("/")
    expanded = os.path.abspath(os.path.expanduser(wanted)) if wanted.startswith(("/", "~", ".")) else wanted
    names = {session.slug}
    for path in (session.project, session.cwd):
        if path:
            names |= {path.rstrip("/"), os.path.basename(path.rstrip("/"))}
    if expanded in names or wanted in names:
        return True
    return bool(session.cwd and expanded.startswith("/") and session.cwd.startswith(expanded.rstrip("/") + "/"))


def _estimate(plan: LearnPlan, settings: Settings) -> None:
    mb = plan.size / 1e6
    if plan.backend == "offline":
        plan.est_seconds = plan.prompts * OFFLINE_SECONDS_PER_PROMPT + mb * READ_SECONDS_PER_MB
        return
    calls = sum(math.ceil(len(s.prompts) / settings.extraction.batch_size) for s in plan.todo)
    said = sum(count_tokens(p.text) + count_tokens(p.reply[-500:]) for s in plan.todo for p in s.prompts)
    plan.est_tokens = said + calls * CALL_OVERHEAD_TOKENS
    plan.est_seconds = calls * MODEL_SECONDS_PER_CALL + mb * READ_SECONDS_PER_MB


def plan(settings: Settings, user_id: str, *, config_dir: Path | None = None, project: str | None = None,
         since: datetime | None = None, env: Mapping[str, str] | None = None,
         backend: str | None = None, live: Collection[str] = ()) -> LearnPlan:
    """What :func:`learn` would do for ``user_id`` (see the module docstring). ``config_dir``:
    Claude Code's (default ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``); ``env``: the variables the
    project is derived with (``$DEXAI_MEMORY_PROJECT``; default this process's); ``backend``:
    the extraction backend (default: the configured one, as the daemon would choose it); ``live``:
    the sessions the hooks captured (:func:`~dexai_memory.lifecycle.learned.live_sessions`), left out."""
    root = projects_dir(config_dir or claude_config_dir())
    out = LearnPlan(root)
    logged = HistoryLog(settings.home, user_id).sessions()
    learned_files = {str(e.get("file")): e for e in logged.values()}
    for path in transcript_files(root):
        try:
            if Fingerprint.of(path).matches(learned_files.get(str(path))):
                out.learned += 1
                continue
            session = read_session(path, env)
        except OSError as exc:
            out.unreadable.append(f"{path}: {exc.strerror or exc}")
            continue
        entry = logged.get(session.session_id)
        if entry and session.fingerprint.matches(entry):
            out.learned += 1
            continue
        if session.session_id in live and entry is None:
            out.live += 1
            continue
        last = session.last_at or datetime.fromtimestamp(session.fingerprint.mtime_ns / 1e9).astimezone()
        if (not session.prompts or (project and not _matches(session, project)) or (since and last < since)
                or (session.cwd and memory_disabled(settings, {"cwd": session.cwd}, {}) == "project disabled")):
            out.excluded += 1
            continue
        out.todo.append(session)
    out.todo.sort(key=lambda s: (s.first_at.timestamp() if s.first_at else 0.0, str(s.path)))
    if backend is None:
        from ..extraction.factory import choose_backend

        backend = choose_backend(settings).name
    out.backend = backend
    if backend != "offline":
        from ..extraction.factory import budget

        out.budget_left = budget(settings).left()
    _estimate(out, settings)
    return out


@contextlib.contextmanager
def learn_lock(home: Path) -> Iterator[None]:
    """Hold ``<home>/history/learn.lock``; raises :class:`LearnBusy` when another run holds it."""
    import fcntl

    path = home / "history" / "learn.lock"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(path, "a") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise LearnBusy(f"another 'dexai memory learn-history' is running on {home}") from None
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@dataclass
class LearnRun:
    """What :func:`learn` did."""

    report: PipelineReport = field(default_factory=PipelineReport)
    sessions: int = 0
    prompts: int = 0
    seconds: float = 0.0
    #: Episodes stored (one per stretch between compactions; those stored before apart).
    episodes: int = 0
    #: Session-end snapshots stored (one per session, as SessionEnd writes it live).
    snapshots: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"sessions": self.sessions, "prompts": self.prompts, "seconds": round(self.seconds, 2),
                "episodes": self.episodes, "snapshots": self.snapshots, **self.report.to_dict()}


def batches(sessions: Sequence[HistorySession], max_turns: int = BATCH_TURNS) -> Iterator[list[HistorySession]]:
    """Consecutive groups of sessions of about ``max_turns`` prompts (a session is never split)."""
    group: list[HistorySession] = []
    turns = 0
    for s in sessions:
        group.append(s)
        turns += len(s.prompts)
        if turns >= max_turns:
            yield group
            group, turns = [], 0
    if group:
        yield group


async def store_episodes(provider: MemoryProvider, user_id: str, sessions: Sequence[HistorySession], *,
                         vectors: str = "later") -> int:
    """Store the sessions' episodes (EPISODE memories, dated at the stretch's end, marked with their
    session); one stored before (by the live hooks, or a run cut short) is kept. Returns how many
    were added."""
    from ..lifecycle.learned import HISTORY_SESSION

    added = 0
    async with provider.deferred_vectors() if vectors == "later" else contextlib.nullcontext():
        for s in sessions:
            for episode in s.episodes:
                memory = episode.memory(user_id, s.project)
                memory = memory.replace(metadata={**memory.metadata, HISTORY_SESSION: s.session_id})
                added += await add_once(provider, memory, when=episode.ended_at)
    return added


async def add_once(provider: MemoryProvider, memory: Memory, *, when: datetime | str | None) -> bool:
    """Add ``memory`` dated ``when`` (its creation and validity; left as it is when None or
    unreadable) unless a memory of its id is stored (by the live hooks, or a run cut short).
    Returns whether it was added."""
    from ..models import as_utc

    with contextlib.suppress(InvalidMemory):
        at = as_utc(when)
        if at is not None:
            memory = memory.replace(created_at=at, valid_from=at)
    try:
        await provider.get(memory.id, user_id=memory.user_id, include_deleted=True)
        return False
    except MemoryNotFound:
        await provider.add(memory)
        return True


async def store_snapshots(provider: MemoryProvider, user_id: str, sessions: Sequence[HistorySession]) -> int:
    """Store each session's state at its end (task, last action: the SNAPSHOT SessionEnd writes live,
    dated at the session's last entry), so the newest one is the next session's "last session
    state"; one stored before (by the live hooks, or a run cut short) is kept. Returns how many were added."""
    from ..daemon.actions import snapshot_id
    from ..daemon.session_state import read_transcript, redact_for_state, snapshot_text
    from ..lifecycle.learned import HISTORY_SESSION, HISTORY_SOURCE
    from ..models import Memory, MemoryType

    added = 0
    for s in sessions:
        text = snapshot_text(read_transcript(str(s.path)))
        if not text:
            continue
        memory = Memory(id=snapshot_id(s.session_id), content=redact_for_state(f"Session ended (history) | {text}"),
                        user_id=user_id, type=MemoryType.SNAPSHOT, session_id=s.session_id, project=s.project,
                        importance=6, metadata={"source": HISTORY_SOURCE, HISTORY_SESSION: s.session_id})
        added += await add_once(provider, memory, when=s.last_at)
    return added


async def learn(settings: Settings, user_id: str, sessions: Sequence[HistorySession], *,
                progress: Callable[[int], None] | None = None, limit: int | None = None,
                vectors: str = "later", batch_turns: int = BATCH_TURNS) -> LearnRun:
    """Replay ``sessions`` (a :class:`LearnPlan`'s ``todo``) for ``user_id``; at most ``limit``
    of them (None: all). ``progress(n)`` is called as turns are done (:attr:`LearnPlan.turns`:
    the prompts and the replies read as their context). Vectors: see
    :meth:`~dexai_memory.pipeline.Pipeline.ingest`. Raises :class:`LearnBusy` when another run
    holds the data directory."""
    from ..daemon.lease import write_lease
    from ..datadir import ensure_home
    from ..extraction.factory import make_classifier
    from ..pipeline import Pipeline
    from ..providers import make_provider

    todo = list(sessions)[:limit] if limit is not None else list(sessions)
    run = LearnRun()
    start = time.perf_counter()
    ensure_home(settings.home)
    log = HistoryLog(settings.home, user_id)
    with learn_lock(settings.home):
        async with make_provider(settings) as provider:
            pipeline = Pipeline(provider, settings, classifier=make_classifier(settings))
            for group in batches(todo, batch_turns):
                turns = [t for s in group for t in s.turns(user_id)]
                async with write_lease(settings):  # a running daemon's write lock, for this batch
                    report = await pipeline.ingest(turns, user_id=user_id, vectors=vectors, archive_evidence=False,
                                                   archive_turns=False, threshold=settings.extraction.gate_threshold,
                                                   progress=progress)
                    if settings.hooks.episodes:
                        run.episodes += await store_episodes(provider, user_id, group, vectors=vectors)
                    run.snapshots += await store_snapshots(provider, user_id, group)
                run.report.merge(report)
                log.record({s.session_id: s.entry() for s in group})
                run.sessions += len(group)
                run.prompts += sum(len(s.prompts) for s in group)
                logger.info("learned %d past sessions: %s", len(group), report.to_dict())
    run.seconds = time.perf_counter() - start
    return run
