"""The in-memory provider: every memory in a dict of this process, gone when it ends.

:class:`InMemoryProvider` implements only the storage primitives of
:class:`~dexai_memory.providers.base.MemoryProvider` (add, get, update, delete,
list, search, the history log) plus the cheap overrides of a few concrete ones
(count, restore, superseded_by) and the links between memories; supersession, tiers, history and as-of queries
come from the ABC and :mod:`.history`, built on those primitives as for every
backend. Search is by keywords: a memory matches when it shares a content word
with the query (stop words left out), scored by the share of the query's
word weight it holds (rarer words weigh more), so scores stay in [0, 1]. No
vectors, no SQLite, no file.

It is the store for tests that need *a* provider, and for ``storage.provider:
memory`` where nothing should be kept (a throw-away daemon). The filters mirror
the native provider's (:func:`~dexai_memory.providers.native.schema.where_clause`).
"""

from __future__ import annotations

import builtins
import copy
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InvalidMemory, MemoryNotFound
from ..models import (
    HealthStatus,
    Memory,
    MemoryEvent,
    MemoryLink,
    SearchFilters,
    SearchResult,
    utcnow,
)
from ..text.words import content_words
from .base import UPDATABLE_FIELDS, MemoryProvider
from .capabilities import ProviderCapabilities
from .native.schema import SEARCH_EXCLUDED_TYPES

if TYPE_CHECKING:
    from ..config import Settings

def terms(text: str) -> set[str]:
    """The content words of ``text`` (:func:`dexai_memory.text.words.content_words`)."""
    return set(content_words(text))


def passes(m: Memory, user_id: str, f: SearchFilters, *, for_search: bool = False) -> bool:
    """Whether ``m`` is one of ``user_id``'s memories that ``f`` keeps (deleted ones never are)."""
    if m.user_id != user_id or m.deleted:
        return False
    if f.project is not None and m.project != f.project:
        return False
    if f.types:
        if m.type not in f.types:
            return False
    elif for_search and m.type.value in SEARCH_EXCLUDED_TYPES:
        return False
    if f.tiers and m.tier not in f.tiers:
        return False
    if f.session_id is not None and m.session_id != f.session_id:
        return False
    if f.as_of is not None:
        start = m.valid_from or m.created_at
        if not (start <= f.as_of and (m.valid_until is None or m.valid_until > f.as_of)):
            return False
    else:
        if f.valid_only and (m.superseded_by is not None or m.valid_until is not None):
            return False
        if not f.include_archived and m.archived:
            return False
    if f.created_after is not None and m.created_at < f.created_after:
        return False
    if f.created_before is not None and m.created_at >= f.created_before:
        return False
    if f.pinned is not None and m.pinned != f.pinned:
        return False
    return f.min_importance is None or m.importance >= f.min_importance


def _copy(m: Memory) -> Memory:
    """A copy that shares nothing mutable with the stored memory (as a row read back would)."""
    return m.replace(metadata=copy.deepcopy(dict(m.metadata)))


