"""The daemon's HTTP front end for Claude Code ``http`` hooks: hook events with no process start.

A command hook is a new process per event (~100 ms on 2 cores, half of it a
bare interpreter). Claude Code (2.1.330, the CLI bundled in claude-agent-sdk)
also runs hooks of ``"type": "http"``: it POSTs the hook's JSON input to a URL
and reads the answer exactly like a command hook's stdout.

Opt-in: the plugin's ``hooks/hooks.json`` declares command hooks only, so no
prompt is ever sent to a port unless the user asks for it (on a shared
machine another user could hold the port). ``dexai daemon http-hooks
--install`` writes :func:`http_hook_settings` (the http hooks for
``UserPromptSubmit``, ``PostToolUse`` and ``Stop`` and the token) into
``~/.claude/settings.json``; Claude Code then runs both those http hooks and
the plugin's command hooks:

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
Without a valid token the answer is ``{}`` and nothing is read or written.

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
from .event import HookEvent
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
MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 16 * 1024 * 1024
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
        self._server: asyncio.Server | None = None

    @property
    def marker(self) -> Path:
        return self.settings.home / HTTP_FILE

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
            self._server = await asyncio.start_server(self._connection, self.host, self.port)
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
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            self._server = None

    # ------------------------------------------------------------------ HTTP
    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                except asyncio.LimitOverrunError:
                    await self._reply(writer, 431, {"error": "headers too large"}, close=True)
                    return
                if len(head) > MAX_HEADER_BYTES:
                    await self._reply(writer, 431, {"error": "headers too large"}, close=True)
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, _, rest = lines[0].partition(" ")
                path = rest.rpartition(" ")[0] or rest
                headers = {}
                for line in lines[1:]:
                    name, sep, value = line.partition(":")
                    if sep:
                        headers[name.strip().lower()] = value.strip()
                if "chunked" in headers.get("transfer-encoding", "").lower():
                    await self._reply(writer, 411, {"error": "send Content-Length"}, close=True)
                    return
                try:
                    length = int(headers.get("content-length") or 0)
                except ValueError:
                    length = -1
                if not 0 <= length <= MAX_BODY_BYTES:
                    await self._reply(writer, 413, {"error": "bad Content-Length"}, close=True)
                    return
                body = await reader.readexactly(length) if length else b""
                status, answer = await self._dispatch(method, path, headers, body)
                close = headers.get("connection", "").lower() == "close"
                await self._reply(writer, status, answer, close=close)
                if close:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    @staticmethod
    async def _reply(writer: asyncio.StreamWriter, status: int, answer: dict[str, Any], *, close: bool) -> None:
        data = json.dumps(answer, ensure_ascii=False).encode("utf-8", "replace")
        reason = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 411: "Length Required",
                  413: "Payload Too Large", 431: "Request Header Fields Too Large"}.get(status, "Error")
        writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}"
                     f"\r\nConnection: {'close' if close else 'keep-alive'}\r\n\r\n".encode("latin-1") + data)
        await writer.drain()

    async def _dispatch(self, method: str, path: str, headers: dict[str, str],
                        body: bytes) -> tuple[int, dict[str, Any]]:
        if method != "POST":
            return 405, {"error": "POST a hook's JSON input"}
        prefix, _, event = path.partition("?")[0].rpartition("/")
        if prefix != "/hooks" or event not in EVENTS:
            return 404, {"error": f"no hook at {path}"}
        given = headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not given or not hmac.compare_digest(given.encode(), self.token.encode()):
            logger.debug("HTTP hook %s without a valid token: answered {}", event)
            return 200, {}
        if event not in HTTP_EVENTS or headers.get("x-dexai-project") or headers.get("x-dexai-disabled"):
            return 200, {}  # the command hook handles these (see the module docstring)
        self.handled[event] += 1
        ipc = getattr(self.daemon, "ipc", None)
        if ipc is not None:
            ipc.last_request = time.monotonic()  # traffic, for the daemon's idle exit
        try:
            payload = json.loads(body or b"{}")
        except ValueError:
            return 200, {}
        if not isinstance(payload, dict):
            return 200, {}
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
        kept = [g for g in all_hooks.get(name, [])
                if not any(h.get("type") == "http" and "/hooks/" in str(h.get("url", ""))
                           and "127.0.0.1" in str(h.get("url", "")) for h in g.get("hooks", []))]
        all_hooks[name] = kept + groups
    settings_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = settings_file.with_name(settings_file.name + ".tmp")
    tmp.write_text(json.dumps(current, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, settings_file)
    return current
