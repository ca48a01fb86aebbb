"""The daemon's HTTP front end for Claude Code ``http`` hooks: hook events with no process start.

A command hook is a new process per event (~100 ms on 2 cores, half of it a
bare interpreter). Claude Code (2.1.330, the CLI bundled in claude-agent-sdk)
also runs hooks of ``"type": "http"``: it POSTs the hook's JSON input to a URL
and reads the answer exactly like a command hook's stdout.

Opt-in: the plugin's ``hooks/hooks.json`` declares command hooks only, so no
prompt is ever sent to a port unless the user asks for it (on a shared
machine another user could hold the port), and the daemon opens the port only
when the user asked for it. ``dexai daemon http-hooks --install`` writes
:func:`http_hook_settings` (the http hooks for ``UserPromptSubmit``,
``PostToolUse`` and ``Stop`` and the token) into ``~/.claude/settings.json``
and records which file it wrote in :data:`INSTALL_FILE` (without a record:
``~/.claude/settings.json``, where printed hooks are pasted); a daemon starting
listens on ``daemon.http_port`` only while that file still holds an http hook
to that port (:func:`installed`), so removing the hooks by hand, or
``--uninstall``, closes the port at the daemon's next start. Claude Code then
runs both those http hooks and the plugin's command hooks:

* daemon up: this server answers (:func:`~dexai_memory.daemon.executor.handle`
  on the daemon's provider and queue, :class:`~dexai_memory.hooks.sdk.InProcessBackend`),
  and the command hook's launcher (``hooks/dexai-hook``, ``/bin/sh``) sees the
  daemon alive (:data:`HTTP_FILE`) and the session's token matching
  (:data:`TOKEN_FILE`), and exits at once without starting Python;
* daemon down: the http hook fails to connect, which Claude Code treats as a
  non-blocking error (measured: the prompt goes on, the other hooks' output is
  used), and the command hook does the work as before (it starts the daemon).

Both sides take the same decision from the same facts, so an event is handled
once: this server acts only for a request carrying the token and no
``DEXAI_MEMORY_PROJECT`` / ``DEXAI_MEMORY_DISABLED`` (the launcher's fast path
needs the same), and answers ``{}`` to anything else. SessionStart stays a
command hook: 2.1.330 does not call http hooks for it (measured).

Security: 127.0.0.1 only; every request needs ``Authorization: Bearer <token>``
(the token: :data:`TOKEN_FILE` in the data directory, mode 0600, made once);
Claude Code sends it from ``$DEXAI_HOOK_TOKEN`` (the settings' ``env``, listed
in the hooks' ``allowedEnvVars``).
Without a valid token the answer is ``{}`` and nothing is read or written:
the token is checked on the headers, before any body is read (an unauthenticated
body is never buffered; a body over :data:`MAX_BODY_BYTES` is answered 413).

Bounded for a hostile client: :data:`MAX_CONNECTIONS` connections at once (at
the limit a new one displaces the oldest that is not being answered, so idle or
slow ones never keep Claude Code out; one younger than half a second is never displaced), :data:`READ_TIMEOUT` seconds for each
whole request (a client sending a byte a second is answered 408 and dropped),
and hostile JSON (deep nesting, lone surrogates) answered ``{}``, never a drop.

The user's identity comes from headers Claude Code fills from its own
environment (``X-Dexai-User: ${DEXAI_MEMORY_USER}``, ``X-Dexai-Login:
${USER}``), like :func:`~dexai_memory.daemon.session_state.user_id_for` in a command hook.

A deliberately small HTTP/1.1 server on :func:`asyncio.start_server` (JSON
bodies with Content-Length, keep-alive): no web framework in the daemon, and
no second signal handler (uvicorn installs its own).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hmac
import json
import logging
import os
import secrets
import time
from pathlib import Path
from typing import Any

from ..config import Settings
from ..datadir import private_file
from ..text.json_input import JsonInputError, loads
from .event import HookEvent
from .ipc import MAX_LINE, MIN_IDLE
from .ops import run_event
from .session_state import EVENTS

logger = logging.getLogger(__name__)

#: ``<data dir>/hook-token``: the bearer token of the HTTP hooks (0600, made once).
TOKEN_FILE = "hook-token"
#: ``<data dir>/daemon-http``: ``"<pid> <port>"`` while the daemon serves HTTP hooks (read by the launcher).
HTTP_FILE = "daemon-http"
#: The events served over HTTP (hooks.json declares an http hook for each).
HTTP_EVENTS = ("user-prompt-submit", "post-tool-use", "stop")
#: The environment variables the launcher's fast path requires unset (the daemon cannot see the session's).
SESSION_ONLY_ENV = ("DEXAI_MEMORY_PROJECT", "DEXAI_MEMORY_DISABLED")
#: ``<data dir>/http-hooks.json``: the Claude Code settings file ``--install`` wrote the http hooks into.
INSTALL_FILE = "http-hooks.json"
MAX_HEADER_BYTES = 64 * 1024
#: Largest hook input read (the same as the daemon's socket takes); larger is answered 413.
MAX_BODY_BYTES = MAX_LINE
#: Connections served at once (Claude Code keeps one per session alive between events).
MAX_CONNECTIONS = 64
#: Seconds a connection has to send its next whole request, head and body.
READ_TIMEOUT = 10.0
#: Seconds an idle keep-alive connection is promised (below :data:`READ_TIMEOUT`, so a client
#: never reuses a connection the server is about to close).
KEEP_ALIVE = 5
#: Seconds an event may take before the answer is ``{}`` (hooks.json gives the http hooks 5 s; a
#: recall normally takes ~20 ms, so a stuck daemon costs the user at most this).
EVENT_TIMEOUT = 3.0


def hook_token(home: Path) -> str:
    """The HTTP hooks' token, made (0600) on first use."""
    path = home / TOKEN_FILE
    with contextlib.suppress(FileNotFoundError):
        token = path.read_text(encoding="utf-8").strip()
        if token:
            return token
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    private_file(path)
    return token


