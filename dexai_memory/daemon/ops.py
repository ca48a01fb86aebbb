"""The daemon's socket operations: every door that reaches the daemon from another process.

Request ``{"op": ..., ...}`` -> reply dict (see :mod:`dexai_memory.daemon.ipc` for the framing):

``ping``            -> ``pid``, ``state``
``hook.event``      ``event, payload, env, background?, received?`` -> ``answer`` (the hook's answer:
                    a JSON object, or PreCompact's text). The plugin's command hook (``curl`` on
                    the socket speaks it as ``POST /hook/<event>``, or the Python client), and the
                    events replayed from the durable queue.
``recall``          ``user_id, prompt, project?, recent?, exclude_ids?, max_memories?, max_tokens?``
                    -> ``text, tokens, memory_ids, memories, skipped_reason, latency_ms``: exactly
                    what the UserPromptSubmit hook injects (``dexai memory recall``)
``tool.call``       ``name, arguments, user_id, project?, session_id?`` -> ``content, isError``: the
                    agent's memory tools (the MCP server is a client of this)
``store.run``       ``name, user_id, ...`` -> a change to the store by hand (``edit``, ``pin``,
                    ``forget``, ``supersede``, ``clear``, ...: :mod:`dexai_memory.lifecycle.requests`),
                    run under the write lock; the CLI's writing commands ask this
``writer.lease``    ``seconds``? -> ``lease``: the daemon's write lock, lent to a bulk command
                    (``ingest``, ``import``, ``learn-history``, ``consolidate``) until ``writer.release``
                    ``lease`` or for at most ``seconds`` (:data:`MAX_LEASE_SECONDS`): the store
                    keeps one writer at a time, and the command's decisions see every write
``enqueue``         ``turn`` (a turn dict), ``recent``? -> ``queued``, ``gated``, ``score``
``queue.notify``    -> ``{}`` (something wrote to queue.db directly: look now)
``flush``           ``timeout``? -> ``flushed``, ``pending``
``health``          -> the daemon's :meth:`~dexai_memory.daemon.core.MemoryDaemon.health`
``daemon.shutdown`` ``reason``? -> ``stopping`` (registered by :mod:`dexai_memory.daemon.serve`)
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..lifecycle.requests import run_request
from ..models import Turn
from ..recall.ranking import recall_args
from .event import BadEvent, HookEvent, empty_answer
from .session_state import compaction_instructions

logger = logging.getLogger(__name__)

Op = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]

#: Longest a lease of the write lock lasts (seconds): a bulk command that dies holding it loses it then.
MAX_LEASE_SECONDS = 300.0
#: Longest a lease request waits for the write lock (a batch of the queue worker holds it).
LEASE_WAIT_SECONDS = 60.0


def socket_ops(daemon: Any) -> dict[str, Op]:
    """Every operation ``daemon`` (a :class:`~dexai_memory.daemon.core.MemoryDaemon`) serves on
    its socket, by name."""

    async def ping(req: dict[str, Any]) -> dict[str, Any]:
        return {"pid": os.getpid(), "state": daemon.state.value}

    async def hook_event(req: dict[str, Any]) -> dict[str, Any]:
        try:
            event = HookEvent.from_json(req)
        except BadEvent as exc:
            logger.warning("hook.event: %s", exc)
            return {"answer": empty_answer(str(req.get("event") or "")), "error": str(exc)}
        answer = await run_event(daemon, event)
        if upgraded():  # the package was reinstalled under this daemon: the next event starts a new one
            shutdown = daemon.ipc.handlers.get("daemon.shutdown")
            if shutdown is not None:
                daemon.spawn(shutdown({"reason": "the installed version changed"}), "upgrade-exit")
        return {"answer": answer}

    async def recall(req: dict[str, Any]) -> dict[str, Any]:
        return (await daemon.executor.recall(**recall_args(req))).to_reply()  # type: ignore[no-any-return]

    async def enqueue(req: dict[str, Any]) -> dict[str, Any]:
        data = req.get("turn")
        if not isinstance(data, dict):
            return {"ok": False, "error": "enqueue needs a 'turn' object"}
        verdict = await asyncio.to_thread(daemon.submit_turn, Turn.from_dict(data), req.get("recent") or ())
        return {"gated": verdict.passed, "score": verdict.score, "queued": verdict.passed}

    async def flush(req: dict[str, Any]) -> dict[str, Any]:
        flushed = await daemon.flush(float(req.get("timeout") or 5.0))
        return {"flushed": flushed, "pending": await asyncio.to_thread(daemon.queue.pending_count)}

    async def health(req: dict[str, Any]) -> dict[str, Any]:
        return await asyncio.to_thread(daemon.health)  # type: ignore[no-any-return]

    async def notify(req: dict[str, Any]) -> dict[str, Any]:
        daemon.queue.notify()
        return {}

    async def store_run(req: dict[str, Any]) -> dict[str, Any]:
        async with daemon.write_lock:
            return await run_request(daemon.provider, daemon.settings, req)

    leases: dict[str, asyncio.Event] = {}

    async def writer_lease(req: dict[str, Any]) -> dict[str, Any]:
        try:
            seconds = min(max(float(req.get("seconds") or MAX_LEASE_SECONDS), 1.0), MAX_LEASE_SECONDS)
        except (TypeError, ValueError):
            return {"ok": False, "error": "writer.lease: 'seconds' must be a number"}
        token = secrets.token_hex(8)
        held, done = asyncio.Event(), asyncio.Event()
        leases[token] = done

        async def hold() -> None:
            try:
                async with daemon.write_lock:
                    held.set()
                    try:
                        await asyncio.wait_for(done.wait(), seconds)
                    except TimeoutError:
                        logger.warning("a bulk command held the write lock for %.0fs: taken back", seconds)
            finally:
                leases.pop(token, None)

        daemon.spawn(hold(), "writer-lease")
        try:
            await asyncio.wait_for(held.wait(), LEASE_WAIT_SECONDS)
        except TimeoutError:
            done.set()  # when the lock comes, it is given back at once
            return {"ok": False, "error": f"the write lock stayed busy for {LEASE_WAIT_SECONDS:.0f}s"}
        return {"lease": token, "seconds": seconds}

    async def writer_release(req: dict[str, Any]) -> dict[str, Any]:
        done = leases.get(str(req.get("lease") or ""))
        if done is not None:
            done.set()
        return {"released": done is not None}

    return {"ping": ping, "hook.event": hook_event, "recall": recall, "enqueue": enqueue, "flush": flush,
            "health": health, "queue.notify": notify, "store.run": store_run, "writer.lease": writer_lease,
            "writer.release": writer_release}


#: Seconds between looks at the installed package's version (a plugin update reinstalls it).
VERSION_CHECK_SECONDS = 30.0
_last_check = [0.0]


def upgraded() -> bool:
    """The installed dexai-memory is another version than this process runs (looked at every
    :data:`VERSION_CHECK_SECONDS`): the launcher's ``curl`` cannot tell, so the daemon exits
    after answering and the next hook starts the new version."""
    now = time.monotonic()
    if now - _last_check[0] < VERSION_CHECK_SECONDS:
        return False
    _last_check[0] = now
    from .. import version

    try:
        text = Path(version.__file__).read_text(encoding="utf-8")
    except OSError:
        return False
    found = re.search(r"__version__\s*=\s*[\"']([^\"']+)[\"']", text)
    return found is not None and found.group(1) != version.__version__


async def run_event(daemon: Any, event: HookEvent) -> dict[str, Any] | str:
    """The executor's answer to ``event``; a no-op answer when it fails (a hook never fails the
    agent: PreCompact still gets the compaction instructions)."""
    try:
        return await daemon.executor.handle(event)
    except Exception:  # logged with its traceback; the hook answers a no-op
        logger.exception("hook %s failed", event.name)
        return compaction_instructions(daemon.settings) if event.name == "pre-compact" else empty_answer(event.name)
