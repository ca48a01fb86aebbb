"""Storing a new statement through supersession: the one write path for notes and hand-added facts.

Every door that adds a statement to memory goes through :func:`store_statement`:
the pipeline for notes extracted from turns (and file ingest), the
``remember`` tool (MCP, the panel, ``dexai memory facts add``) and
``dexai memory add``. So a fact added by hand is checked against what is
stored exactly like an extracted one: the same candidates, the same
classifier and guards (:func:`~.decide.decide`), the same storage rules and
contradiction record (:func:`~.apply.apply`).

1. Candidates: the ``top_k`` most similar current memories of the note's
   user (``provider.search`` with ``filters``), plus ``pending`` notes
   decided but not yet written; or, with an ``index``, by word overlap
   (:mod:`.candidates`, bulk ingest).
2. :func:`decide_statement`: the one decision; a decision naming a memory
   that was not among the candidates is turned into an ADD.
3. :func:`store_statement`: the decision carried out.

Locking: these functions take no lock. A provider serialises its own
writes, but a decision is read-then-write: two statements decided at the
same time against the same memory could both supersede it. In the daemon
every caller holds ``daemon.write_lock`` around the call; code outside the
daemon (a CLI command with no daemon running) is the only writer of its
store.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..models import Memory, SearchFilters, UpdateAction, UpdateDecision
from .apply import apply
from .candidates import CandidateIndex
from .classifier import UpdateClassifier
from .decide import decide
from .rules import content_words, jaccard

if TYPE_CHECKING:
    from ..providers.base import MemoryProvider

#: Memories a new statement is compared with (``supersession.comparison_top_k``).
DEFAULT_TOP_K = 10


@dataclass(frozen=True, slots=True)
class Decided:
    """The decision for a statement, and the memory it names as the statement was compared with it."""

    decision: UpdateDecision
    target: Memory | None = None


@dataclass(frozen=True, slots=True)
class Stored:
    """What :func:`store_statement` did: the decision, the memory it named, the memory written (or None)."""

    decision: UpdateDecision
    target: Memory | None
    memory: Memory | None


async def candidates(provider: MemoryProvider, note: Memory, *, top_k: int = DEFAULT_TOP_K,
                     filters: SearchFilters | None = None, pending: Sequence[Memory] = (),
                     index: CandidateIndex | None = None, exclude: Set[str] = frozenset()) -> list[Memory]:
    """The memories ``note`` is classified against (step 1 of the module docstring); never those
    of ``exclude`` (an import's memories that carry their own history are not compared among themselves)."""
    skip = {note.id, *exclude}
    if index is not None:
        return index.candidates(note.content, user_id=note.user_id, top_k=top_k, exclude=skip)
    results = await provider.search(note.content, user_id=note.user_id, filters=filters, limit=top_k + min(len(exclude), 2 * top_k))
    existing = [r.memory for r in results if r.memory.id not in skip][:top_k]
    if pending:
        words = content_words(note.content)
        near = sorted(((jaccard(words, content_words(m.content)), m) for m in pending if m.id not in skip),
                      key=lambda x: -x[0])
        existing += [m for score, m in near[:top_k] if score > 0]
    return existing


async def decide_statement(provider: MemoryProvider, note: Memory, *, classifier: UpdateClassifier | None = None,
                           top_k: int = DEFAULT_TOP_K, filters: SearchFilters | None = None,
                           pending: Sequence[Memory] = (), index: CandidateIndex | None = None,
                           enabled: bool = True, exclude: Set[str] = frozenset()) -> Decided:
    """The one decision for ``note`` against its candidates (``classifier`` None: the offline rules).

    ``enabled`` False (``supersession.enabled``) decides ADD without comparing; ``exclude``: memory
    ids the note is not compared with (see :func:`candidates`).
    """
    if not enabled:
        return Decided(UpdateDecision(UpdateAction.ADD, None, "supersession disabled"))
    existing = await candidates(provider, note, top_k=top_k, filters=filters, pending=pending, index=index,
                                exclude=exclude)
    decision = await decide(classifier, note.content, existing)
    target = next((m for m in existing if m.id == decision.memory_id), None)
    if decision.action is not UpdateAction.ADD and target is None:
        return Decided(UpdateDecision(UpdateAction.ADD, None, f"classifier named an unknown memory "
                                      f"({decision.action.value} {decision.memory_id}); stored as new"))
    return Decided(decision, target)


async def store_statement(provider: MemoryProvider, note: Memory, *, classifier: UpdateClassifier | None = None,
                          top_k: int = DEFAULT_TOP_K, filters: SearchFilters | None = None,
                          enabled: bool = True, decided: Decided | None = None) -> Stored:
    """Store ``note`` through supersession (see the module docstring); returns what was done.

    ``decided`` is a decision already made for ``note`` with :func:`decide_statement`
    (the pipeline decides first to skip replayed notes and to buffer ingest's ADDs).
    The caller in the daemon holds ``daemon.write_lock``. Raises
    :class:`~dexai_memory.errors.InvalidMemory` when the note's id exists already,
    :class:`~dexai_memory.errors.MemoryNotFound` when the memory the decision
    names is gone.
    """
    if decided is None:
        decided = await decide_statement(provider, note, classifier=classifier, top_k=top_k, filters=filters,
                                         enabled=enabled)
    written = await apply(provider, decided.decision, note)
    return Stored(decided.decision, decided.target, written)
