"""Which extractor, update classifier and summarizer to use: the Haiku ones when
an API key is configured (or ``extractor: haiku``), the offline ones otherwise.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..errors import ConfigError
from .haiku import HaikuClassifier, HaikuExtractor
from .summarizer import HaikuSummarizer, OfflineSummarizer

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

    from ..config import Settings
    from ..supersession.classifier import UpdateClassifier
    from .base import Extractor, Summarizer

__all__ = ["api_key", "make_classifier", "make_client", "make_extractor", "make_summarizer", "use_haiku"]


def api_key(settings: Settings) -> str | None:
    """The Anthropic API key from the environment variable ``extraction.api_key_env``."""
    return os.environ.get(settings.extraction.api_key_env) or None


def use_haiku(settings: Settings) -> bool:
    """Whether the Haiku implementations are configured: ``extractor: haiku``, or auto with a key.

    Raises :class:`ConfigError` for ``haiku`` without a key.
    """
    mode = settings.extraction.extractor
    if mode == "offline":
        return False
    key = api_key(settings)
    if mode == "haiku" and not key:
        raise ConfigError(f"extractor is haiku but ${settings.extraction.api_key_env} is not set",
                          key="extraction.extractor")
    return key is not None


def make_client(settings: Settings) -> AsyncAnthropic:
    """An ``anthropic.AsyncAnthropic`` with the configured key (``ANTHROPIC_BASE_URL`` is honoured)."""
    import anthropic  # local: ~2.5 s to import, only paid when Haiku is used

    return anthropic.AsyncAnthropic(api_key=api_key(settings), max_retries=settings.extraction.max_retries)


def make_extractor(settings: Settings, *, client: AsyncAnthropic | None = None) -> Extractor:
    """Haiku when configured (see :func:`use_haiku`), the offline extractor otherwise."""
    if client is not None or use_haiku(settings):
        return HaikuExtractor(client or make_client(settings), settings.extraction.extraction_model)
    from .offline import OfflineExtractor

    return OfflineExtractor()


def make_classifier(settings: Settings, *, client: AsyncAnthropic | None = None) -> UpdateClassifier:
    """:class:`HaikuClassifier` when configured, else the offline classifier."""
    if client is not None or use_haiku(settings):
        return HaikuClassifier(client or make_client(settings), settings.supersession.classification_model)
    from ..supersession.rules import OfflineClassifier

    return OfflineClassifier()


def make_summarizer(settings: Settings, *, client: AsyncAnthropic | None = None) -> Summarizer:
    """:class:`HaikuSummarizer` when configured, else :class:`OfflineSummarizer`."""
    if client is not None or use_haiku(settings):
        return HaikuSummarizer(client or make_client(settings), settings.consolidation.consolidation_model)
    return OfflineSummarizer()
