"""Serving the app: uvicorn on a socket bound to 127.0.0.1, never another interface.

* ``dexai panel``: :func:`bind` opens the socket first (port 0 picks a free
  one), so the command knows the real port and prints the panel's URL before
  :func:`serve` runs uvicorn on it until interrupted;
* the daemon (``dexai daemon``, when ``daemon.api_port`` is not 0):
  :class:`ApiServer` serves the same app over the daemon's own provider, in
  the daemon's event loop, and records its port in ``<home>/api.json`` so that
  ``dexai panel`` opens that one instead of starting a second server
  (:func:`running_port`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config import Settings
    from ..providers.base import MemoryProvider

logger = logging.getLogger(__name__)

#: The only address the API listens on.
HOST = "127.0.0.1"
#: The default port of ``dexai panel`` (and of ``daemon.api_port``).
DEFAULT_PORT = 8765
#: Where a daemon serving the API records its port: ``<home>/api.json``.
PORT_FILE = "api.json"
#: Seconds :class:`ApiServer` waits for uvicorn to start or stop.
START_TIMEOUT = 10.0


def bind(port: int = DEFAULT_PORT) -> socket.socket:
    """A listening TCP socket on 127.0.0.1:``port`` (0 = any free port). Raises :class:`OSError`
    when the port is taken."""
    # proto=IPPROTO_TCP: asyncio then sets TCP_NODELAY on every accepted connection (it checks the
    # proto); with proto 0 each keep-alive answer waited ~40 ms for a delayed ACK (Nagle)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((HOST, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def panel_url(port: int, token: str) -> str:
    """``http://127.0.0.1:<port>/?token=<token>``."""
    return f"http://{HOST}:{port}/?token={token}"


def _uvicorn_server(app: Any, *, log_level: str = "warning", own_signals: bool = True) -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if own_signals:
                with super().capture_signals():
                    yield
            else:  # inside the daemon: its own SIGTERM/SIGINT handlers stay in charge
                yield

    return Server(uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="on"))


async def serve(app: Any, sock: socket.socket, *, log_level: str = "warning") -> None:
    """Serve ``app`` on ``sock`` until cancelled or interrupted (Ctrl+C)."""
    await _uvicorn_server(app, log_level=log_level).serve(sockets=[sock])


def running_port(home: Path, token: str, user_id: str, *, timeout: float = 2.0) -> int | None:
    """The port of the API a daemon serves for ``home`` (``<home>/api.json``), when it answers
    with this token and ``user_id`` is its default user; else None."""
    try:
        port = int(json.loads((home / PORT_FILE).read_text(encoding="utf-8"))["port"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    request = urllib.request.Request(f"http://{HOST}:{port}/api/facts?limit=1",
                                     headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer = json.load(response)
    except (OSError, urllib.error.URLError, ValueError):
        return None
    return port if isinstance(answer, dict) and answer.get("user_id") == user_id else None


class ApiServer:
    """The API and the panel served inside a running event loop over a started provider (the
    daemon's): :meth:`start` binds 127.0.0.1:``port`` and records it in ``<home>/api.json``,
    :meth:`aclose` stops serving and removes the record."""

    def __init__(self, settings: Settings, provider: MemoryProvider, user_id: str, *,
                 write_lock: asyncio.Lock | None = None) -> None:
        self.settings = settings
        self.write_lock = write_lock
        self.provider = provider
        self.user_id = user_id
        self.port: int | None = None
        self._server: Any = None
        self._task: asyncio.Task[None] | None = None
        self._sock: socket.socket | None = None

    async def start(self, port: int = DEFAULT_PORT, *, sock: socket.socket | None = None) -> bool:
        """Serve on ``port`` (or on ``sock``, bound already: ``dexai panel``); False (logged, nothing
        else changes) when it is taken."""
        from .app import build_app
        from .auth import load_token

        try:
            self._sock = sock if sock is not None else bind(port)
        except OSError as exc:
            logger.warning("not serving the API: cannot listen on %s:%s (%s); set daemon.api_port", HOST, port, exc)
            return False
        app = build_app(self.settings, self.user_id, load_token(self.settings.home), provider=self.provider,
                        write_lock=self.write_lock)
        self._server = _uvicorn_server(app, own_signals=False)
        self._task = asyncio.get_running_loop().create_task(self._server.serve(sockets=[self._sock]),
                                                             name="api-server")
        deadline = asyncio.get_running_loop().time() + START_TIMEOUT
        try:
            while not self._server.started and not self._task.done():
                if asyncio.get_running_loop().time() > deadline:
                    break
                await asyncio.sleep(0.01)  # uvicorn has no startup event to wait on
        except asyncio.CancelledError:
            await self.aclose()
            raise
        if not self._server.started:
            await self.aclose()
            logger.warning("the API server did not start on %s:%s", HOST, port)
            return False
        self.port = self._sock.getsockname()[1]
        record = self.settings.home / PORT_FILE
        tmp = record.with_suffix(".tmp")
        tmp.write_text(json.dumps({"port": self.port, "pid": os.getpid()}), encoding="utf-8")
        tmp.replace(record)
        logger.info("API and panel on http://%s:%s/ (token in %s)", HOST, self.port, self.settings.home / "api-token")
        return True

    async def aclose(self) -> None:
        """Stop serving (idempotent)."""
        if self.port is not None:
            (self.settings.home / PORT_FILE).unlink(missing_ok=True)
            self.port = None
        if self._server is not None:
            self._server.should_exit = True
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, START_TIMEOUT)
            except TimeoutError:
                self._task.cancel()
            self._task = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
