"""The command-hook front end: ``dexai hook <event>`` (or ``python -m
dexai_memory.hooks.command <event>``) reads the hook JSON on stdin and writes the
answer on stdout. The events themselves are :mod:`dexai_memory.hooks.events`
(shared with the Agent SDK callbacks); this module is their command backend.

Claude Code starts a new process for every hook event, so this module imports
only the standard library and the stdlib-only parts of the package (config,
models, tokens, recall, the native store's schema and reader, capture, privacy,
the hook state and events, daemon_control): never anthropic, claude_agent_sdk,
numpy, onnxruntime, aiosqlite or sqlean on the fast path.

The command backend (:class:`CommandBackend`)
=============================================
* Asks the running daemon over its Unix socket (hybrid search, warm embedder).
* When no daemon answers, starts one detached
  (:func:`~dexai_memory.daemon_control.ensure_daemon`; ``daemon.autostart``)
  and goes on without it: recall falls back to BM25 straight from the SQLite
  file (FTS5 table ``memories_fts``) through the read-only
  :class:`~dexai_memory.providers.native.reader.SqliteReader`, running the
  daemon's own recall code on it; turns are committed to ``queue.db``.
* PreCompact with no daemon extracts the queued turns in this process
  (:mod:`dexai_memory.hooks.flush`, ``hooks.inline_flush_seconds``) before
  the summary replaces the conversation; SessionEnd hands the queue to a daemon
  it starts, or extracts inline when autostart is off.
* A daemon of another package version is asked to stop and replaced.

A hook never fails the agent: every error is logged to ``<home>/hooks.log``
and the hook still prints valid output and exits 0.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..config import Settings, load_user_settings
from ..version import __version__
from .events import Block, HookBackend, HookContext, handle
from .state import EVENTS, compaction_instructions, project_for, snapshot_memory, user_id_for

if TYPE_CHECKING:
    from ..recall.block import L1Block
    from ..recall.ranking import RecallResult

logger = logging.getLogger("dexai_memory.hooks.command")  # not __name__: "__main__" under -m

# --------------------------------------------------------------------------- daemon


def daemon_request(settings: Settings, payload: dict[str, Any], timeout: float | None = None) -> dict[str, Any] | None:
    """Ask the daemon over its Unix socket; None when it is not running or too slow."""
    if not settings.socket_path.exists():
        return None
    try:
        from ..ipc import ipc_request
    except ImportError:
        return None
    wait = settings.hooks.daemon_timeout_seconds if timeout is None else timeout
    try:
        reply = ipc_request(settings.socket_path, payload, wait)
    except Exception:  # any IPC failure means "no daemon": fall back, never fail the hook
        logger.warning("daemon request %s failed", payload.get("op"), exc_info=True)
        return None
    if isinstance(reply, dict) and reply.get("ok", True) and not reply.get("error"):
        return reply
    if reply is not None:
        logger.warning("daemon answered %s with an error: %s", payload.get("op"), reply.get("error"))
    return None


# --------------------------------------------------------------------------- BM25 fallback


def fallback_recall(settings: Settings, user_id: str, prompt: str, recent: Sequence[str], *,
                    project: str | None = None, exclude_ids: Sequence[str] = ()) -> RecallResult:
    """Auto-recall with BM25 only, straight from the SQLite file (no daemon, no vectors): the
    daemon's :func:`~dexai_memory.recall.ranking.auto_recall` on the read-only
    :class:`~dexai_memory.providers.native.reader.SqliteReader`."""
    from ..providers.native.reader import SqliteReader
    from ..recall.ranking import auto_recall
    from ..recall.source import run_now

    with SqliteReader(settings.db_path) as reader:
        return run_now(auto_recall(reader, user_id, prompt, recent, settings, project=project,
                                   exclude_ids=exclude_ids))


def fallback_l1_block(settings: Settings, user_id: str, *, query: str | None, recent: Sequence[str] = (),
                      project: str | None = None, snapshot: str | None = None,
                      session_id: str | None = None, after_compaction: bool = False) -> L1Block:
    """The full L1 block from the SQLite file (BM25 for the relevant section), or with
    ``after_compaction`` the re-injection block: the daemon's
    :func:`~dexai_memory.recall.reinjection.l1_block` on the read-only
    :class:`~dexai_memory.providers.native.reader.SqliteReader`. ``snapshot`` (text)
    is shown as the session state (the daemon stores it first; the reader cannot)."""
    from ..providers.native.reader import SqliteReader
    from ..recall.reinjection import l1_block
    from ..recall.source import run_now

    session = [snapshot_memory(snapshot, user_id, session_id)] if snapshot else None
    with SqliteReader(settings.db_path) as reader:
        return run_now(l1_block(reader, user_id, settings, query=query, recent=recent, project=project,
                                session_id=session_id, after_compaction=after_compaction, session=session))


# --------------------------------------------------------------------------- enqueue


def queue_turn(settings: Settings, turn: dict[str, Any], context: Sequence[str] = ()) -> bool:
    """Admit ``turn`` (:func:`~dexai_memory.capture.admit.admit`: redact, then gate, as on every
    capture path) and when it passes commit it to ``<home>/queue.db``. True when queued."""
    from ..capture.admit import admit
    from ..capture.gate import Gate
    from ..capture.queue_file import enqueue_turn, queue_path

    admission = admit(turn, context[-3:], Gate(settings.extraction.gate_threshold))
    if admission.turn is None or not admission.passed:
        return False
    clean = admission.turn
    metadata = {**clean.metadata, "gate_score": admission.verdict.score}
    return enqueue_turn(queue_path(settings.home), {**turn, "content": clean.content, "metadata": metadata},
                        context=admission.context)


# --------------------------------------------------------------------------- the command backend


class CommandBackend(HookBackend):
    """The daemon over its socket when one answers; otherwise a daemon is started and the
    work is done from the files (BM25 recall, the queue file, inline extraction)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.daemon_seen = False

    def ask(self, request: dict[str, Any], timeout: float | None = None) -> dict[str, Any] | None:
        """The daemon's answer, or None (then a daemon is started when autostart is on)."""
        reply = daemon_request(self.settings, request, timeout)
        if reply is None:
            from ..daemon_control import ensure_daemon

            ensure_daemon(self.settings, reason=f"no daemon answered {request.get('op')}")
            return None
        self.daemon_seen = True
        if reply.get("version") not in (None, __version__):
            from ..daemon_control import replace_if_stale

            if replace_if_stale(self.settings, reply):
                return None
        return reply

    def l1(self, *, user_id: str, query: str | None, recent: Sequence[str], project: str | None,
           session_id: str | None, snapshot: str | None, after_compaction: bool) -> Block:
        reply = self.ask({"op": "hook.l1_block", "user_id": user_id, "project": project, "query": query,
                          "recent": list(recent), "snapshot": snapshot, "session_id": session_id,
                          "after_compaction": after_compaction})
        if reply is not None and isinstance(reply.get("text"), str):
            return Block(reply["text"], tuple(str(i) for i in reply.get("memory_ids") or []))
        block = fallback_l1_block(self.settings, user_id, query=query, recent=recent, project=project,
                                  snapshot=snapshot, session_id=session_id, after_compaction=after_compaction)
        return Block(block.text, tuple(m.id for m in block.memories))

    def recall(self, *, user_id: str, prompt: str, recent: Sequence[str], project: str | None,
               exclude_ids: Sequence[str]) -> Block:
        reply = self.ask({"op": "hook.recall", "user_id": user_id, "project": project, "prompt": prompt,
                          "recent": list(recent), "exclude_ids": list(exclude_ids)})
        if reply is not None and isinstance(reply.get("text"), str):
            return Block(reply["text"], tuple(str(i) for i in reply.get("memory_ids") or []))
        result = fallback_recall(self.settings, user_id, prompt, recent, project=project, exclude_ids=exclude_ids)
        logger.debug("fallback recall: %s memories, skipped=%s, %.1f ms", len(result.memory_ids),
                     result.skipped_reason, result.latency_ms)
        return Block(result.text, tuple(result.memory_ids))

    def submit(self, turn: dict[str, Any], context: Sequence[str]) -> bool:
        queued = queue_turn(self.settings, turn, context)
        if queued:
            self.ask({"op": "queue.notify"}, timeout=0.02)
        return queued

    def turn_end(self, *, user_id: str, session_id: str | None, reply: str = "",
                 injected: Sequence[str] = ()) -> None:
        self.ask({"op": "hook.turn_end", "user_id": user_id, "session_id": session_id, "reply": reply[:20_000],
                  "injected": list(injected)}, timeout=0.05)

    def pre_compact(self, *, user_id: str, session_id: str | None, snapshot: str | None, trigger: str | None,
                    transcript_backup: str | None, project: str | None) -> dict[str, Any]:
        from ..daemon_control import lock_held, wait_until_answering

        request = {"user_id": user_id, "session_id": session_id, "snapshot": snapshot, "trigger": trigger,
                   "transcript_backup": transcript_backup, "project": project}
        budget = self.settings.hooks.inline_flush_seconds
        wait = max(self.settings.hooks.daemon_timeout_seconds, budget)
        reply = daemon_request(self.settings, {"op": "hook.pre_compact", **request}, wait)
        if reply is not None:
            return {"by": "daemon", **reply}
        t0 = time.monotonic()
        if not lock_held(self.settings):
            from .flush import pre_compact

            out = pre_compact(self.settings, request, budget)
            if not out.get("busy"):
                self.ask({"op": "ping"}, timeout=0.02)  # start a daemon for what comes next
                if out.get("pending"):
                    logger.warning("pre-compact: %s turn(s) did not fit in %.0fs and stay queued",
                                   out["pending"], budget)
                return {"by": "hook", **out}
        # a daemon is starting (it holds the lock or the queue): let it do the work
        left = budget - (time.monotonic() - t0)
        if left > 0.5 and wait_until_answering(self.settings, left):
            reply = daemon_request(self.settings, {"op": "hook.pre_compact", **request},
                                   max(0.5, budget - (time.monotonic() - t0)))
            if reply is not None:
                return {"by": "daemon", **reply}
        logger.warning("pre-compact: neither a daemon nor this hook could extract the queued turns in %.0fs; "
                       "they stay queued", budget)
        return {"by": None, "flushed": False}

    def prefetch(self, *, user_id: str, items: Sequence[Any], project: str | None, local: str | None,
                 exclude_ids: Sequence[str], max_tokens: int, max_items: int) -> Block:
        from .prefetch import items_to_json

        reply = daemon_request(self.settings, {"op": "hook.prefetch", "user_id": user_id, "items": items_to_json(items),
                                               "project": project, "local": local, "exclude_ids": list(exclude_ids),
                                               "max_tokens": max_tokens, "max_items": max_items})
        if reply is not None and isinstance(reply.get("text"), str):
            return Block(reply["text"], tuple(str(i) for i in reply.get("memory_ids") or []))
        from ..providers.native.reader import SqliteReader
        from ..recall.prefetch import prefetch
        from ..recall.source import run_now

        with SqliteReader(self.settings.db_path) as reader:
            result = run_now(prefetch(reader, user_id, items, max_tokens=max_tokens, max_items=max_items,
                                      project=project, local=local, exclude_ids=exclude_ids))
        return Block(result.text, result.memory_ids)

    def episode(self, *, user_id: str, episode: dict[str, Any], project: str | None) -> dict[str, Any]:
        reply = daemon_request(self.settings, {"op": "hook.episode", "user_id": user_id, "episode": episode,
                                               "project": project}, max(self.settings.hooks.daemon_timeout_seconds, 2.0))
        if reply is not None:
            return {"by": "daemon", **reply}
        from .flush import store_episode

        return {"by": "hook", **store_episode(self.settings, episode, user_id=user_id, project=project)}

    def session_end(self, *, user_id: str, session_id: str | None) -> dict[str, Any]:
        from ..daemon_control import autostart_enabled, lock_held

        reply = daemon_request(self.settings, {"op": "hook.session_end", "user_id": user_id,
                                               "session_id": session_id}, 1.0)
        if reply is not None:
            return {"by": "daemon", **reply}
        if autostart_enabled(self.settings):
            self.ask({"op": "ping"}, timeout=0.02)  # the daemon it starts extracts the queue
            return {"by": "daemon (started)"}
        if lock_held(self.settings):
            return {"by": "daemon (busy)"}
        from .flush import flush

        return {"by": "hook", **flush(self.settings)}


