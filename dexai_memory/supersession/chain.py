"""Supersession chains: one memory replaced by a newer statement, or many by one abstract.

Both keep what they replace: the old memory gets ``valid_until``,
``superseded_by`` and ``superseded_at`` and moves to L3, so history
(``dexai memory history``) and as-of queries still see it, and each side's
history records the link with its reason. Built on the provider's
primitives only, so every backend gets the same chain.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ..errors import InvalidMemory
from ..models import Memory, MemoryEvent, MemoryType, Tier, utcnow

if TYPE_CHECKING:
    from ..providers.base import MemoryProvider


async def supersede(provider: MemoryProvider, old_id: str, new_content: str | Memory, *, user_id: str,
                    reason: str = "updated", at: datetime | None = None) -> Memory:
    """Mark ``old_id`` superseded and store its replacement; returns the new memory.

    ``at`` is when the change happened (when the new statement was said; default now): the old
    memory is valid until then, a replacement given as text is valid from then.

    ``new_content`` is the replacement itself, or its text (then it takes the
    old memory's type, scope, importance, confidence and provenance). Raises
    :class:`InvalidMemory` when ``old_id`` is not current or the replacement
    belongs to another user, :class:`~dexai_memory.errors.MemoryNotFound` when
    it is unknown.
    """
    old = await provider.get(old_id, user_id=user_id)
    if not old.is_valid:
        raise InvalidMemory(f"memory {old_id} is not current (already superseded or archived)")
    now = at or utcnow()
    if isinstance(new_content, Memory):
        if new_content.user_id != user_id:
            raise InvalidMemory("the replacement belongs to another user")
        new = new_content.replace(valid_from=new_content.valid_from or now)
    else:
        new = Memory(content=new_content, user_id=user_id, project=old.project, type=old.type,
                     importance=old.importance, confidence=old.confidence, tier=old.tier,
                     source_ids=old.source_ids, session_id=old.session_id, pinned=old.pinned,
                     created_at=now, valid_from=now)
    new = await provider.add(new)
    await link(provider, old_id, new.id, user_id=user_id, reason=reason, at=now)
    return new


async def link(provider: MemoryProvider, old_id: str, new_id: str, *, user_id: str, reason: str,
               at: datetime) -> None:
    """Record that the stored memory ``new_id`` supersedes ``old_id`` (both already stored): the old one
    stops being current at ``at`` and moves to L3; both histories name the other."""
    await provider.update(old_id, user_id=user_id, superseded_by=new_id, superseded_at=at, valid_until=at,
                          tier=Tier.L3)
    await provider.record_events([MemoryEvent(old_id, "SUPERSEDED", reason, at, related_id=new_id),
                                  MemoryEvent(new_id, "SUPERSEDES", reason, at, related_id=old_id)], user_id=user_id)


async def consolidate(provider: MemoryProvider, memory_ids: Sequence[str], summary: str, *, user_id: str,
                      type: MemoryType = MemoryType.INSIGHT, reason: str = "consolidated") -> Memory:
    """Merge memories into one L3 abstract that keeps every source id; returns the abstract.

    The originals are marked superseded by the abstract (never deleted).
    Raises :class:`InvalidMemory` for an empty ``memory_ids``.
    """
    if not memory_ids:
        raise InvalidMemory("consolidate needs at least one memory id")
    originals = [await provider.get(mid, user_id=user_id) for mid in memory_ids]
    now = utcnow()
    sources = tuple(dict.fromkeys(s for m in originals for s in (m.source_ids or (m.id,))))
    abstract = await provider.add(Memory(
        content=summary, user_id=user_id, project=originals[0].project, type=type,
        importance=max(m.importance for m in originals),
        confidence=max(m.confidence for m in originals), tier=Tier.L3, source_ids=sources,
        mention_count=sum(m.mention_count for m in originals), created_at=now, valid_from=now,
        metadata={"consolidated_from": [m.id for m in originals],
                  "consolidated_from_count": len(originals), "consolidated_at": now.isoformat()},
    ))
    for m in originals:
        await provider.update(m.id, user_id=user_id, superseded_by=abstract.id, superseded_at=now, valid_until=now,
                              tier=Tier.L3)
        await provider.record_event(MemoryEvent(m.id, "CONSOLIDATED", reason, now, related_id=abstract.id),
                                    user_id=user_id)
    await provider.record_event(MemoryEvent(abstract.id, "CONSOLIDATES", reason, now,
                                            details={"from": [m.id for m in originals]}), user_id=user_id)
    return abstract
