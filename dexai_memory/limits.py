"""The settings sections that keep memory small: ``persistent_context`` and ``lifecycle``.

Typed, frozen sections of :class:`~dexai_memory.config.Settings`, declared here
(one concept: budgets and caps) and loaded and validated like every other
section by :mod:`dexai_memory.config`; every default is declared once, on
its field, and listed in the packaged ``memory.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CategoryLimits", "LifecycleConfig", "PersistentContextConfig"]


def bounds(min_: float | None = None, max_: float | None = None) -> dict[str, Any]:
    """Field metadata :func:`dexai_memory.config.load_settings` validates a number against."""
    return {"min": min_, "max": max_, "choices": ()}


@dataclass(frozen=True)
class CategoryLimits:
    """How much of one persistent-context category the L1 block shows."""

    #: At most this many memories of the category.
    max_items: int = field(default=10, metadata=bounds(0, 100))
    #: At most this many tokens of the category's lines (its title included).
    max_tokens: int = field(default=500, metadata=bounds(0, 10_000))


@dataclass(frozen=True)
class PersistentContextConfig:
    """The persistent context: standing knowledge shown in every L1 block at session start and
    after compaction, by category (see :mod:`dexai_memory.recall.persistent`)."""

    enabled: bool = True
    #: Tokens of the whole section, every category together (Claude Code caps hook output at
    #: 10,000 characters, about 2,500 tokens, for the whole block).
    max_tokens: int = field(default=1000, metadata=bounds(0, 2000))
    #: Only memories at least this confident enter (hand-added ones start at 0.6, extracted at 0.75).
    min_confidence: float = field(default=0.6, metadata=bounds(0.0, 1.0))
    #: Only memories at least this important enter.
    min_importance: int = field(default=6, metadata=bounds(1, 10))
    instruction: CategoryLimits = field(default_factory=lambda: CategoryLimits(10, 400))
    warning: CategoryLimits = field(default_factory=lambda: CategoryLimits(5, 300))
    goal: CategoryLimits = field(default_factory=lambda: CategoryLimits(1, 100))
    preference: CategoryLimits = field(default_factory=lambda: CategoryLimits(10, 500))
    project_fact: CategoryLimits = field(default_factory=lambda: CategoryLimits(20, 1000))
    person: CategoryLimits = field(default_factory=lambda: CategoryLimits(10, 300))
    insight: CategoryLimits = field(default_factory=lambda: CategoryLimits(10, 500))


@dataclass(frozen=True)
class LifecycleConfig:
    """What keeps memory small and true (see :mod:`dexai_memory.lifecycle`): the cap on durable
    facts and its eviction score, expiry by category, pins, and the undo window of ``clear``."""

    #: Hard cap of current durable facts (FACT, PREFERENCE, INSIGHT, RELATIONSHIP) per user.
    max_facts: int = field(default=150, metadata=bounds(1, 1_000_000))
    #: Eviction starts above this many (gradually, ``prune_batch`` per cleanup run).
    prune_from: int = field(default=120, metadata=bounds(1, 1_000_000))
    #: Most memories evicted per cleanup run while under ``max_facts``.
    prune_batch: int = field(default=10, metadata=bounds(1, 100_000))
    #: Eviction weight (age in days x weight / confidence; higher goes first) per lifecycle category.
    project_weight: float = field(default=0.8, metadata=bounds(0.0, 100.0))
    preference_weight: float = field(default=0.3, metadata=bounds(0.0, 100.0))
    identity_weight: float = field(default=0.5, metadata=bounds(0.0, 100.0))
    #: Days without a reference after which a memory of the category is archived (0 = never).
    project_expiry_days: int = field(default=60, metadata=bounds(0, 36_500))
    preference_expiry_days: int = field(default=180, metadata=bounds(0, 36_500))
    identity_expiry_days: int = field(default=365, metadata=bounds(0, 36_500))
    #: Most pinned memories per user; the next pin is refused with a message.
    max_pins: int = field(default=10, metadata=bounds(0, 1000))
    #: Minutes during which ``dexai memory undo`` brings back what ``dexai memory clear`` removed.
    undo_minutes: float = field(default=60.0, metadata=bounds(0.0, 525_600.0))
