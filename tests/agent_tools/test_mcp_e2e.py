"""End to end with the real Claude Code CLI: the plugin's MCP server (``.mcp.json`` ->
``hooks/dexai-hook mcp``) serves ``remember`` to the model, the daemon it forwards the call to
(started on demand, as for a new user) stores it, and ``/dexai-memory:facts`` shows it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dexai_memory.config import load_settings
from dexai_memory.daemon.control import stop
from dexai_memory.demo.claude_cli import ClaudeRun
from dexai_memory.demo.fakeapi import FakeMessagesAPI, Reply, ToolUse, last_user_text
from dexai_memory.embeddings import Embedder
from dexai_memory.models import MemoryType
from dexai_memory.providers.native import NativeProvider
from testing.plugin_check import validate_plugin

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
#: Claude Code names a plugin's MCP tools mcp__plugin_<plugin>_<server>__<tool>.
REMEMBER = "mcp__plugin_dexai-memory_dexai-memory__remember"
PROMPT = "Remember that I prefer pnpm over npm."
FACT = "User prefers pnpm over npm"


def tool_results(api: FakeMessagesAPI) -> list[dict[str, Any]]:
    return [block for request in api.message_requests() for message in request.body["messages"]
            if isinstance(message.get("content"), list)
            for block in message["content"] if block.get("type") == "tool_result"]


@pytest.fixture
def daemon_stopped(isolated_home: Path) -> Iterator[Path]:
    """The data directory; the daemon started for it during the test is stopped afterwards."""
    yield isolated_home
    assert stop(load_settings(home=isolated_home), timeout=15)


async def test_the_model_remembers_through_the_plugin_mcp_server(tmp_path: Path, daemon_stopped: Path,
                                                                 embedder: Embedder) -> None:
    isolated_home = daemon_stopped
    validation = validate_plugin(REPO, strict=True)
    assert validation.ok, (validation.errors, validation.warnings)
    provides = validation.report["provides"]
    assert [s["name"] for s in provides["mcpServers"]] == ["dexai-memory"]
    assert sorted(provides["commands"]) == ["dexai-memory:facts", "dexai-memory:forget", "dexai-memory:remember"]

    with FakeMessagesAPI() as api:
        api.enqueue(Reply(tool_uses=[ToolUse(REMEMBER, {"content": FACT, "category": "preference"})]),
                    when=lambda body: PROMPT in last_user_text(body))
        run = ClaudeRun(home=tmp_path / "claude-home", base_url=api.base_url, cwd=tmp_path / "project",
                        plugin_dirs=[REPO], permission_mode="default", extra_args=["--allowedTools", REMEMBER],
                        env={"DEXAI_MEMORY_HOME": str(isolated_home), "DEXAI_MEMORY_USER": "alice",
                             "DEXAI_HOOK_PYTHON": sys.executable, "DEXAI_DAEMON_AUTOSTART": "1"},
                        timeout=120, auth="token")  # no API key: the daemon extracts offline
        first = (await run.arun(PROMPT)).check()
        results = tool_results(api)
        assert len(results) == 1 and not results[0].get("is_error"), results
        assert results[0]["content"][0]["text"].startswith("Remembered as m_")

        async with NativeProvider(isolated_home / "memory.db", embedder=embedder) as store:
            stored = [m for m in await store.list(user_id="alice")
                      if m.type is not MemoryType.SNAPSHOT]  # the session's final snapshot (SessionEnd)
        assert [(m.content, m.metadata["category"], m.metadata["source"]) for m in stored] == [
            (FACT, "preference", "remember_tool")]
        assert stored[0].session_id == first.session_id

        api.clear()
        (await run.arun("/dexai-memory:facts")).check()
        shown = last_user_text(api.message_requests()[0].body)
        assert f"preference (1)\n- [{stored[0].id}]" in shown and FACT in shown
