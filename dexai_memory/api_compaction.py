"""Compaction for loops that call the Messages API directly (server-side compaction, with memory).

Server-side compaction
======================

:func:`create_with_memory` wraps ``client.beta.messages.create`` (an
``anthropic.AsyncAnthropic``). It sends the ``compact-2026-01-12`` beta and a
``context_management`` edit::

    {"type": "compact_20260112",
     "trigger": {"type": "input_tokens", "value": compaction.server_side_trigger_tokens},
     "instructions": compaction.instructions,
     "pause_after_compaction": compaction.pause_after_compaction}

When the API pauses after compacting (``stop_reason == "compaction"``; the
response holds the ``compaction`` block), it

1. flushes the extraction queue (when given a daemon: ``await daemon.flush()``),
   so everything said before the summary is stored;
2. appends the response as an assistant message (the compaction block, sent
   back verbatim, as the API requires; the API drops everything before it);
3. appends a user message: ``"[Memory context restored]\\n"`` + the L1 memory
   block for the latest user message, followed by that message's own text
   (so the model still sees the question it was answering);
4. sends the request again, and returns when the model stops for another
   reason (at most ``max_compactions`` pauses per call).

The result (:class:`CompactionRun`) has the final ``response``, the
``messages`` the final request was sent with (append ``response`` to them and
continue your loop with that list), and a log of what happened.

Proactive compaction
====================

:class:`ProactiveCompaction` decides when to compact before the API would:
manual request, token threshold (``proactive_threshold_pct`` of
``context_window_tokens``), task completion, topic shift (the current message's
embedding against the centroid of the last 3 messages, under
``topic_shift_threshold``) and idle (``idle_minutes`` since the last activity).
:class:`CompactingClient` ties both together: it remembers the last request's
input tokens and time, and when a proactive reason fires it lowers the
compaction edit's trigger for the next request to the current context size
(never under the API's minimum of :data:`API_MIN_TRIGGER_TOKENS`), so the
server compacts now, and memory is re-injected as above.

Streaming is not supported (``stream=True`` raises ``TypeError``); API errors
(``anthropic.APIError``) propagate unchanged.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import DexaiMemoryError
from .models import utcnow
from .providers.base import MemoryProvider
from .recall.reinjection import l1_block
from .supersession.rules import content_words

if TYPE_CHECKING:
    from .config import CompactionConfig, Settings
    from .embeddings import Embedder

logger = logging.getLogger(__name__)

#: ``anthropic-beta`` value of server-side compaction.
COMPACTION_BETA = "compact-2026-01-12"
#: ``context_management.edits[].type`` of server-side compaction.
COMPACT_EDIT_TYPE = "compact_20260112"
#: The API refuses compaction triggers under this many input tokens.
API_MIN_TRIGGER_TOKENS = 50_000
#: First line of the user message that re-injects memory after a compaction.
MEMORY_RESTORED_HEADER = "[Memory context restored]"
#: Shown when the user has no memories yet (a continuation needs a user message).
NO_MEMORIES_TEXT = "(no stored memories yet)"
#: Content block types of the last user message that are carried over after the memory block.
_CARRIED_BLOCK_TYPES = frozenset({"text", "image", "document"})


def compaction_edit(config: CompactionConfig, *, trigger_tokens: int | None = None) -> dict[str, Any]:
    """The ``compact_20260112`` edit for ``context_management.edits``."""
    return {
        "type": COMPACT_EDIT_TYPE,
        "trigger": {"type": "input_tokens", "value": int(trigger_tokens or config.server_side_trigger_tokens)},
        "instructions": config.instructions,
        "pause_after_compaction": bool(config.pause_after_compaction),
    }


def _merge_betas(betas: Any) -> list[str]:
    out = [str(b) for b in (betas or [])]
    return out if COMPACTION_BETA in out else [*out, COMPACTION_BETA]


def _merge_context_management(existing: Any, edit: Mapping[str, Any]) -> dict[str, Any]:
    """The caller's ``context_management`` with our edit added (theirs wins if it has one)."""
    cm = dict(existing or {})
    edits = [dict(e) for e in cm.get("edits") or []]
    if not any(e.get("type") == COMPACT_EDIT_TYPE for e in edits):
        edits.append(dict(edit))
    cm["edits"] = edits
    return cm


