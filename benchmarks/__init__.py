"""Benchmarks of dexai-memory: each module prints a table and writes JSON.

Run one with ``dexai bench NAME`` or ``python -m benchmarks.NAME`` from the
repository root; ``--quick`` runs a small slice (what CI runs). Results go to
``benchmarks/results/NAME.json``. See ``benchmarks/README.md``.
"""
