"""Redaction as a property of the store: every write of every backend is redacted.

:meth:`MemoryProvider.__init_subclass__ <dexai_memory.providers.base.MemoryProvider>` wraps the
write primitives a backend defines (:func:`wrap_writes`), so whatever door a text came through (a
hook, ``dexai memory add`` / ``import`` / ``ingest``, ``facts add``, MCP ``remember``, the panel, the
daemon's snapshots and notes, consolidation) it enters the store through
:func:`~dexai_memory.text.redaction.redact`:

* :meth:`add` / :meth:`add_many`: the memory's content, and every string of its metadata
  (forms, captions, an episode's artifacts);
* :meth:`update`: a new ``content`` and ``metadata``;
* :meth:`record_event` / :meth:`record_events`: the history entry's reason and details (an
  UPDATE keeps the text before and after, a NOOP the duplicate);
* :meth:`add_links`: each link's reason (what the two memories share: a name, a file path).

Redaction is idempotent, so text redacted before (by capture, extraction, an export being
imported) passes unchanged, and a memory nothing is left of after redaction is refused
(:class:`~dexai_memory.errors.InvalidMemory`, as for empty content).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable
from typing import Any

from ..models import Memory, MemoryEvent, MemoryLink
from ..text.redaction import redact, redact_all

__all__ = ["WRITES", "redact_event", "redact_memory", "wrap_writes"]


def redact_memory(memory: Memory) -> Memory:
    """``memory`` with its content and the strings of its metadata redacted (itself when clean)."""
    content = redact(memory.content)
    metadata = redact_all(dict(memory.metadata)) if memory.metadata else memory.metadata
    if content == memory.content and metadata == memory.metadata:
        return memory
    return memory.replace(content=content, metadata=metadata)


def redact_event(event: MemoryEvent) -> MemoryEvent:
    """A history entry with its reason and details redacted (itself when clean)."""
    reason = redact(event.reason) if isinstance(event.reason, str) else event.reason
    details = redact_all(dict(event.details)) if event.details else event.details
    if reason == event.reason and details == event.details:
        return event
    return MemoryEvent(event.memory_id, event.action, reason, event.at, event.related_id, details)


def _add(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def add(self: Any, memory: Memory, *args: Any, **kwargs: Any) -> Any:
        return await fn(self, redact_memory(memory), *args, **kwargs)
    return add


def _add_many(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def add_many(self: Any, memories: Iterable[Memory], *args: Any, **kwargs: Any) -> Any:
        return await fn(self, [redact_memory(m) for m in memories], *args, **kwargs)
    return add_many


def _update(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def update(self: Any, memory_id: str, *args: Any, **changes: Any) -> Any:
        if isinstance(changes.get("content"), str):
            changes["content"] = redact(changes["content"])
        if isinstance(changes.get("metadata"), dict):
            changes["metadata"] = redact_all(changes["metadata"])
        return await fn(self, memory_id, *args, **changes)
    return update


def _record_event(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def record_event(self: Any, event: MemoryEvent, *args: Any, **kwargs: Any) -> Any:
        return await fn(self, redact_event(event), *args, **kwargs)
    return record_event


def _record_events(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def record_events(self: Any, events: Iterable[MemoryEvent], *args: Any, **kwargs: Any) -> Any:
        return await fn(self, [redact_event(e) for e in events], *args, **kwargs)
    return record_events


def _add_links(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def add_links(self: Any, links: Iterable[MemoryLink], *args: Any, **kwargs: Any) -> Any:
        return await fn(self, [dataclasses.replace(k, reason=redact(k.reason)) for k in links], *args, **kwargs)
    return add_links


#: The write primitives and how each is wrapped.
WRITES: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "add": _add, "add_many": _add_many, "update": _update, "record_event": _record_event,
    "record_events": _record_events, "add_links": _add_links,
}


def wrap_writes(cls: type) -> None:
    """Wrap the write primitives ``cls`` itself defines (see the module docstring); once each."""
    for name, wrap in WRITES.items():
        fn = cls.__dict__.get(name)
        if fn is not None and not getattr(fn, "__redacts__", False):
            wrapped = wrap(fn)
            wrapped.__redacts__ = True  # type: ignore[attr-defined]
            setattr(cls, name, wrapped)
