"""Extraction: turns in, notes out.

- :mod:`.base`: the :class:`Extractor` and :class:`Summarizer` interfaces.
- :mod:`.offline`: the rule-based extractor used without an API key.
- :mod:`.haiku`: the extractor and update classifier on Claude Haiku, and their tool-call plumbing.
- :mod:`.summarizer`: consolidation abstracts, offline and on Haiku.
- :mod:`.factory`: picks Haiku or offline from the settings.
- :mod:`.signals`: the memory-value signals of a text (filler, entities, weighted cues), shared
  with the capture gate.
"""
