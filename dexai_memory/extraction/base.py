"""The extraction interfaces: :class:`Extractor` (turns -> notes), which the queue
worker calls, and :class:`Summarizer` (a cluster of memories -> one abstract), which
consolidation calls, and :class:`FormWriter` (memories -> their compression forms),
which consolidation's forms step calls.

Implementations: :class:`~dexai_memory.extraction.haiku.HaikuExtractor` and
:class:`~dexai_memory.extraction.offline.OfflineExtractor`;
:class:`~dexai_memory.extraction.summarizer.HaikuSummarizer` and
:class:`~dexai_memory.extraction.summarizer.OfflineSummarizer`.
:class:`~dexai_memory.extraction.form_writer.HaikuFormWriter` and
:class:`~dexai_memory.extraction.form_writer.OfflineFormWriter`.
:mod:`dexai_memory.extraction.factory` picks them from the settings.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..models import ExtractedNote, Turn

__all__ = ["Extractor", "FormWriter", "Summarizer", "WrittenForms"]


class Extractor(abc.ABC):
    """Finds durable notes in conversation turns."""

    @abc.abstractmethod
    async def extract(self, turns: Sequence[Turn], context: Sequence[Turn | str] = ()) -> list[ExtractedNote]:
        """Notes found in ``turns`` (``context``: earlier turns, oldest first, for reference only).

        Every note's ``source_ids`` name the turns it came from. Text is
        redacted (:func:`dexai_memory.text.redaction.redact`) before it is stored or
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


@dataclass(frozen=True)
class WrittenForms:
    """One memory's short forms (``{"summary", "compressed", "index"}``, see
    :mod:`dexai_memory.recall.forms`), who wrote them (``"model"`` or ``"rules"``) and whether
    the model was asked about this content (and answered, unusably when ``by`` is ``"rules"``)."""

    forms: Mapping[str, str]
    by: str
    asked: bool = False


class FormWriter(abc.ABC):
    """Writes the compression forms of memories (consolidation's forms step)."""

    #: Whether it asks a model (then consolidation also hands it rules-built forms to upgrade).
    uses_model: bool = False

    @abc.abstractmethod
    async def write(self, contents: Sequence[str]) -> list[WrittenForms]:
        """The forms of each of ``contents``, in order. Never raises for want of a model: a
        content the model gives nothing usable for gets the offline rules' forms."""

    async def aclose(self) -> None:  # noqa: B027 - nothing to release by default
        """Release what the writer holds (a model client); nothing by default."""
