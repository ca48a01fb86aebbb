"""Which extractor, update classifier, summarizer and form writer to use.

``extraction.extractor`` (or ``$DEXAI_EXTRACTOR``):

- ``auto`` (default): Claude Haiku with an API key (``$ANTHROPIC_API_KEY``),
  else Haiku through the user's signed-in Claude Code, else offline;
- ``haiku``: Haiku with an API key (a missing key is a :class:`ConfigError`);
- ``claude_code``: Haiku through the signed-in Claude Code (offline when it is
  missing or signed out);
- ``offline``: the rule-based implementations, no model.

Every model implementation is charged against ``extraction.daily_token_budget``
and has the offline one behind it (:mod:`.fallback`): a spent budget or an
unreachable Claude Code never loses a batch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from .claude_code import ClaudeCodeCall, sign_in
from .fallback import FallbackClassifier, FallbackExtractor, FallbackSummarizer
from .form_writer import HaikuFormWriter, OfflineFormWriter
from .haiku import HaikuClassifier, HaikuExtractor, HaikuTool
from .summarizer import HaikuSummarizer, OfflineSummarizer
from .usage import DailyBudget, TokenLedger

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

    from ..config import Settings
    from ..supersession.classifier import UpdateClassifier
    from .base import Extractor, FormWriter, Summarizer
    from .model_call import ModelCall

__all__ = ["EXTRACTOR_ENV", "Backend", "api_key", "budget", "choose_backend", "make_classifier", "make_client",
           "make_extractor", "make_form_writer", "make_summarizer"]

#: Environment variable overriding ``extraction.extractor``.
EXTRACTOR_ENV = "DEXAI_EXTRACTOR"
_MODES = ("auto", "haiku", "claude_code", "offline")


@dataclass(frozen=True)
class Backend:
    """Where model calls go: ``api_key``, ``claude_code`` or ``offline``, and why (for ``doctor``)."""

    name: str
    reason: str
    cli: Path | None = None


def api_key(settings: Settings) -> str | None:
    """The Anthropic API key from the environment variable ``extraction.api_key_env``."""
    return os.environ.get(settings.extraction.api_key_env) or None


def mode(settings: Settings) -> str:
    """``$DEXAI_EXTRACTOR`` when set, else ``extraction.extractor``."""
    chosen = (os.environ.get(EXTRACTOR_ENV) or settings.extraction.extractor).strip().lower()
    if chosen not in _MODES:
        raise ConfigError(f"${EXTRACTOR_ENV} must be one of {', '.join(_MODES)}, not {chosen!r}",
                          key="extraction.extractor")
    return chosen


def choose_backend(settings: Settings) -> Backend:
    """The backend for ``settings`` (see the module docstring). Asks Claude Code whether it is
    signed in only when no API key decides (``claude auth status``, cached)."""
    chosen = mode(settings)
    if chosen == "offline":
        return Backend("offline", "extraction.extractor is offline")
    env = settings.extraction.api_key_env
    if chosen in ("auto", "haiku") and api_key(settings):
        return Backend("api_key", f"${env} is set")
    if chosen == "haiku":
        raise ConfigError(f"extractor is haiku but ${env} is not set", key="extraction.extractor")
    status = sign_in(settings.extraction.claude_code_cli)
    if status.signed_in:
        return Backend("claude_code", f"Claude Code ({status.cli}) is {status.reason}", status.cli)
    lead = "extractor is claude_code but" if chosen == "claude_code" else f"no ${env}, and"
    return Backend("offline", f"{lead} Claude Code: {status.reason}")


def budget(settings: Settings) -> DailyBudget:
    """``extraction.daily_token_budget`` over the data directory's token ledger."""
    return DailyBudget(TokenLedger.in_home(settings.home), settings.extraction.daily_token_budget)


def make_client(settings: Settings) -> AsyncAnthropic:
    """An ``anthropic.AsyncAnthropic`` with the configured key (``ANTHROPIC_BASE_URL`` is honoured)."""
    import anthropic  # local: ~2.5 s to import, only paid when Haiku is used

    return anthropic.AsyncAnthropic(api_key=api_key(settings), max_retries=settings.extraction.max_retries)


def _call(settings: Settings, model: str, max_tokens: int, client: AsyncAnthropic | None) -> ModelCall | None:
    """The carrier of model calls for ``settings``, or None for offline."""
    if client is not None:
        return HaikuTool(client, model, max_tokens=max_tokens, budget=budget(settings))
    backend = choose_backend(settings)
    if backend.name == "api_key":
        return HaikuTool(make_client(settings), model, max_tokens=max_tokens, budget=budget(settings))
    if backend.name == "claude_code" and backend.cli is not None:
        return ClaudeCodeCall(model, backend.cli, cwd=settings.home, max_tokens=max_tokens, budget=budget(settings))
    return None


def make_extractor(settings: Settings, *, client: AsyncAnthropic | None = None) -> Extractor:
    """Haiku (API key or Claude Code sign-in) with the offline extractor behind it, or offline."""
    from .offline import OfflineExtractor

    call = _call(settings, settings.extraction.extraction_model, 2048, client)
    if call is None:
        return OfflineExtractor()
    return FallbackExtractor(HaikuExtractor(call), OfflineExtractor())


def make_classifier(settings: Settings, *, client: AsyncAnthropic | None = None) -> UpdateClassifier:
    """:class:`HaikuClassifier` (with the offline rules behind it) when a model is configured, else the rules."""
    from ..supersession.rules import OfflineClassifier

    call = _call(settings, settings.supersession.classification_model, 1024, client)
    if call is None:
        return OfflineClassifier()
    return FallbackClassifier(HaikuClassifier(call), OfflineClassifier())


def make_summarizer(settings: Settings, *, client: AsyncAnthropic | None = None) -> Summarizer:
    """:class:`HaikuSummarizer` (with the offline one behind it) when a model is configured, else offline."""
    call = _call(settings, settings.consolidation.consolidation_model, 1024, client)
    if call is None:
        return OfflineSummarizer()
    return FallbackSummarizer(HaikuSummarizer(call), OfflineSummarizer())


def make_form_writer(settings: Settings, *, client: AsyncAnthropic | None = None) -> FormWriter:
    """:class:`HaikuFormWriter` (``consolidation.consolidation_model``; the offline rules behind
    it for every memory it gives nothing usable for) when a model is configured, else the rules."""
    call = _call(settings, settings.consolidation.consolidation_model, 4096, client)
    if call is None:
        return OfflineFormWriter()
    return HaikuFormWriter(call)
