"""Capture: what enters memory, and the durable queue it waits in.

- :mod:`.gate`: the heuristic gate, which decides whether a turn is worth extracting.
- :mod:`.queue`: the durable extraction queue (SQLite), shared by hooks and the daemon.
"""
