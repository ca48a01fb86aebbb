"""A small, scriptable fake of the Anthropic Messages API, served on 127.0.0.1.

The server speaks enough of the real wire protocol that both the official
``anthropic`` Python client and the Claude Code CLI accept it:

* ``POST /v1/messages`` (with or without ``?beta=true``): a JSON ``message``
  object, or, when the body says ``"stream": true``, the server-sent event
  sequence ``message_start``, ``ping``, ``content_block_start`` /
  ``content_block_delta`` / ``content_block_stop`` per block (``text_delta``,
  ``input_json_delta`` for tool use, ``compaction_delta`` for compaction
  blocks), ``message_delta`` (stop reason and usage) and ``message_stop``.
* ``POST /v1/messages/count_tokens``: ``{"input_tokens": N}``.
* Anything else: a 404 in Anthropic's error shape
  (``{"type": "error", "error": {"type": "not_found_error", ...}}``).

Every request is recorded (``api.requests``) so tests can assert on exactly
what the model was shown.  Replies are scripted with :class:`Reply`:

1. a ``responder`` callable ``(body) -> Reply | None`` is asked first;
2. then the queue filled by :meth:`FakeMessagesAPI.enqueue` (first matching
   entry, in order);
3. otherwise a default: a compaction block when the request asks for
   compaction, the ``<analysis>/<summary>`` answer when the last user message
   is Claude Code's "summarize this conversation" prompt, else ``"OK."``.

Only the standard library is used; the server runs a
:class:`~http.server.ThreadingHTTPServer` in a daemon thread.

Example::

    with FakeMessagesAPI() as api:
        api.enqueue(Reply(text="Hi there"))
        client = anthropic.Anthropic(base_url=api.base_url, api_key="test")
        client.messages.create(model="claude-haiku-4-5", max_tokens=50,
                               messages=[{"role": "user", "content": "hey"}])
        assert texts_of(api.message_requests()[-1]) == ["hey"]
"""

from __future__ import annotations

import gzip
import itertools
import json
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .fake_messages import (
    COMPACT_EDIT_TYPE,
    Pending,
    RecordedRequest,
    Reply,
    Responder,
    ToolUse,
    compact_edit,
    estimate_tokens,
    is_compaction_prompt,
    last_user_text,
    text_of,
    texts_of,
)

__all__ = [
    "COMPACT_EDIT_TYPE",
    "DEFAULT_COMPACTION_SUMMARY",
    "FakeMessagesAPI",
    "RecordedRequest",
    "Reply",
    "Responder",
    "ToolUse",
    "is_compaction_prompt",
    "last_user_text",
    "text_of",
    "texts_of",
]


#: Default server-side compaction trigger (input tokens) when an edit gives none.
DEFAULT_COMPACT_TRIGGER = 150_000

#: Default summary returned for compaction requests: deliberately keeps nothing
#: of the conversation, so tests can prove that facts survive only through
#: dexai-memory and not through the summary.
DEFAULT_COMPACTION_SUMMARY = "The user and assistant chatted."

_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


