"""The persistent context: what the agent always knows, one section of the L1 block.

A floating header, on the store: at every SessionStart (startup,
resume, clear, compact) and after compaction the block opens with the user's
standing knowledge, by category, whatever the first prompt is about:

==============  ==========================================================
category        memories (types and ``metadata["category"]`` the
                extractors and the ``remember`` tool write)
==============  ==========================================================
instruction     category "instruction" ("Always run `make check` ...")
warning         category "warning" ("Never force-push to main.")
goal            category "goal" (an open COMMITMENT): the newest one only,
                goals replace goals; a finished goal leaves
procedure       type PROCEDURE, or category "procedure" (how the user
                releases, tests, fixes: steps in order)
convention      type PATTERN, or category "convention" (naming, errors,
                test layout)
preference      type PREFERENCE
project_fact    type FACT (facts about the user or the work, decisions), titled "Facts"
person          type RELATIONSHIP, or category "person" / "identity"
insight         type INSIGHT (lessons, realisations)
==============  ==========================================================

Only current memories that are confident (``persistent_context.min_confidence``)
and important enough (``min_importance``) enter; memories from tool output only
when the user confirmed them (:func:`~dexai_memory.recall.block.always_on`).
Within a category: pinned first, then importance, confidence, mentions,
newest (goals: newest first). Each category is held to its ``max_items`` and
``max_tokens``, the section to ``persistent_context.max_tokens``; what does
not fit stays reachable by ``recall`` and is counted ("- +3 more warnings: ask
recall").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..models import Memory, MemoryType, SearchFilters
from ..text.tokens import count_tokens
from .block import BlockItem, always_on, conflict_group, display_text, open_conflicts

if TYPE_CHECKING:
    from ..limits import CategoryLimits, PersistentContextConfig
    from .source import RecallSource

#: Categories in the order they are filled and shown.
CATEGORIES = ("instruction", "warning", "goal", "procedure", "convention", "preference", "project_fact", "person",
              "insight")
TITLES = {
    "instruction": "Standing instructions (from the user):",
    "warning": "Warnings (mistakes to avoid):",
    "goal": "Current goal:",
    "procedure": "Procedures (how the user works):",
    "convention": "Conventions (how the code is written):",
    "preference": "Preferences:",
    "project_fact": "Facts:",  # about the user as much as the project: named for what they are
    "person": "People:",
    "insight": "Insights:",
}
#: How the "+N more" line names each category.
PLURALS = {
    "instruction": "instructions", "warning": "warnings", "goal": "goals", "procedure": "procedures",
    "convention": "conventions", "preference": "preferences",
    "project_fact": "facts", "person": "people", "insight": "insights",
}
SECTION_TITLE = "Persistent context:"
#: Types read for the section.
TYPES = (MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.INSIGHT, MemoryType.RELATIONSHIP,
         MemoryType.COMMITMENT, MemoryType.PROCEDURE, MemoryType.PATTERN)
#: Most memories read per block, newest first (the lifecycle keeps a user under 150 durable facts).
READ_LIMIT = 200


def persistent_category(m: Memory) -> str | None:
    """The persistent-context category of ``m`` (see the module table), or None when it has none."""
    cat = str((m.metadata or {}).get("category") or "").lower()
    if cat in ("instruction", "warning"):
        return cat
    if cat == "goal":
        return "goal" if is_open(m) else None
    if cat == "procedure" or m.type is MemoryType.PROCEDURE:
        return "procedure"
    if cat == "convention" or m.type is MemoryType.PATTERN:
        return "convention"
    if m.type is MemoryType.COMMITMENT:
        return None  # commitments show under "Coming up"
    if cat in ("person", "identity") or m.type is MemoryType.RELATIONSHIP:
        return "person"
    if m.type is MemoryType.PREFERENCE or cat == "preference":
        return "preference"
    if m.type is MemoryType.FACT:
        return "project_fact"
    if m.type is MemoryType.INSIGHT:
        return "insight"
    return None


def is_open(m: Memory) -> bool:
    """False for a commitment or goal marked done or cancelled."""
    info = (m.metadata or {}).get("commitment")
    return not isinstance(info, dict) or str(info.get("status") or "open") in ("open", "pending")


def eligible(m: Memory, cfg: PersistentContextConfig) -> bool:
    """Whether ``m`` may enter: current, confident, important enough, not unconfirmed tool output."""
    return (m.is_valid and m.confidence >= cfg.min_confidence and m.importance >= cfg.min_importance
            and always_on(m))


def priority(m: Memory) -> tuple[object, ...]:
    """The order within a category: pinned, then important, confident, repeated, recent."""
    return (not m.pinned, -m.importance, -m.confidence, -m.mention_count, -m.created_at.timestamp(), m.id)


def by_category(memories: Sequence[Memory], cfg: PersistentContextConfig) -> dict[str, list[Memory]]:
    """Eligible memories grouped by category (in :data:`CATEGORIES` order), each in priority order."""
    groups: dict[str, list[Memory]] = {c: [] for c in CATEGORIES}
    for m in {m.id: m for m in memories}.values():
        cat = persistent_category(m)
        if cat is not None and eligible(m, cfg):
            groups[cat].append(m)
    for cat, ms in groups.items():
        ms.sort(key=(lambda m: (not m.pinned, -m.created_at.timestamp(), m.id)) if cat == "goal" else priority)
    return groups


@dataclass(frozen=True, slots=True)
class PersistentSection:
    """The rendered section: its lines (titles included), the memories shown, and per category
    how many eligible memories did not fit."""

    lines: tuple[str, ...] = ()
    items: tuple[BlockItem, ...] = ()
    more: tuple[tuple[str, int], ...] = ()

    @property
    def tokens(self) -> int:
        """Tokens of the section's lines."""
        return count_tokens("\n".join(self.lines)) if self.lines else 0

    @property
    def chars(self) -> int:
        """Characters of the section's lines, newlines included."""
        return sum(len(line) + 1 for line in self.lines)

    @property
    def memory_ids(self) -> list[str]:
        return [i.memory.id for i in self.items]


