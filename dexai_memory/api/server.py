"""Serving the app: uvicorn on a socket bound to 127.0.0.1, never another interface.

:func:`bind` opens the socket first (port 0 picks a free one), so the caller
knows the real port and can print the panel's URL before serving;
:func:`serve` runs uvicorn on it until interrupted.
"""

from __future__ import annotations

import socket
from typing import Any

#: The only address the API listens on.
HOST = "127.0.0.1"
#: The default port of ``dexai panel``.
DEFAULT_PORT = 8765


def bind(port: int = DEFAULT_PORT) -> socket.socket:
    """A listening TCP socket on 127.0.0.1:``port`` (0 = any free port). Raises :class:`OSError`
    when the port is taken."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
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


async def serve(app: Any, sock: socket.socket, *, log_level: str = "warning") -> None:
    """Serve ``app`` on ``sock`` until cancelled or interrupted (Ctrl+C)."""
    import uvicorn

    config = uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    await server.serve(sockets=[sock])
