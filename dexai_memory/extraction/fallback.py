"""A model implementation with the offline one behind it.

When the model cannot be asked (:class:`~dexai_memory.errors.ModelUnavailable`:
the daily token budget is spent, Claude Code is missing or signed out, its call
failed) the offline extractor, classifier or summarizer answers instead, so a
batch is never lost for want of a model. Other errors (an API error with an
API key) still reach the queue, which retries the job.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from ..errors import ModelUnavailable
from ..models import ExtractedNote, Memory, Turn, UpdateDecision
from ..supersession.classifier import UpdateClassifier
from .base import Extractor, Summarizer

__all__ = ["FallbackClassifier", "FallbackExtractor", "FallbackSummarizer"]

logger = logging.getLogger(__name__)

#: Seconds between two log lines saying the offline implementation answers.
_LOG_EVERY = 600.0


class _Notice:
    """Logs that the offline implementation answers, at most every few minutes."""

    def __init__(self, what: str):
        self.what = what
        self.last = float("-inf")
        self.fallbacks = 0

    def __call__(self, exc: ModelUnavailable) -> None:
        self.fallbacks += 1
        now = time.monotonic()
        if now - self.last >= _LOG_EVERY:
            self.last = now
            logger.warning("%s: the offline one answers: %s", self.what, exc)


class _ModelFirst:
    """What the three wrappers share: their ``model`` implementation is closed with them."""

    async def aclose(self) -> None:
        """Close the model implementation."""
        close = getattr(getattr(self, "model", None), "aclose", None)
        if close is not None:
            await close()


class FallbackExtractor(_ModelFirst, Extractor):
    """``model`` while it can be asked, ``offline`` when it cannot."""

    def __init__(self, model: Extractor, offline: Extractor):
        self.model = model
        self.offline = offline
        self.notice = _Notice("extraction")

    async def extract(self, turns: Sequence[Turn], context: Sequence[Turn | str] = ()) -> list[ExtractedNote]:
        try:
            return await self.model.extract(turns, context)
        except ModelUnavailable as exc:
            self.notice(exc)
            return await self.offline.extract(turns, context)


class FallbackClassifier(_ModelFirst, UpdateClassifier):
    """``model`` while it can be asked, ``offline`` when it cannot."""

    def __init__(self, model: UpdateClassifier, offline: UpdateClassifier):
        self.model = model
        self.offline = offline
        self.notice = _Notice("update classification")

    async def classify(self, new_fact: str, existing: Sequence[Memory]) -> list[UpdateDecision]:
        try:
            return await self.model.classify(new_fact, existing)
        except ModelUnavailable as exc:
            self.notice(exc)
            return await self.offline.classify(new_fact, existing)


class FallbackSummarizer(_ModelFirst, Summarizer):
    """``model`` while it can be asked, ``offline`` when it cannot."""

    def __init__(self, model: Summarizer, offline: Summarizer):
        self.model = model
        self.offline = offline
        self.notice = _Notice("consolidation summary")

    async def summarize(self, contents: list[str]) -> str:
        try:
            return await self.model.summarize(contents)
        except ModelUnavailable as exc:
            self.notice(exc)
            return await self.offline.summarize(contents)