class InMemoryProvider(MemoryProvider):
    """Memories in a dict, for tests and throw-away runs. See the module docstring."""

    name = "memory"
    capabilities = ProviderCapabilities(history=True, as_of=True, hard_delete=True, restore=True, list_users=True,
                                        links=True)

    def __init__(self) -> None:
        super().__init__()
        #: id -> memory, every user's, in insertion order (the tie-break of "newest first").
        self._memories: dict[str, Memory] = {}
        #: (user_id, memory_id) -> that memory's history log, oldest first.
        self._events: dict[tuple[str, str], builtins.list[MemoryEvent]] = {}
        #: (user_id, a, b, kind) -> the link, in the order stored.
        self._links: dict[tuple[str, str, str, str], MemoryLink] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> InMemoryProvider:
        """An empty store (the settings name no file: nothing is kept)."""
        return cls()

    def _owned(self, memory_id: str, user_id: str, *, include_deleted: bool = False) -> Memory:
        m = self._memories.get(memory_id)
        if m is None or m.user_id != user_id or (m.deleted and not include_deleted):
            raise MemoryNotFound(f"no memory {memory_id!r} for user {user_id!r}")
        return m

    def _matching(self, user_id: str, f: SearchFilters, *, for_search: bool = False) -> builtins.list[Memory]:
        """Memories passing ``f``, newest first (insertion order breaks ties, as rowid does)."""
        order = {mid: i for i, mid in enumerate(self._memories)}
        found = [m for m in self._memories.values() if passes(m, user_id, f, for_search=for_search)]
        return sorted(found, key=lambda m: (m.created_at, order[m.id]), reverse=True)

    # ------------------------------------------------------------------ writes
    async def add(self, memory: Memory) -> Memory:
        if memory.id in self._memories:
            raise InvalidMemory(f"a memory with id {memory.id!r} already exists")
        self._memories[memory.id] = _copy(memory)
        return memory

    async def update(self, memory_id: str, *, user_id: str, **changes: Any) -> Memory:
        unknown = set(changes) - UPDATABLE_FIELDS
        if unknown:
            raise InvalidMemory(f"cannot update field(s): {', '.join(sorted(unknown))}")
        current = self._owned(memory_id, user_id)
        updated = current.replace(**changes, updated_at=utcnow())  # validates the new values
        self._memories[memory_id] = _copy(updated)
        return updated

    async def delete(self, memory_id: str, *, user_id: str, hard: bool = False) -> bool:
        m = self._memories.get(memory_id)
        if m is None or m.user_id != user_id:
            return False
        if hard:
            del self._memories[memory_id]
            self._events.pop((user_id, memory_id), None)
            self._links = {k: v for k, v in self._links.items()
                           if not (k[0] == user_id and memory_id in (v.memory_a, v.memory_b))}
            return True
        if m.deleted:
            return False
        self._memories[memory_id] = m.replace(deleted=True, updated_at=utcnow())
        await self.record_event(MemoryEvent(memory_id, "FORGET", "soft delete by request", utcnow()),
                                user_id=user_id)
        return True

    async def restore(self, memory_id: str, *, user_id: str) -> Memory:
        """Undo a soft delete."""
        m = self._owned(memory_id, user_id, include_deleted=True)
        self._memories[memory_id] = m.replace(deleted=False, updated_at=utcnow())
        await self.record_event(MemoryEvent(memory_id, "RESTORE", "restored by request", utcnow()), user_id=user_id)
        return await self.get(memory_id, user_id=user_id)

    async def record_event(self, event: MemoryEvent, *, user_id: str) -> None:
        self._events.setdefault((user_id, event.memory_id), []).append(event)

    async def add_links(self, links: Sequence[MemoryLink]) -> int:
        new = 0
        for link in links:
            key = (link.user_id, link.memory_a, link.memory_b, link.kind)
            if key not in self._links:
                self._links[key] = link
                new += 1
        return new

    async def links(self, memory_ids: Sequence[str], *, user_id: str) -> builtins.list[MemoryLink]:
        wanted = set(memory_ids)
        return [k for k in self._links.values()
                if k.user_id == user_id and (k.memory_a in wanted or k.memory_b in wanted)]

    # ------------------------------------------------------------------ reads
    async def get(self, memory_id: str, *, user_id: str, include_deleted: bool = False) -> Memory:
        return _copy(self._owned(memory_id, user_id, include_deleted=include_deleted))

    async def list(self, *, user_id: str, filters: SearchFilters | None = None, limit: int = 100,
                   offset: int = 0) -> builtins.list[Memory]:
        found = self._matching(user_id, filters or SearchFilters())
        end = offset + limit if limit > 0 else None
        return [_copy(m) for m in found[offset:end]]

    async def count(self, *, user_id: str, filters: SearchFilters | None = None) -> int:
        return len(self._matching(user_id, filters or SearchFilters()))

    async def events(self, memory_id: str, *, user_id: str) -> builtins.list[MemoryEvent]:
        return builtins.list(self._events.get((user_id, memory_id), ()))

    async def superseded_by(self, memory_id: str, *, user_id: str) -> builtins.list[Memory]:
        return [_copy(m) for m in self._memories.values() if m.user_id == user_id and m.superseded_by == memory_id]

    async def users(self) -> builtins.list[str]:
        """Every user id with at least one memory."""
        return sorted({m.user_id for m in self._memories.values()})

    async def search(self, query: str, *, user_id: str, filters: SearchFilters | None = None,
                     limit: int = 10) -> builtins.list[SearchResult]:
        wanted = terms(query)
        if not wanted or limit <= 0:
            return []
        candidates = [(m, terms(m.content)) for m in self._matching(user_id, filters or SearchFilters(),
                                                                    for_search=True)]
        df = {t: sum(t in words for _, words in candidates) for t in wanted}
        weight = {t: math.log(1.0 + (len(candidates) + 1) / (df[t] + 1)) for t in wanted}
        total = sum(weight.values())
        scored = [(sum(weight[t] for t in wanted & words) / total, m) for m, words in candidates if wanted & words]
        # best first; equal scores: the more important, then the newer (candidates are newest first)
        ranked = sorted(enumerate(scored), key=lambda e: (-e[1][0], -e[1][1].importance, e[0]))
        return [SearchResult(_copy(m), round(min(1.0, score), 6), bm25_rank=rank)
                for rank, (_, (score, m)) in enumerate(ranked[:limit], start=1)]

    # ------------------------------------------------------------------ health
    async def health_check(self) -> HealthStatus:
        users = {m.user_id for m in self._memories.values()}
        return HealthStatus(healthy=True, provider=self.name,
                            details={"memories": len(self._memories), "users": len(users),
                                     "search": "keywords (no vectors)", "persistent": False})

    def __repr__(self) -> str:
        return f"InMemoryProvider({len(self._memories)} memories)"
