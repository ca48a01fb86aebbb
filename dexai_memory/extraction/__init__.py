"""Extraction: turns in, notes out.

- :mod:`.haiku`: the extractor, update classifier and summarizer on Claude Haiku,
  the :class:`Extractor` / :class:`Summarizer` interfaces and the factories.
- :mod:`.offline`: the rule-based extractor used without an API key.
"""
