"""Tiered context assembly: the most useful memory for this moment, within a budget.

:func:`assemble_context` fills a token budget (``assembly.budget_tokens``,
8,000, unless the caller gives one) in four tiers, each with its share:

=========  =======  =========================================================
tier       share    what
=========  =======  =========================================================
``tier1``  25 %     critical: open contradictions; decisions, warnings and
                    other notes about the focused files (:mod:`.focus`);
                    memories that answer the recent errors (their fixes);
                    decisions, warnings, instructions, procedures and
                    conventions about the task, and procedures the task or
                    prompt names ("release v2" brings "To release: ...");
                    the persistent context's standing instructions,
                    warnings and current goal
``tier2``  37.5 %   relevant: what the signals' text recalls (the provider's
                    search, ranked by :func:`.ranking.rank`, relevance at
                    least :data:`RELEVANT_FLOOR`)
``tier3``  25 %     background: the rest of the persistent context
                    (procedures, conventions, project facts, preferences,
                    insights, people), then current
                    memories of those categories not confident enough for
                    it (e.g. added by hand), compressed
``tier4``  12.5 %   index: "Ask me about: ..." topic keys of what else is
                    known, which the ``recall`` tool expands
=========  =======  =========================================================

Shares come from ``assembly.tier{1..4}_share`` (normalised to sum to 1), then
are **rebalanced by activity** (``signals["activity"]``, see
:func:`.focus.activity_of`) by adding :data:`ACTIVITY_SHIFTS` to them:

* ``debugging``: tier 1 +12.5 points, tier 2 and tier 3 -6.25 points each
  (8,000 tokens: 3,000 / 2,500 / 1,500 / 1,000, a worked example);
* ``planning``: tier 2 -12.5 points, tier 3 and tier 4 +6.25 points each;
* ``coding`` (and anything else): the configured shares.

A share never goes below 0 (the shifted shares are normalised again). The
fence and preamble are paid first; the rest is split by share (rounding
leftovers go to tier 1). Tiers fill in order, and **what a tier leaves
unused is passed down** to the next one (tier 4's remainder stays unused).

**Compression levels.** Every memory can be shown full, as a summary,
compressed or as an index key (:mod:`.forms`). Each tier has a richest and a
plainest level (:data:`LEVEL_RANGE`: tiers 1 and 2 full to compressed, tier 3
summary to compressed, tier 4 index keys only). A tier first takes every
candidate it can at its plainest level, best first (coverage), then raises
them, best first, to the richest level that fits its remaining budget. A
loose budget thus shows full texts, a tight one compressed lines; a memory
that fits nowhere is still indexed in tier 4 when room is left.

**Never twice, always within budget.** A memory placed in one tier is not a
candidate for the later ones (a contradiction's two memories count as
placed). ``token_count`` is :func:`~dexai_memory.text.tokens.count_tokens` of the
whole context and never exceeds the budget; the tier counts are those of each
tier's lines (title included), so ``token_count`` = the fence's tokens + the
tiers' sum. A budget too small for the fence, or nothing to say, gives
``context == ""`` and ``token_count == 0``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import InvalidSignals
from ..lifecycle.contradictions import conflicts
from ..models import Memory, MemoryType, SearchFilters, is_tool_origin
from ..text.tokens import count_tokens
from .block import (
    FENCE_TOKENS,
    display_text,
    neutralise,
    user_confirmed,
)
from .focus import Focus
from .forms import LEVELS, Forms, forms_of
from .persistent import by_category, persistent_category, priority
from .ranking import BUDGET_POOL, content_terms, lexical_relevance, rank
from .render import fenced

if TYPE_CHECKING:
    from ..config import AssemblyConfig, Settings
    from ..providers.base import MemoryProvider

TIERS = ("tier1", "tier2", "tier3", "tier4")
TITLES = {
    "tier1": "Critical (this file, task and errors):",
    "tier2": "Relevant:",
    "tier3": "Background (conventions, compressed):",
    "tier4": "Ask me about (the recall tool expands these):",
}
#: (richest, plainest) level shown in each tier.
LEVEL_RANGE = {"tier1": ("full", "compressed"), "tier2": ("full", "compressed"),
               "tier3": ("summary", "compressed"), "tier4": ("index", "index")}
#: Points of budget share each activity moves between the tiers (tier1..tier4).
ACTIVITY_SHIFTS: dict[str, tuple[float, float, float, float]] = {
    "debugging": (0.125, -0.0625, -0.0625, 0.0),
    "planning": (0.0, -0.125, 0.0625, 0.0625),
    "coding": (0.0, 0.0, 0.0, 0.0),
}
#: Types assembly reads: every durable memory and episode (not snapshots, not raw transcripts).
DURABLE_TYPES = tuple(t for t in MemoryType if t not in (MemoryType.SNAPSHOT, MemoryType.TRANSCRIPT))
#: Most memories read for tiers 1, 3 and 4 (the lifecycle keeps a user under 150 durable facts).
READ_LIMIT = 500
#: Least relevance (:func:`.ranking.relevance`) of a tier 2 memory.
RELEVANT_FLOOR = 0.3
#: Recent errors looked up, and memories kept per error.
MAX_ERRORS, PER_ERROR = 5, 3
#: Persistent-context categories that are critical (tier 1); the others are background (tier 3).
CRITICAL_CATEGORIES = ("warning", "instruction", "goal")
BACKGROUND_CATEGORIES = ("instruction", "warning", "goal", "procedure", "convention", "project_fact", "preference",
                         "insight", "person")
#: Kinds that come first among the memories about a file or task (a procedure or convention the
#: task names is how to do it: "release v2" brings "To release: ...").
DECISIVE = ("decision", "warning", "instruction", "procedure", "convention")
_FIX = re.compile(r"(?i)\b(fix(?:ed|es)?|solved?|resolved?|workaround|root cause|because)\b")


def tier_shares(cfg: AssemblyConfig, activity: str) -> dict[str, float]:
    """The four tiers' shares of the budget for ``activity`` (see the module docstring)."""
    base = [max(0.0, s) for s in (cfg.tier1_share, cfg.tier2_share, cfg.tier3_share, cfg.tier4_share)]
    total = sum(base) or 1.0
    shifted = [max(0.0, s / total + d) for s, d in zip(base, ACTIVITY_SHIFTS.get(activity, (0.0,) * 4),
                                                        strict=True)]
    total = sum(shifted) or 1.0
    return {t: s / total for t, s in zip(TIERS, shifted, strict=True)}


