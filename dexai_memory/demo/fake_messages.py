"""What the fake Messages API works with: scripted replies (:class:`Reply`,
:class:`ToolUse`), recorded requests (:class:`RecordedRequest`), and helpers that
read a request's text (:func:`texts_of`, :func:`text_of`, :func:`last_user_text`,
:func:`is_compaction_prompt`). The server itself is :mod:`.fakeapi`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: ``context_management.edits[].type`` of the server-side compaction beta
#: (``anthropic-beta: compact-2026-01-12``).
COMPACT_EDIT_TYPE = "compact_20260112"


@dataclass(frozen=True)
class ToolUse:
    """A ``tool_use`` content block the fake model emits."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    """Block id; generated (``toolu_fake_...``) when ``None``."""


@dataclass
class Reply:
    """One scripted answer of the fake model (or an injected failure).

    ``text`` becomes a text block (omitted when ``None`` or empty), followed by
    one ``tool_use`` block per entry of ``tool_uses``.  ``stop_reason`` defaults
    to ``"tool_use"`` when tools are used, else ``"end_turn"``.
    """

    text: str | None = None
    tool_uses: Sequence[ToolUse] = ()
    stop_reason: str | None = None
    input_tokens: int | None = None
    """Reported ``usage.input_tokens``; estimated from the request when ``None``."""
    output_tokens: int | None = None
    """Reported ``usage.output_tokens``; estimated from the reply when ``None``."""
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    compaction: bool = False
    """Answer with a ``compaction`` block (server-side compaction)."""
    compaction_content: str | None = None
    """Summary inside the compaction block; ``api.compaction_summary`` when ``None``."""
    status: int = 200
    """HTTP status; anything >= 400 sends an error body in Anthropic's shape."""
    error_type: str | None = None
    """Error ``type`` (e.g. ``"overloaded_error"``); derived from ``status`` when ``None``."""
    error_message: str | None = None
    raw_body: str | bytes | None = None
    """Send these bytes verbatim (with ``status``) instead of a well-formed body."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra response headers (e.g. ``{"retry-after-ms": "10"}``)."""
    delay: float = 0.0
    """Seconds to sleep before answering (for timeout tests)."""
    model: str | None = None
    """Reported model; echoes the request's model when ``None``."""


Responder = Callable[[dict[str, Any]], Reply | None]


@dataclass(frozen=True)
class RecordedRequest:
    """A request the fake server received."""

    method: str
    path: str
    """URL path without the query string, e.g. ``/v1/messages``."""
    query: dict[str, list[str]]
    headers: dict[str, str]
    """Header names lower-cased."""
    body: Any
    """Parsed JSON body (``None`` when absent or not JSON)."""
    raw_body: bytes
    received_at: float

    @property
    def is_message(self) -> bool:
        """True for ``POST /v1/messages`` (not ``count_tokens``)."""
        return self.method == "POST" and self.path == "/v1/messages"

    @property
    def api_key(self) -> str | None:
        """Credential sent via ``x-api-key`` or ``authorization: Bearer ...``."""
        if "x-api-key" in self.headers:
            return self.headers["x-api-key"]
        auth = self.headers.get("authorization", "")
        return auth[len("Bearer ") :] if auth.startswith("Bearer ") else None

    @property
    def betas(self) -> list[str]:
        """The ``anthropic-beta`` header split into its values."""
        value = self.headers.get("anthropic-beta", "")
        return [b.strip() for b in value.split(",") if b.strip()]


@dataclass
class Pending:
    reply: Reply
    when: Callable[[dict[str, Any]], bool] | None


# --------------------------------------------------------------------------- text helpers


def _block_texts(content: Any) -> Iterator[str]:
    """Yield every piece of text in a message ``content`` value."""
    if isinstance(content, str):
        yield content
        return
    if not isinstance(content, list):
        return
    for block in content:
        if isinstance(block, str):
            yield block
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            yield block["text"]
        elif kind == "tool_result":
            yield from _block_texts(block.get("content"))
        elif kind == "compaction" and isinstance(block.get("content"), str):
            yield block["content"]


def _body_of(request: RecordedRequest | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(request, RecordedRequest):
        return request.body if isinstance(request.body, dict) else {}
    return request


def texts_of(request: RecordedRequest | Mapping[str, Any]) -> list[str]:
    """All text the model received in a Messages request, in order.

    Covers the ``system`` prompt (string or text blocks), every message's
    string content or ``text`` blocks, ``tool_result`` contents, ``compaction``
    block summaries, and ``role: "system"`` entries inside ``messages``.
    """
    body = _body_of(request)
    out = list(_block_texts(body.get("system")))
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            out.extend(_block_texts(message.get("content")))
    return out


def text_of(request: RecordedRequest | Mapping[str, Any]) -> str:
    """:func:`texts_of` joined with newlines (handy for ``in`` assertions)."""
    return "\n".join(texts_of(request))


def _conversation(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``messages`` without the ``role: "system"`` entries Claude Code interleaves."""
    return [
        m
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") in ("user", "assistant")
    ]


def last_user_text(body: Mapping[str, Any]) -> str:
    """Text of the last ``user`` message (ignoring ``role: "system"`` entries)."""
    for message in reversed(_conversation(body)):
        if message.get("role") == "user":
            return "\n".join(_block_texts(message.get("content")))
    return ""


def is_compaction_prompt(body: Mapping[str, Any]) -> bool:
    """Whether the last user message is a "summarize the conversation" prompt.

    Claude Code's compaction prompt asks for an ``<analysis>`` section and a
    ``<summary>`` section; that pair is what is detected.
    """
    text = last_user_text(body)
    return "<summary>" in text and "<analysis>" in text


def compact_edit(body: Mapping[str, Any]) -> dict[str, Any] | None:
    cm = body.get("context_management")
    if not isinstance(cm, dict):
        return None
    for edit in cm.get("edits") or []:
        if isinstance(edit, dict) and edit.get("type") == COMPACT_EDIT_TYPE:
            return edit
    return None


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


# --------------------------------------------------------------------------- server
