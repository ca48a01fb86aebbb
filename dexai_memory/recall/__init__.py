"""Recall: provider -> ranking -> the L1 block.

- :mod:`.ranking`: scoring, selection and the recall entry points
  (:func:`~.ranking.auto_recall`, :func:`~.ranking.recall_block`).
- :mod:`.block`: rendering the block, its fence and injection defences.
- :mod:`.reinjection`: the block injected at session start (:func:`~.reinjection.l1_block`)
  and re-injected after compaction.
- :mod:`.source`: what recall reads from (the two reads it makes of a provider).
"""