def _ours(hook: Any, port: int | None = None) -> bool:
    """``hook`` (a Claude Code settings hook entry) is one of our http hooks (to ``port``, when given)."""
    url = str(hook.get("url", "")) if isinstance(hook, dict) else ""
    if not (hook.get("type") == "http" and url.startswith("http://127.0.0.1:") and "/hooks/" in url):
        return False
    return port is None or url.startswith(f"http://127.0.0.1:{port}/hooks/")


def installed(home: Path, port: int) -> str:
    """'' when the Claude Code settings file ``dexai daemon http-hooks --install`` recorded
    (:data:`INSTALL_FILE`; without a record, ``~/.claude/settings.json``, where the printed hooks
    are pasted) holds an http hook to 127.0.0.1:``port``; else why the port stays closed."""
    record = home / INSTALL_FILE
    try:
        target = Path(json.loads(record.read_text(encoding="utf-8"))["settings_file"])
    except FileNotFoundError:
        target = Path.home() / ".claude" / "settings.json"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"cannot read {record} ({exc}); run `dexai daemon http-hooks --install` again"
    try:
        current = json.loads(target.read_text(encoding="utf-8") or "{}")
    except FileNotFoundError:
        return f"not installed (no {target}; `dexai daemon http-hooks --install` turns them on)"
    except (OSError, ValueError) as exc:
        return f"cannot read {target} ({exc}); run `dexai daemon http-hooks --install` again"
    groups = [g for v in (current.get("hooks") or {}).values() if isinstance(v, list) for g in v] \
        if isinstance(current, dict) and isinstance(current.get("hooks"), dict) else []
    if any(_ours(h, port) for g in groups if isinstance(g, dict) for h in g.get("hooks") or []):
        return ""
    return (f"not installed: {target} has no http hook to 127.0.0.1:{port} (never installed, removed, or "
            "written for another daemon.http_port); `dexai daemon http-hooks --install` turns them on")


def install(home: Path, settings_file: Path, port: int) -> dict[str, Any]:
    """Write the http hooks to ``port`` into ``settings_file`` (:func:`install_http_hooks`) and
    record it in :data:`INSTALL_FILE`, so the daemon opens the port from its next start."""
    written = install_http_hooks(settings_file, port, hook_token(home))
    fd = os.open(home / INSTALL_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"settings_file": str(settings_file.resolve()), "port": port}, fh)
    return written


