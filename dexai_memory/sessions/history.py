"""History compaction for Messages API loops that cannot use server-side compaction.

:func:`compact_history` keeps a loop's ``messages`` bounded the way the
session store design describes it, without losing what was said:

1. **When**: more than ``max_entries`` messages (default 50), or more than
   ``max_tokens`` estimated tokens (default 100,000).
2. **What goes**: every rule that matches, in one call. Too many messages: the
   oldest ``len - keep`` go (``keep`` = 30); then, while what is left is over
   ``max_tokens``, its oldest half goes, until it fits (60 messages of ~12,400
   tokens end at ~74,000 tokens in 6 messages, not at the ~372,000 the first
   rule alone leaves).
   Each cut moves forward to a plain user message, so a tool call is never
   separated from its result and the kept part starts as the API requires;
   the last plain user message is always kept, even when it alone is over.
3. **Facts first**: every message that goes is handed to memory before
   anything is dropped (a :class:`~dexai_memory.daemon.MemoryDaemon`: queued
   and flushed; a :class:`~dexai_memory.pipeline.Pipeline`: extracted
   in place), so its facts, instructions and dates are stored as memories.
4. **Then the summary**: the summarizer (offline, or Haiku when configured)
   folds the previous long-term summary and the dropped messages into one; it
   opens the first kept message as ``[Earlier in this conversation] ...``.

Use it between turns: ``result = await compact_history(messages, memory=daemon,
user_id=..., summarizer=make_summarizer(settings), summary=result.summary)``,
then continue with ``result.messages``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..extraction.base import Summarizer
from ..models import Turn
from ..pipeline import Pipeline
from ..text.tokens import count_tokens

__all__ = ["SUMMARY_PREFIX", "HistoryCompaction", "compact_history"]

#: Opens the first kept message when earlier messages were folded into the summary.
SUMMARY_PREFIX = "[Earlier in this conversation]"


@dataclass(frozen=True)
class HistoryCompaction:
    """What :func:`compact_history` did: the messages to continue with, the long-term summary,
    how many messages were folded, and how many notes their extraction stored (None: not run)."""

    messages: list[dict[str, Any]]
    summary: str
    folded: int
    stored: int | None = None


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


def _plain_user(message: Mapping[str, Any]) -> bool:
    """A user message that is not a tool result: a safe first message of the kept part."""
    if message.get("role") != "user":
        return False
    content = message.get("content")
    return isinstance(content, str) or not any(
        isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content or [])


def _tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    return sum(count_tokens(json.dumps(m.get("content"), default=str)) for m in messages)


def _safe(items: Sequence[Mapping[str, Any]], cut: int) -> int:
    """``cut`` moved forward to a plain user message (len(items) when there is none after it)."""
    while cut < len(items) and not _plain_user(items[cut]):
        cut += 1
    return cut


def _cut(items: Sequence[Mapping[str, Any]], *, max_entries: int, keep: int, max_tokens: int) -> int:
    """How many of the oldest messages go (0: none), every rule that matches applied in turn:
    too many messages cuts to the last ``keep``; then, while what is left is over ``max_tokens``,
    its oldest half goes, until it fits or no safe cut remains (the last plain user message is
    always kept)."""
    cut = 0
    if len(items) > max_entries:
        moved = _safe(items, len(items) - keep)
        cut = moved if moved < len(items) else 0
    while _tokens(items[cut:]) > max_tokens:
        moved = _safe(items, cut + max(1, (len(items) - cut) // 2))
        if moved >= len(items):
            break
        cut = moved
    return cut


async def _extract(memory: Any, turns: list[Turn]) -> int | None:
    """Hand ``turns`` to memory before they are dropped; the number of notes stored (None if unknown)."""
    if not turns:
        return 0
    if isinstance(memory, Pipeline):
        report = await memory.process([(t, ()) for t in turns])
        return report.added + report.updated + report.superseded
    for turn in turns:  # a MemoryDaemon: durable queue first, then extraction now
        memory.submit_turn(turn)
    await memory.flush()
    return None


async def compact_history(messages: Sequence[Mapping[str, Any]], *, memory: Any, user_id: str,
                          summarizer: Summarizer, summary: str = "", session_id: str | None = None,
                          project: str | None = None, max_entries: int = 50, keep: int = 30,
                          max_tokens: int = 100_000) -> HistoryCompaction:
    """Fold the oldest messages into the long-term summary once the history is too long (see the module).

    ``memory`` is a started :class:`~dexai_memory.daemon.MemoryDaemon` or a
    :class:`~dexai_memory.pipeline.Pipeline`; ``summary`` the previous long-term
    summary. Returns the messages unchanged when no limit is reached.
    """
    items = [dict(m) for m in messages]
    cut = _cut(items, max_entries=max_entries, keep=keep, max_tokens=max_tokens)
    if cut == 0:
        return HistoryCompaction(items, summary, 0)
    old, kept = items[:cut], items[cut:]
    now = datetime.now(UTC)
    session = session_id or f"history-{now:%Y%m%d%H%M%S}"
    turns = [Turn(id=f"{session}:{i}", user_id=user_id, role=str(m.get("role") or "user"), content=text,
                  timestamp=now, session_id=session, project=project)
             for i, m in enumerate(old) if (text := _text(m).strip())]
    stored = await _extract(memory, turns)
    lines = ([summary] if summary else []) + [f"{t.role}: {t.content}" for t in turns]
    new_summary = await summarizer.summarize(lines) if lines else summary
    first = dict(kept[0])
    content = first.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    first["content"] = [{"type": "text", "text": f"{SUMMARY_PREFIX} {new_summary}"}, *blocks]
    return HistoryCompaction([first, *kept[1:]], new_summary, len(old), stored)