def _setup_logging(home: Path) -> None:
    root = logging.getLogger("dexai_memory")
    if root.handlers:
        return
    level = logging.DEBUG if os.environ.get("DEXAI_MEMORY_HOOK_DEBUG") else logging.WARNING
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        handler: logging.Handler = logging.FileHandler(home / "hooks.log", encoding="utf-8")
    except OSError:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"))
    root.addHandler(handler)
    root.setLevel(level)


def command_context(settings: Settings, *, background: bool = False) -> HookContext:
    """The hook context of a command hook: the user and recall scope from the environment
    (``$DEXAI_MEMORY_USER`` / ``$USER``, ``$DEXAI_MEMORY_PROJECT``), the command backend;
    ``background``: an async hook (``--async``)."""
    return HookContext(settings=settings, backend=CommandBackend(settings), user_id=user_id_for(),
                       project=project_for({}), source="claude-code", background=background)


def run(event: str, stdin: IO[str], stdout: IO[str], *, background: bool = False) -> int:
    """Read the hook JSON from ``stdin``, handle ``event``, write the answer to ``stdout``
    (``background``: the hook runs async, see :class:`~dexai_memory.hooks.events.HookContext`).

    Always returns 0 and always writes valid output (``{}`` when anything
    failed): a hook must never break the agent.
    """
    from ..datadir import home_dir, private_umask

    private_umask()  # hooks.log, state files, the queue: 0600 in a 0700 data dir
    _setup_logging(home_dir())
    answer: dict[str, Any] | str = "" if event == "pre-compact" else {}
    try:
        raw = stdin.read()
        payload = json.loads(raw) if raw.strip() else {}
        if not isinstance(payload, dict):
            payload = {}
        if event not in EVENTS:
            logger.warning("unknown hook event %r", event)
        else:
            answer = handle(event, payload, command_context(load_user_settings(), background=background))
    except Exception:  # a hook never fails the agent: log and answer a no-op
        logger.exception("hook %s failed", event)
        if event == "pre-compact":
            with contextlib.suppress(Exception):
                answer = compaction_instructions(Settings())
    text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    # half an emoji (a lone surrogate) from a transcript must not make the answer unprintable
    text = text.encode("utf-8", "replace").decode("utf-8")
    try:
        if text:
            stdout.write(text + "\n")
        stdout.flush()
    except (OSError, ValueError):  # stdout closed: nothing more a hook can do
        logger.warning("hook %s could not write its answer", event)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dexai_memory.hook_runtime <event> [--async]`` (``--async``: hooks.json runs
    this hook with ``"async": true``, nobody waits for its answer)."""
    args = list(sys.argv[1:] if argv is None else argv)
    background = args[1:] == ["--async"]
    if len(args) != 1 and not background:
        sys.stderr.write(f"usage: python -m dexai_memory.hook_runtime <{'|'.join(EVENTS)}> [--async]\n")
        return 2
    import io

    # undecodable bytes in the hook input become U+FFFD instead of failing the hook
    stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    stdout = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", errors="replace")
    return run(args[0], stdin, stdout, background=background)


if __name__ == "__main__":
    sys.exit(main())