# --------------------------------------------------------------------------- message helpers


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def message_text(message: Mapping[str, Any] | Any) -> str:
    """All plain text of one message param (string content, text blocks, tool results)."""
    content = _get(message, "content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or []:
        kind = _get(block, "type")
        if kind == "text":
            parts.append(str(_get(block, "text") or ""))
        elif kind == "tool_result":
            inner = _get(block, "content")
            parts.append(inner if isinstance(inner, str) else message_text({"content": inner}))
    return "\n".join(p for p in parts if p)


def last_user_message(messages: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The last message with ``role == "user"``, or None."""
    for message in reversed(messages):
        if _get(message, "role") == "user":
            return message
    return None


def _carried_blocks(message: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The user's own content (text, images, documents) of ``message``; tool results are not
    carried over because the tool calls they answer were compacted away."""
    if message is None:
        return []
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    return [dict(b) for b in content or [] if isinstance(b, Mapping) and b.get("type") in _CARRIED_BLOCK_TYPES]


def _block_param(block: Any) -> dict[str, Any]:
    if isinstance(block, Mapping):
        return dict(block)
    to_dict = getattr(block, "to_dict", None)
    if callable(to_dict):
        return dict(to_dict())
    return dict(block.model_dump(exclude_unset=True))


def _provider_of(memory: MemoryProvider | Any) -> MemoryProvider:
    if isinstance(memory, MemoryProvider):
        return memory
    provider = getattr(memory, "provider", None)
    if isinstance(provider, MemoryProvider):
        return provider
    raise TypeError(f"expected a MemoryProvider or an object with a .provider, got {type(memory).__name__}")


async def build_memory_block(memory: MemoryProvider | Any, *, user_id: str, query: str | None,
                             settings: Settings, project: str | None = None, session_id: str | None = None,
                             visible: Sequence[str] = ()) -> str:
    """The post-compaction block (:func:`dexai_memory.recall.reinjection.l1_block` with
    ``after_compaction``: filled to the budget by priority) for ``query``, leaving
    out relevant memories already ``visible`` (the compaction summary)."""
    block = await l1_block(_provider_of(memory), user_id, settings, query=query, recent=visible,
                           project=project, session_id=session_id, after_compaction=True)
    return block.text


# --------------------------------------------------------------------------- server-side compaction


@dataclass(frozen=True, slots=True)
class CompactionEvent:
    """One compaction pause and what was done about it."""

    request_index: int
    summary: str | None
    memory_block: str
    flushed: bool
    input_tokens: int | None = None
    flush_error: str | None = None


@dataclass(slots=True)
class CompactionRun:
    """What :func:`create_with_memory` did.

    ``messages`` are the messages the final request was sent with; append
    ``response`` (``response.to_param()``) and the next user turn to continue.
    """

    response: Any
    messages: list[dict[str, Any]]
    requests: int = 0
    events: list[CompactionEvent] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    proactive_reason: str | None = None

    @property
    def compacted(self) -> bool:
        return bool(self.events)


async def _flush(memory: Any) -> tuple[bool, str | None]:
    flush = getattr(memory, "flush", None)
    if isinstance(memory, MemoryProvider) or not callable(flush):
        return False, None
    try:
        await flush()
    except DexaiMemoryError as exc:
        logger.warning("flushing the extraction queue before re-injection failed: %s", exc)
        return False, str(exc)
    return True, None


def _input_tokens(response: Any) -> int | None:
    usage = getattr(response, "usage", None)
    if usage is None:
        return None
    total = 0
    for name in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        total += int(getattr(usage, name, 0) or 0)
    return total


async def create_with_memory(client: Any, *, messages: Sequence[Mapping[str, Any]], user_id: str,
                             memory: MemoryProvider | Any, settings: Settings, project: str | None = None,
                             session_id: str | None = None, max_compactions: int = 3, trigger_tokens: int | None = None,
                             **kwargs: Any) -> CompactionRun:
    """``client.beta.messages.create(**kwargs)`` with server-side compaction and memory re-injection.

    ``client`` is an ``anthropic.AsyncAnthropic``; ``memory`` a started
    provider, or a daemon (anything with ``.provider`` and an async
    ``flush()``). ``trigger_tokens`` overrides the configured trigger for this
    call (used for proactive compaction). Other keyword arguments (``model``,
    ``max_tokens``, ``system``, ``tools``, ``betas``, ``context_management``,
    ...) are passed through; ``betas`` and ``context_management`` are merged
    with ours. See the module docstring for the flow.
    """
    if kwargs.get("stream"):
        raise TypeError("create_with_memory does not support stream=True")
    config = settings.compaction
    msgs: list[dict[str, Any]] = [dict(m) for m in messages]
    run = CompactionRun(response=None, messages=msgs)
    if config.use_server_side:
        kwargs["betas"] = _merge_betas(kwargs.get("betas"))
        edit = compaction_edit(config, trigger_tokens=trigger_tokens)
        kwargs["context_management"] = _merge_context_management(kwargs.get("context_management"), edit)
        run.log.append(f"compaction edit: trigger {edit['trigger']['value']} input tokens, "
                       f"pause_after_compaction={edit['pause_after_compaction']}")
    while True:
        response = await client.beta.messages.create(messages=msgs, **kwargs)
        run.requests += 1
        run.response, run.messages = response, msgs
        tokens = _input_tokens(response)
        compaction_blocks = [b for b in response.content if _get(b, "type") == "compaction"]
        if response.stop_reason != "compaction":
            if compaction_blocks:
                run.log.append(f"request {run.requests}: compacted without a pause; memory is not re-injected")
            run.log.append(f"request {run.requests}: stop_reason={response.stop_reason}, input_tokens={tokens}")
            return run
        if len(run.events) >= max_compactions:
            run.log.append(f"request {run.requests}: compaction pause #{len(run.events) + 1} exceeds "
                           f"max_compactions={max_compactions}; returning the paused response")
            logger.warning("more than %s compaction pauses in one call; giving up", max_compactions)
            return run
        summary = _get(compaction_blocks[0], "content") if compaction_blocks else None
        run.log.append(f"request {run.requests}: paused after compaction (input_tokens={tokens}, "
                       f"summary {len(summary or '')} chars)")
        flushed, flush_error = await _flush(memory)
        if flushed:
            run.log.append("extraction queue flushed")
        elif flush_error:
            run.log.append(f"extraction queue flush failed: {flush_error}")
        last_user = last_user_message(msgs)
        query = message_text(last_user) if last_user is not None else None
        block = await build_memory_block(memory, user_id=user_id, query=query or None, settings=settings,
                                         project=project, session_id=session_id,
                                         visible=[summary] if summary else ())
        content: list[dict[str, Any]] = [{"type": "text", "text": f"{MEMORY_RESTORED_HEADER}\n"
                                          f"{block or NO_MEMORIES_TEXT}"}]
        content += _carried_blocks(last_user)
        msgs = [*msgs, {"role": "assistant", "content": [_block_param(b) for b in response.content]},
                {"role": "user", "content": content}]
        run.events.append(CompactionEvent(run.requests, summary, block, flushed, tokens, flush_error))
        run.log.append(f"memory block re-injected ({len(block)} chars); continuing")
        logger.info("compaction pause for user %s: re-injected %s chars of memory", user_id, len(block))


# --------------------------------------------------------------------------- proactive compaction


class CompactionReason(enum.StrEnum):
    """Why compacting now is a good idea."""

    MANUAL = "manual"
    TOKEN_THRESHOLD = "token_threshold"
    TASK_COMPLETED = "task_completed"
    TOPIC_SHIFT = "topic_shift"
    IDLE = "idle"


@dataclass(frozen=True, slots=True)
class ConversationState:
    """What :class:`ProactiveCompaction` looks at.

    ``input_tokens``: the current context size (the last response's input
    tokens). ``recent_messages``: texts of the messages before the current one
    (the last ``window`` are used). ``current_message``: the new user message.
    """

    input_tokens: int = 0
    recent_messages: Sequence[str] = ()
    current_message: str | None = None
    task_completed: bool = False
    manual: bool = False
    last_activity: datetime | None = None
    now: datetime | None = None


@dataclass(frozen=True, slots=True)
class ProactiveDecision:
    """A reason to compact now, with a readable detail."""

    reason: CompactionReason
    detail: str


class ProactiveCompaction:
    """Decides when to compact before the API would (checked in this order):

    * **manual** - the user asked (``/compact``);
    * **token threshold** - ``input_tokens >= proactive_threshold_pct`` % of
      ``context_window_tokens``;
    * **task completion** - a task was just marked done;
    * **topic shift** - cosine similarity between the current message and the
      centroid of the last ``window`` messages is under
      ``topic_shift_threshold`` (needs an embedder, at least one earlier
      message and ``min_topic_words`` content words in the current one, so
      "ok thanks" is not a shift);
    * **idle** - at least ``idle_minutes`` since the last activity (0 = off).

    Task completion, topic shift and idle only count when the context holds at
    least ``min_context_tokens`` tokens: compacting a small context gains nothing.
    """

    def __init__(self, config: CompactionConfig, embedder: Embedder | None = None, *, window: int = 3,
                 min_context_tokens: int = 5_000, min_topic_words: int = 4) -> None:
        self.config = config
        self.embedder = embedder
        self.window = window
        self.min_context_tokens = min_context_tokens
        self.min_topic_words = min_topic_words

    @property
    def threshold_tokens(self) -> int:
        """Input tokens at which the token-threshold trigger fires."""
        return int(self.config.context_window_tokens * self.config.proactive_threshold_pct / 100)

    async def topic_similarity(self, recent: Sequence[str], current: str) -> float | None:
        """Cosine similarity of ``current`` with the centroid of the last ``window`` of ``recent``."""
        recent = [t for t in recent if t and t.strip()][-self.window:]
        if self.embedder is None or not recent or not current.strip():
            return None
        vectors = await self.embedder.aembed_batch([*recent, current])
        centroid = vectors[:-1].mean(axis=0)
        norm = float(np.linalg.norm(centroid))
        if norm == 0.0:
            return None
        return float(np.dot(centroid / norm, vectors[-1]))

    async def evaluate(self, state: ConversationState) -> ProactiveDecision | None:
        """The first reason that applies to ``state``, or None."""
        if state.manual:
            return ProactiveDecision(CompactionReason.MANUAL, "requested")
        if state.input_tokens >= self.threshold_tokens:
            return ProactiveDecision(CompactionReason.TOKEN_THRESHOLD,
                                     f"{state.input_tokens} >= {self.threshold_tokens} tokens "
                                     f"({self.config.proactive_threshold_pct}% of {self.config.context_window_tokens})")
        if state.input_tokens < self.min_context_tokens:
            return None
        if state.task_completed:
            return ProactiveDecision(CompactionReason.TASK_COMPLETED, "task completed")
        current = state.current_message or ""
        if len(content_words(current)) >= self.min_topic_words:
            similarity = await self.topic_similarity(state.recent_messages, current)
            if similarity is not None and similarity < self.config.topic_shift_threshold:
                return ProactiveDecision(CompactionReason.TOPIC_SHIFT,
                                         f"similarity {similarity:.2f} < {self.config.topic_shift_threshold}")
        if self.config.idle_minutes > 0 and state.last_activity is not None:
            idle = (state.now or utcnow()) - state.last_activity
            if idle >= timedelta(minutes=self.config.idle_minutes):
                return ProactiveDecision(CompactionReason.IDLE,
                                         f"idle {idle.total_seconds() / 60:.1f} >= {self.config.idle_minutes} min")
        return None

    async def should_compact(self, state: ConversationState) -> CompactionReason | None:
        """The reason to compact now, or None (see :meth:`evaluate` for the detail)."""
        decision = await self.evaluate(state)
        return decision.reason if decision else None


class CompactingClient:
    """A Messages API loop helper: :func:`create_with_memory` plus proactive triggers.

    Keeps the last request's input tokens and time; before each request it asks
    :class:`ProactiveCompaction`, and when a reason fires (and the context is at
    least :data:`API_MIN_TRIGGER_TOKENS`) the compaction edit's trigger is
    lowered to the current context size so the server compacts on this request.
    """

    def __init__(self, client: Any, memory: MemoryProvider | Any, *, user_id: str, settings: Settings,
                 project: str | None = None, session_id: str | None = None, embedder: Embedder | None = None,
                 proactive: ProactiveCompaction | None = None) -> None:
        self.client = client
        self.session_id = session_id
        self.memory = memory
        self.user_id = user_id
        self.settings = settings
        self.project = project
        self.proactive = proactive or ProactiveCompaction(settings.compaction, embedder)
        self.last_input_tokens = 0
        self.last_activity: datetime | None = None
        self.history: list[CompactionRun] = []

    def state_for(self, messages: Sequence[Mapping[str, Any]], *, task_completed: bool = False,
                  manual: bool = False, now: datetime | None = None) -> ConversationState:
        """The :class:`ConversationState` of ``messages`` as this client sees it."""
        texts = [message_text(m) for m in messages]
        current = texts[-1] if messages and _get(messages[-1], "role") == "user" else None
        recent = texts[:-1] if current is not None else texts
        return ConversationState(input_tokens=self.last_input_tokens, recent_messages=[t for t in recent if t],
                                 current_message=current, task_completed=task_completed, manual=manual,
                                 last_activity=self.last_activity, now=now or utcnow())

    async def create(self, *, messages: Sequence[Mapping[str, Any]], task_completed: bool = False,
                     manual: bool = False, now: datetime | None = None, **kwargs: Any) -> CompactionRun:
        """One logical request (see :func:`create_with_memory`); ``task_completed`` / ``manual``
        feed the proactive triggers."""
        state = self.state_for(messages, task_completed=task_completed, manual=manual, now=now)
        decision = await self.proactive.evaluate(state)
        trigger = None
        note = None
        if decision is not None:
            if self.last_input_tokens >= API_MIN_TRIGGER_TOKENS:
                trigger = min(self.last_input_tokens, self.settings.compaction.server_side_trigger_tokens)
                note = f"proactive compaction ({decision.reason.value}: {decision.detail})"
            else:
                note = (f"proactive compaction ({decision.reason.value}) skipped: context of "
                        f"{self.last_input_tokens} tokens is under the API minimum {API_MIN_TRIGGER_TOKENS}")
            logger.info("%s", note)
        run = await create_with_memory(self.client, messages=messages, user_id=self.user_id, memory=self.memory,
                                       settings=self.settings, project=self.project, session_id=self.session_id,
                                       trigger_tokens=trigger,
                                       **kwargs)
        if note:
            run.log.insert(0, note)
        if decision is not None and trigger is not None:
            run.proactive_reason = decision.reason.value
        self.last_input_tokens = _input_tokens(run.response) or self.last_input_tokens
        self.last_activity = now or utcnow()
        self.history.append(run)
        return run
