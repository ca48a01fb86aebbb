"""Test doubles and harnesses: imported only by tests, benchmarks and ``dexai demo``.

- :mod:`.fakeapi`: a local fake of the Anthropic Messages API (127.0.0.1);
  :mod:`.fake_messages`: its scripted replies, recorded requests and request readers.
- :mod:`.fakezep`: a local fake Zep server.
- :mod:`.harness`: runs the real Claude Code CLI (bundled in ``claude-agent-sdk``)
  with the plugin loaded, against the fake Messages API; :mod:`.plugin_check`:
  ``claude plugin validate`` on a plugin directory.

Nothing in the library imports this package.
"""
