"""The fact lifecycle: what keeps memory small and true.

- :mod:`.eviction`: the eviction score (age x category weight / confidence), the
  per-user cap on durable facts and category expiry, run by the daemon's
  scheduled cleanup and ``dexai memory prune`` (archived to L3, never deleted).
- :mod:`.pins`: at most ``lifecycle.max_pins`` pinned memories, with a clear
  message on the next one.
- :mod:`.clear`: ``dexai memory clear`` (every memory of a user, soft) and
  ``dexai memory undo`` within ``lifecycle.undo_minutes``.
- :mod:`.editing`: an edit by hand, logged as ``EDIT`` (``dexai memory edit``,
  the panel and the local API).

Confidence rules live on the data model (:mod:`dexai_memory.models`:
:data:`~dexai_memory.models.MANUAL_CONFIDENCE`,
:data:`~dexai_memory.models.EXTRACTED_CONFIDENCE`,
:func:`~dexai_memory.models.boosted`), applied where memories are written.
"""
