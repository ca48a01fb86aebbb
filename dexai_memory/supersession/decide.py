"""Deciding what a new note does to memory.

A note enters the store through :func:`~.store.store_statement` (the
daemon's pipeline, file ingest, the ``remember`` tool, ``dexai memory add``):

1. :func:`decide`: the classifier's decisions (offline rules or Haiku) are
   guarded - a NOOP that would drop a name, number or date of the note
   becomes an ADD, an UPDATE that would drop one of the memory's becomes a
   SUPERSEDE (:func:`~.rules.guard_meaning`), a SUPERSEDE or UPDATE of a
   pinned memory becomes an ADD (:func:`~.rules.protect_pinned`) - and
   resolved to one action (:func:`~.rules.resolve`).
2. :func:`~.apply.apply`: the meaning guard runs once more against the
   memory as it is now, then the decision is written with the rules that
   hold whatever the classifier said (pinned memories are never
   overwritten, tool output never rewrites what the user said).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..models import Memory, UpdateDecision
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
