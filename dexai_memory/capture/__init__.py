"""Capture: what enters memory, and the durable queue it waits in.

- :mod:`.admit`: the only entry of a turn into memory: redact, then gate (used by every capture path).
- :mod:`.gate`: the heuristic gate, which decides whether a turn is worth extracting.
- :mod:`.queue_file`: the queue file's schema, connections and the hook's stdlib-only enqueue.
- :mod:`.jobs`: the rows of the queue (jobs, dead letters) and the SQL that marks, lists and retries them.
- :mod:`.queue`: the durable extraction queue (the worker's side), shared by hooks and the daemon.
- :mod:`.turns_file`: reading a conversation from a JSONL file (``dexai memory ingest``).
- :mod:`.recent`: each session's last turns in the daemon (the gate's context on the plugin path).
- :mod:`.divergence`: the semantic-divergence signal, the daemon's background second look at a turn.
- :mod:`.routines`: requests repeated in order across sessions, kept as procedures at consolidation.
"""
