"""Which of the plugin's hooks Claude Code waits for (:func:`~testing.plugin_check.user_waits`),
on the plugin's own hooks.json: the matcher and ``if`` semantics measured with the CLI (the async
e2e in tests/hooks/test_async_hooks_e2e.py checks the CLI itself)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testing.plugin_check import hooks_for, user_waits

HOOKS = json.loads((Path(__file__).resolve().parents[2] / "hooks" / "hooks.json").read_text())


@pytest.mark.parametrize(("event", "payload", "waits"), [
    ("UserPromptSubmit", {"prompt": "hi"}, True),
    ("SessionStart", {"source": "startup"}, True),
    ("SessionEnd", {}, True),
    ("Stop", {}, True),  # async Stop delays every `claude -p` exit by ~1.5 s (measured): kept synchronous
    ("PostToolUse", {"tool_name": "Read", "tool_input": {"file_path": "a.py"}}, True),
    ("PostToolUse", {"tool_name": "NotebookEdit", "tool_input": {}}, True),
    ("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "git checkout main"}}, True),
    ("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "git switch -c fix/x"}}, True),
    ("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "pytest -q"}}, False),
    ("PostToolUse", {"tool_name": "Grep", "tool_input": {"pattern": "x"}}, False),
    ("PostToolUse", {"tool_name": "mcp__github__get_issue", "tool_input": {}}, False),
    ("PostToolUseFailure", {"tool_name": "Bash", "tool_input": {"command": "make"}}, True),
])
def test_what_the_user_waits_for(event: str, payload: dict[str, object], waits: bool) -> None:
    assert user_waits(HOOKS, event, payload) is waits


def test_each_tool_runs_the_post_tool_use_hook_once_except_a_branch_switch() -> None:
    """A file tool runs only the synchronous entry, another tool only the async one; git checkout
    runs both (the synchronous one answers, the async one only queues: stored once by turn id)."""
    def commands(tool: str, command: str = "") -> list[str]:
        return [str(h["command"]).split()[-1] for h in hooks_for(HOOKS, "PostToolUse",
                                                                  {"tool_name": tool, "tool_input": {"command": command}})]
    assert commands("Edit") == ["post-tool-use"]
    assert commands("WebFetch") == ["--async"]
    assert commands("Bash", "ls") == ["--async"]
    assert sorted(commands("Bash", "git checkout feature/x")) == ["--async", "post-tool-use"]
