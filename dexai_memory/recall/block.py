"""The L1 memory block: what is injected into the model's context.

Sections, each held to its own token budget
(``l1_block`` in the config) and omitted when empty:

* **Profile** - pinned memories, L1-tier memories and the strongest preferences;
* **Relevant** - memories found for the current query (auto-recall);
* **Coming up** - open commitments due soon, framed forward, no guilt language;
* **Session state** - the latest working-state snapshot (current task, last action).

The block is data, not instructions: its lines are neutralised and fenced by
:mod:`.render`, the one rendering of memories every door uses (fence tags removed,
role markup and "ignore previous instructions" quoted, one fence that always closes).

Memories extracted from tool output (``metadata["origin"] == "tool"``: a web
page or file a tool returned) never enter the always-on parts (Profile,
Coming up) unless the user confirmed them (:func:`always_on`); they may come
back by relevance, marked "(from tool output ...)" (:func:`display_text`). Every block stays under
:data:`MAX_INJECTION_CHARS` (Claude Code caps hook output at 10,000 characters).
Token counts use :func:`dexai_memory.text.tokens.count_tokens` (the one counter).

When two current memories are in an open contradiction (recorded by supersession for
review, :mod:`dexai_memory.supersession.contradictions`), a block that shows one shows
both, together, each with the day it was said and newest first, marked
:data:`CONFLICT_MARK` (:func:`conflict_group`): the block does not pick a side
the user has not picked. :func:`open_conflicts` finds them for the memories of a block
(:attr:`BlockInputs.conflicts`); the pair counts as one line against the section's budget.

This module is stdlib-only (models + tokens): the command-hook fast path
(:mod:`dexai_memory.hooks.client`) renders blocks with it without loading numpy
or SQLite extensions. :func:`compose_block` formats already chosen memories and
reports exactly which ones made it in; :func:`gather_block_inputs` fetches them
from a provider.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from ..models import Memory, MemoryType, SearchFilters, Tier, as_utc, is_tool_origin, utcnow
from ..text.tokens import count_tokens, truncate_to_tokens
from .render import FENCE_CLOSE as FENCE_CLOSE
from .render import FENCE_OPEN as FENCE_OPEN
from .render import PREAMBLE as PREAMBLE
from .render import fenced
from .render import neutralise as neutralise
from .render import normalise as normalise

if TYPE_CHECKING:
    from ..config import L1BlockConfig
    from ..providers.base import MemoryProvider
    from .source import RecallSource

#: Claude Code caps hook output at 10,000 characters; every block stays well under it.
MAX_INJECTION_CHARS = 9000
#: Default section budgets in tokens: profile, relevant, commitments, session.
DEFAULT_BUDGETS = (150, 500, 200, 150)
#: Tokens of the fence and preamble (counted against the block's total).
FENCE_TOKENS = count_tokens("\n".join([FENCE_OPEN, PREAMBLE, FENCE_CLOSE]))

SECTION_TITLES = {
    "profile": "Profile:",
    "relevant": "Relevant:",
    "commitments": "Coming up:",
    "session": "Session state:",
}

_GUILT = [
    (re.compile(r"(?i)\boverdue\b"), "ready to pick up"),
    (re.compile(r"(?i)\bpast due\b"), "ready to pick up"),
    (re.compile(r"(?i)\byou (?:forgot|failed|missed|neglected) to\b"), "next step:"),
    (re.compile(r"(?i)\byou should have\b"), "you can"),
    (re.compile(r"(?i)\b(?:still )?haven't\b"), "can now"),
    (re.compile(r"(?i)\blate\b"), "open"),
]


def forward_framing(text: str) -> str:
    """Rephrase guilt language ("overdue", "you forgot to") in forward-facing terms."""
    for pattern, replacement in _GUILT:
        text = pattern.sub(replacement, text)
    return text


@dataclass(frozen=True, slots=True)
class BlockItem:
    """One memory shown in a block, with its section and the line it became."""

    memory: Memory
    section: str
    line: str
    score: float | None = None
    #: Memories shown with this one: the other side of an open contradiction (:func:`conflict_group`).
    companions: tuple[Memory, ...] = ()


@dataclass(frozen=True, slots=True)
class L1Block:
    """A rendered block: its text ('' when empty), its tokens and what it holds."""

    text: str
    tokens: int
    items: tuple[BlockItem, ...] = ()

    @property
    def memories(self) -> tuple[Memory, ...]:
        """Every memory that made it into the text, in order."""
        return tuple(i.memory for i in self.items)

    @property
    def shown(self) -> tuple[Memory, ...]:
        """Every memory whose text is in the block, the other sides of open contradictions included."""
        return tuple(m for i in self.items for m in (i.memory, *i.companions))

    def section(self, name: str) -> list[Memory]:
        """The memories of one section ('profile', 'relevant', 'commitments', 'session')."""
        return [i.memory for i in self.items if i.section == name]

    def __bool__(self) -> bool:
        return bool(self.text)


EMPTY_BLOCK = L1Block("", 0, ())


@dataclass(frozen=True, slots=True)
class BlockInputs:
    """The memories a block is built from, before budgets are applied."""

    profile: Sequence[Memory] = ()
    relevant: Sequence[Memory] = ()
    commitments: Sequence[Memory] = ()
    session: Sequence[Memory] = ()
    #: Scores of relevant memories by id (reported back with the block).
    scores: dict[str, float] = field(default_factory=dict)
    #: For a memory's id, the current memories it is in an open contradiction with (:func:`open_conflicts`).
    conflicts: dict[str, tuple[Memory, ...]] = field(default_factory=dict)
    #: Whether each relevant line says the day it was said (:func:`said_line`: a prompt's block in a
    #: session, where "the user asked to install gh" reads differently a day or a month later).
    said: bool = False


_YEAR = re.compile(r"\b(?:1[89]|2[01])\d\d\b")
def user_confirmed(m: Memory) -> bool:
    """Whether the user vouched for ``m``: pinned it, or stated it again themselves
    (``metadata["confirmed_by_user"]``, set when a user's note repeats or refines it)."""
    return m.pinned or bool((m.metadata or {}).get("confirmed_by_user"))


def always_on(m: Memory) -> bool:
    """Whether ``m`` may appear without being asked for (profile, pinned / L1 / high-importance
    sections, commitments, post-compaction priorities): not tool output, unless the user confirmed it.
    Tool output still comes back by relevance, marked as such (:func:`memory_line`)."""
    return not is_tool_origin(m) or user_confirmed(m)


def display_text(m: Memory) -> str:
    """``m``'s content, neutralised, marked "(from tool output ...)" when it came from a tool and the
    user has not confirmed it."""
    text = neutralise(m.content)
    if is_tool_origin(m) and not user_confirmed(m):
        tool = (m.metadata or {}).get("tool")
        label = f"from tool output, {neutralise(str(tool)[:40])}" if tool else "from tool output"
        return f"({label}) {text}"
    return text


def memory_line(m: Memory) -> str:
    """A relevant memory as a list line: content, plus its event date when known and the
    text does not already give one (a resolved "on 7 May 2023" needs no "(2023-05-07)");
    tool output is marked as such (:func:`display_text`)."""
    text = display_text(m)
    when = m.metadata.get("event_date") if m.metadata else None
    when = neutralise(str(when)) if when else None
    return f"- {text} ({when})" if when and str(when) not in text and not _YEAR.search(text) else f"- {text}"


def said_line(m: Memory) -> str:
    """:func:`memory_line` followed by the day ``m`` was said, unless its text already gives a year."""
    line = memory_line(m)
    return line if _YEAR.search(line) else f"{line} (said {said_on(m)})"


#: How a memory in an open contradiction is marked in the block.
CONFLICT_MARK = "conflicting, unresolved: see `dexai memory conflicts`"


def said_on(m: Memory) -> str:
    """The day ``m`` was said (its ``valid_from``, else when it was stored), as YYYY-MM-DD."""
    return (m.valid_from or m.created_at).date().isoformat()


def conflict_group(memories: Sequence[Memory]) -> str:
    """Memories in an open contradiction as consecutive list lines, newest first, each with the day it
    was said and :data:`CONFLICT_MARK`."""
    ordered = sorted(memories, key=lambda m: ((m.valid_from or m.created_at).timestamp(), m.id), reverse=True)
    return "\n".join(f"- {display_text(m)} (said {said_on(m)}; {CONFLICT_MARK})" for m in ordered)


def _due(m: Memory) -> datetime | None:
    info = m.metadata.get("commitment") if m.metadata else None
    if isinstance(info, dict) and info.get("due_at"):
        try:
            return as_utc(str(info["due_at"]))
        except ValueError:
            return None
    return None


def _due_phrase(due: datetime | None, due_text: str | None, now: datetime) -> str:
    if due is None:
        return f" ({forward_framing(neutralise(due_text))})" if due_text else ""
    days = (due.date() - now.date()).days
    if days < 0:
        return " (ready whenever you are)"
    if days == 0:
        return " (today)"
    if days == 1:
        return " (tomorrow)"
    return f" (in {days} days, {due.strftime('%a %d %b')})"


def commitment_line(m: Memory, now: datetime | None = None) -> str:
    """A commitment, forward-framed: what, with whom, when ('today', 'in 3 days')."""
    now = now or utcnow()
    info = m.metadata.get("commitment") if m.metadata else None
    info = info if isinstance(info, dict) else {}
    what = str(info.get("what") or m.content)
    who = info.get("who")
    text = forward_framing(neutralise(what))
    if who and str(who).lower() not in text.lower():
        text += f" (with {neutralise(str(who))})"
    return f"- {text}{_due_phrase(_due(m), info.get('due_text'), now)}"


def commitments_due_soon(memories: Sequence[Memory], *, days: int, now: datetime | None = None) -> list[Memory]:
    """Open commitments due within ``days`` (or undated), soonest first; commitments taken from
    tool output are left out unless the user confirmed them (:func:`always_on`), and so is a
    commitment already shown on or after its due day (``due_shown_at``: shown once)."""
    now = now or utcnow()
    out: list[tuple[float, Memory]] = []
    for m in memories:
        if not always_on(m):
            continue
        info = m.metadata.get("commitment") if m.metadata else None
        if isinstance(info, dict) and str(info.get("status") or "open") not in ("open", "pending"):
            continue
        due = _due(m)
        if due is not None and (due - now).total_seconds() > days * 86400:
            continue
        if due is not None and due.date() <= now.date() and isinstance(info, dict) and info.get("due_shown_at"):
            continue  # a due commitment is shown once (then reachable by recall)
        out.append(((due - now).total_seconds() if due else float("inf"), m))
    out.sort(key=lambda x: x[0])
    return [m for _, m in out]


def _fit(section: str, lines: Sequence[tuple[Memory, str]], budget: int, scores: dict[str, float],
         companions: dict[str, tuple[Memory, ...]] | None = None) -> tuple[list[str], list[BlockItem]]:
    """Title + the lines that fit ``budget`` tokens (a first line too long is truncated). An open
    contradiction's lines (a memory with ``companions``) are one entry: in or out together."""
    title = SECTION_TITLES[section]
    used = count_tokens(title)
    out: list[str] = []
    items: list[BlockItem] = []
    for memory, line in lines:
        cost = count_tokens(line)
        if used + cost > budget:
            if out or budget - used <= 8 or memory.id in (companions or {}):
                continue  # a shorter later line may still fit; a contradiction is never shown cut
            line = truncate_to_tokens(line, budget - used)
            if not line:
                continue
            cost = count_tokens(line)
        out.append(line)
        items.append(BlockItem(memory, section, line, scores.get(memory.id), (companions or {}).get(memory.id, ())))
        used += cost
    return ([title, *out], items) if out else ([], [])


def compose_block(inputs: BlockInputs, *, budgets: tuple[int, int, int, int] = DEFAULT_BUDGETS,
                  max_tokens: int = 1000, max_chars: int = MAX_INJECTION_CHARS,
                  now: datetime | None = None, head: Sequence[str] = (),
                  head_items: Sequence[BlockItem] = ()) -> L1Block:
    """Format already chosen memories into a fenced block within every budget.

    Each section keeps its lines in the given order while they fit its budget;
    the whole block (fence included) is then held to ``max_tokens`` and
    ``max_chars`` by dropping last lines: session state first, then
    commitments, then profile, and relevant memories last (the query asked
    for them). :attr:`L1Block.items` lists exactly the memories left in.
    ``head`` (the persistent context, already held to its own budget, with the
    memories it shows in ``head_items``) opens the block and is never cut; its
    memories are not repeated below. Returns :data:`EMPTY_BLOCK` when nothing is left.
    """
    now = now or utcnow()
    p_budget, r_budget, c_budget, s_budget = budgets
    seen: set[str] = {m.id for i in head_items for m in (i.memory, *i.companions)}
    companions: dict[str, tuple[Memory, ...]] = {}

    def fresh(ms: Sequence[Memory]) -> list[Memory]:
        out = []
        for m in ms:
            if m.id not in seen:
                seen.add(m.id)
                out.append(m)
                others = tuple(o for o in inputs.conflicts.get(m.id, ()) if o.id != m.id)
                if others:  # shown beside m, never again on their own
                    companions[m.id] = others
                    seen.update(o.id for o in others)
        return out

    def rows(ms: Sequence[Memory], line: Callable[[Memory], str]) -> list[tuple[Memory, str]]:
        return [(m, conflict_group([m, *companions[m.id]]) if m.id in companions else line(m)) for m in ms]

    profile = fresh(inputs.profile)
    relevant = fresh(inputs.relevant)
    commitments = fresh(inputs.commitments)
    session = fresh(inputs.session)
    parts = [
        _fit("profile", rows(profile, lambda m: f"- {display_text(m)}"), p_budget, inputs.scores, companions),
        _fit("relevant", rows(relevant, said_line if inputs.said else memory_line), r_budget, inputs.scores,
             companions),
        _fit("commitments", rows(commitments, lambda m: commitment_line(m, now)), c_budget, inputs.scores,
             companions),
        _fit("session", [(m, f"- {neutralise(m.content)}") for m in session], s_budget, inputs.scores),
    ]
    # The total cap: drop lines from the end of the least important sections first.
    drop_order = [3, 2, 0, 1]  # session, commitments, profile, relevant

    def assemble() -> str:
        body = [*head, *(line for lines, _ in parts for line in lines)]
        return fenced(body)

    text = assemble()
    while text and (count_tokens(text) > max_tokens or len(text) > max_chars):
        for idx in drop_order:
            lines, items = parts[idx]
            if items:
                lines = lines[:-1]
                items = items[:-1]
                parts[idx] = (lines if items else [], items)
                break
        else:
            break  # only the head is left
        text = assemble()
    kept = (*head_items, *(i for _, its in parts for i in its))
    if not text or not kept:
        return EMPTY_BLOCK
    return L1Block(text, count_tokens(text), kept)


def render_block(*, profile: Sequence[Memory] = (), relevant: Sequence[Memory] = (),
                 commitments: Sequence[Memory] = (), session: Sequence[Memory] = (),
                 budgets: tuple[int, int, int, int] = DEFAULT_BUDGETS, max_tokens: int = 1000) -> str:
    """The block's text from already chosen memories ('' when every section is empty)."""
    return compose_block(BlockInputs(profile, relevant, commitments, session), budgets=budgets,
                         max_tokens=max_tokens).text


def budgets_of(cfg: L1BlockConfig) -> tuple[int, int, int, int]:
    """Section budgets from the ``l1_block`` config."""
    return (cfg.profile_tokens, cfg.memories_tokens, cfg.commitments_tokens, cfg.session_tokens)


def profile_of(memories: Sequence[Memory]) -> list[Memory]:
    """Profile order: pinned first, then L1-tier, then by importance, newest first.

    Memories from tool output that the user has not confirmed are left out
    (:func:`always_on`): a web page cannot write the user's profile.
    """
    unique = [m for m in {m.id: m for m in memories}.values() if always_on(m)]
    unique.sort(key=lambda m: (not m.pinned, m.tier is not Tier.L1, -m.importance,
                               -(m.created_at.timestamp())))
    return unique


async def open_conflicts(provider: object, user_id: str, memories: Sequence[Memory], *,
                         limit: int = 200) -> dict[str, tuple[Memory, ...]]:
    """For each of ``memories`` in an open contradiction, the other current memories of it (by id), for
    :attr:`BlockInputs.conflicts`. Reads the provider's ``contradiction_log`` (one query) and fetches
    a side not among ``memories`` with ``get``; a provider that keeps no contradictions gives ``{}``.
    A contradiction whose other side is gone or no longer current is left out: it is settled."""
    log = getattr(provider, "contradiction_log", None)
    if log is None or not memories:
        return {}
    by_id = {m.id: m for m in memories}
    pairs = [(c.memory_a, c.memory_b) for c in await log.list(user_id=user_id, open_only=True, limit=limit)
             if c.memory_a in by_id or c.memory_b in by_id]
    if not pairs:
        return {}
    known: dict[str, Memory | None] = dict(by_id)
    get = getattr(provider, "get", None)
    for mid in {i for pair in pairs for i in pair} - known.keys():
        try:
            known[mid] = await get(mid, user_id=user_id) if get is not None else None
        except LookupError:
            known[mid] = None
    out: dict[str, list[Memory]] = {}
    for a_id, b_id in pairs:
        a, b = known.get(a_id), known.get(b_id)
        if a is None or b is None or not (a.is_valid and b.is_valid) or a.id == b.id:
            continue
        for one, other in ((a, b), (b, a)):
            if one.id in by_id and all(o.id != other.id for o in out.get(one.id, ())):
                out.setdefault(one.id, []).append(other)
    return {k: tuple(v) for k, v in out.items()}


async def gather_block_inputs(provider: RecallSource, *, user_id: str, project: str | None = None,
                              relevant: Sequence[Memory] = (), scores: dict[str, float] | None = None,
                              commitments_due_days: int = 7, session_id: str | None = None,
                              now: datetime | None = None) -> BlockInputs:
    """Fetch profile, commitments and the latest snapshot from ``provider``.

    ``relevant`` (from auto-recall) is passed through. The snapshot of
    ``session_id`` is preferred; otherwise the newest snapshot in scope.
    """
    pinned = await provider.list(user_id=user_id, filters=SearchFilters(project=project, pinned=True), limit=10)
    top_tier = await provider.list(user_id=user_id, filters=SearchFilters(project=project, tiers=(Tier.L1,)),
                                   limit=10)
    prefs = await provider.list(user_id=user_id, filters=SearchFilters(
        project=project, types=(MemoryType.PREFERENCE,), min_importance=6), limit=10)
    profile = [m for m in profile_of([*pinned, *top_tier, *prefs]) if m.type is not MemoryType.SNAPSHOT]
    open_commitments = await provider.list(user_id=user_id, filters=SearchFilters(
        project=project, types=(MemoryType.COMMITMENT,)), limit=50)
    session: list[Memory] = []
    if session_id:
        session = await provider.list(user_id=user_id, filters=SearchFilters(
            project=project, types=(MemoryType.SNAPSHOT,), session_id=session_id), limit=1)
    if not session:
        session = await provider.list(user_id=user_id, filters=SearchFilters(
            project=project, types=(MemoryType.SNAPSHOT,)), limit=1)
    commitments = commitments_due_soon(open_commitments, days=commitments_due_days, now=now)
    conflicts = await open_conflicts(provider, user_id, [*profile, *relevant, *commitments])
    return BlockInputs(profile=profile, relevant=list(relevant), commitments=commitments, session=session,
                       scores=dict(scores or {}), conflicts=conflicts)


async def build_block(provider: MemoryProvider, *, user_id: str, query: str | None, max_tokens: int = 1000,
                      project: str | None = None, relevant_limit: int = 5) -> str:
    """Build the full L1 block straight from a provider (``build_context_block``)."""
    relevant: list[Memory] = []
    if query:
        results = await provider.search(query, user_id=user_id, filters=SearchFilters(project=project),
                                        limit=relevant_limit * 2)
        relevant = [r.memory for r in results][:relevant_limit]
    inputs = await gather_block_inputs(provider, user_id=user_id, project=project, relevant=relevant)
    return compose_block(inputs, max_tokens=max_tokens).text