def tier_budgets(available: int, shares: Mapping[str, float]) -> dict[str, int]:
    """``available`` tokens split by ``shares`` (whole tokens; the rounding leftover goes to tier 1)."""
    out = {t: int(available * shares[t]) for t in TIERS}
    out["tier1"] += max(0, available - sum(out.values()))
    return out


def kind_of(m: Memory) -> str:
    """A short label for ``m``: its category (decision, warning, ...) or else its type, lower-cased."""
    cat = str((m.metadata or {}).get("category") or "").strip().lower()
    return cat or m.type.value.lower()


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one memory went: its tier, the level it is shown at and its label."""

    memory_id: str
    tier: str
    level: str
    kind: str

    def to_dict(self) -> dict[str, str]:
        return {"id": self.memory_id, "tier": self.tier, "level": self.level, "kind": self.kind}


@dataclass(frozen=True, slots=True)
class AssembledContext:
    """What :func:`assemble_context` built (see the module docstring)."""

    context: str = ""
    token_count: int = 0
    tiers: Mapping[str, int] = field(default_factory=lambda: dict.fromkeys(TIERS, 0))
    #: Each tier's allotted budget before pass-down (after rebalancing).
    budgets: Mapping[str, int] = field(default_factory=lambda: dict.fromkeys(TIERS, 0))
    budget: int = 0
    activity: str = "coding"
    query: str = ""
    placements: tuple[Placement, ...] = ()

    @property
    def memory_ids(self) -> list[str]:
        """Ids of every memory in the context, in order."""
        return [p.memory_id for p in self.placements]

    def to_json(self) -> dict[str, Any]:
        """``{"context", "token_count", "tiers", "budget", "budgets", "activity", "query", "memories"}``."""
        return {"context": self.context, "token_count": self.token_count, "tiers": dict(self.tiers),
                "budget": self.budget, "budgets": dict(self.budgets), "activity": self.activity,
                "query": self.query, "memories": [p.to_dict() for p in self.placements]}


@dataclass(frozen=True, slots=True)
class _Item:
    """One line candidate: one memory, or the two of a contradiction."""

    memories: tuple[Memory, ...]
    kind: str = ""


class _Renderer:
    """Lines of items at each level, with each memory's forms and texts computed once."""

    def __init__(self) -> None:
        self._forms: dict[str, Forms] = {}
        self._texts: dict[tuple[str, str], str] = {}

    def forms(self, m: Memory) -> Forms:
        if m.id not in self._forms:
            self._forms[m.id] = forms_of(m)
        return self._forms[m.id]

    def text(self, m: Memory, level: str) -> str:
        """``m`` at ``level``, neutralised and marked as tool output like :func:`.block.display_text`."""
        key = (m.id, level)
        if key not in self._texts:
            if level == "full":
                self._texts[key] = display_text(m)
            else:
                self._texts[key] = tool_label(m) + neutralise(self.forms(m).text(level))
        return self._texts[key]

    def line(self, item: _Item, level: str) -> str:
        label = f"[{neutralise(item.kind)}] " if item.kind else ""  # a category or file name: stored text too
        return f"- {label}{' vs. '.join(self.text(m, level) for m in item.memories)}"


