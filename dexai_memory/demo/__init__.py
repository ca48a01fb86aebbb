"""What ``dexai demo`` runs on: a real Claude Code session, offline.

- :mod:`.fakeapi`: a local fake of the Anthropic Messages API (127.0.0.1);
  :mod:`.fake_messages`: its scripted replies, recorded requests and request readers.
- :mod:`.claude_cli`: runs the real Claude Code CLI (bundled in ``claude-agent-sdk``)
  with the plugin loaded, against the fake Messages API.

The tests and benchmarks use the same modules (with the test-only doubles of
the repository's ``testing/`` package). Nothing in the library imports this
package except the ``dexai demo`` command.
"""
