"""Auto-recall: L2 memories -> the L1 block, on each prompt.

Two entry points:

* :func:`auto_recall` - the one recall every door shows: what the UserPromptSubmit hook
  injects, and what ``dexai memory recall``, the MCP ``recall`` tool and the panel's
  ``POST /api/recall`` show for the same prompt and store. It first decides whether to
  search at all (:func:`needs_recall`): always on a cold start, on a personal reference
  ("my", "remember", "last time") and on a new entity or a topic shift; a clear
  continuation of the current topic is skipped when ``auto_recall.skip_on_continuation``
  is on. It then fills the block in budget mode (below), leaving out memories already
  injected in the session and what the recent conversation shows.
* :func:`recall_block` - the block itself, *budget mode*: as many memories as fit
  ``max_tokens`` (``auto_recall.max_tokens``, 800; at most ``auto_recall.max_memories``)
  above a relevance floor (``auto_recall.relevance_threshold``), one memory per source
  turn, notes and archived raw turns searched together; the memories linked to the first hits
  join the candidates, scored below them (:func:`with_links`, :mod:`.linked`).
  :attr:`RecallResult.memories` are exactly the memories in the text. The LoCoMo benchmark
  measures this block.

What "relevance" means
----------------------
The provider's fused score is reciprocal-rank based: the best hit of any
query scores 1.0 even when it is unrelated, so it cannot be thresholded.
Relevance is therefore computed from evidence, in [0, 1]:

* semantic: the cosine similarity of the query and the memory (MiniLM), mapped
  linearly so that cosine 0.10 -> 0 and 0.50 -> 1 (``(cos - 0.1) / 0.4``).
  Measured on MiniLM: unrelated pairs score cosine -0.1..0.22, paraphrases
  0.45..0.9;
* lexical: the share of the query's content words found in the memory
  (light stemming; stop words and "user" ignored), raised to 0.6 when two
  distinct content words match and 0.8 when three do (a long prompt must not
  dilute a clear match), or, for short memories, the share of the memory's
  content words found in the query when at least two match.

``relevance = max(semantic, lexical)``. The default floor 0.15 means "some evidence
at all" (cosine >= 0.16, or a content word shared); 0.6 would mean "cosine >= 0.34, or
two distinct content words shared, or most of the query's content words present".
Ranking then
fuses relevance with the provider's rank score, importance and recency::

    score = 0.70 * relevance + 0.15 * rank_score + 0.10 * importance/10 + 0.05 * recency

where recency is ``exp(-age_days / 30)``. Budget mode (every recall door) then multiplies the
score by what use taught (:func:`usage_factor`): ``1 + w * (c - i/2) / (c + i/2 + 1)`` for ``c``
citations and ``i`` ignores (:mod:`dexai_memory.lifecycle.usage`), ``w`` =
``auto_recall.usage_weight`` (0.1): a memory never cited nor ignored keeps its score, one cited
once gains 5 %, one ignored 5 times loses 7 %, and no memory moves by more than ``w``, about
three places of the fused ranking: use reorders memories that match about equally, never a
clear match below a poor one. Relevance (the floor) is left as it is.

A memory is "already visible" when
its content (normalised) is a substring of the recent conversation or 90 % of
its content words appear there, or its id was injected earlier in the session.

This module imports only the standard library and the stdlib-only parts of the
package (models, tokens, block), so the command-hook fast path reuses it.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from ..models import Memory, MemoryType, SearchFilters, SearchResult, as_utc, utcnow
from ..text.output import output_line, prose_lines
from ..text.tokens import count_tokens
from ..text.words import REQUEST_WORDS, STOP_WORDS, content_words, split_words
from .block import (
    EMPTY_BLOCK,
    FENCE_TOKENS,
    SECTION_TITLES,
    BlockInputs,
    L1Block,
    compose_block,
    open_conflicts,
)
from .linked import Hit, linked_memories

if TYPE_CHECKING:
    from ..config import Settings
    from ..providers.base import MemoryProvider
    from .source import RecallSource

logger = logging.getLogger(__name__)

#: Memories fetched from the provider before ranking and filtering.
DEFAULT_POOL = 40
#: Candidates fetched in budget mode: 800 tokens hold 30-45 compact notes, so 40 is too few.
BUDGET_POOL = 100
#: Relevance floor of budget mode (recall_block): "some evidence at all".
BUDGET_MODE_FLOOR = 0.15
#: Relevance floor of auto-recall on an on-topic follow-up (the prompt shares most of its words with
#: the last messages, which in a coding session hold tool output): a clear match only, "cosine >=
#: 0.34, or two distinct content words shared" (see the module docstring).
CONTINUATION_FLOOR = 0.6
#: Content words a prompt needs before the standing knowledge new to the session joins its block: a
#: task ("can we config touch id to approve sudo"), not a reply ("verify", "2", "try again").
STANDING_MIN_TERMS = 3
#: Weights of the final ranking score.
W_RELEVANCE, W_RANK, W_IMPORTANCE, W_RECENCY = 0.70, 0.15, 0.10, 0.05
#: The same for budget mode: the provider's fused rank leads (the thresholded relevance saturates
#: at 0.8-1.0 for many candidates and ties them), and no importance or recency bias, since explicit
#: recall asks about the past as often as about the present (LoCoMo dev 0-3: 73.2 -> 75.9 %).
BUDGET_WEIGHTS = (0.30, 0.70, 0.0, 0.0)
#: Types searched by budget mode: notes plus the raw turns archived in L3 (the fallback for what
#: extraction missed or paraphrased); snapshots have their own reader, and episodes are shown by
#: the file-aware prefetch and asked for by type, never in the recall block.
BUDGET_TYPES = tuple(t for t in MemoryType if t not in (MemoryType.SNAPSHOT, MemoryType.EPISODE))


def is_evidence(memory: Memory) -> bool:
    """A memory recall may show: a note, or a TRANSCRIPT that archives a raw turn (it names the
    turn it keeps); not the record of a transcript backup (a file path, no turn)."""
    return memory.type is not MemoryType.TRANSCRIPT or bool(memory.source_ids)
RECENCY_HALF_DAYS = 30.0
#: What one ignore weighs against one citation in :func:`usage_factor`: the reply may use a memory
#: without repeating its words (a preference followed, a path run in a tool call), so an ignore is
#: weaker evidence than a citation.
IGNORE_WEIGHT = 0.5
#: The prior of :func:`usage_factor`: a few observations move a memory little.
USAGE_PRIOR = 1.0

#: The words ranking ignores: the one stop list and the words of a request ("please tell me what I
#: need") and of a note's framing ("The user wants ..."), see :data:`~dexai_memory.text.words.REQUEST_WORDS`.
_STOP = STOP_WORDS | REQUEST_WORDS
_CONTINUATION = re.compile(
    r"(?i)^\s*(ok(ay)?|k|yes|yep|yeah|sure|no|nope|thanks?( you)?|ty|great|cool|nice|perfect|good|done"
    r"|go( on| ahead)?|continue|proceed|next|do it|sounds good|lgtm|right|correct|exactly|and\??|more"
    r"|keep going|carry on|try again|again|retry|fix it|why\??|how\??)[\s.!?]*$"
)
_PERSONAL = re.compile(
    r"(?i)\b(my|mine|our|ours|remember|recall|remind|last time|previously|earlier today|as usual|usual"
    r"|we (?:discussed|talked|decided|agreed|said|chose)|i (?:told|said|mentioned|asked)"
    r"|(?:did|do|have|am|was) i\b|you know (?:me|my)|prefer(?:ence|red|s)?|favou?rite)\b"
)
_ENTITY = re.compile(r"\b(?:[A-Z][a-z0-9]+(?:[A-Z][a-zA-Z0-9]*)+|[A-Z]{2,}[0-9]*|[A-Z][a-z]{2,}|"
                     r"[a-z]+_[a-z0-9_]+|#\d+|v?\d+\.\d+(?:\.\d+)?)\b")


def _stem(word: str) -> str:
    w = word.lower().strip("'-_")
    if w.endswith("'s"):
        w = w[:-2]
    for suffix in ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "s"):
        if len(w) > len(suffix) + 2 and w.endswith(suffix):
            w = w[: -len(suffix)]
            if suffix in ("ies", "ied"):
                w += "y"
            break
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]  # name / named / names -> nam
    return w


def content_terms(text: str) -> list[str]:
    """Lower-cased, lightly stemmed content words of ``text`` (stop words removed), unique, in order."""
    return list(dict.fromkeys(_stem(w) for w in content_words(text, _STOP)))


@functools.lru_cache(maxsize=4096)
def _memory_terms(content: str) -> tuple[str, ...]:
    """:func:`content_terms` of a memory's content, cached: recall scores the same memories prompt
    after prompt (the daemon's hot path), ~1 ms a recall."""
    return tuple(content_terms(content))


def entities(text: str) -> set[str]:
    """Cheap named-entity guess: capitalised words not starting a sentence, CamelCase,
    ACRONYMS, snake_case identifiers, #numbers and versions (lower-cased)."""
    found: set[str] = set()
    for m in _ENTITY.finditer(text):
        start = m.start()
        before = text[:start].rstrip()
        word = m.group(0)
        if word[0].isupper() and word[1:].islower() and (not before or before[-1] in ".!?:\n\"'"):
            continue  # a capital at the start of a sentence is not evidence of a name
        if word.lower() in _STOP:
            continue
        found.add(word.lower())
    return found


def needs_recall(prompt: str, recent: Sequence[str], *, skip_on_continuation: bool = True) -> tuple[bool, str]:
    """Whether to search memory for ``prompt``, and why.

    Reasons: ``cold start`` (fewer than 2 recent messages), ``personal
    reference``, ``new entity``, ``topic shift`` (under 20 % of the prompt's
    content words seen in the last 3 messages), ``always`` (skipping is off);
    ``continuation`` (an acknowledgement or an on-topic follow-up) means no.
    """
    if not prompt.strip():
        return False, "empty prompt"
    if not skip_on_continuation:
        return True, "always"
    if len(recent) < 2:
        return True, "cold start"
    if _CONTINUATION.match(prompt):
        return False, "continuation"
    if _PERSONAL.search(prompt):
        return True, "personal reference"
    window = " ".join(recent[-3:])
    if entities(prompt) - entities(window) - set(split_words(window)):
        return True, "new entity"
    terms = content_terms(prompt)
    if len(terms) >= 3:
        seen = set(content_terms(window))
        overlap = sum(1 for t in terms if t in seen) / len(terms)
        if overlap < 0.2:
            return True, "topic shift"
    return False, "continuation"


_FENCED = re.compile(r"(?:```|~~~).*?(?:```|~~~|$)", re.S)


def prompt_query(prompt: str) -> str:
    """What recall searches with for ``prompt``: the words the user wrote, without what they pasted
    (fenced blocks, indented lines, log and code lines, listings: :func:`~dexai_memory.text.output.
    prose_lines`), so a paste does not drown the sentence around it; the prompt itself when nothing
    else is left (a prompt that is only an error message searches with it)."""
    text = _FENCED.sub("\n", prompt)
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(("    ", "\t"))
             and not output_line(ln)]
    prose = prose_lines("\n".join(lines)).strip()
    return prose if content_terms(prose) else prompt


