"""Supersession: how a new statement relates to what is stored (ADD, UPDATE, SUPERSEDE, NOOP).

The decision policy lives here, over any provider's storage primitives:

- :mod:`.store`: :func:`~.store.store_statement`, the one way a statement enters
  memory (extracted notes, ``remember``, ``dexai memory add``).
- :mod:`.imports`: ``dexai memory import``: new current statements decided by the
  same path, oldest first by when they were said; an export's own entries and
  the past stored as they are; undone when a write fails.
- :mod:`.classifier`: the :class:`~.classifier.UpdateClassifier` interface.
- :mod:`.rules`: the offline classifier, the rules it applies, and the guards
  (meaning, pinned memories) every classifier's output goes through.
- :mod:`.changes`: change detection (a named old value, a reversed comparison,
  the same frame with a new value; "unsure" when a change and a second value
  cannot be told apart).
- :mod:`.statements`: the words two statements are compared on.
- :mod:`.decide`: one guarded decision for a statement.
- :mod:`.apply`: carrying a decision out (confidence, the tool-output,
  pinned and shared-memory rules).
- :mod:`.chain`: superseding one memory, or merging many into an abstract.
- :mod:`.contradictions`: when a SUPERSEDE is a recorded contradiction, and
  whether it resolves on its own.
- :mod:`.candidates`: the in-memory candidate index used by bulk ingest.
"""
