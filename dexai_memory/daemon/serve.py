"""``dexai daemon``'s run: the lock, the signals, the idle exit and the servers around a
:class:`~dexai_memory.daemon.core.MemoryDaemon` (its socket, the panel's API, the opt-in
http hooks). The CLI only parses options and prints what this reports.

One daemon per data directory: it holds ``<home>/daemon.lock`` while it runs and writes
``<home>/daemon.pid``; a second one exits at once (or, with ``lock_wait``, waits for the
first to go). SIGTERM or SIGINT stops it cleanly (socket closed, queue drained for a few
seconds, the rest kept on disk). With ``idle_exit_minutes`` it exits after that long without
hook traffic and with an empty queue.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import time
from collections.abc import Callable
from typing import Any

from ..config import Settings
from ..datadir import ensure_home
from ..errors import DaemonError, DaemonRunning
from .control import DaemonLock, read_pid
from .core import MemoryDaemon

logger = logging.getLogger(__name__)

#: Seconds between idle checks of a daemon with an idle exit.
IDLE_CHECK_SECONDS = 30.0


async def idle_watch(daemon: MemoryDaemon, minutes: float, stop: asyncio.Event) -> None:
    """Set ``stop`` after ``minutes`` without socket traffic while the queue is empty."""
    limit = minutes * 60.0
    while not stop.is_set():
        await asyncio.sleep(min(IDLE_CHECK_SECONDS, max(0.5, limit / 4)))
        idle = time.monotonic() - daemon.ipc.last_request
        if idle >= limit and await asyncio.to_thread(daemon.queue.pending_count) == 0:
            logger.info("no hook traffic for %.0f minutes and nothing queued: exiting", idle / 60)
            stop.set()


async def serve(settings: Settings, *, schedule: bool = True, flush_timeout: float = 5.0,
                idle_exit_minutes: float = 0.0, lock_wait: float = 0.0,
                on_ready: Callable[[dict[str, Any]], None] = lambda ready: None,
                panel: tuple[socket.socket, str] | None = None) -> None:
    """Run the daemon of ``settings.home`` until SIGTERM/SIGINT, ``daemon.shutdown`` or the idle
    exit. ``on_ready`` gets the ready report (pid, socket, ops, schedule, ports) once serving.
    ``panel`` (``dexai panel`` with no daemon running: a socket bound already and the panel's
    user): the daemon serves the panel and the API there, over its own provider and write lock,
    instead of on ``daemon.api_port``, so the panel's writes have the one writer every other door
    has. Raises :class:`~dexai_memory.errors.DaemonRunning` when another daemon holds the lock
    (with ``lock_wait``: after waiting that long, and then with ``waited`` set)."""
    ensure_home(settings.home)
    lock = DaemonLock(settings)
    if not await asyncio.to_thread(lock.acquire, lock_wait):
        raise DaemonRunning(f"a daemon is already running for {settings.home} (pid {read_pid(settings) or '?'})",
                            waited=lock_wait > 0)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    daemon = MemoryDaemon(settings, serve_socket=True, schedule=schedule, serve_api=panel is None)

    async def shutdown(req: dict[str, Any]) -> dict[str, Any]:
        logger.info("shutdown requested (%s)", req.get("reason") or "?")
        loop.call_soon(stop.set)
        return {"stopping": True}

    daemon.ipc.register("daemon.shutdown", shutdown)
    api = None
    try:
        await daemon.start()
        if panel is not None:
            from ..api.server import ApiServer

            api = ApiServer(settings, daemon.provider, panel[1], write_lock=daemon.write_lock)
            if not await api.start(sock=panel[0]):
                raise DaemonError("the memory panel did not start (see the log above)")
        http = None
        if settings.daemon.http_port:
            from .http_hooks import HookHttpServer

            http = HookHttpServer(daemon, settings.daemon.http_port)
            if not await http.start_if_installed():
                http = None
        watch = asyncio.ensure_future(idle_watch(daemon, idle_exit_minutes, stop)) if idle_exit_minutes > 0 \
            else None
        on_ready({"ready": True, "pid": os.getpid(), "socket": str(settings.socket_path),
                  "home": str(settings.home), "ops": sorted(daemon.ipc.handlers),
                  "scheduled": daemon.next_runs(), "idle_exit_minutes": idle_exit_minutes,
                  "http_hooks_port": http.port if http is not None else None,
                  "panel_port": api.port if api is not None else None})
        try:
            await stop.wait()
        finally:
            if watch is not None:
                watch.cancel()
            if http is not None:
                await http.aclose()
    finally:
        if api is not None:
            await api.aclose()
        await daemon.stop(flush_timeout=flush_timeout)
        lock.release()
