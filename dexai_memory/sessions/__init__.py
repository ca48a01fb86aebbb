"""Sessions of the Claude Agent SDK kept in our data directory.

- :mod:`.store`: :class:`~dexai_memory.sessions.store.SessionStore`, the SDK's
  ``session_store`` adapter on ``<data dir>/sessions.db``, with per-session
  tool statistics and token usage;
- :mod:`.history`: history compaction for Messages API loops (facts extracted
  first, then a long-term summary).
"""