class FakeMessagesAPI:
    """Fake Anthropic Messages API on ``127.0.0.1`` (a free port by default).

    Use as a context manager or call :meth:`start` / :meth:`stop`.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        compaction_summary: str = DEFAULT_COMPACTION_SUMMARY,
        default_text: str = "OK.",
    ) -> None:
        self.responder = responder
        self.compaction_summary = compaction_summary
        self.default_text = default_text
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._requests: list[RecordedRequest] = []
        self._queue: list[Pending] = []
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> FakeMessagesAPI:
        """Bind and serve in a background thread (idempotent)."""
        if self._server is not None:
            return self
        handler = type("_BoundHandler", (_Handler,), {"api": self})
        server = _Server((self._host, self._port), handler)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"FakeMessagesAPI:{server.server_address[1]}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> FakeMessagesAPI:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeMessagesAPI is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (what ``ANTHROPIC_BASE_URL`` should be)."""
        return f"http://{self._host}:{self.port}"

    # ------------------------------------------------------------------ scripting

    def enqueue(
        self,
        *replies: Reply,
        when: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        """Queue replies for upcoming ``/v1/messages`` requests, consumed in order.

        With ``when``, an entry is only consumed by a request whose body
        satisfies the predicate (other requests skip past it).
        """
        with self._lock:
            self._queue.extend(Pending(r, when) for r in replies)

    @property
    def pending(self) -> int:
        """Number of queued replies not consumed yet."""
        with self._lock:
            return len(self._queue)

    def clear(self) -> None:
        """Forget recorded requests and queued replies."""
        with self._lock:
            self._requests.clear()
            self._queue.clear()

    # ------------------------------------------------------------------ inspection

    @property
    def requests(self) -> list[RecordedRequest]:
        """Snapshot of every recorded request, oldest first."""
        with self._lock:
            return list(self._requests)

    def message_requests(self) -> list[RecordedRequest]:
        """Recorded ``POST /v1/messages`` requests, oldest first."""
        return [r for r in self.requests if r.is_message]

    def wait_for(
        self,
        predicate: Callable[[list[RecordedRequest]], bool],
        timeout: float = 10.0,
    ) -> list[RecordedRequest]:
        """Block until ``predicate(requests)`` holds; raise ``TimeoutError`` otherwise."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate(list(self._requests)):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("condition on recorded requests not met in time")
                self._changed.wait(remaining)
            return list(self._requests)

    # ------------------------------------------------------------------ internals

    def _record(self, request: RecordedRequest) -> None:
        with self._changed:
            self._requests.append(request)
            self._changed.notify_all()

    def _next_id(self, prefix: str) -> str:
        return f"{prefix}_fake_{next(self._ids):024x}"

    def _choose_reply(self, body: dict[str, Any]) -> Reply:
        if self.responder is not None:
            reply = self.responder(body)
            if reply is not None:
                return reply
        with self._lock:
            for i, pending in enumerate(self._queue):
                if pending.when is None or pending.when(body):
                    del self._queue[i]
                    return pending.reply
        return self.default_reply(body)

    def default_reply(self, body: Mapping[str, Any]) -> Reply:
        """The answer used when neither the responder nor the queue supplies one."""
        if isinstance(body.get("compaction"), dict):
            return Reply(compaction=True)
        edit = compact_edit(body)
        if edit is not None:
            trigger = edit.get("trigger") or {}
            threshold = trigger.get("value") if isinstance(trigger, dict) else None
            if estimate_tokens(text_of(body)) >= int(threshold or DEFAULT_COMPACT_TRIGGER):
                # without pause_after_compaction the model goes on to answer
                return Reply(compaction=True, text=self.default_text)
        if is_compaction_prompt(body):
            return Reply(
                text=(
                    "<analysis>\nThe conversation was reviewed.\n</analysis>\n"
                    f"<summary>\n{self.compaction_summary}\n</summary>"
                )
            )
        return Reply(text=self.default_text)

    def build_message(self, body: Mapping[str, Any], reply: Reply) -> dict[str, Any]:
        """The JSON ``message`` object for ``reply`` to a request ``body``."""
        content: list[dict[str, Any]] = []
        stop_reason = reply.stop_reason
        if reply.compaction:
            summary = reply.compaction_content
            content.append(
                {
                    "type": "compaction",
                    "content": self.compaction_summary if summary is None else summary,
                }
            )
            edit = compact_edit(body)
            pause = isinstance(body.get("compaction"), dict) or (
                edit is None or bool(edit.get("pause_after_compaction"))
            )
            if pause:
                stop_reason = stop_reason or "compaction"
        if reply.text and not (reply.compaction and stop_reason == "compaction"):
            content.append({"type": "text", "text": reply.text})
        for tool in reply.tool_uses:
            content.append(
                {
                    "type": "tool_use",
                    "id": tool.id or self._next_id("toolu"),
                    "name": tool.name,
                    "input": dict(tool.input),
                }
            )
        if stop_reason is None:
            stop_reason = "tool_use" if reply.tool_uses else "end_turn"
        out_text = json.dumps(content)
        usage = {
            "input_tokens": (
                reply.input_tokens
                if reply.input_tokens is not None
                else estimate_tokens(text_of(body))
            ),
            "output_tokens": (
                reply.output_tokens
                if reply.output_tokens is not None
                else estimate_tokens(out_text)
            ),
            "cache_creation_input_tokens": reply.cache_creation_input_tokens,
            "cache_read_input_tokens": reply.cache_read_input_tokens,
            "service_tier": "standard",
        }
        return {
            "id": self._next_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": reply.model or str(body.get("model") or "claude-fake"),
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }


def stream_events(message: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The ``(event, data)`` SSE sequence the real API sends for ``message``."""
    usage = dict(message["usage"])
    start_usage = {**usage, "output_tokens": min(1, int(usage["output_tokens"]))}
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                **message,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": start_usage,
            },
        },
    )
    yield "ping", {"type": "ping"}
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _chunks(block["text"])]
        elif kind == "tool_use":
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in [""] + list(_chunks(json.dumps(block["input"])))
            ]
        elif kind == "compaction":
            start = {"type": "compaction", "content": None}
            deltas = [{"type": "compaction_delta", "content": block["content"]}]
        else:  # pragma: no cover - only the kinds above are ever built
            raise ValueError(f"cannot stream block type {kind!r}")
        yield (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": start,
            },
        )
        for delta in deltas:
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": delta,
                },
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {
                "input_tokens": usage["input_tokens"],
                "output_tokens": usage["output_tokens"],
                "cache_creation_input_tokens": usage["cache_creation_input_tokens"],
                "cache_read_input_tokens": usage["cache_read_input_tokens"],
            },
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _chunks(text: str, size: int = 24) -> Iterable[str]:
    if not text:
        return [""]
    return [text[i : i + size] for i in range(0, len(text), size)]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet when a client hangs up early (timeouts, killed CLIs)."""
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """Request handler; ``api`` is bound by :meth:`FakeMessagesAPI.start`."""

    api: FakeMessagesAPI
    protocol_version = "HTTP/1.1"
    server_version = "FakeMessagesAPI/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Silence the default stderr access log."""

    # -------------------------------------------------------------- plumbing

    def _read_body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        encoding = (self.headers.get("content-encoding") or "").lower().strip()
        if encoding == "gzip":
            raw = gzip.decompress(raw)
        elif encoding == "deflate":
            raw = zlib.decompress(raw)
        return raw

    def _record(self, method: str) -> RecordedRequest:
        url = urlsplit(self.path)
        raw = self._read_body() if method == "POST" else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = RecordedRequest(
            method=method,
            path=url.path,
            query=parse_qs(url.query),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            raw_body=raw,
            received_at=time.time(),
        )
        self.api._record(request)
        return request

    def _send(
        self,
        status: int,
        payload: bytes,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(payload)))
        self.send_header("request-id", self.api._next_id("req"))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _send_json(self, status: int, obj: Any, headers: Mapping[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode(), headers=headers)

    def _send_error(
        self,
        status: int,
        error_type: str | None = None,
        message: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        kind = error_type or _ERROR_TYPES.get(status, "api_error")
        if message is None:
            try:
                message = HTTPStatus(status).phrase
            except ValueError:  # e.g. 529, which http.HTTPStatus does not know
                message = "Overloaded" if status == 529 else kind
        self._send_json(
            status,
            {
                "type": "error",
                "error": {"type": kind, "message": message},
                "request_id": self.api._next_id("req"),
            },
            headers=headers,
        )

    def _send_stream(self, message: Mapping[str, Any], headers: Mapping[str, str]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", self.api._next_id("req"))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        for event, data in stream_events(message):
            chunk = f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # -------------------------------------------------------------- routes

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        request = self._record("GET")
        self._send_error(404, "not_found_error", f"Not found: {request.path}")

    def do_HEAD(self) -> None:  # noqa: N802
        request = self._record("HEAD")
        self._send_error(404, "not_found_error", f"Not found: {request.path}")

    def do_POST(self) -> None:  # noqa: N802
        request = self._record("POST")
        if request.path not in ("/v1/messages", "/v1/messages/count_tokens"):
            self._send_error(404, "not_found_error", f"Not found: {request.path}")
            return
        if not isinstance(request.body, dict):
            self._send_error(400, "invalid_request_error", "Request body must be a JSON object")
            return
        if request.path == "/v1/messages/count_tokens":
            self._send_json(200, {"input_tokens": estimate_tokens(text_of(request.body))})
            return
        self._answer(request.body)

    def _answer(self, body: dict[str, Any]) -> None:
        try:
            reply = self.api._choose_reply(body)
        except Exception as exc:  # a broken responder must not hang the client
            self._send_error(500, "api_error", f"fake responder failed: {exc!r}")
            return
        if reply.delay > 0:
            time.sleep(reply.delay)
        if reply.raw_body is not None:
            raw = reply.raw_body.encode() if isinstance(reply.raw_body, str) else reply.raw_body
            content_type = "text/event-stream" if body.get("stream") else "application/json"
            self._send(reply.status, raw, content_type, reply.headers)
            return
        if reply.status >= 400:
            self._send_error(reply.status, reply.error_type, reply.error_message, reply.headers)
            return
        message = self.api.build_message(body, reply)
        if body.get("stream"):
            self._send_stream(message, reply.headers)
        else:
            self._send_json(reply.status, message, reply.headers)
