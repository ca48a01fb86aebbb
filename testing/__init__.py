"""Test doubles and harnesses for the tests and benchmarks of this repository.

Not part of the installed package (pyproject's ``packages`` leaves it out): it is
imported from a checkout, where the repository root is on ``sys.path`` (pytest's
rootdir, ``python -m benchmarks.<name>``).

- :mod:`.fakezep`: a local fake Zep server (127.0.0.1).
- :mod:`.postgres`: a throw-away PostgreSQL + pgvector server.
- :mod:`.harness`: test helpers around the Claude Code CLI runner
  (:mod:`dexai_memory.demo.claude_cli`); :mod:`.plugin_check`:
  ``claude plugin validate`` on a plugin directory, and which hooks Claude Code waits for.

The fake Messages API and the CLI runner ship with the package, for ``dexai demo``:
:mod:`dexai_memory.demo`.
"""
