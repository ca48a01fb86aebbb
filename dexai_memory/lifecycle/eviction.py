"""Eviction and expiry: each user's durable facts stay under a cap and go stale by category.

The fact lifecycle's rules, on the store. Durable facts are the current FACT,
PREFERENCE, INSIGHT, RELATIONSHIP, PROCEDURE and PATTERN memories of a user (commitments, events,
notes, snapshots and transcripts have lifecycles of their own). Each belongs
to one lifecycle category (:func:`lifecycle_category`):

=============  ==============================================  ======  ======
category       memories                                        weight  expiry
=============  ==============================================  ======  ======
project        FACT, INSIGHT (decisions, project facts,        0.8     60 d
               lessons)
preference     PREFERENCE, standing instructions and warnings, 0.3     180 d
               PROCEDURE and PATTERN (workflows, conventions)
identity       RELATIONSHIP, ``category`` "person" / "identity" 0.5     365 d
=============  ==============================================  ======  ======

**Expiry**: a memory not referenced for its category's days (the latest of
when it was stored, last updated or repeated, and last injected or recalled)
is archived, unless it is pinned.

**Unused**: a memory never retrieved (injected or recalled) nor cited
(``retrieval_count`` and ``citation_count`` both 0, :mod:`.usage`) that was
stored, repeated or changed ``lifecycle.unused_forget_days`` (90) ago or more
is archived, whatever its category; pinned memories and memories written by
hand (:func:`~dexai_memory.models.by_hand`) are kept.

**Cap**: above ``lifecycle.prune_from`` (120) durable facts, the highest
eviction scores, ``age in days x weight / confidence`` (age since the last
reference), are archived, ``prune_batch`` per run, and always enough to get
back under ``lifecycle.max_facts`` (150). Pinned memories are never evicted.

Archiving moves a memory to L3 with ``archived`` set and a history entry
saying why; nothing is deleted (``dexai memory list --all`` shows it,
``dexai memory edit ID --tier L2`` brings it back to search).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..models import Memory, MemoryEvent, MemoryType, SearchFilters, Tier, by_hand, utcnow

if TYPE_CHECKING:
    from ..limits import LifecycleConfig
    from ..providers.base import MemoryProvider

logger = logging.getLogger(__name__)

#: The types the cap counts and expiry applies to.
DURABLE_FACT_TYPES = (MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.INSIGHT, MemoryType.RELATIONSHIP,
                      MemoryType.PROCEDURE, MemoryType.PATTERN)
#: Most durable facts read per user per run.
READ_LIMIT = 100_000
#: Confidence below which the eviction score treats a memory as this unsure (no division by zero).
MIN_CONFIDENCE = 0.05


def lifecycle_category(m: Memory) -> str:
    """``project``, ``preference`` or ``identity`` (see the module table)."""
    cat = str((m.metadata or {}).get("category") or "").lower()
    if m.type is MemoryType.RELATIONSHIP or cat in ("person", "identity"):
        return "identity"
    if m.type in (MemoryType.PREFERENCE, MemoryType.PROCEDURE, MemoryType.PATTERN) \
            or cat in ("preference", "instruction", "warning", "procedure", "convention"):
        return "preference"
    return "project"


def last_referenced(m: Memory) -> datetime:
    """When ``m`` was last stored, repeated or updated, or injected / recalled."""
    return max(t for t in (m.created_at, m.updated_at, m.last_accessed) if t is not None)


def age_days(m: Memory, now: datetime) -> float:
    """Days since :func:`last_referenced` (never negative)."""
    return max(0.0, (now - last_referenced(m)).total_seconds() / 86400)


def weight(category: str, cfg: LifecycleConfig) -> float:
    """The eviction weight of a lifecycle category."""
    return float(getattr(cfg, f"{category}_weight"))


def expiry_days(category: str, cfg: LifecycleConfig) -> int:
    """Days without a reference after which a memory of ``category`` expires (0 = never)."""
    return int(getattr(cfg, f"{category}_expiry_days"))


def eviction_score(m: Memory, cfg: LifecycleConfig, now: datetime | None = None) -> float:
    """``age in days x category weight / confidence``: the higher, the sooner it is evicted."""
    now = now or utcnow()
    return age_days(m, now) * weight(lifecycle_category(m), cfg) / max(m.confidence, MIN_CONFIDENCE)


@dataclass(frozen=True, slots=True)
class Evicted:
    """One memory archived (or that would be, in a dry run), and why."""

    id: str
    content: str
    category: str
    reason: str
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "content": self.content, "category": self.category, "reason": self.reason,
                "score": None if self.score is None else round(self.score, 3)}


@dataclass
class LifecycleReport:
    """What one run archived: expired memories, unused ones, then evicted ones; the durable facts
    before and after."""

    user_id: str
    dry_run: bool
    facts_before: int = 0
    expired: list[Evicted] = field(default_factory=list)
    evicted: list[Evicted] = field(default_factory=list)
    purged_clears: int = 0
    unused: list[Evicted] = field(default_factory=list)

    @property
    def archived(self) -> list[Evicted]:
        """Every memory the run archives (or would), in the order it does."""
        return [*self.expired, *self.unused, *self.evicted]

    @property
    def facts_after(self) -> int:
        return self.facts_before - len(self.archived)

    def to_dict(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "dry_run": self.dry_run, "facts_before": self.facts_before,
                "facts_after": self.facts_after, "expired": [e.to_dict() for e in self.expired],
                "unused": [e.to_dict() for e in self.unused],
                "evicted": [e.to_dict() for e in self.evicted], "purged_clears": self.purged_clears}


async def durable_facts(provider: MemoryProvider, user_id: str) -> list[Memory]:
    """The current durable facts of ``user_id`` (every project)."""
    return await provider.list(user_id=user_id, filters=SearchFilters(types=DURABLE_FACT_TYPES), limit=READ_LIMIT)


async def archive(provider: MemoryProvider, m: Memory, reason: str, now: datetime) -> None:
    """Move ``m`` to L3, archived, with ``reason`` in its history (never deleted)."""
    await provider.update(m.id, user_id=m.user_id, tier=Tier.L3, archived=True)
    await provider.record_event(MemoryEvent(m.id, "ARCHIVED", reason, now), user_id=m.user_id)


def expired(memories: list[Memory], cfg: LifecycleConfig, now: datetime) -> list[Evicted]:
    """The unpinned ``memories`` not referenced within their category's expiry."""
    out = []
    for m in memories:
        cat = lifecycle_category(m)
        days = expiry_days(cat, cfg)
        if m.pinned or days <= 0 or age_days(m, now) < days:
            continue
        out.append(Evicted(m.id, m.content, cat, f"expired: {cat} memories are kept {days} days without a "
                           f"reference; this one was last referenced {age_days(m, now):.0f} days ago"))
    return out


