"""The offline extractor: rules and patterns, no model, no network.

- :mod:`.extractor`: :class:`OfflineExtractor`, which reads a turn sentence by
  sentence and writes the notes (its module docstring tells the whole story).
- :mod:`.sentences`: splitting and cleaning sentences, finishing notes, leaving
  pasted code and logs out.
- :mod:`.pronouns`: first and second person rewritten to the speakers' names.
- :mod:`.rules`: the patterns every speaker's sentences are read with: questions,
  persons, advice, and the cues of each note type.
- :mod:`.session_rules`: the rules of an assistant session's user: warnings,
  standing instructions, decisions, goals, and the importance of each.
"""

from .extractor import OfflineExtractor
from .session_rules import (
    DECISION_IMPORTANCE,
    GOAL_IMPORTANCE,
    SESSION_MAX_IMPORTANCE,
    WARNING_IMPORTANCE,
)

__all__ = [
    "DECISION_IMPORTANCE", "GOAL_IMPORTANCE", "SESSION_MAX_IMPORTANCE", "WARNING_IMPORTANCE", "OfflineExtractor",
]