def tool_label(m: Memory) -> str:
    """The "(from tool output ...) " mark :func:`.block.display_text` puts before unconfirmed tool
    output, or ''."""
    if not is_tool_origin(m) or user_confirmed(m):
        return ""
    tool = (m.metadata or {}).get("tool")
    return f"(from tool output, {neutralise(str(tool)[:40])}) " if tool else "(from tool output) "


@dataclass
class _TierFill:
    lines: list[str] = field(default_factory=list)
    chosen: list[tuple[_Item, str]] = field(default_factory=list)
    tokens: int = 0


def fill_tier(tier: str, items: Sequence[_Item], limit: int, renderer: _Renderer) -> _TierFill:
    """The lines of one tier within ``limit`` tokens (coverage at the plainest level first, then the
    richest level that fits, best first; see the module docstring)."""
    out = _TierFill()
    title_cost = count_tokens(TITLES[tier])
    if not items or title_cost >= limit:
        return out
    richest, plainest = LEVEL_RANGE[tier]
    levels = LEVELS[LEVELS.index(richest): LEVELS.index(plainest) + 1]
    used = title_cost
    picked: list[list[Any]] = []  # [item, level index, cost]
    for item in items:
        cost = count_tokens(renderer.line(item, plainest))
        if used + cost <= limit:
            picked.append([item, len(levels) - 1, cost])
            used += cost
    if not picked:
        return out
    for entry in picked:
        for i in range(entry[1]):
            cost = count_tokens(renderer.line(entry[0], levels[i]))
            if used - entry[2] + cost <= limit:
                used += cost - entry[2]
                entry[1], entry[2] = i, cost
                break
    out.lines = [TITLES[tier], *(renderer.line(e[0], levels[e[1]]) for e in picked)]
    out.chosen = [(e[0], levels[e[1]]) for e in picked]
    out.tokens = used
    return out


def fill_index(memories: Sequence[Memory], limit: int, renderer: _Renderer) -> _TierFill:
    """Tier 4: one line of topic keys (index forms, each topic once) within ``limit`` tokens."""
    out = _TierFill()
    title = TITLES["tier4"]
    used = count_tokens(title)
    topics: dict[str, list[Memory]] = {}
    for m in memories:
        topic = neutralise(renderer.forms(m).index).replace(",", " ")
        if topic in topics:
            topics[topic].append(m)
            continue
        cost = count_tokens(topic) + (1 if topics else 0)  # ", " before every topic but the first
        if used + cost > limit:
            continue
        topics[topic] = [m]
        used += cost
    if not topics:
        return out
    keys = list(topics)
    while keys and count_tokens(f"{title} {', '.join(keys)}") > limit:  # never over, whatever a key holds
        topics.pop(keys.pop())
    if not keys:
        return out
    out.lines = [f"{title} {', '.join(keys)}"]
    out.chosen = [(_Item((m,), "topic"), "index") for ms in topics.values() for m in ms]
    out.tokens = count_tokens(out.lines[0])
    return out


