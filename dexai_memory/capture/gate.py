"""The heuristic gate: does this turn contain anything worth remembering?

Runs on every turn, so it must be cheap (p99 well under 1 ms without NER).
The signals, their weights and the text features behind them (filler,
regex entities) are in :mod:`dexai_memory.extraction.signals`, shared with
the offline extractor, which rates a note's importance with them; the gate
is that scorer with the configured threshold, plus optional spaCy NER.

spaCy is never imported by this module at import time: :func:`load_ner` is the
explicit, opt-in loader (it takes ~0.6 s), called by the daemon at start-up
and never on a hook's hot path.
"""

from __future__ import annotations

import importlib.util
import logging
from typing import TYPE_CHECKING

from ..errors import MissingExtra
from ..extraction.signals import (
    WEIGHTS,
    GateResult,
    NerFunc,
    SignalScorer,
    is_filler,
    regex_entities,
)

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["WEIGHTS", "Gate", "GateResult", "NerFunc", "is_filler", "load_ner", "regex_entities"]

logger = logging.getLogger(__name__)


class Gate(SignalScorer):
    """Scores a turn's memory value (see :mod:`dexai_memory.extraction.signals`).

    ``threshold`` is ``extraction.gate_threshold`` (0.3 by default); ``ner`` is
    an optional entity recogniser (see :func:`load_ner`) used in addition to
    the regex.
    """

    @classmethod
    def from_settings(cls, settings: Settings, *, with_ner: bool = False) -> Gate:
        """A gate with the configured threshold; loads spaCy only when ``with_ner`` is true."""
        ner = load_ner(settings) if with_ner else None
        return cls(settings.extraction.gate_threshold, ner=ner)


def spacy_available() -> bool:
    """Whether the spaCy package is installed (without importing it)."""
    return importlib.util.find_spec("spacy") is not None


def load_ner(settings: Settings) -> NerFunc | None:
    """Load the configured spaCy pipeline as an entity recogniser, or None.

    ``extraction.spacy``: ``never`` returns None; ``auto`` returns None when
    spaCy or the pipeline is not installed; ``always`` raises
    :class:`~dexai_memory.errors.MissingExtra` instead. Slow (~0.6 s): call
    once at start-up, never from a hook.
    """
    mode = settings.extraction.spacy
    if mode == "never":
        return None
    model = settings.extraction.spacy_model
    if not spacy_available():
        if mode == "always":
            raise MissingExtra("spaCy is not installed: pip install 'dexai-memory[spacy]' "
                               f"&& python -m spacy download {model}")
        logger.debug("spaCy not installed; the gate uses regex entities only")
        return None
    import spacy  # local: optional and slow

    try:
        nlp = spacy.load(model, disable=["parser", "lemmatizer", "textcat"])
    except OSError as exc:
        if mode == "always":
            raise MissingExtra(f"spaCy pipeline {model!r} is not installed: python -m spacy download {model}") from exc
        logger.info("spaCy pipeline %s not installed; the gate uses regex entities only", model)
        return None
    labels = {"PERSON", "ORG", "GPE", "LOC", "FAC", "NORP", "EVENT", "WORK_OF_ART", "PRODUCT", "LANGUAGE"}

    def ner(text: str) -> list[str]:
        return [ent.text for ent in nlp(text).ents if ent.label_ in labels]

    return ner
