"""The block re-injected after compaction, filled to its token budget by priority.

Compaction throws the conversation away; what the model should keep knowing
comes back in one ``<dexai-memory>`` block (SessionStart ``compact``, the
marker re-injection on the next prompt, and the server-side compaction loop of
:mod:`dexai_memory.api_compaction`). Unlike the per-prompt auto-recall (at most
``auto_recall.max_memories`` memories for one prompt), this block is filled up
to ``auto_recall.max_tokens`` (800) in this order:

1. **pinned** memories (any type), then **L1-tier** memories;
2. **high-importance** memories of every durable type (importance >=
   :data:`HIGH_IMPORTANCE`: preferences, facts and decisions, warnings,
   commitments and goals), most important first, newest first within equal
   importance;
3. the **session state** (the task snapshot), held to ``l1_block.session_tokens``;
4. open **commitments** due soon (``l1_block.commitments_due_days``);
5. memories **relevant to the recent conversation**: searched with the last
   few user prompts and the task snapshot (not only the last prompt, which is
   often a filler), above ``auto_recall.relevance_threshold``, best first;
6. **backfill**: while room is left, the other durable memories of importance
   >= :data:`BACKFILL_MIN_IMPORTANCE` (decisions and remembered facts are 6),
   most important first, newest first within equal importance. Chatter the
   extractor scores lower (reported speech, small talk) never fills the block.

Memories taken from tool output (web pages, files: ``metadata["origin"] ==
"tool"``) are only re-injected through the relevant section, marked as tool
output, unless the user confirmed them (pinned, or stated them again):
:func:`~dexai_memory.recall.block.always_on`.

A memory is taken when its line still fits the budget (a long line is
skipped and a shorter later one may still fit); near-duplicates of a memory
already taken (a pinned statement and its extracted copy) are skipped. A
memory in an open contradiction (recorded for review, ``dexai memory
conflicts``) is shown with the other side, both dated, newest first and marked
unresolved (:func:`~dexai_memory.recall.block.conflict_group`), where the first
of them would be: the pair is in or out together, never one side alone. The
layout is the usual one (:mod:`dexai_memory.recall.block`): Profile (pinned,
L1 and high-importance memories), Relevant, Coming up (commitments, framed
forward), Session state, neutralised and fenced by :mod:`.render`, under
:data:`~dexai_memory.recall.block.MAX_INJECTION_CHARS`.

Both blocks open with the **persistent context**
(:mod:`dexai_memory.recall.persistent`): standing instructions, warnings, the
current goal, preferences, project facts, people and insights, held to
``persistent_context`` budgets that come on top of the block's own.

This module also holds :func:`l1_block`, the block injected at session start
(and by the SDK and the Messages API loop), which gives the re-injection block
after compaction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..models import Memory, MemoryType, SearchFilters, SearchResult, Tier, utcnow
from ..text.tokens import count_tokens, truncate_to_tokens
from .block import (
    FENCE_CLOSE,
    FENCE_OPEN,
    FENCE_TOKENS,
    MAX_INJECTION_CHARS,
    PREAMBLE,
    SECTION_TITLES,
    BlockItem,
    L1Block,
    always_on,
    budgets_of,
    commitment_line,
    commitments_due_soon,
    compose_block,
    conflict_group,
    display_text,
    gather_block_inputs,
    memory_line,
    open_conflicts,
)
from .persistent import EMPTY_SECTION, PersistentSection, gather_persistent, without_replaced_goals
from .ranking import DEFAULT_POOL, VisibleContext, content_terms, rank
from .render import fenced

if TYPE_CHECKING:
    from ..config import Settings
    from .source import RecallSource

#: Importance from which a durable memory is always re-injected after compaction.
HIGH_IMPORTANCE = 7
#: Least importance of the memories that fill the room left at the end.
BACKFILL_MIN_IMPORTANCE = 5
#: Memory types that can be re-injected (not snapshots or transcripts, not session notes).
DURABLE_TYPES = (MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.INSIGHT, MemoryType.RELATIONSHIP,
                 MemoryType.COMMITMENT, MemoryType.TASK, MemoryType.EVENT, MemoryType.PROCEDURE, MemoryType.PATTERN)
#: Content-word overlap (Jaccard, at least :data:`DUPLICATE_MIN_SHARED` words shared) from which a
#: memory counts as a duplicate of one already taken (the supersession UPDATE threshold).
DUPLICATE_OVERLAP = 0.6
DUPLICATE_MIN_SHARED = 3
#: User prompts (newest last) that, with the snapshot, make the query of the relevant section.
RECENT_PROMPTS = 3
#: Upper bounds of the lists fetched per priority class.
MAX_PINNED, MAX_IMPORTANT, MAX_COMMITMENTS = 50, 100, 50

_SECTIONS = ("profile", "relevant", "commitments", "session")


@dataclass(frozen=True, slots=True)
class ReinjectionInputs:
    """Candidates per priority class (each in its own order), before the budget is applied."""

    pinned: Sequence[Memory] = ()
    top_tier: Sequence[Memory] = ()
    important: Sequence[Memory] = ()
    session: Sequence[Memory] = ()
    commitments: Sequence[Memory] = ()
    relevant: Sequence[Memory] = ()
    #: Relevance-fused scores of the relevant memories, by id.
    scores: dict[str, float] = field(default_factory=dict)
    backfill: Sequence[Memory] = ()
    #: For a memory's id, the current memories it is in an open contradiction with
    #: (:func:`~dexai_memory.recall.block.open_conflicts`): shown together with it.
    conflicts: dict[str, tuple[Memory, ...]] = field(default_factory=dict)


def by_importance(memories: Sequence[Memory]) -> list[Memory]:
    """Most important first, newest first within equal importance (ids unique)."""
    unique = list({m.id: m for m in memories}.values())
    unique.sort(key=lambda m: (-m.importance, -m.created_at.timestamp(), m.id))
    return unique


def is_open(memory: Memory) -> bool:
    """False for a commitment marked done or cancelled (it is not re-injected)."""
    info = memory.metadata.get("commitment") if memory.metadata else None
    return not isinstance(info, dict) or str(info.get("status") or "open") in ("open", "pending")


def recall_query(prompts: Sequence[str], snapshot: str | None = None, *, limit: int = RECENT_PROMPTS) -> str:
    """The relevant section's query: the last ``limit`` user prompts and the snapshot, newest first."""
    parts = [p.strip() for p in reversed([p for p in prompts if p and p.strip()][-limit:])]
    if snapshot and snapshot.strip():
        parts.append(snapshot.strip())
    return "\n".join(dict.fromkeys(parts))


