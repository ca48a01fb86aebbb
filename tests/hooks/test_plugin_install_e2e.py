"""End to end, the one-step install with the real Claude Code CLI (bundled in claude-agent-sdk)
against the fake Messages API: the plugin is loaded on a machine where no Python has
dexai-memory; the first session's SessionStart starts the install and tells the user; once it
has finished, a new session's hooks run through the installed venv (the profile and the
auto-recalled memory reach the model). The install runs offline (PIP_NO_INDEX) from a local
wheelhouse; see tests/hooks/test_launcher.py for the details."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from dexai_memory.demo.claude_cli import ClaudeResult, ClaudeRun
from dexai_memory.demo.fakeapi import FakeMessagesAPI, text_of
from dexai_memory.embeddings import Embedder
from dexai_memory.models import Memory, MemoryType
from dexai_memory.providers.native import NativeProvider
from tests.hooks.test_launcher import (
    bare_python,
    build_backend_wheelhouse,
    offline_install_env,
    plugin_copy,
    require_dependencies_in_base,
    tools_dir,
    wait_for,
)

pytestmark = pytest.mark.e2e

FACT = "The deploy password hint is PINEAPPLE-42"
PREFERENCE = "Alice prefers tabs over spaces"


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    require_dependencies_in_base()
    yield build_backend_wheelhouse(tmp_path_factory.mktemp("wheelhouse"))


@pytest.fixture
async def home(isolated_home: Path, embedder: Embedder) -> AsyncIterator[Path]:
    async with NativeProvider(isolated_home / "memory.db", embedder=embedder) as p:
        await p.add(Memory(content=FACT, user_id="alice", importance=8, source_ids=("t1",)))
        await p.add(Memory(content=PREFERENCE, user_id="alice", type=MemoryType.PREFERENCE, importance=8))
    yield isolated_home
    from dexai_memory.config import load_settings
    from dexai_memory.daemon.control import stop

    stop(load_settings(home=isolated_home), timeout=15)  # the daemon the hooks started


def transcript_attachments(claude_home: Path, result: ClaudeResult) -> list[dict[str, Any]]:
    """The attachments Claude Code recorded in the session's transcript (hook results, and the
    hook system messages it shows the user)."""
    files = list((claude_home / ".claude" / "projects").glob(f"*/{result.session_id}.jsonl"))
    assert len(files) == 1, files
    entries = [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]
    return [e["attachment"] for e in entries if e.get("type") == "attachment" and "attachment" in e]


def session_start_responses(result: ClaudeResult) -> list[dict[str, Any]]:
    return [m for m in result.messages if m.get("subtype") == "hook_response" and m.get("hook_event") == "SessionStart"]


def test_first_session_installs_and_a_later_session_remembers(
        tmp_path: Path, home: Path, wheelhouse: Path) -> None:
    plugin = plugin_copy(tmp_path / "plugin")
    claude_home = tmp_path / "claude-home"
    # no dexai, and a python3 that cannot import dexai_memory: the plugin must install itself
    env = {"PATH": f"{bare_python(tmp_path)}:{tools_dir(tmp_path)}", "DEXAI_MEMORY_HOME": str(home),
           "DEXAI_MEMORY_USER": "alice", "DEXAI_DAEMON_AUTOSTART": "1", **offline_install_env(wheelhouse)}
    data = claude_home / ".claude" / "plugins" / "data" / "dexai-memory-inline"  # CLAUDE_PLUGIN_DATA (--plugin-dir)
    with FakeMessagesAPI() as api:
        run = ClaudeRun(home=claude_home, base_url=api.base_url, cwd=tmp_path / "project", plugin_dirs=[plugin],
                        env=env, output_format="stream-json", timeout=180)
        first = run("hi").check()
        [response] = session_start_responses(first)
        assert response["exit_code"] == 0 and response["outcome"] == "success"
        told = [a["content"] for a in transcript_attachments(claude_home, first)
                if a.get("type") == "hook_system_message"]
        assert len(told) == 1 and "installing" in told[0] and str(data / "install.log") in told[0], told

        wait_for(lambda: (data / "installed").exists() or (data / "install.failed").exists(), "the install")
        assert (data / "installed").exists(), (data / "install.log").read_text()[-3000:]

        second = run("What is the deploy password hint?").check()  # a new session
        [response] = session_start_responses(second)
        assert response["exit_code"] == 0 and response["stderr"] == "", response
        assert not [a for a in transcript_attachments(claude_home, second) if a.get("type") == "hook_system_message"]
        request = text_of(api.message_requests()[-1])
        assert PREFERENCE in request  # SessionStart's profile, through the venv
        assert FACT in request  # UserPromptSubmit's auto-recall, through the venv
    assert (home / "hooks.log").exists()