def unused(memories: list[Memory], cfg: LifecycleConfig, now: datetime) -> list[Evicted]:
    """The ``memories`` never retrieved nor cited within ``lifecycle.unused_forget_days`` of being
    stored or last changed (not pinned, not written by hand)."""
    days = cfg.unused_forget_days
    if days <= 0:
        return []
    return [Evicted(m.id, m.content, lifecycle_category(m),
                    f"unused: never injected, recalled nor cited in the {days} days it may wait for a use; "
                    f"stored or last changed {age_days(m, now):.0f} days ago")
            for m in memories
            if not (m.pinned or by_hand(m) or m.retrieval_count or m.citation_count) and age_days(m, now) >= days]


def to_evict(memories: list[Memory], cfg: LifecycleConfig, now: datetime) -> list[Evicted]:
    """Which of ``memories`` (current durable facts) the cap evicts this run, highest score first."""
    count = len(memories)
    if count <= min(cfg.prune_from, cfg.max_facts):
        return []
    n = max(min(count - cfg.prune_from, cfg.prune_batch), count - cfg.max_facts)
    scored = sorted(((eviction_score(m, cfg, now), m) for m in memories if not m.pinned),
                    key=lambda x: (-x[0], x[1].created_at, x[1].id))
    return [Evicted(m.id, m.content, lifecycle_category(m),
                    f"evicted: {count} durable facts is over the {cfg.prune_from} from which the lowest-value ones "
                    f"are archived (cap {cfg.max_facts}); eviction score {score:.2f} (age x weight / confidence)",
                    score)
            for score, m in scored[:n]]


async def run_lifecycle(provider: MemoryProvider, user_id: str, cfg: LifecycleConfig, *, dry_run: bool = False,
                        now: datetime | None = None) -> LifecycleReport:
    """Expire, archive the unused, then evict above the cap, for ``user_id`` (see the module docstring)."""
    now = now or utcnow()
    memories = await durable_facts(provider, user_id)
    report = LifecycleReport(user_id, dry_run, facts_before=len(memories))
    report.expired = expired(memories, cfg, now)
    gone = {e.id for e in report.expired}
    report.unused = unused([m for m in memories if m.id not in gone], cfg, now)
    gone |= {e.id for e in report.unused}
    report.evicted = to_evict([m for m in memories if m.id not in gone], cfg, now)
    if not dry_run:
        by_id = {m.id: m for m in memories}
        for e in report.archived:
            await archive(provider, by_id[e.id], e.reason, now)
        if report.archived:
            logger.info("lifecycle for %s: %d expired, %d unused, %d evicted (%d durable facts left)", user_id,
                        len(report.expired), len(report.unused), len(report.evicted), report.facts_after)
    return report