def relevant_of(results: Sequence[SearchResult], query: str, *, threshold: float, visible: VisibleContext | None,
                now: datetime | None = None) -> tuple[list[Memory], dict[str, float]]:
    """Ranked search results above ``threshold`` and not ``visible``, best first, with their scores."""
    out: list[Memory] = []
    scores: dict[str, float] = {}
    for r in rank(results, query, now=now):
        if r.relevance >= threshold and (visible is None or not visible.holds(r.memory)):
            out.append(r.memory)
            scores[r.memory.id] = r.score
    return out, scores


def _duplicate(a: set[str], b: set[str]) -> bool:
    shared = len(a & b)
    return shared >= DUPLICATE_MIN_SHARED and shared / len(a | b) >= DUPLICATE_OVERLAP


def _section_of(memory: Memory, cls: str) -> str:
    if cls == "session":
        return "session"
    if cls == "relevant":
        return "relevant"
    if memory.type is MemoryType.COMMITMENT and not memory.pinned:
        return "commitments"
    return "profile"


def _line(memory: Memory, section: str, now: datetime) -> str:
    if section == "commitments":
        return commitment_line(memory, now)
    if section == "relevant":
        return memory_line(memory)
    return f"- {display_text(memory)}"


def fill_block(inputs: ReinjectionInputs, *, max_tokens: int, session_tokens: int = 150,
               max_chars: int = MAX_INJECTION_CHARS, now: datetime | None = None,
               head: PersistentSection = EMPTY_SECTION) -> L1Block:
    """The block from ``inputs``, filled by priority up to ``max_tokens`` (fence included).

    See the module docstring for the order. ``head`` (the persistent context)
    opens the block; its lines count against ``max_tokens`` and ``max_chars``
    and its memories are not repeated. :attr:`L1Block.items` lists exactly
    the memories in the text, in text order. Returns an empty block when nothing fits.
    """
    now = now or utcnow()
    fixed = count_tokens("\n".join([FENCE_OPEN, PREAMBLE, *head.lines, FENCE_CLOSE]))
    used_tokens, used_chars = fixed, len(FENCE_OPEN) + len(PREAMBLE) + len(FENCE_CLOSE) + 2 + head.chars
    taken: dict[str, list[BlockItem]] = {s: [] for s in _SECTIONS}
    seen_ids: set[str] = set(head.memory_ids) | {o.id for i in head.items for o in i.companions}
    seen_terms: list[set[str]] = [set(content_terms(m.content)) for i in head.items for m in (i.memory, *i.companions)]
    classes: list[tuple[str, Sequence[Memory]]] = [
        ("pinned", inputs.pinned), ("top_tier", inputs.top_tier), ("important", inputs.important),
        ("session", inputs.session[:1]), ("commitments", inputs.commitments), ("relevant", inputs.relevant),
        ("backfill", inputs.backfill),
    ]
    for cls, memories in classes:
        for memory in memories:
            if memory.id in seen_ids or memory.type is MemoryType.TRANSCRIPT or (
                    memory.type is MemoryType.SNAPSHOT and cls != "session"):
                continue
            if cls != "relevant" and not always_on(memory):  # tool output only comes back by relevance
                continue
            terms = set(content_terms(memory.content))
            if cls != "session" and any(_duplicate(terms, t) for t in seen_terms):
                continue
            section = _section_of(memory, cls)
            others = () if cls == "session" else tuple(o for o in inputs.conflicts.get(memory.id, ())
                                                       if o.id != memory.id)
            if any(o.id in seen_ids for o in others):
                continue  # the other side is shown already: the pair only ever appears together
            line = conflict_group([memory, *others]) if others else _line(memory, section, now)
            if cls == "session":
                line = truncate_to_tokens(line, session_tokens)
                if not line:
                    continue
            cost = count_tokens(line) + (0 if taken[section] else count_tokens(SECTION_TITLES[section]))
            chars = len(line) + 1 + (0 if taken[section] else len(SECTION_TITLES[section]) + 1)
            if used_tokens + cost > max_tokens or used_chars + chars > max_chars:
                continue
            used_tokens += cost
            used_chars += chars
            seen_ids.add(memory.id)
            seen_ids.update(o.id for o in others)
            if cls != "session":
                seen_terms.append(terms)
                seen_terms.extend(set(content_terms(o.content)) for o in others)
            taken[section].append(BlockItem(memory, section, line, inputs.scores.get(memory.id), others))
    body: list[str] = list(head.lines)
    items: list[BlockItem] = list(head.items)
    for section in _SECTIONS:
        if taken[section]:
            body.append(SECTION_TITLES[section])
            body.extend(i.line for i in taken[section])
            items.extend(taken[section])
    if not items:
        return L1Block("", 0, ())
    text = fenced(body)
    return L1Block(text, count_tokens(text), tuple(items))


