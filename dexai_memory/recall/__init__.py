"""Recall: provider -> ranking -> the L1 block.

- :mod:`.ranking`: scoring, selection and the recall entry points
  (:func:`~.ranking.auto_recall`, :func:`~.ranking.recall_block`, :func:`~.ranking.l1_block`).
- :mod:`.block`: rendering the block, its fence and injection defences.
- :mod:`.reinjection`: the block re-injected after compaction and at session start.
"""