def lexical_relevance(query_terms: Sequence[str], content: str) -> float:
    """Lexical evidence in [0, 1]: the share of the query's content words found in
    ``content``; at least 0.6 when two distinct content words match and 0.8 when
    three do (long prompts dilute the share); or, for short memories, the share of
    the memory's words found in the query when at least two match."""
    if not query_terms:
        return 0.0
    mem_terms = _memory_terms(content)
    if not mem_terms:
        return 0.0
    mem_set = set(mem_terms)
    hits = sum(1 for t in set(query_terms) if t in mem_set)
    query_cover = hits / len(set(query_terms))
    floor = 0.8 if hits >= 3 else 0.6 if hits >= 2 else 0.0
    q_set = set(query_terms)
    mem_hits = sum(1 for t in mem_terms if t in q_set)
    mem_cover = mem_hits / len(mem_terms) if mem_hits >= 2 else 0.0
    return max(query_cover, floor, mem_cover)


def semantic_relevance(similarity: float | None) -> float:
    """Cosine similarity mapped to [0, 1]: 0.10 -> 0, 0.50 -> 1."""
    if similarity is None:
        return 0.0
    return min(1.0, max(0.0, (similarity - 0.1) / 0.4))


def relevance(result: SearchResult, query_terms: Sequence[str]) -> float:
    """Evidence that ``result`` answers the query, in [0, 1] (see the module docstring)."""
    return max(semantic_relevance(result.similarity), lexical_relevance(query_terms, result.memory.content))