async def gather_inputs(provider: RecallSource, user_id: str, settings: Settings, *, query: str | None,
                        recent: Sequence[str] = (), project: str | None = None, session_id: str | None = None,
                        now: datetime | None = None) -> ReinjectionInputs:
    """The candidates of every priority class from ``provider``; ``query`` (see
    :func:`recall_query`) selects the relevant ones, ``recent`` is what the model
    still sees (relevant memories it holds are left out)."""

    async def listed(limit: int, **kw: Any) -> list[Memory]:
        return await provider.list(user_id=user_id, filters=SearchFilters(project=project, **kw), limit=limit)

    pinned = by_importance(await listed(MAX_PINNED, pinned=True))
    top_tier = by_importance(await listed(MAX_PINNED, tiers=(Tier.L1,)))
    durable = [m for m in by_importance(await listed(MAX_IMPORTANT, types=DURABLE_TYPES,
                                                     min_importance=BACKFILL_MIN_IMPORTANCE)) if is_open(m)]
    important = [m for m in durable if m.importance >= HIGH_IMPORTANCE]
    backfill = [m for m in durable if m.importance < HIGH_IMPORTANCE]
    commitments = commitments_due_soon(await listed(MAX_COMMITMENTS, types=(MemoryType.COMMITMENT,)),
                                       days=settings.l1_block.commitments_due_days, now=now)
    session = await listed(1, types=(MemoryType.SNAPSHOT,), session_id=session_id) if session_id else []
    if not session:
        session = await listed(1, types=(MemoryType.SNAPSHOT,))
    relevant: list[Memory] = []
    scores: dict[str, float] = {}
    if query:
        results = await provider.search(query, user_id=user_id, filters=SearchFilters(project=project),
                                        limit=DEFAULT_POOL)
        relevant, scores = relevant_of(results, query, threshold=settings.auto_recall.relevance_threshold,
                                       visible=VisibleContext(recent) if recent else None, now=now)
    conflicts = await open_conflicts(provider, user_id, [*pinned, *top_tier, *durable, *commitments, *relevant])
    return ReinjectionInputs(pinned, top_tier, important, session, commitments, relevant, scores, backfill,
                             conflicts)


