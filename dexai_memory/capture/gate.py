"""The heuristic gate: does this turn contain anything worth remembering?

Runs on every turn, so it must be cheap (p99 well under 1 ms). The signals,
their weights and the text features behind them (filler, regex entities) are
in :mod:`dexai_memory.extraction.signals`, shared with the offline extractor,
which rates a note's importance with them; the gate is that scorer with the
configured threshold. Entities are found by regular expressions only
(:func:`~dexai_memory.extraction.signals.regex_entities`): no NER model is loaded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..extraction.signals import (
    WEIGHTS,
    GateResult,
    SignalScorer,
    is_filler,
    regex_entities,
)

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["WEIGHTS", "Gate", "GateResult", "is_filler", "regex_entities"]


class Gate(SignalScorer):
    """Scores a turn's memory value (see :mod:`dexai_memory.extraction.signals`).

    ``threshold`` is ``extraction.gate_threshold`` (0.3 by default).
    """

    @classmethod
    def from_settings(cls, settings: Settings) -> Gate:
        """A gate with the configured threshold."""
        return cls(settings.extraction.gate_threshold)