def recency(memory: Memory, now: datetime) -> float:
    """exp(-age_days / 30), from the memory's creation (or last access, if later)."""
    ref = memory.created_at
    if memory.last_accessed and memory.last_accessed > ref:
        ref = memory.last_accessed
    age_days = max(0.0, (now - ref).total_seconds() / 86400.0)
    return math.exp(-age_days / RECENCY_HALF_DAYS)


@dataclass(frozen=True, slots=True)
class RecalledMemory:
    """A memory chosen by recall, with its final score and relevance."""

    memory: Memory
    score: float
    relevance: float
    similarity: float | None = None
    bm25_rank: int | None = None
    #: How a memory brought in by a link came ("entity link from m_..."); None for a search hit.
    via: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``dexai memory recall``: id, content, source_ids, score (and ``via``
        for a memory a link brought in)."""
        return {"id": self.memory.id, "content": self.memory.content,
                "source_ids": list(self.memory.source_ids), "score": round(self.score, 4),
                **({"via": self.via} if self.via else {})}


@dataclass(frozen=True, slots=True)
class RecallResult:
    """What recall produced: the block text (``''`` when nothing is injected)."""

    text: str = ""
    tokens: int = 0
    memories: tuple[RecalledMemory, ...] = ()
    skipped_reason: str | None = None
    latency_ms: float = 0.0
    #: Why a search was made (``cold start``, ``personal reference``, ...).
    reason: str | None = None
    block: L1Block = field(default=EMPTY_BLOCK, repr=False)

    @property
    def memory_ids(self) -> list[str]:
        return [r.memory.id for r in self.memories]

    def to_reply(self) -> dict[str, Any]:
        """The answer of every recall door (the daemon's ``recall``, ``POST /api/recall``)."""
        return {"text": self.text, "tokens": self.tokens, "memory_ids": self.memory_ids,
                "memories": [m.to_dict() for m in self.memories], "skipped_reason": self.skipped_reason,
                "latency_ms": round(self.latency_ms, 2)}

    def to_json(self, query: str, **extra: Any) -> dict[str, Any]:
        """``{"query", "text", "tokens", "memories", "latency_ms"}`` (+ ``extra`` keys)."""
        return {**extra, "query": query, "text": self.text, "tokens": self.tokens,
                "memories": [m.to_dict() for m in self.memories], "latency_ms": round(self.latency_ms, 3)}


def _norm(text: str) -> str:
    return " ".join(split_words(text))


class VisibleContext:
    """The conversation the model already sees, to drop memories it holds already."""

    def __init__(self, texts: Iterable[str] = (), *, exclude_ids: Iterable[str] = ()):
        joined = "\n".join(t for t in texts if t)
        self.norm = _norm(joined)
        self.terms = set(content_terms(joined))
        self.exclude_ids = set(exclude_ids)

    def holds(self, memory: Memory) -> bool:
        if memory.id in self.exclude_ids:
            return True
        if not self.norm:
            return False
        content = _norm(memory.content)
        if content and content in self.norm:
            return True
        terms = _memory_terms(memory.content)
        if len(terms) >= 3:
            return sum(1 for t in terms if t in self.terms) / len(terms) >= 0.9
        return False


def usage_factor(memory: Memory, weight: float) -> float:
    """What use taught about ``memory``, as a multiplier of its score in ``[1 - weight, 1 + weight]``:
    ``1 + weight * (c - i * IGNORE_WEIGHT) / (c + i * IGNORE_WEIGHT + USAGE_PRIOR)`` for ``c`` =
    ``citation_count`` and ``i`` = ``ignore_count``; 1.0 for a memory never cited nor ignored."""
    cited, ignored = memory.citation_count, memory.ignore_count * IGNORE_WEIGHT
    if weight <= 0 or (not cited and not ignored):
        return 1.0
    return 1.0 + weight * (cited - ignored) / (cited + ignored + USAGE_PRIOR)


def rank(results: Sequence[SearchResult], query: str, *, now: datetime | None = None,
         weights: tuple[float, float, float, float] | None = None, usage_weight: float = 0.0) -> list[RecalledMemory]:
    """Score search results (relevance fused with rank, importance, recency), best first.

    ``weights`` = (relevance, rank, importance, recency); the module's ``W_*`` by default.
    ``usage_weight``: multiply each score by :func:`usage_factor` (0: not at all).
    """
    now = now or utcnow()
    terms = content_terms(query)
    w_rel, w_rank, w_imp, w_rec = weights or (W_RELEVANCE, W_RANK, W_IMPORTANCE, W_RECENCY)
    out = []
    for r in results:
        rel = relevance(r, terms)
        score = (w_rel * rel + w_rank * max(0.0, min(1.0, r.score))
                 + w_imp * r.memory.importance / 10.0 + (w_rec * recency(r.memory, now) if w_rec else 0.0))
        score *= usage_factor(r.memory, usage_weight)
        out.append(RecalledMemory(r.memory, score, rel, r.similarity, r.bm25_rank))
    out.sort(key=lambda x: (-x.score, x.memory.id))
    return out


def select(ranked: Sequence[RecalledMemory], *, threshold: float, visible: VisibleContext | None = None,
           max_memories: int | None = None, max_tokens: int, section_budget: int | None = None,
           now: datetime | None = None, distinct_sources: bool = False,
           conflicts: dict[str, tuple[Memory, ...]] | None = None,
           said: bool = False) -> tuple[L1Block, tuple[RecalledMemory, ...]]:
    """Filter ranked memories and render the 'Relevant' block within the budgets.

    With ``distinct_sources``, a memory whose source turns are all behind
    memories ranked above it is skipped (a turn's raw transcript and the notes
    taken from it say the same thing: show the best-ranked one, and spend
    the budget on other turns). ``conflicts`` (:func:`~.block.open_conflicts`) shows the other side
    of an open contradiction beside a chosen memory; ``said`` dates each line (:func:`~.block.said_line`).
    Returns the block and exactly the memories that made it into the text.
    """
    chosen: list[RecalledMemory] = []
    covered: set[str] = set()
    for r in ranked:
        if r.relevance < threshold or (visible is not None and visible.holds(r.memory)):
            continue
        if distinct_sources:
            sources = set(r.memory.source_ids)
            if sources and sources <= covered:
                continue
            covered |= sources
        chosen.append(r)
        if max_memories is not None and len(chosen) >= max_memories:
            break
    if not chosen:
        return EMPTY_BLOCK, ()
    budget = section_budget if section_budget is not None else max_tokens - FENCE_TOKENS
    budgets = (0, max(count_tokens(SECTION_TITLES["relevant"]) + 1, budget), 0, 0)
    inputs = BlockInputs(relevant=[r.memory for r in chosen], scores={r.memory.id: r.score for r in chosen},
                         conflicts=conflicts or {}, said=said)
    block = compose_block(inputs, budgets=budgets, max_tokens=max_tokens, now=now)
    by_id = {r.memory.id: r for r in chosen}
    return block, tuple(by_id[m.id] for m in block.memories)


async def with_links(provider: RecallSource, user_id: str, ranked: Sequence[RecalledMemory], *, floor: float,
                     project: str | None) -> list[RecalledMemory]:
    """``ranked`` with the memories linked to its first hits above ``floor`` added as candidates, each
    scored below its source (:mod:`.linked`), best first; a memory already ranked keeps the better score."""
    hits = [Hit(r.memory, r.score, r.relevance) for r in ranked if r.relevance >= floor]
    linked = await linked_memories(provider, user_id, hits, project=project, types=BUDGET_TYPES, shows=is_evidence)
    if not linked:
        return list(ranked)
    by_id = {r.memory.id: r for r in ranked}
    for found in linked:
        current = by_id.get(found.memory.id)
        if current is not None and current.score >= found.score:
            continue
        relevance = max(found.relevance, current.relevance if current else 0.0)
        by_id[found.memory.id] = RecalledMemory(found.memory, found.score, relevance, via=found.via)
    return sorted(by_id.values(), key=lambda x: (-x.score, x.memory.id))


async def _search(provider: RecallSource, query: str, user_id: str, project: str | None,
                  pool: int) -> list[SearchResult]:
    return await provider.search(query, user_id=user_id, filters=SearchFilters(project=project), limit=pool)


async def auto_recall(provider: RecallSource, user_id: str, prompt: str, recent: Sequence[str],
                      settings: Settings, *, project: str | None = None, exclude_ids: Iterable[str] = (),
                      max_memories: int | None = None, max_tokens: int | None = None,
                      now: datetime | None = None, record_retrieval: bool = False,
                      as_of: datetime | None = None, since: datetime | None = None) -> RecallResult:
    """What to inject for ``prompt`` given the ``recent`` conversation (see the module docstring):
    the one recall behind every door (the UserPromptSubmit hook, ``dexai memory recall``, the
    MCP ``recall`` tool, the panel's API).

    First :func:`needs_recall` decides whether to search at all; then :func:`recall_block` in
    budget mode, within ``auto_recall.max_tokens`` and ``auto_recall.max_memories`` (the
    arguments override them for one call), above ``auto_recall.relevance_threshold``, leaving
    out ``exclude_ids`` (memories already injected in this session) and what ``recent`` shows
    already. Never raises for a skip: ``skipped_reason`` says why nothing was injected
    (``disabled``, ``continuation``, ``no results``, ``below threshold``, ...). Provider
    errors propagate (the door turns them into a no-op). ``record_retrieval`` counts the
    injected memories as retrieved (the daemon does it after answering instead). ``as_of``:
    recall among what was valid at that time (:func:`recall_block`). ``since`` (a session's calls:
    when the session's block was injected) adds the standing knowledge stored since then that the
    session has not been shown (:mod:`.standing`) ahead of what the search found. The search uses
    the prompt's own words (:func:`prompt_query`).
    """
    t0 = time.perf_counter()
    cfg = settings.auto_recall
    limit = cfg.max_memories if max_memories is None else max_memories
    if not cfg.enabled or limit == 0:
        return RecallResult(skipped_reason="disabled", latency_ms=(time.perf_counter() - t0) * 1000)
    go, why = needs_recall(prompt, recent, skip_on_continuation=cfg.skip_on_continuation)
    floor = cfg.relevance_threshold
    if not go and why == "continuation" and not _CONTINUATION.match(prompt):
        # an on-topic follow-up ("do sync", "pre-commit and push") still needs the standing
        # instructions and facts it touches: searched, but only a clear match is shown
        go, floor = True, max(floor, CONTINUATION_FLOOR)
    if not go:
        return RecallResult(skipped_reason=why, latency_ms=(time.perf_counter() - t0) * 1000)
    query = prompt_query(prompt)
    exclude = set(exclude_ids)
    standing: list[Memory] = []
    if since is not None and as_of is None and len(content_terms(query)) >= STANDING_MIN_TERMS:
        from .standing import new_standing

        seen = VisibleContext(recent)
        standing = await new_standing(provider, user_id, settings.persistent_context, since=since, project=project,
                                      exclude=exclude, shown=seen.holds, personal=bool(_PERSONAL.search(prompt)))
    result = await recall_block(provider, user_id, query, settings, project=project, max_memories=limit,
                                max_tokens=max_tokens or cfg.max_tokens, threshold=floor,
                                recent=recent, exclude_ids=exclude | {m.id for m in standing}, now=now, as_of=as_of,
                                said=True)
    if standing:
        first = [RecalledMemory(m, 1.0, 1.0) for m in standing]
        block, mems = select([*first, *result.memories], threshold=0.0, max_memories=limit + len(first),
                             max_tokens=max_tokens or cfg.max_tokens, now=now, said=True)
        result = dataclasses.replace(result, text=block.text, tokens=block.tokens, memories=mems, block=block,
                                     skipped_reason=None if mems else result.skipped_reason)
    if record_retrieval and result.memories:
        await cast("MemoryProvider", provider).record_retrieval(result.memory_ids, user_id=user_id)
    return dataclasses.replace(result, reason=why, latency_ms=(time.perf_counter() - t0) * 1000)


async def recall_block(provider: RecallSource, user_id: str, query: str, settings: Settings, *,
                       project: str | None = None, max_memories: int | None = None,
                       max_tokens: int | None = None, threshold: float | None = None,
                       recent: Sequence[str] = (), exclude_ids: Iterable[str] = (), pool: int | None = None,
                       now: datetime | None = None, as_of: datetime | None = None,
                       said: bool = False) -> RecallResult:
    """Explicit recall for ``query``: the block and exactly the memories in it.

    Budget mode by default: memories are added best first while they fit
    ``max_tokens`` (default ``auto_recall.max_tokens``, 800), above a low
    relevance floor (:data:`BUDGET_MODE_FLOOR`). ``max_memories`` caps the count
    (``settings.auto_recall.max_memories`` gives auto-recall's cap), and
    ``threshold`` overrides the floor.

    Budget mode searches notes and the raw turns archived in L3 together
    (:data:`BUDGET_TYPES`; a transcript is the fallback for a turn whose notes
    missed the point), ranks by the provider's fused rank first
    (:data:`BUDGET_WEIGHTS`), weighed by use (:func:`usage_factor`, ``auto_recall.usage_weight``),
    and shows one memory per source turn
    (``select(distinct_sources=True)``). With ``auto_recall.follow_links`` the memories linked
    to the first hits join the candidates, scored below them (:func:`with_links`; not in a
    look back). ``pool`` defaults to
    :data:`BUDGET_POOL` candidates. ``as_of`` searches what was valid at that time instead of
    what is current (superseded and archived memories whose validity window holds it, as
    ``dexai memory list/search --as-of``). ``said`` dates each line (auto-recall's block).
    """
    t0 = time.perf_counter()
    limit = max_tokens or settings.auto_recall.max_tokens
    size = max(pool if pool is not None else BUDGET_POOL, (max_memories or 0) * 2)
    filters = SearchFilters(project=project, types=BUDGET_TYPES) if as_of is None else SearchFilters(
        project=project, types=BUDGET_TYPES, valid_only=False, include_archived=True, as_of=as_of)
    results = await provider.search(query, user_id=user_id, filters=filters, limit=size)
    results = [r for r in results if is_evidence(r.memory)]
    ranked = rank(results, query, now=now, weights=BUDGET_WEIGHTS, usage_weight=settings.auto_recall.usage_weight)
    exclude = set(exclude_ids)
    visible = VisibleContext(recent, exclude_ids=exclude) if recent or exclude else None
    floor = BUDGET_MODE_FLOOR if threshold is None else threshold
    if settings.auto_recall.follow_links and as_of is None:
        ranked = await with_links(provider, user_id, ranked, floor=floor, project=project)
    conflicts = await open_conflicts(provider, user_id, [r.memory for r in ranked])
    block, mems = select(ranked, threshold=floor, visible=visible, max_memories=max_memories,
                         max_tokens=limit, now=now, distinct_sources=True, conflicts=conflicts, said=said)
    reason = None if mems else ("no results" if not results else
                                "below threshold" if all(r.relevance < floor for r in ranked) else "already visible")
    return RecallResult(block.text, block.tokens, mems, reason, (time.perf_counter() - t0) * 1000, "query", block)


def recall_args(req: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of a ``recall`` request (``user_id, prompt, project?, recent?,
    exclude_ids?, max_memories?, max_tokens?, as_of?, since?``), as :func:`auto_recall` and the daemon's
    executor take them; ``as_of`` is an ISO date/time (recall among what was valid then), ``since``
    one too (a session's block was injected then: the standing knowledge stored later joins). Raises
    :class:`KeyError` without ``user_id``."""
    def number(key: str) -> int | None:
        value = req.get(key)
        return int(value) if value is not None else None

    return {"user_id": str(req["user_id"]), "prompt": str(req.get("prompt") or ""),
            "recent": [str(t) for t in req.get("recent") or []], "project": req.get("project") or None,
            "exclude_ids": [str(i) for i in req.get("exclude_ids") or []],
            "max_memories": number("max_memories"), "max_tokens": number("max_tokens"),
            "as_of": as_utc(req.get("as_of")), "since": as_utc(req.get("since"))}


async def recall_request(provider: RecallSource, settings: Settings, req: dict[str, Any]) -> dict[str, Any]:
    """A ``recall`` request (:func:`recall_args`) answered with :func:`auto_recall`
    (:meth:`RecallResult.to_reply`): what ``dexai memory recall`` runs when no daemon does. A look
    back (``as_of``) counts recency from then and is not a retrieval."""
    args = recall_args(req)
    as_of = args["as_of"]
    result = await auto_recall(provider, args.pop("user_id"), args.pop("prompt"), args.pop("recent"), settings,
                               record_retrieval=as_of is None, now=as_of, **args)
    return result.to_reply()
