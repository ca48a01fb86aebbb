"""The extraction interfaces: :class:`Extractor` (turns -> notes), which the queue
worker calls, and :class:`Summarizer` (a cluster of memories -> one abstract), which
consolidation calls.

Implementations: :class:`~dexai_memory.extraction.haiku.HaikuExtractor` and
:class:`~dexai_memory.extraction.offline.OfflineExtractor`;
:class:`~dexai_memory.extraction.summarizer.HaikuSummarizer` and
:class:`~dexai_memory.extraction.summarizer.OfflineSummarizer`.
:mod:`dexai_memory.extraction.factory` picks them from the settings.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

from ..models import ExtractedNote, Turn

__all__ = ["Extractor", "Summarizer"]


class Extractor(abc.ABC):
    """Finds durable notes in conversation turns."""

    @abc.abstractmethod
    async def extract(self, turns: Sequence[Turn], context: Sequence[Turn | str] = ()) -> list[ExtractedNote]:
        """Notes found in ``turns`` (``context``: earlier turns, oldest first, for reference only).

        Every note's ``source_ids`` name the turns it came from. Text is
        redacted (:func:`dexai_memory.privacy.redact`) before it is stored or
        sent anywhere. Returns [] when there is nothing worth keeping; raises
        :class:`~dexai_memory.errors.ExtractionError` when extraction failed
        (the queue keeps the job as a dead letter).
        """


class Summarizer(abc.ABC):
    """Writes the abstract of a cluster of memories (consolidation: L2 clusters -> L3 abstracts)."""

    @abc.abstractmethod
    async def summarize(self, contents: list[str]) -> str:
        """One self-contained abstract of ``contents`` (non-empty); raises
        :class:`~dexai_memory.errors.ExtractionError` on failure."""
