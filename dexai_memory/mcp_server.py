"""The memory tools over stdio: the Claude Code plugin's MCP server (``dexai mcp``).

Run as ``dexai mcp`` or ``python -m dexai_memory.mcp_server``; the plugin's
``.mcp.json`` starts it through ``hooks/dexai-hook mcp``. Claude Code starts
one per session and waits for its ``initialize`` answer before the first
prompt, so it is a thin client of the daemon written with the standard
library only: no provider, no embedder, no MCP SDK of its own.

* **The protocol.** JSON-RPC 2.0, one message per line on stdin/stdout (the
  MCP stdio transport): ``initialize`` (the client's ``protocolVersion`` when
  it is one of :data:`PROTOCOL_VERSIONS`, else the newest), ``ping``,
  ``tools/list`` (:data:`~dexai_memory.agent_tools.specs.TOOL_SPECS`, the same
  names, descriptions and schemas as the Agent SDK's in-process server) and
  ``tools/call``; notifications get no answer, an unknown method is
  ``-32601``, a line that is not JSON ``-32700``. Bad input never stops it and
  every request is answered: a line is decoded by
  :func:`~dexai_memory.text.json_input.loads` (nesting 100,000 deep is a
  ``-32700``, a lone surrogate becomes U+FFFD), one over :data:`MAX_MESSAGE`
  bytes is a ``-32700`` too; end of input (or SIGTERM) ends it with exit code 0.
* **Tool calls go to the daemon.** ``tools/call`` is forwarded to the daemon's
  ``tool.call`` socket operation (:mod:`dexai_memory.agent_tools.ops`), which
  answers with the MCP result: the one writer of the store decides, with the
  same wording as every other front end. The user is
  :func:`~dexai_memory.daemon.session_state.user_id_for` (``$DEXAI_MEMORY_USER``, else
  the login name), recall's scope :func:`~dexai_memory.daemon.session_state.project_for`
  (``$DEXAI_MEMORY_PROJECT``, else all of the user's memories) and
  ``remember`` stores under :func:`~dexai_memory.daemon.session_state.project_key`, as
  the hooks do; the session is ``$CLAUDE_CODE_SESSION_ID``.
* **No daemon answering.** The server starts one
  (:func:`~dexai_memory.daemon.control.ensure_daemon`), waits up to
  :data:`START_WAIT` seconds for it and sends the call once more; when none
  answers (autostart off, a broken store) the call is a tool error saying
  memory is unavailable and why. A broken ``memory.yaml`` is a tool error too;
  the next call reads it again.

Everything but the tool specs and the version is imported on the first tool
call. Logging goes to stderr (Claude Code keeps an MCP server's stderr in its
debug log), never to stdout, which carries the protocol.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, BinaryIO, NamedTuple

from .agent_tools.specs import TOOL_SPECS
from .text.json_input import JsonInputError, loads
from .version import __version__

#: Name of the server in the plugin's ``.mcp.json`` (and its MCP ``serverInfo``).
PLUGIN_SERVER_NAME = "dexai-memory"
#: Environment variable Claude Code sets to the current session id.
SESSION_ENV = "CLAUDE_CODE_SESSION_ID"
#: MCP revisions this server speaks through the ``initialize`` handshake, oldest to newest.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
#: Seconds to wait for a daemon started because none answered.
START_WAIT = 20.0
#: Seconds the daemon has to answer one tool call (a write may wait behind an extraction batch).
CALL_TIMEOUT = 120.0
#: How long, at the end of input, calls still under way get to reach the daemon.
EXIT_GRACE = 5.0
#: Longest message (line) read; the rest of a longer one is skipped and answered a parse error.
MAX_MESSAGE = 16 * 1024 * 1024

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


def _log(level: str, message: str, *args: Any) -> None:
    """One line on stderr (``logging`` would add ~5 ms to every session's start)."""
    sys.stderr.write(f"dexai_memory.mcp_server {level}: {message % args if args else message}\n")
    sys.stderr.flush()


def tool_result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    """An MCP ``CallToolResult`` with one text block."""
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


class Identity(NamedTuple):
    """Who and where the tools run for, as the daemon's ``tool.call`` takes it."""

    user_id: str
    project: str | None
    capture_project: str | None
    session_id: str | None


def identity_from_env() -> Identity:
    """User, project and session exactly as the command hooks see them."""
    from .daemon.session_state import project_for, project_key, user_id_for

    payload: dict[str, Any] = {"session_id": os.environ.get(SESSION_ENV) or None}
    return Identity(user_id_for(), project_for(), project_key(payload), payload["session_id"])


class DaemonTools:
    """Runs tool calls on the daemon of the configured data directory (:meth:`call`).

    The settings are read again for every call (a fixed ``memory.yaml`` applies
    at once); the identity is worked out on the first call.
    """

    def __init__(self, identity: Identity | None = None, *, start_wait: float = START_WAIT,
                 call_timeout: float = CALL_TIMEOUT) -> None:
        self._identity = identity
        self.start_wait = start_wait
        self.call_timeout = call_timeout

    @property
    def identity(self) -> Identity:
        if self._identity is None:
            self._identity = identity_from_env()
        return self._identity

    def call(self, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """The MCP result of tool ``name``; a tool error when memory is unavailable. Never raises
        for our own errors and never waits longer than the daemon's start plus ``call_timeout``."""
        from .config import load_user_settings
        from .errors import DexaiMemoryError

        try:
            settings = load_user_settings()
        except DexaiMemoryError as exc:
            return tool_result(f"Error: {exc}", is_error=True)
        request = {"op": "tool.call", "name": name, "arguments": arguments or {}, **self.identity._asdict()}
        answer, why = self._ask(settings, request)
        if answer is None:
            _log("WARNING", "%s: memory is unavailable: %s", name, why)
            return tool_result(f"Error: memory is unavailable: {why}", is_error=True)
        return {"content": answer["content"], "isError": bool(answer.get("isError"))}

    def _ask(self, settings: Any, request: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
        """The daemon's answer to ``request`` (starting a daemon and asking once more when none
        answers), or None and why not."""
        from .daemon.ipc import ipc_request

        started = time.monotonic()
        answer = ipc_request(settings.socket_path, request, self.call_timeout)
        if answer is None:
            if time.monotonic() - started >= self.call_timeout - 0.1:
                return None, f"the memory daemon did not answer within {self.call_timeout:.0f} s"
            why = self._start(settings)  # nothing listens: the request never reached a daemon
            if why:
                return None, why
            answer = ipc_request(settings.socket_path, request, self.call_timeout)
        elif _refused(answer) and self._replace_stale(settings, answer):
            answer = ipc_request(settings.socket_path, request, self.call_timeout)
        if answer is None:
            return None, "the memory daemon stopped answering (see daemon.log in the data directory)"
        if _refused(answer):
            return None, f"the memory daemon refused the call: {answer.get('error') or answer}"
        return answer, ""

    def _start(self, settings: Any) -> str:
        """Start a daemon and wait until it answers; '' when one does, else why not."""
        from .daemon.control import (
            AUTOSTART_ENV,
            autostart_enabled,
            ensure_daemon,
            log_path,
            wait_until_answering,
        )

        if not autostart_enabled(settings):
            return (f"no memory daemon answers on {settings.socket_path} and autostart is off "
                    f"(daemon.autostart, ${AUTOSTART_ENV}); start one with `dexai daemon start`")
        ensure_daemon(settings, reason="an MCP tool call found no daemon")
        if wait_until_answering(settings, self.start_wait):
            return ""
        last = _last_line(log_path(settings))
        return (f"no memory daemon answered on {settings.socket_path} within {self.start_wait:.0f} s of starting one"
                + (f"; the last line of {log_path(settings)}: {last}" if last else ""))

    def _replace_stale(self, settings: Any, answer: dict[str, Any]) -> bool:
        """A daemon of another package version refused: replace it and wait for ours. True when
        a daemon of this version answers now."""
        from .daemon.control import replace_if_stale
        from .daemon.ipc import ipc_request

        if not replace_if_stale(settings, answer):
            return False
        deadline = time.monotonic() + self.start_wait
        while time.monotonic() < deadline:
            pong = ipc_request(settings.socket_path, {"op": "ping"}, 0.5)
            if pong is not None and pong.get("version") == __version__:
                return True
            time.sleep(0.1)
        return False


def _refused(answer: dict[str, Any]) -> bool:
    return answer.get("ok") is False or not isinstance(answer.get("content"), list)


def _last_line(path: Any, size: int = 4096) -> str:
    """The last non-empty line of a log file ('' when there is none)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - size))
            lines = f.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1].strip()[:500] if lines else ""


class RpcError(Exception):
    """A JSON-RPC error answer (``code``, ``message``)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _error(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


class StdioServer:
    """The MCP server over a pair of binary streams, one JSON-RPC message per line.

    :meth:`serve` reads until end of input; ``tools/call`` runs in a thread of
    its own (a call that waits for a daemon to start does not hold up ``ping``
    or other calls), everything else is answered at once.
    """

    def __init__(self, tools: DaemonTools | None = None, *, stdin: BinaryIO | None = None,
                 stdout: BinaryIO | None = None) -> None:
        self.tools = tools if tools is not None else DaemonTools()
        self._in = stdin if stdin is not None else sys.stdin.buffer
        self._out = stdout if stdout is not None else sys.stdout.buffer
        self._write_lock = threading.Lock()
        self._calls: list[threading.Thread] = []
        self._methods: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "initialize": self.initialize, "ping": lambda params: {}, "tools/list": self.list_tools,
            "tools/call": self.call_tool}

    # ------------------------------------------------------------------ methods
    def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        asked = params.get("protocolVersion")
        return {"protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": PLUGIN_SERVER_NAME, "version": __version__}}

    def list_tools(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"tools": [spec.to_wire() for spec in TOOL_SPECS]}

    def call_tool(self, params: dict[str, Any]) -> dict[str, Any]:
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str) or not name:
            raise RpcError(INVALID_PARAMS, "tools/call needs the tool's name (a string)")
        if arguments is not None and not isinstance(arguments, dict):
            raise RpcError(INVALID_PARAMS, "tools/call arguments must be an object")
        try:
            return self.tools.call(name, arguments)
        except Exception as exc:  # a tool call never takes the server down
            _log("ERROR", "%s tool call crashed: %s: %s", name, type(exc).__name__, exc)
            return tool_result(f"Error: {name} failed: {type(exc).__name__}: {exc}", is_error=True)

    # ------------------------------------------------------------------ messages
    def answer(self, message: Any) -> dict[str, Any] | None:
        """The answer to one decoded message (None for a notification or a client's response)."""
        if not isinstance(message, dict):
            return _error(None, INVALID_REQUEST, "a message is a JSON object")
        msg_id = message.get("id")
        is_request = "id" in message
        method = message.get("method")
        if not isinstance(method, str):
            if not is_request or "result" in message or "error" in message:
                return None  # a response to a request we never sent, or a malformed notification
            return _error(msg_id, INVALID_REQUEST, "a request needs a string 'method'")
        if message.get("jsonrpc") != "2.0" and is_request:
            return _error(msg_id, INVALID_REQUEST, "'jsonrpc' must be \"2.0\"")
        if not is_request:
            return None  # notifications/initialized, notifications/cancelled, ...: nothing to answer
        handler = self._methods.get(method)
        if handler is None:
            return _error(msg_id, METHOD_NOT_FOUND, f"Method not found: {method}")
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return _error(msg_id, INVALID_PARAMS, "params must be an object")
        try:
            return {"jsonrpc": "2.0", "id": msg_id, "result": handler(params)}
        except RpcError as exc:
            return _error(msg_id, exc.code, exc.message)
        except Exception as exc:  # a bug must not take the server down
            _log("ERROR", "%s crashed: %s: %s", method, type(exc).__name__, exc)
            return _error(msg_id, INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}")

    def handle_line(self, line: bytes) -> None:
        """Decode one line and answer it (a ``tools/call`` in a thread of its own)."""
        if not line.strip():
            return
        try:
            message = loads(line)
        except JsonInputError as exc:  # not UTF-8, not JSON, or nested too deep
            self.send(_error(None, PARSE_ERROR, f"Parse error: {exc}"))
            return
        if isinstance(message, list):  # a JSON-RPC batch: answered together, in order
            answers = [a for a in (self.answer(m) for m in message) if a is not None]
            if not message:
                self.send(_error(None, INVALID_REQUEST, "an empty batch"))
            elif answers:
                self.send(answers)
            return
        if isinstance(message, dict) and message.get("method") == "tools/call" and "id" in message:
            thread = threading.Thread(target=lambda: self.send(self.answer(message)), name="tools/call",
                                      daemon=True)
            self._calls = [t for t in self._calls if t.is_alive()] + [thread]
            thread.start()
            return
        self.send(self.answer(message))

    def send(self, payload: dict[str, Any] | list[Any] | None) -> None:
        if payload is None:
            return
        try:
            data = json.dumps(payload).encode() + b"\n"
        except (TypeError, ValueError) as exc:  # an answer that cannot be written is a bug: say so
            msg_id = payload.get("id") if isinstance(payload, dict) else None
            data = json.dumps(_error(msg_id, INTERNAL_ERROR, f"internal error: {type(exc).__name__}")).encode() + b"\n"
        with self._write_lock:
            try:
                self._out.write(data)
                self._out.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass  # the client is gone; the end of input follows

    def serve(self) -> None:
        """Answer messages until end of input; calls still under way get :data:`EXIT_GRACE` seconds."""
        while True:
            line = self._in.readline(MAX_MESSAGE + 1)
            if not line:
                break
            if len(line) > MAX_MESSAGE and not line.endswith(b"\n"):
                while (rest := self._in.readline(MAX_MESSAGE)) and not rest.endswith(b"\n"):
                    pass  # the rest of a message too long to read
                self.send(_error(None, PARSE_ERROR, f"Parse error: a message is at most {MAX_MESSAGE} bytes"))
                continue
            try:
                self.handle_line(line)
            except Exception as exc:  # a bug must not end the server: the client gets an answer
                _log("ERROR", "a message crashed the server: %s: %s", type(exc).__name__, exc)
                self.send(_error(None, INTERNAL_ERROR, f"internal error: {type(exc).__name__}"))
        deadline = time.monotonic() + EXIT_GRACE
        for thread in self._calls:
            thread.join(max(0.0, deadline - time.monotonic()))


def _stop(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def main() -> int:
    """Entry point of ``dexai mcp`` and ``python -m dexai_memory.mcp_server``; returns the exit code."""
    import signal

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _stop)
    try:
        StdioServer().serve()
    except (SystemExit, KeyboardInterrupt):
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
