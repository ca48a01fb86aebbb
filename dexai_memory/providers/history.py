"""Time on any provider: the supersession chain of a memory, and what was valid at a moment.

Both are built on the provider's primitives (:meth:`~.base.MemoryProvider.get`,
:meth:`~.base.MemoryProvider.superseded_by`, :meth:`~.base.MemoryProvider.events`,
:meth:`~.base.MemoryProvider.search`, :meth:`~.base.MemoryProvider.list`), so
every backend answers them the same way; a backend makes them faster by
overriding ``superseded_by``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..errors import MemoryNotFound
from ..models import Memory, MemoryEvent, SearchFilters, as_utc
from . import relevance
from .base import MemoryProvider


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One memory of a supersession chain with the events recorded on it."""

    memory: Memory
    events: tuple[MemoryEvent, ...]


async def history(provider: MemoryProvider, memory_id: str, *, user_id: str) -> list[HistoryEntry]:
    """The supersession chain through ``memory_id``, oldest first, with each
    memory's events (decisions and their reasons).

    Raises :class:`~dexai_memory.errors.MemoryNotFound` when ``memory_id`` is not one of the user's.
    """
    start = await provider.get(memory_id, user_id=user_id, include_deleted=True)
    chain: list[Memory] = [start]
    seen = {start.id}
    # walk back: memories superseded by the first of the chain
    while True:
        before = await provider.superseded_by(chain[0].id, user_id=user_id)
        before = [m for m in before if m.id not in seen]
        if not before:
            break
        for m in before:
            seen.add(m.id)
        chain[:0] = sorted(before, key=lambda m: m.created_at)
    # walk forward
    while chain[-1].superseded_by and chain[-1].superseded_by not in seen:
        try:
            nxt = await provider.get(chain[-1].superseded_by, user_id=user_id, include_deleted=True)
        except MemoryNotFound:
            break
        seen.add(nxt.id)
        chain.append(nxt)
    return [HistoryEntry(m, tuple(await provider.events(m.id, user_id=user_id))) for m in chain]


async def as_of(provider: MemoryProvider, when: datetime | str, *, user_id: str, query: str | None = None,
                filters: SearchFilters | None = None, limit: int = 20, floor: float = 0.0) -> list[Memory]:
    """What was valid at ``when``: memories whose validity window contains it
    (superseded ones included), optionally ranked by ``query`` (those related to it: ``floor``
    as in :func:`~dexai_memory.providers.relevance.search`)."""
    moment = as_utc(when)
    base = filters or SearchFilters()
    f = SearchFilters(project=base.project, types=base.types, tiers=base.tiers, session_id=base.session_id,
                      valid_only=False, include_archived=True, as_of=moment)
    if query:
        return [r.memory for r in await relevance.search(provider, query, user_id=user_id, filters=f, limit=limit,
                                                           floor=floor)]
    return await provider.list(user_id=user_id, filters=f, limit=limit)
