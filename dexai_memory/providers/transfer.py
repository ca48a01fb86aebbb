"""Copy memories between providers (``dexai memory migrate``), with their provenance.

Every field of a memory travels: id, type, tier, importance, source ids
(the conversation turns it came from), session, validity window and
supersession links (``superseded_by`` points at the same ids in the target),
plus its history events. The copy's metadata also records where it came from
(``migrated_from``, ``migrated_at``). Soft-deleted memories are not copied.

A transfer is idempotent: a memory whose id the target already holds is
skipped, so an interrupted migration can simply be run again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import MemoryNotFound, ProviderError
from ..models import Memory, SearchFilters, utcnow
from .base import MemoryProvider

logger = logging.getLogger(__name__)

#: Everything but deleted memories: superseded, expired and archived ones included.
ALL_MEMORIES = SearchFilters(valid_only=False, include_archived=True)


@dataclass(frozen=True)
class TransferReport:
    """What a transfer did (or, for a dry run, would do)."""

    source: str
    target: str
    dry_run: bool
    users: dict[str, int] = field(default_factory=dict)
    copied: int = 0
    skipped: int = 0
    events: int = 0
    sample: tuple[dict[str, Any], ...] = ()

    @property
    def total(self) -> int:
        return sum(self.users.values())

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "dry_run": self.dry_run, "users": dict(self.users),
                "total": self.total, "copied": self.copied, "skipped": self.skipped, "events": self.events,
                "sample": list(self.sample)}


async def provider_users(provider: MemoryProvider) -> list[str]:
    """Every user id the provider holds memories for (``capabilities.list_users``)."""
    if not provider.capabilities.list_users:
        raise ProviderError(f"the {provider.name} provider cannot list its users: pass --user")
    return list(await provider.users())


async def memories_of(provider: MemoryProvider, user_id: str) -> list[Memory]:
    """All memories of a user (oldest first), deleted ones excepted; not the teammates' project-shared
    memories a team store (postgres) also shows the user: those travel with their owner."""
    out: list[Memory] = []
    offset = 0
    while True:
        page = await provider.list(user_id=user_id, filters=ALL_MEMORIES, limit=1000, offset=offset)
        out.extend(m for m in page if m.user_id == user_id)
        offset += len(page)
        if len(page) < 1000:
            break
    out.reverse()
    return out


async def transfer(source: MemoryProvider, target: MemoryProvider | None, *, users: Sequence[str] | None = None,
                   dry_run: bool = False, progress: Callable[[int], None] | None = None,
                   on_total: Callable[[int], None] | None = None, source_name: str | None = None,
                   target_name: str | None = None, sample_size: int = 5) -> TransferReport:
    """Copy the memories of ``users`` (default: every user of ``source``) into ``target``.

    With ``dry_run`` nothing is written (``target`` may be None) and the report
    lists what would be copied. ``on_total(n)`` is called once the count is
    known; ``progress(1)`` after each memory.
    """
    src_name = source_name or source.name
    dst_name = target_name or (target.name if target else "?")
    user_ids = list(users) if users else await provider_users(source)
    plan = {u: await memories_of(source, u) for u in user_ids}
    counts = {u: len(ms) for u, ms in plan.items()}
    sample = tuple({"id": m.id, "user_id": m.user_id, "type": m.type.value, "content": m.content,
                    "valid": m.is_valid, "source_ids": list(m.source_ids)}
                   for ms in plan.values() for m in ms)[:sample_size]
    if on_total:
        on_total(sum(counts.values()))
    if dry_run or target is None:
        return TransferReport(src_name, dst_name, True, counts, sample=sample)
    copied = skipped = events = 0
    now = utcnow().isoformat()
    for user_id, memories in plan.items():
        for memory in memories:
            try:
                await target.get(memory.id, user_id=user_id, include_deleted=True)
            except MemoryNotFound:
                pass
            else:
                skipped += 1
                if progress:
                    progress(1)
                continue
            meta = {**memory.metadata, "migrated_from": src_name, "migrated_at": now}
            await target.add(memory.replace(metadata=meta))
            for event in await source.events(memory.id, user_id=user_id):
                if event.action.startswith("MEM0_"):
                    continue  # Mem0's own history rows belong to the Mem0 store
                await target.record_event(event, user_id=user_id)
                events += 1
            copied += 1
            if progress:
                progress(1)
    logger.info("migrated %s memories (%s skipped) from %s to %s", copied, skipped, src_name, dst_name)
    return TransferReport(src_name, dst_name, False, counts, copied, skipped, events, sample)
