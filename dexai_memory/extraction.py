"""Extraction: turning conversation turns into durable notes.

:class:`Extractor` is the interface the queue worker calls. Two
implementations exist: :class:`HaikuExtractor` (Claude Haiku through the
official ``anthropic`` client, structured output via a ``record_memories``
tool) and :class:`~dexai_memory.offline_extraction.OfflineExtractor`
(rules, no model). :func:`make_extractor` picks one from the settings.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

from .models import ExtractedNote, Turn


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
