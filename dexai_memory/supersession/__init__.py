"""Supersession: how a new note relates to what is stored (ADD, UPDATE, SUPERSEDE, NOOP).

- :mod:`.classifier`: the :class:`~.classifier.UpdateClassifier` interface.
- :mod:`.rules`: the offline classifier, the rules it applies, and the guards
  (meaning, pinned memories) every classifier's output goes through.
- :mod:`.decide`: deciding and carrying out a decision for a note (the one way in).
- :mod:`.candidates`: the in-memory candidate index used by bulk ingest.
"""
