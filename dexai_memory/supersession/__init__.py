"""Supersession: how a new note relates to what is stored (ADD, UPDATE, SUPERSEDE, NOOP).

- :mod:`.rules`: the offline classifier and the rules it applies.
- :mod:`.candidates`: the in-memory candidate index used by bulk ingest.
"""