async def _open_conflicts(provider: MemoryProvider, user_id: str, project: str | None) -> list[_Item]:
    if provider.contradiction_log is None:
        return []
    out = []
    for c in await conflicts(provider, user_id, limit=20):
        if c.a is None or c.b is None or not (c.a.is_valid and c.b.is_valid):
            continue
        if project is not None and project not in (c.a.project, c.b.project):
            continue
        out.append(_Item((c.a, c.b), "open conflict"))
    return out


def _about_files(focus: Focus, durable: Sequence[Memory]) -> list[_Item]:
    if not focus.files:
        return []
    keys = focus.file_keys
    about = [(m, path) for m in durable if (path := focus.mentions_file(m, keys)) is not None]
    about.sort(key=lambda x: (kind_of(x[0]) not in DECISIVE, not x[0].pinned, -x[0].importance,
                              -x[0].created_at.timestamp(), x[0].id))
    return [_Item((m,), f"{kind_of(m)}: {path.rsplit('/', 1)[-1]}") for m, path in about]


async def _error_fixes(provider: MemoryProvider, user_id: str, focus: Focus, settings: Settings,
                       project: str | None, now: datetime | None) -> list[_Item]:
    out: list[_Item] = []
    for error in focus.errors[:MAX_ERRORS]:
        results = await provider.search(error, user_id=user_id, filters=SearchFilters(project=project,
                                        types=DURABLE_TYPES), limit=BUDGET_POOL)
        hits = [r for r in rank(results, error, now=now) if r.relevance >= settings.auto_recall.relevance_threshold]
        out.extend(_Item((r.memory,), "fix" if _FIX.search(r.memory.content) else "error")
                   for r in hits[:PER_ERROR])
    return out


def goal_terms(m: Memory) -> list[str]:
    """The content words of what a procedure is for ("To cut a release: ..." -> cut, release), or []
    when ``m`` is not a procedure."""
    if kind_of(m) != "procedure":
        return []
    head, sep, _ = m.content.partition(":")
    return content_terms(re.sub(r"^(?:to|the)\s+|\s+process$", "", head.strip(), flags=re.I)) if sep else []


def names_goal(m: Memory, terms: Sequence[str]) -> bool:
    """Whether ``terms`` name at least half of what procedure ``m`` is for ("release v2" ->
    "To release: ...")."""
    goal = goal_terms(m)
    return bool(goal) and sum(1 for t in goal if t in terms) * 2 >= len(goal)


def _about_task(focus: Focus, durable: Sequence[Memory]) -> list[_Item]:
    terms, asked = content_terms(focus.task), content_terms(focus.query)
    if not terms and not asked:
        return []
    hits = [m for m in durable if terms and kind_of(m) in DECISIVE and (
        names_goal(m, terms) or lexical_relevance(terms, m.content) >= 0.6) or asked and names_goal(m, asked)]
    hits.sort(key=lambda m: (not m.pinned, -m.importance, -m.created_at.timestamp(), m.id))
    return [_Item((m,), kind_of(m)) for m in hits]


def _standing(durable: Sequence[Memory], settings: Settings, categories: Sequence[str], *,
              unconfirmed: bool = False) -> list[_Item]:
    """The persistent context's memories of ``categories`` (confident ones, in priority order); with
    ``unconfirmed``, then the other current memories of those categories (background has room for
    what is not confident enough to float at every session start, e.g. facts added by hand)."""
    cfg = settings.persistent_context
    if not cfg.enabled:
        return []
    groups = by_category(durable, cfg)
    items = [_Item((m,), cat.replace("project_fact", "fact")) for cat in categories for m in groups[cat]]
    if unconfirmed:
        shown = {m.id for ms in groups.values() for m in ms}
        rest = sorted((m for m in durable if m.id not in shown and m.is_valid and not is_tool_origin(m)
                       and persistent_category(m) in categories), key=priority)
        items += [_Item((m,), str(persistent_category(m)).replace("project_fact", "fact")) for m in rest]
    return items


