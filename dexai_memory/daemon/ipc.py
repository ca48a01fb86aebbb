"""The Unix-socket protocol between command-hook processes and the running daemon.

Claude Code starts a new process for every hook event; it must stay fast, so
the client side (:func:`ipc_request`) uses only ``socket`` and ``json``.

Protocol: newline-delimited JSON over ``settings.socket_path`` (mode 0600); a connection
whose first line is ``POST /hook/<event>`` speaks HTTP/1.1 instead, for the plugin's launcher
(``curl --unix-socket``: one hook event, answered and closed, see :meth:`IpcServer._http`).
A request is one line ``{"op": "<name>", ...}``; the answer is one line
``{"ok": true, ...}`` or ``{"ok": false, "error": "<message>"}``. Every
answer carries ``version``, the daemon's package version. A connection may
carry several requests in turn. The daemon's operations are listed in
:mod:`dexai_memory.daemon.ops`. A handler is an async callable taking the request dict
and returning a dict; our own errors become ``{"ok": false, "error": ...}`` and the
server keeps serving.

Bounded for a hostile or broken client: a listen backlog of :data:`BACKLOG` (a burst of hook
processes waits instead of being refused; the client retries a connect the kernel turns away
while the backlog is full), :data:`READ_TIMEOUT` seconds for each whole request (a client
sending a byte a second is answered an error and dropped), :data:`MAX_LINE` bytes a request,
and :data:`MAX_CONNECTIONS` connections at once. At the limit a new connection displaces the
oldest one that is not being answered and has waited :data:`MIN_IDLE` seconds (idle, or still
sending), so idle or slow clients can never keep a hook out; when there is none the new one is
told ``busy`` and :func:`ipc_request` tries again until its deadline. Hostile JSON (nesting 100,000 deep, lone surrogates) is decoded by
:func:`~dexai_memory.text.json_input.loads` and answered an error object, never a drop.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from ..text.json_input import JsonInputError, loads
from ..version import __version__

logger = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], Awaitable[Mapping[str, Any] | None]]
#: Longest request line the server reads (a turn with a long tool output fits).
MAX_LINE = 4 * 1024 * 1024
#: Longest path a Unix socket address can have on Linux (sun_path is 108 bytes).
MAX_SOCKET_PATH = 107
#: Header prefix (lower case) of a hook's identity variables in an HTTP request on the socket.
ENV_HEADER = "x-dexai-env-"
#: Connections served at once (each is a file descriptor; the daemon's limit is often 1,024).
MAX_CONNECTIONS = 256
#: Pending connects the kernel holds (it caps this at ``net.core.somaxconn``, 4,096 on current Linux).
BACKLOG = 2048
#: Seconds a connection has to send its next whole request (hook clients send at once).
READ_TIMEOUT = 30.0
#: Longest HTTP head (request line and headers) read on the socket.
MAX_HTTP_HEAD = 64 * 1024
#: Seconds between connect attempts the kernel turned away with a full backlog (``EAGAIN``), and
#: between requests the daemon answered ``busy``.
CONNECT_RETRY = 0.01
#: Seconds a connection must have waited without a whole request before a newer one may displace it
#: (a client of a burst, about to send, is never displaced).
MIN_IDLE = 0.5


# --------------------------------------------------------------------------- client (stdlib only)
def ipc_request(socket_path: str | os.PathLike[str], payload: Mapping[str, Any],
                timeout: float = 0.5) -> dict[str, Any] | None:
    """Send one request to the daemon and return its answer.

    Returns None when no daemon answers within ``timeout`` seconds (no
    socket, refused, timed out, garbled answer): callers then fall back to
    working without it. Never raises for those.
    """
    deadline = time.monotonic() + max(0.0, timeout)
    path = os.fspath(socket_path)
    if len(path.encode()) > MAX_SOCKET_PATH or not os.path.exists(path):
        return None
    while True:
        answer = _request_once(path, payload, deadline)
        if answer is None or not answer.get("busy") or time.monotonic() + CONNECT_RETRY >= deadline:
            return answer
        time.sleep(CONNECT_RETRY)


def _request_once(path: str, payload: Mapping[str, Any], deadline: float) -> dict[str, Any] | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        while True:
            try:
                sock.connect(path)
                break
            except BlockingIOError:  # the daemon's backlog is full for a moment (a burst of hooks)
                if time.monotonic() + CONNECT_RETRY >= deadline:
                    return None
                time.sleep(CONNECT_RETRY)
        try:
            sock.sendall(json.dumps(dict(payload), default=str).encode() + b"\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # a daemon answering ``busy`` closes at once: its answer may still be there to read
        chunks: list[bytes] = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            sock.settimeout(left)
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
            if data.endswith(b"\n") or b"\n" in data:
                break
        line = b"".join(chunks).split(b"\n", 1)[0]
        answer = json.loads(line) if line else None
    except (OSError, ValueError):
        return None
    finally:
        sock.close()
    return answer if isinstance(answer, dict) else None


# --------------------------------------------------------------------------- server
def _same_user(sock: Any) -> bool:
    """The peer of a Unix socket runs as this process's user (Linux ``SO_PEERCRED``). The
    socket file is 0600 in a 0700 directory already; this refuses anyone who gets past that
    (root excepted). Where the platform cannot tell, the file permissions are the guard."""
    import struct

    peercred = getattr(socket, "SO_PEERCRED", None)
    if sock is None or peercred is None:
        return True
    try:
        _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i")))
    except OSError:
        return True
    return uid in (os.getuid(), 0)



def _raise_file_limit(wanted: int = 65_536) -> None:
    """Raise this process's soft limit of open files towards its hard limit (the daemon's other
    doors, the API port among them, must not be able to use up the descriptors the socket needs)."""
    try:
        import resource
    except ImportError:  # not on this platform
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            logger.debug("could not raise the open-file limit from %s", soft)


class _Connection:
    """One client of the socket: its writer, whether a request of it is being answered, since when."""

    __slots__ = ("answering", "since", "writer")

    def __init__(self, writer: Any) -> None:
        self.writer = writer
        self.answering = False
        #: ``time.monotonic()`` since which it waits for a request.
        self.since = time.monotonic()


BUSY = b'{"ok": false, "busy": true, "error": "the daemon is answering too many connections; try again"}\n'


class IpcServer:
    """Serves registered operations on a Unix socket (run by the daemon)."""

    def __init__(self, socket_path: str | os.PathLike[str], handlers: Mapping[str, Handler] | None = None):
        self.path = Path(socket_path)
        self.handlers: dict[str, Handler] = dict(handlers or {})
        self._server: Any = None
        self.requests = 0
        #: ``time.monotonic()`` of the last request (or of the start): for the idle exit.
        self.last_request = time.monotonic()
        #: See :data:`MAX_CONNECTIONS` and :data:`READ_TIMEOUT` (set before :meth:`start`).
        self.max_connections = MAX_CONNECTIONS
        self.read_timeout = READ_TIMEOUT
        #: Open connections, oldest first.
        self._connections: dict[int, _Connection] = {}
        #: Connections closed to make room for a newer one, and ones told ``busy``.
        self.displaced = 0
        self.refused_busy = 0

    def register(self, op: str, handler: Handler) -> None:
        """Add (or replace) the handler of ``op``."""
        self.handlers[op] = handler

    @property
    def serving(self) -> bool:
        return self._server is not None

    @property
    def connections(self) -> int:
        """Connections open now."""
        return len(self._connections)

    async def start(self) -> None:
        """Listen on the socket. A stale socket file (no one answering) is replaced.

        Raises :class:`~dexai_memory.errors.DexaiMemoryError` when another
        daemon answers on it or the path is too long for a Unix socket.
        """
        import asyncio

        from ..errors import DexaiMemoryError

        if self._server is not None:
            return
        if len(str(self.path).encode()) > MAX_SOCKET_PATH:
            raise DexaiMemoryError(f"socket path too long for a Unix socket ({len(str(self.path))} > "
                                   f"{MAX_SOCKET_PATH} bytes): {self.path}; use a shorter --home")
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self.path.exists() or self.path.is_symlink():
            answer = await asyncio.to_thread(ipc_request, self.path, {"op": "ping"}, 0.5)
            if answer is not None:
                raise DexaiMemoryError(f"a daemon is already running on {self.path} (pid {answer.get('pid')})")
            logger.info("removing stale socket %s", self.path)
            self.path.unlink()
        _raise_file_limit()
        old_umask = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(self._serve, path=str(self.path), limit=MAX_LINE,
                                                           backlog=BACKLOG)
        finally:
            os.umask(old_umask)
        os.chmod(self.path, 0o600)
        logger.info("daemon socket listening on %s", self.path)

    async def aclose(self) -> None:
        """Stop listening and remove the socket file."""
        import asyncio

        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for conn in list(self._connections.values()):
            if not conn.answering:
                conn.writer.transport.abort()  # idle clients would hold wait_closed() open
        for _ in range(100):  # their handlers end at once; let them before the loop may close
            if not any(not c.answering for c in self._connections.values()):
                break
            await asyncio.sleep(0.01)
        await server.wait_closed()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    async def dispatch(self, request: Any) -> dict[str, Any]:
        """The answer to one decoded request."""
        from ..errors import DexaiMemoryError

        if not isinstance(request, dict) or not isinstance(request.get("op"), str):
            return {"ok": False, "error": "a request is a JSON object with a string 'op'"}
        op = request["op"]
        handler = self.handlers.get(op)
        if handler is None:
            return {"ok": False, "error": f"unknown op {op!r} (known: {', '.join(sorted(self.handlers))})"}
        self.requests += 1
        self.last_request = time.monotonic()
        try:
            result = await handler(request)
        except DexaiMemoryError as exc:
            return {"ok": False, "error": str(exc)}
        except (KeyError, TypeError, ValueError) as exc:
            return {"ok": False, "error": f"bad request for {op}: {type(exc).__name__}: {exc}"}
        out = dict(result or {})
        out.setdefault("ok", "error" not in out)
        out.setdefault("version", __version__)  # hooks replace a daemon of another version
        return out

    def _admit(self, writer: Any) -> _Connection | None:
        """Room for a new connection: at the limit, the oldest one not being answered is closed;
        None when every connection is being answered."""
        if len(self._connections) >= self.max_connections:
            now = time.monotonic()
            victim = next((key for key, conn in self._connections.items()
                           if not conn.answering and now - conn.since >= MIN_IDLE), None)
            if victim is None:
                return None
            self._connections.pop(victim).writer.transport.abort()
            self.displaced += 1
        conn = _Connection(writer)
        self._connections[id(writer)] = conn
        return conn

    async def _serve(self, reader: Any, writer: Any) -> None:
        import asyncio

        if not _same_user(writer.get_extra_info("socket")):
            logger.warning("refused a socket connection from another user")
            writer.close()
            return
        conn = self._admit(writer)
        if conn is None:
            self.refused_busy += 1
            writer.write(BUSY)
            writer.close()
            return
        try:
            first = True
            while True:
                try:
                    async with asyncio.timeout(self.read_timeout):
                        line = await reader.readline()
                except TimeoutError:
                    await self._write(writer, {"ok": False, "error": f"no whole request within {self.read_timeout:g} s"})
                    return
                except (ValueError, asyncio.LimitOverrunError):
                    await self._write(writer, {"ok": False, "error": f"request line too long (over {MAX_LINE} bytes)"})
                    return
                if not line:
                    return
                if first and line.startswith(b"POST /"):
                    await self._http(line, reader, writer, conn)
                    return
                first = False
                if not line.strip():
                    continue
                conn.answering = True
                try:
                    request = loads(line)
                except JsonInputError as exc:
                    answer: dict[str, Any] = {"ok": False, "error": f"not JSON: {exc}"}
                else:
                    answer = await self._answer(request)
                await self._write(writer, answer)
                conn.answering, conn.since = False, time.monotonic()
        except (ConnectionError, BrokenPipeError):
            return
        finally:
            if self._connections.get(id(writer)) is conn:
                del self._connections[id(writer)]
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, BrokenPipeError):
                pass

    @staticmethod
    async def _write(writer: Any, answer: dict[str, Any]) -> None:
        writer.write(json.dumps(answer, default=str).encode() + b"\n")
        await writer.drain()

    async def _answer(self, request: Any) -> dict[str, Any]:
        try:
            return await self.dispatch(request)
        except Exception as exc:  # a bug in a handler must not take the daemon down
            logger.exception("socket op %r crashed", request.get("op") if isinstance(request, dict) else None)
            return {"ok": False, "error": f"internal error: {type(exc).__name__}: {exc}"}

    async def _read_http(self, reader: Any) -> tuple[dict[str, str], bytes] | int:
        """The headers and body of an HTTP request on the socket, or the status refusing it."""
        headers: dict[str, str] = {}
        size = 0
        while True:
            line = await reader.readline()
            size += len(line)
            if size > MAX_HTTP_HEAD:
                return 431
            if not line or line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        try:
            length = int(headers.get("content-length") or 0)
        except ValueError:
            return 400
        if not 0 <= length <= MAX_LINE:
            return 413
        return headers, (await reader.readexactly(length) if length else b"")

    async def _http(self, request_line: bytes, reader: Any, writer: Any, conn: _Connection) -> None:
        """One hook event over HTTP/1.1 on this socket (the plugin's launcher sends it with
        ``curl --unix-socket``): ``POST /hook/<event>[?async=1]``, the hook's JSON input as the
        body, the hook's identity variables as ``X-Dexai-Env-<NAME>`` headers. Answers 200 with
        the hook's answer as the body (a no-op when anything failed), then closes; a request too
        large or too slow (:data:`READ_TIMEOUT` for head and body) is answered 413, 431 or 408
        with a no-op body."""
        import asyncio
        from urllib.parse import parse_qs, urlsplit

        parts = request_line.decode("latin-1").split()
        url = urlsplit(parts[1] if len(parts) > 1 else "/")
        event = url.path.removeprefix("/hook/") if url.path.startswith("/hook/") else ""
        noop = "" if event == "pre-compact" else {}
        try:
            async with asyncio.timeout(self.read_timeout):
                read = await self._read_http(reader)
        except TimeoutError:
            read = 408
        except (ValueError, asyncio.LimitOverrunError):
            read = 431
        except asyncio.IncompleteReadError:
            return
        if isinstance(read, int):
            await self._http_reply(writer, read, noop)
            return
        headers, body = read
        conn.answering = True
        env = {name[len(ENV_HEADER):].upper(): value for name, value in headers.items()
               if name.startswith(ENV_HEADER) and value}
        try:
            payload = loads(body) if body.strip() else {}
        except JsonInputError:
            payload = None
        answer = await self._answer({"op": "hook.event", "event": event, "payload": payload, "env": env,
                                     "background": parse_qs(url.query).get("async") == ["1"],
                                     "received": time.time()})
        reply = answer.get("answer")
        await self._http_reply(writer, 200, noop if reply is None else reply)

    @staticmethod
    async def _http_reply(writer: Any, status: int, reply: Any) -> None:
        reason = {200: b"OK", 400: b"Bad Request", 408: b"Request Timeout", 413: b"Payload Too Large",
                  431: b"Request Header Fields Too Large"}.get(status, b"Error")
        text = reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)
        data = text.encode("utf-8", "replace")
        writer.write(b"HTTP/1.1 " + str(status).encode() + b" " + reason + b"\r\nContent-Type: "
                     + (b"text/plain" if isinstance(reply, str) else b"application/json")
                     + b"; charset=utf-8\r\nConnection: close\r\nContent-Length: "
                     + str(len(data)).encode() + b"\r\n\r\n" + data)
        await writer.drain()