def uninstall(home: Path, settings_file: Path) -> int:
    """Remove our http hooks and their token from ``settings_file`` (everything else kept) and the
    :data:`INSTALL_FILE` record, so the daemon no longer opens the port. Returns the hooks removed."""
    removed = 0
    if settings_file.exists():
        current = json.loads(settings_file.read_text(encoding="utf-8") or "{}")
        if not isinstance(current, dict):
            raise ValueError(f"{settings_file} does not hold a JSON object")
        for name, groups in list((current.get("hooks") or {}).items()):
            kept = [g for g in groups if not any(_ours(h) for h in g.get("hooks", []))]
            removed += len(groups) - len(kept)
            if kept:
                current["hooks"][name] = kept
            else:
                del current["hooks"][name]
        if isinstance(current.get("env"), dict):
            current["env"].pop("DEXAI_HOOK_TOKEN", None)
        _write_settings(settings_file, current)
    with contextlib.suppress(FileNotFoundError):
        (home / INSTALL_FILE).unlink()
    return removed


class _Request:
    """One request's head: method, path, lower-cased headers and the announced body length."""

    __slots__ = ("headers", "length", "method", "path")

    def __init__(self, head: bytes) -> None:
        lines = head.decode("latin-1").split("\r\n")
        self.method, _, rest = lines[0].partition(" ")
        self.path = rest.rpartition(" ")[0] or rest
        self.headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                self.headers[name.strip().lower()] = value.strip()
        try:
            self.length = int(self.headers.get("content-length") or 0)
        except ValueError:
            self.length = -1


class _Refuse(Exception):
    """Answer ``status`` with ``answer`` and close the connection."""

    def __init__(self, status: int, answer: dict[str, Any]) -> None:
        super().__init__(status)
        self.status = status
        self.answer = answer


