"""Day-one memory: learning from the Claude Code sessions a user already had.

:mod:`.transcripts` reads one past session as the hooks would have read it live;
:mod:`.learn` plans a run (what it would read and cost) and replays the sessions through the
warm path. ``dexai memory learn-history`` is its door; the record of what was learned is
:mod:`dexai_memory.capture.history_log`, and forgetting one session's memories
:mod:`dexai_memory.lifecycle.learned`.
"""
