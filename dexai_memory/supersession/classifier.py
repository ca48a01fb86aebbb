"""The classifier interface: what a new fact does to the memories it resembles.

Implementations: :class:`~dexai_memory.supersession.rules.OfflineClassifier`
(deterministic rules) and :class:`~dexai_memory.extraction.haiku.HaikuClassifier`
(Claude Haiku, with an API key). Their output is never applied as is:
:mod:`dexai_memory.supersession.decide` guards it first.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

from ..models import Memory, UpdateDecision


class UpdateClassifier(abc.ABC):
    """Decides ADD / UPDATE / SUPERSEDE / NOOP for a new fact against existing memories."""

    @abc.abstractmethod
    async def classify(self, new_fact: str, existing: Sequence[Memory]) -> list[UpdateDecision]:
        """One decision per existing memory (ADD with memory_id None if ``existing`` is empty)."""