class HookHttpServer:
    """Serves hook events to Claude Code's http hooks for a running ``MemoryDaemon``."""

    def __init__(self, daemon: Any, port: int, *, host: str = "127.0.0.1"):
        self.daemon = daemon
        self.settings: Settings = daemon.settings
        self.host = host
        self.port = port
        self.token = ""
        #: Events handled (with a valid token), by event name.
        self.handled: collections.Counter[str] = collections.Counter()
        #: See :data:`MAX_CONNECTIONS` and :data:`READ_TIMEOUT` (set before :meth:`start`).
        self.max_connections = MAX_CONNECTIONS
        self.read_timeout = READ_TIMEOUT
        #: Connections closed to make room for a newer one, and ones refused with 503.
        self.displaced = 0
        self.refused_busy = 0
        #: Open connections, oldest first, each with ``[answering, waiting since]``.
        self._connections: dict[int, tuple[asyncio.StreamWriter, list[Any]]] = {}
        self._server: asyncio.Server | None = None

    @property
    def marker(self) -> Path:
        return self.settings.home / HTTP_FILE

    @property
    def connections(self) -> int:
        """Connections open now."""
        return len(self._connections)

    async def start_if_installed(self) -> bool:
        """:meth:`start` when the http hooks are installed for this port (:func:`installed`);
        else False and the port stays closed."""
        why = await asyncio.to_thread(installed, self.settings.home, self.port)
        if why:
            with contextlib.suppress(FileNotFoundError):
                self.marker.unlink()
            logger.info("HTTP hooks off (port %s closed): %s", self.port, why)
            return False
        return await self.start()

    async def start(self) -> bool:
        """Listen on ``host:port`` and write :data:`HTTP_FILE`; False (and a warning) when the port is
        taken or the daemon's own environment scopes memory (the command hooks then do the work)."""
        with contextlib.suppress(FileNotFoundError):
            self.marker.unlink()  # a crashed daemon's (its pid may be reused): never defer to it
        if any(os.environ.get(name) for name in SESSION_ONLY_ENV):
            logger.info("HTTP hooks off: %s is set in the daemon's environment", "/".join(SESSION_ONLY_ENV))
            return False
        self.token = hook_token(self.settings.home)
        try:
            self._server = await asyncio.start_server(self._connection, self.host, self.port,
                                                      limit=MAX_HEADER_BYTES)
        except OSError as exc:
            logger.warning("HTTP hooks off: cannot listen on %s:%s (%s); command hooks answer instead",
                           self.host, self.port, exc.strerror)
            return False
        self.port = self._server.sockets[0].getsockname()[1]
        fd = os.open(self.marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()} {self.port}\n")
        logger.info("HTTP hooks on http://%s:%s/hooks/<event>", self.host, self.port)
        return True

    async def aclose(self) -> None:
        """Remove :data:`HTTP_FILE` first (the launcher stops deferring to us), then stop listening."""
        with contextlib.suppress(FileNotFoundError):
            self.marker.unlink()
        if self._server is not None:
            self._server.close()
            for writer, answering in list(self._connections.values()):
                if not answering[0]:
                    writer.transport.abort()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            self._server = None

    # ------------------------------------------------------------------ HTTP
    def _admit(self, writer: asyncio.StreamWriter) -> list[Any] | None:
        """Room for a new connection: at the limit, the oldest one not being answered that has waited
        ``MIN_IDLE`` seconds is closed; None when there is none. Returns the connection's
        ``[answering, waiting since]``."""
        now = time.monotonic()
        if len(self._connections) >= self.max_connections:
            victim = next((key for key, (_, state) in self._connections.items()
                           if not state[0] and now - state[1] >= MIN_IDLE), None)
            if victim is None:
                return None
            self._connections.pop(victim)[0].transport.abort()
            self.displaced += 1
        answering: list[Any] = [False, now]
        self._connections[id(writer)] = (writer, answering)
        return answering

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        answering = self._admit(writer)
        if answering is None:
            self.refused_busy += 1
            with contextlib.suppress(ConnectionError, OSError):
                await self._reply(writer, 503, {"error": "too many connections"}, close=True)
            writer.close()
            return
        try:
            while True:
                try:
                    async with asyncio.timeout(self.read_timeout):
                        request = await self._read_head(reader)
                        if request is None:
                            return
                        body = await self._read_body(reader, request)
                except TimeoutError:
                    await self._reply(writer, 408, {"error": f"no whole request within {self.read_timeout:g} s"},
                                      close=True)
                    return
                except _Refuse as refused:
                    await self._reply(writer, refused.status, refused.answer, close=True)
                    return
                answering[0] = True
                status, answer = await self._dispatch(request, body)
                close = request.headers.get("connection", "").lower() == "close"
                await self._reply(writer, status, answer, close=close)
                answering[0], answering[1] = False, time.monotonic()
                if close:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            entry = self._connections.get(id(writer))
            if entry is not None and entry[1] is answering:
                del self._connections[id(writer)]
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    @staticmethod
    async def _read_head(reader: asyncio.StreamReader) -> _Request | None:
        """The next request's head; None at the end of the connection."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None
        except asyncio.LimitOverrunError:
            raise _Refuse(431, {"error": "headers too large"}) from None
        if len(head) > MAX_HEADER_BYTES:
            raise _Refuse(431, {"error": "headers too large"})
        request = _Request(head)
        if "chunked" in request.headers.get("transfer-encoding", "").lower():
            raise _Refuse(411, {"error": "send Content-Length"})
        if request.length < 0:
            raise _Refuse(400, {"error": "bad Content-Length"})
        return request

    async def _read_body(self, reader: asyncio.StreamReader, request: _Request) -> bytes | None:
        """The body of an authorised request (at most :data:`MAX_BODY_BYTES`); None when the request
        is not ours to answer, read only when small enough to discard (so the client gets its
        answer cleanly) and else left unread (the connection is then closed)."""
        if request.method != "POST":
            raise _Refuse(405, {"error": "POST a hook's JSON input"})
        prefix, _, event = request.path.partition("?")[0].rpartition("/")
        if prefix != "/hooks" or event not in EVENTS:
            raise _Refuse(404, {"error": f"no hook at {request.path}"})
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not given or not hmac.compare_digest(given.encode(), self.token.encode()):
            logger.debug("HTTP hook %s without a valid token: answered {}", event)
            if request.length > MAX_HEADER_BYTES:
                raise _Refuse(200, {})  # an unauthenticated body is never buffered
            await reader.readexactly(request.length)
            return None
        if request.length > MAX_BODY_BYTES:
            raise _Refuse(413, {"error": f"a hook's input is at most {MAX_BODY_BYTES} bytes"})
        return await reader.readexactly(request.length) if request.length else b""

    @staticmethod
    async def _reply(writer: asyncio.StreamWriter, status: int, answer: dict[str, Any], *, close: bool) -> None:
        data = json.dumps(answer, ensure_ascii=False).encode("utf-8", "replace")
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
                  408: "Request Timeout", 411: "Length Required", 413: "Payload Too Large",
                  431: "Request Header Fields Too Large", 503: "Service Unavailable"}.get(status, "Error")
        keep = "close" if close else f"keep-alive\r\nKeep-Alive: timeout={KEEP_ALIVE}"
        writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}"
                     f"\r\nConnection: {keep}\r\n\r\n".encode("latin-1") + data)
        await writer.drain()

    async def _dispatch(self, request: _Request, body: bytes | None) -> tuple[int, dict[str, Any]]:
        """The answer to an authorised request's hook event (``body`` None: not authorised, ``{}``)."""
        headers = request.headers
        event = request.path.partition("?")[0].rpartition("/")[2]
        if body is None:
            return 200, {}
        if event not in HTTP_EVENTS or headers.get("x-dexai-project") or headers.get("x-dexai-disabled"):
            return 200, {}  # the command hook handles these (see the module docstring)
        self.handled[event] += 1
        ipc = getattr(self.daemon, "ipc", None)
        if ipc is not None:
            ipc.last_request = time.monotonic()  # traffic, for the daemon's idle exit
        try:
            payload = loads(body or b"{}")
        except JsonInputError as exc:
            return 400, {"error": f"a hook's input must be a JSON object: {exc}"}
        if not isinstance(payload, dict):
            return 400, {"error": "a hook's input must be a JSON object"}
        env = {k: v for k, v in (("DEXAI_MEMORY_USER", headers.get("x-dexai-user")),
                                 ("USER", headers.get("x-dexai-login"))) if v}
        try:
            answer = await asyncio.wait_for(run_event(self.daemon, HookEvent.make(event, payload, env=env)),
                                            EVENT_TIMEOUT)
        except TimeoutError:
            logger.warning("HTTP hook %s took over %ss: answered {}", event, EVENT_TIMEOUT)
            return 200, {}
        except Exception:  # a hook never fails the agent: log and answer a no-op
            logger.exception("HTTP hook %s failed", event)
            return 200, {}
        return 200, answer if isinstance(answer, dict) else {}


