"""dexai-memory: semantic memory for Claude agents that survives compaction."""