async def reinjection_block(provider: RecallSource, user_id: str, settings: Settings, *, query: str | None,
                            recent: Sequence[str] = (), project: str | None = None, session_id: str | None = None,
                            max_tokens: int | None = None, now: datetime | None = None) -> L1Block:
    """The post-compaction block for ``user_id`` (see the module docstring); ``max_tokens``
    defaults to ``auto_recall.max_tokens``."""
    inputs = await gather_inputs(provider, user_id, settings, query=query, recent=recent, project=project,
                                 session_id=session_id, now=now)
    head = await gather_persistent(provider, user_id, settings.persistent_context, project=project,
                                   max_chars=MAX_INJECTION_CHARS // 2)
    def keep(ms: Sequence[Memory]) -> list[Memory]:
        return without_replaced_goals(ms, head)

    inputs = dataclasses.replace(inputs, pinned=keep(inputs.pinned), top_tier=keep(inputs.top_tier),
                                 important=keep(inputs.important), commitments=keep(inputs.commitments),
                                 relevant=keep(inputs.relevant), backfill=keep(inputs.backfill))
    return fill_block(inputs, max_tokens=(max_tokens or settings.auto_recall.max_tokens) + head.tokens,
                      session_tokens=settings.l1_block.session_tokens, now=now, head=head)


async def l1_block(provider: RecallSource, user_id: str, settings: Settings, *, query: str | None = None,
                   recent: Sequence[str] = (), project: str | None = None, session_id: str | None = None,
                   max_tokens: int | None = None, now: datetime | None = None,
                   after_compaction: bool = False) -> L1Block:
    """The full L1 block (profile, relevant, commitments, session state). ``query`` (the
    last user prompt, if any) selects the relevant memories.

    ``after_compaction`` gives the re-injection block instead: filled up to
    ``auto_recall.max_tokens`` with pinned, high-importance, commitment and
    relevant memories (:func:`reinjection_block`; there ``query`` should hold the
    last few prompts and the snapshot).
    """
    if after_compaction:
        return await reinjection_block(provider, user_id, settings, query=query, recent=recent, project=project,
                                       session_id=session_id, max_tokens=max_tokens, now=now)
    cfg = settings.l1_block
    relevant: list[Memory] = []
    scores: dict[str, float] = {}
    if query:
        results = await provider.search(query, user_id=user_id, filters=SearchFilters(project=project),
                                        limit=DEFAULT_POOL)
        visible = VisibleContext(recent)
        for r in rank(results, query, now=now):
            if r.relevance >= settings.auto_recall.relevance_threshold and not visible.holds(r.memory):
                relevant.append(r.memory)
                scores[r.memory.id] = r.score
            if len(relevant) >= settings.auto_recall.max_memories:
                break
    inputs = await gather_block_inputs(provider, user_id=user_id, project=project, relevant=relevant,
                                       scores=scores, commitments_due_days=cfg.commitments_due_days,
                                       session_id=session_id, now=now)
    head = await gather_persistent(provider, user_id, settings.persistent_context, project=project,
                                   max_chars=MAX_INJECTION_CHARS // 2)
    inputs = dataclasses.replace(inputs, profile=without_replaced_goals(inputs.profile, head),
                                 relevant=without_replaced_goals(inputs.relevant, head),
                                 commitments=without_replaced_goals(inputs.commitments, head))
    total = (max_tokens or sum(budgets_of(cfg)) + FENCE_TOKENS) + head.tokens
    return compose_block(inputs, budgets=budgets_of(cfg), max_tokens=total, now=now, head=head.lines,
                         head_items=head.items)


def reinjection_query(marker: dict[str, Any], session: dict[str, Any], prompt: str | None = None) -> str | None:
    """The relevant section's query after compaction: the last user prompts kept in the
    compaction ``marker`` (or the session's last prompt), ``prompt``, and the snapshot."""
    prompts = [str(p) for p in marker.get("recent_prompts") or []] \
        or [str(p) for p in (marker.get("last_prompt"), session.get("last_prompt")) if p][:1]
    if prompt:
        prompts.append(prompt)
    return recall_query(prompts, marker.get("snapshot")) or None


#: Most characters of the user's ``/compact`` instructions kept in the marker and re-injected.
MAX_COMPACT_INSTRUCTIONS = 2000


def with_compact_instructions(text: str, marker: dict[str, Any]) -> str:
    """The re-injected block ``text`` followed by the instructions the user gave with ``/compact``
    (PreCompact's ``custom_instructions``, kept in the marker), quoted in their own fence."""
    instructions = " ".join(str(marker.get("custom_instructions") or "").split())
    if not instructions:
        return text
    quoted = fenced([instructions], preamble="The user compacted this conversation with these instructions "
                                             "(their words, from this session):")
    return "\n\n".join(t for t in (text, quoted) if t)
