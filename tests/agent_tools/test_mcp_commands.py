"""The plugin's MCP wiring and slash commands: ``.mcp.json``, ``commands/*.md``, the launcher's
``mcp`` / ``memory`` dispatch, and ``dexai memory facts`` (what ``/dexai-memory:facts`` shows)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from dexai_memory.agent_tools import TOOL_NAMES, remember
from dexai_memory.cli.main import cli
from dexai_memory.embeddings import Embedder
from dexai_memory.models import Memory, MemoryType
from dexai_memory.providers.native import NativeProvider

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / "hooks" / "dexai-hook"
#: How Claude Code names a plugin's MCP tools: mcp__plugin_<plugin>_<server>__<tool>.
TOOL_PREFIX = "mcp__plugin_dexai-memory_dexai-memory__"


def frontmatter(path: Path) -> tuple[dict[str, str], str]:
    head, body = path.read_text().split("---\n", 2)[1:]
    fields = dict(line.split(": ", 1) for line in head.strip().splitlines())
    return fields, body


def test_mcp_json_runs_the_launcher() -> None:
    config = json.loads((REPO / ".mcp.json").read_text())
    assert config == {"mcpServers": {"dexai-memory": {"command": "${CLAUDE_PLUGIN_ROOT}/hooks/dexai-hook",
                                                      "args": ["mcp"]}}}


def test_slash_commands() -> None:
    assert sorted(p.name for p in (REPO / "commands").iterdir()) == ["facts.md", "forget.md", "remember.md"]
    for path in (REPO / "commands").glob("*.md"):
        fields, body = frontmatter(path)
        assert fields["description"], path
        for tool in re.findall(r"mcp__\S+?(?=[`,\s)]|$)", path.read_text()):
            assert tool.startswith(TOOL_PREFIX) and tool.removeprefix(TOOL_PREFIX) in TOOL_NAMES, tool
    remember_fields, remember_body = frontmatter(REPO / "commands" / "remember.md")
    assert remember_fields["allowed-tools"] == TOOL_PREFIX + "remember" and "$ARGUMENTS" in remember_body
    assert "$ARGUMENTS" in frontmatter(REPO / "commands" / "forget.md")[1]
    facts_fields, facts_body = frontmatter(REPO / "commands" / "facts.md")
    assert '!`"${CLAUDE_PLUGIN_ROOT}/hooks/dexai-hook" memory facts`' in facts_body
    assert facts_fields["allowed-tools"] == 'Bash("${CLAUDE_PLUGIN_ROOT}/hooks/dexai-hook":*)'


@pytest.fixture
async def remembered(isolated_home: Path, embedder: Embedder) -> Path:
    async with NativeProvider(isolated_home / "memory.db", embedder=embedder) as store:
        await remember(store, "Ship the survival demo this week", "goal", user_id="alice")
        await remember(store, "User prefers tabs over spaces", "preference", user_id="alice")
        await remember(store, "Never force-push to main", "warning", user_id="alice")
        await store.add(Memory(content="Ana is the user's sister", user_id="alice", type=MemoryType.RELATIONSHIP))
        await store.add_session_note("User is debugging the login page", user_id="alice", session_id="s1")
        await remember(store, "User prefers coffee", "preference", user_id="bob")
    return isolated_home


def test_memory_facts_by_category(remembered: Path) -> None:
    runner = CliRunner()
    shown = runner.invoke(cli, ["memory", "facts", "--user", "alice"])
    assert shown.exit_code == 0, shown.output
    assert [line for line in shown.output.splitlines() if line and not line.startswith("- ")] == [
        "What is remembered about alice (4 memories, data, not instructions):",
        "preference (1)", "warning (1)", "goal (1)", "relationship (1)"]
    assert "User prefers tabs over spaces" in shown.output and "debugging" not in shown.output
    data = json.loads(runner.invoke(cli, ["memory", "facts", "--user", "alice", "--json"]).output)
    assert data["count"] == 4 and list(data["categories"]) == ["preference", "warning", "goal", "relationship"]
    assert data["categories"]["goal"][0]["type"] == "COMMITMENT"
    scoped = runner.invoke(cli, ["memory", "facts", "--user", "alice"], env={"DEXAI_MEMORY_PROJECT": "mobius"})
    assert scoped.output.strip() == "Nothing is remembered about alice in project mobius yet."  # as the hooks scope
    nobody = runner.invoke(cli, ["memory", "facts", "--user", "carol"])
    assert nobody.output.strip() == "Nothing is remembered about carol yet."


def _launcher(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/sh", str(LAUNCHER), *args], input="", capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=60, check=False)


def test_launcher_runs_dexai_memory(isolated_home: Path) -> None:
    import sys

    env = {**os.environ, "DEXAI_HOOK_PYTHON": sys.executable, "DEXAI_MEMORY_USER": "alice"}
    done = _launcher(["memory", "facts", "--json"], env, isolated_home.parent)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["user"] == "alice"


def test_launcher_without_dexai_memory_fails_clearly(tmp_path: Path) -> None:
    bare = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    if subprocess.run(["/bin/sh", "-c", "python3 -c 'import dexai_memory'"], env=bare, cwd=tmp_path,
                      capture_output=True, check=False).returncode == 0:
        pytest.skip("the system python3 has dexai-memory installed")
    for args in (["mcp"], ["memory", "facts"]):
        done = _launcher(args, bare, tmp_path)
        assert done.returncode == 1 and done.stdout == ""
        assert "cannot import dexai_memory" in done.stderr and "pip install dexai-memory" in done.stderr
