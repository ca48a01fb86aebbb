"""Deciding what a new note does to memory, and carrying the decision out.

The one way a note enters the store through supersession (the daemon's
pipeline, file ingest, the ``remember`` tool):

1. :func:`decide`: the classifier's decisions (offline rules or Haiku) are
   guarded - a NOOP that would drop a name, number or date of the note
   becomes an ADD, an UPDATE that would drop one of the memory's becomes a
   SUPERSEDE (:func:`~.rules.guard_meaning`), a SUPERSEDE or UPDATE of a
   pinned memory becomes an ADD (:func:`~.rules.protect_pinned`) - and
   resolved to one action (:func:`~.rules.resolve`).
2. :func:`apply`: the meaning guard runs once more against the memory as it
   is now (a decision may have been made on an older copy, or handed in
   without :func:`decide`), then the provider stores it
   (:meth:`~dexai_memory.providers.base.MemoryProvider.apply_decision`, which
   keeps the storage invariants: pinned memories are never overwritten, tool
   output never rewrites what the user said).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..models import Memory, UpdateAction, UpdateDecision
from ..providers.base import MemoryProvider
from .classifier import UpdateClassifier
from .rules import OfflineClassifier, guard_meaning, protect_pinned, resolve


async def classify(classifier: UpdateClassifier | None, new_fact: str,
                   existing: Sequence[Memory]) -> list[UpdateDecision]:
    """One guarded decision per memory of ``existing`` (see the module docstring).

    ``classifier`` None means the offline rules (:class:`~.rules.OfflineClassifier`).
    """
    decisions = await (classifier or OfflineClassifier()).classify(new_fact, existing)
    return protect_pinned(guard_meaning(decisions, new_fact, existing), existing)


async def decide(classifier: UpdateClassifier | None, new_fact: str, existing: Sequence[Memory]) -> UpdateDecision:
    """The one action to carry out for ``new_fact``: :func:`classify`, then :func:`~.rules.resolve`."""
    return resolve(await classify(classifier, new_fact, existing))


async def apply(provider: MemoryProvider, decision: UpdateDecision, note: Memory) -> Memory | None:
    """Carry out ``decision`` for ``note`` on ``provider``; returns the memory written, or None.

    The memory the decision names is read again, and an UPDATE that would drop
    one of its names, numbers or dates is carried out as SUPERSEDE (the old
    memory stays in history), a NOOP that would drop one of the note's as ADD.
    Raises :class:`~dexai_memory.errors.MemoryNotFound` when that memory is gone.
    """
    old = None
    if decision.action is not UpdateAction.ADD and decision.memory_id is not None:
        old = await provider.get(decision.memory_id, user_id=note.user_id)
        decision = guard_meaning([decision], note.content, [old])[0]
    return await provider.apply_decision(decision, note, current=old)