EMPTY_SECTION = PersistentSection()


def more_line(category: str, count: int) -> str:
    """The line that says how many memories of ``category`` are left out."""
    noun = PLURALS[category] if count != 1 else PLURALS[category].removesuffix("s").replace("peopl", "person")
    return f"- +{count} more {noun}: ask recall"


def _limits(cfg: PersistentContextConfig, category: str) -> CategoryLimits:
    limits: CategoryLimits = getattr(cfg, category)
    return limits


def compose_persistent(memories: Sequence[Memory], cfg: PersistentContextConfig, *,
                       max_chars: int | None = None,
                       conflicts: dict[str, tuple[Memory, ...]] | None = None) -> PersistentSection:
    """The section from candidate ``memories`` (any order, ineligible ones are dropped), within
    every category's ``max_items`` / ``max_tokens``, ``cfg.max_tokens`` and ``max_chars``.
    A memory in an open contradiction (``conflicts``, :func:`~.block.open_conflicts`) is shown with
    the other side (:func:`~.block.conflict_group`), as one item."""
    if not cfg.enabled or cfg.max_tokens <= 0:
        return EMPTY_SECTION
    groups = by_category(memories, cfg)
    used = count_tokens(SECTION_TITLE)
    chars = len(SECTION_TITLE) + 1
    lines: list[str] = []
    items: list[BlockItem] = []
    more: list[tuple[str, int]] = []
    shown: set[str] = set()
    companions: dict[str, tuple[Memory, ...]] = {}
    for cat in CATEGORIES:
        candidates = groups[cat]
        if not candidates:
            continue
        limits = _limits(cfg, cat)
        title = TITLES[cat]
        cat_used = count_tokens(title)
        taken: list[tuple[Memory, str]] = []
        for m in candidates:
            if len(taken) >= limits.max_items:
                break
            if m.id in shown:
                continue  # shown beside the other side of its contradiction
            others = tuple(o for o in (conflicts or {}).get(m.id, ()) if o.id not in shown)
            line = conflict_group([m, *others]) if others else f"- {display_text(m)}"
            cost = count_tokens(line)
            if cat_used + cost > limits.max_tokens or used + cat_used + cost > cfg.max_tokens:
                continue  # a shorter later line may still fit
            if max_chars is not None and chars + len(title) + 1 + sum(len(x) + 1 for _, x in taken) \
                    + len(line) + 1 > max_chars:
                continue
            taken.append((m, line))
            shown.add(m.id)
            if others:
                companions[m.id] = others
                shown.update(o.id for o in others)
            cat_used += cost
        left = len([m for m in candidates if m.id not in shown])
        if cat == "goal":
            left = 0  # older goals were replaced by the newest
        if not taken:
            if left:
                more.append((cat, left))
            continue
        block_lines = [title, *(x for _, x in taken)]
        extra = more_line(cat, left) if left else None
        if extra is not None:
            extra_cost = count_tokens(extra)
            extra_chars = len(extra) + 1
            fits = used + cat_used + extra_cost <= cfg.max_tokens and (
                max_chars is None or chars + sum(len(x) + 1 for x in block_lines) + extra_chars <= max_chars)
            if fits:
                block_lines.append(extra)
                cat_used += extra_cost
        lines.extend(block_lines)
        items.extend(BlockItem(m, "persistent", x, companions=companions.get(m.id, ())) for m, x in taken)
        used += cat_used
        chars += sum(len(x) + 1 for x in block_lines)
        if left:
            more.append((cat, left))
    if not items:
        return EMPTY_SECTION
    return PersistentSection((SECTION_TITLE, *lines), tuple(items), tuple(more))


def is_goal(m: Memory) -> bool:
    """Whether ``m`` is a goal (``metadata["category"] == "goal"``)."""
    return str((m.metadata or {}).get("category") or "").lower() == "goal"


def without_replaced_goals(memories: Sequence[Memory], section: PersistentSection) -> list[Memory]:
    """``memories`` without the goals the section's current goal replaced (goals replace goals:
    older unpinned goals do not come back in other parts of the block). Unchanged when the
    section shows no goal."""
    shown = {i.memory.id for i in section.items if is_goal(i.memory)}
    if not shown:
        return list(memories)
    return [m for m in memories if not is_goal(m) or m.id in shown or m.pinned]


async def gather_persistent(provider: RecallSource, user_id: str, cfg: PersistentContextConfig, *,
                            project: str | None = None, max_chars: int | None = None) -> PersistentSection:
    """The section for ``user_id`` (in ``project`` when given) read from ``provider``."""
    if not cfg.enabled or cfg.max_tokens <= 0:
        return EMPTY_SECTION
    memories = await provider.list(user_id=user_id, filters=SearchFilters(
        project=project, types=TYPES, min_importance=cfg.min_importance), limit=READ_LIMIT)
    conflicts = await open_conflicts(provider, user_id, [m for m in memories if eligible(m, cfg)])
    return compose_persistent(memories, cfg, max_chars=max_chars, conflicts=conflicts)