#: Claude Code hook event -> our event name, for the events answered over HTTP.
HTTP_HOOK_EVENTS = {"UserPromptSubmit": "user-prompt-submit", "PostToolUse": "post-tool-use", "Stop": "stop"}
_FORWARDED_ENV = ("DEXAI_HOOK_TOKEN", "DEXAI_MEMORY_USER", "USER", "DEXAI_MEMORY_PROJECT", "DEXAI_MEMORY_DISABLED")


def http_hook_settings(port: int, token: str) -> dict[str, Any]:
    """The Claude Code settings that turn the HTTP hooks on: the token in ``env`` and, for each of
    :data:`HTTP_HOOK_EVENTS`, an http hook to ``127.0.0.1:port`` carrying it and the user's identity."""
    headers = {"Authorization": "Bearer ${DEXAI_HOOK_TOKEN}", "X-Dexai-User": "${DEXAI_MEMORY_USER}",
               "X-Dexai-Login": "${USER}", "X-Dexai-Project": "${DEXAI_MEMORY_PROJECT}",
               "X-Dexai-Disabled": "${DEXAI_MEMORY_DISABLED}"}
    hooks: dict[str, Any] = {}
    for name, event in HTTP_HOOK_EVENTS.items():
        group: dict[str, Any] = {"hooks": [{"type": "http", "url": f"http://127.0.0.1:{port}/hooks/{event}",
                                            "headers": headers, "allowedEnvVars": list(_FORWARDED_ENV),
                                            "timeout": 5}]}
        if name == "PostToolUse":
            group["matcher"] = "*"
        hooks[name] = [group]
    return {"env": {"DEXAI_HOOK_TOKEN": token}, "hooks": hooks}


def install_http_hooks(settings_file: Path, port: int, token: str) -> dict[str, Any]:
    """Merge :func:`http_hook_settings` into a Claude Code settings file (made if missing): the token
    set, our http hooks replaced (never twice), everything else kept. Returns the new settings."""
    current: dict[str, Any] = {}
    if settings_file.exists():
        loaded = json.loads(settings_file.read_text(encoding="utf-8") or "{}")
        if not isinstance(loaded, dict):
            raise ValueError(f"{settings_file} does not hold a JSON object")
        current = loaded
    wanted = http_hook_settings(port, token)
    current.setdefault("env", {}).update(wanted["env"])
    all_hooks = current.setdefault("hooks", {})
    for name, groups in wanted["hooks"].items():
        kept = [g for g in all_hooks.get(name, []) if not any(_ours(h) for h in g.get("hooks", []))]
        all_hooks[name] = kept + groups
    _write_settings(settings_file, current)
    return current


def _write_settings(settings_file: Path, current: dict[str, Any]) -> None:
    settings_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = settings_file.with_name(settings_file.name + ".tmp")
    tmp.write_text(json.dumps(current, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, settings_file)