async def _critical(provider: MemoryProvider, user_id: str, settings: Settings, focus: Focus,
                    durable: Sequence[Memory], project: str | None, now: datetime | None) -> list[_Item]:
    return [*await _open_conflicts(provider, user_id, project), *_about_files(focus, durable),
            *await _error_fixes(provider, user_id, focus, settings, project, now), *_about_task(focus, durable),
            *_standing(durable, settings, CRITICAL_CATEGORIES)]


async def _relevant(provider: MemoryProvider, user_id: str, focus: Focus, project: str | None,
                    now: datetime | None) -> list[_Item]:
    if not focus.query:
        return []
    results = await provider.search(focus.query, user_id=user_id, filters=SearchFilters(
        project=project, types=DURABLE_TYPES), limit=BUDGET_POOL)
    return [_Item((r.memory,)) for r in rank(results, focus.query, now=now) if r.relevance >= RELEVANT_FLOOR]


def _index_order(durable: Sequence[Memory]) -> list[Memory]:
    return sorted(durable, key=lambda m: (not m.pinned, -m.importance, -m.mention_count,
                                          -m.created_at.timestamp(), m.id))


async def assemble_context(provider: MemoryProvider, user_id: str, settings: Settings, *,
                           budget: int | None = None, signals: Mapping[str, Any] | None = None,
                           project: str | None = None, now: datetime | None = None) -> AssembledContext:
    """Assemble the context for ``signals`` within ``budget`` tokens (default
    ``assembly.budget_tokens``) from ``user_id``'s memories (in ``project`` when given).

    ``signals`` is the design's object (see :mod:`.focus`: ``query``/``prompt``,
    ``current_file``, ``task``, ``activity``, ``recent_errors``, any strings).
    Raises :class:`~dexai_memory.errors.InvalidSignals` for signals of the wrong
    shape or a budget under 1; provider errors propagate. See the module
    docstring for the tiers, shares, levels and guarantees.
    """
    focus = Focus.parse(signals)
    total = settings.assembly.budget_tokens if budget is None else budget
    if isinstance(total, bool) or not isinstance(total, int) or total < 1:
        raise InvalidSignals(f"budget must be a whole number of tokens >= 1, got {budget!r}")
    shares = tier_shares(settings.assembly, focus.activity)
    budgets = tier_budgets(max(0, total - FENCE_TOKENS), shares)
    empty = AssembledContext(budget=total, budgets=budgets, activity=focus.activity, query=focus.query)
    if total <= FENCE_TOKENS:
        return empty
    durable = await provider.list(user_id=user_id, filters=SearchFilters(project=project, types=DURABLE_TYPES),
                                  limit=READ_LIMIT)
    renderer = _Renderer()
    placed: set[str] = set()
    fills: dict[str, _TierFill] = {}
    carry = 0
    for tier in TIERS:
        limit = budgets[tier] + carry
        if tier == "tier4":
            fill = fill_index(_index_order([m for m in durable if m.id not in placed]), limit, renderer)
        else:
            if tier == "tier1":
                items = await _critical(provider, user_id, settings, focus, durable, project, now)
            elif tier == "tier2":
                items = await _relevant(provider, user_id, focus, project, now)
            else:
                items = _standing(durable, settings, BACKGROUND_CATEGORIES, unconfirmed=True)
            fresh, seen = [], set(placed)
            for item in items:
                ids = {m.id for m in item.memories}
                if ids & seen:
                    continue
                seen |= ids
                fresh.append(item)
            fill = fill_tier(tier, fresh, limit, renderer)
        placed.update(m.id for item, _ in fill.chosen for m in item.memories)
        fills[tier] = fill
        carry = limit - fill.tokens
    lines = [line for tier in TIERS for line in fills[tier].lines]
    if not lines:
        return empty
    context = fenced(lines)
    placements = tuple(Placement(m.id, tier, level, item.kind) for tier in TIERS
                       for item, level in fills[tier].chosen for m in item.memories)
    return AssembledContext(context, count_tokens(context), {t: count_tokens("\n".join(fills[t].lines))
                                                             for t in TIERS},
                            budgets, total, focus.activity, focus.query, placements)
