"""The plugin's ``bin/dexai`` (the ``dexai`` a plugin user reaches), the plugin's first-start
install command, and ``claude plugin validate --strict`` with nothing to report.

``bin/dexai`` runs ``hooks/dexai-hook cli ARGS``: the CLI in the plugin's own Python. With the
real Claude Code CLI (bundled in claude-agent-sdk) against the fake Messages API, the model's
Bash tool finds ``dexai`` on PATH (Claude Code adds an enabled plugin's ``bin/``) and
``dexai memory list`` shows the user's memory.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dexai_memory.demo.claude_cli import ClaudeRun
from dexai_memory.demo.fakeapi import FakeMessagesAPI, Reply, ToolUse, last_user_text
from dexai_memory.embeddings import Embedder
from dexai_memory.models import Memory
from dexai_memory.providers.native import NativeProvider
from testing.plugin_check import validate_plugin
from tests.hooks.test_launcher import python_wrapper, script

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / "bin" / "dexai"
FACT = "The staging database is called heron-7"


def run_bin(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_PLUGIN_DATA", "CLAUDE_PLUGIN_ROOT",
                                                              "DEXAI_HOOK_PYTHON")}
    return subprocess.run([str(BIN), *args], env={**base, **env}, capture_output=True, text=True, timeout=120,
                          cwd=cwd, check=False)


def plugin_data(config: Path, name: str, root: Path, python: Path) -> Path:
    """A plugin data directory as the one-step install leaves it: ``installed`` and a venv python."""
    data = config / "plugins" / "data" / name
    (data / "venv" / "bin").mkdir(parents=True)
    (data / "installed").write_text(f"{root}\n")
    os.symlink(python, data / "venv" / "bin" / "python")
    return data


def test_bin_dexai_is_executable_and_checked_by_shellcheck() -> None:
    assert os.access(BIN, os.X_OK)
    shellcheck = subprocess.run(["shellcheck", str(BIN)], capture_output=True, text=True, check=False) \
        if _has("shellcheck") else None
    if shellcheck is not None:
        assert shellcheck.returncode == 0, shellcheck.stdout


def _has(tool: str) -> bool:
    import shutil

    return shutil.which(tool) is not None


def test_bin_dexai_runs_the_cli_in_the_plugin_venv(tmp_path: Path, isolated_home: Path) -> None:
    """Outside a hook ($CLAUDE_PLUGIN_DATA unset) bin/dexai finds the data directory whose
    ``installed`` names this plugin, not another plugin's, and runs the CLI with its Python."""
    config = tmp_path / "claude-config"
    good = python_wrapper(tmp_path / "good" / "python")
    wrong = script(tmp_path / "wrong" / "python", "#!/bin/sh\necho 'the wrong python' >&2\nexit 3\n")
    plugin_data(config, "another-plugin", REPO, wrong)  # not ours: never picked
    old = plugin_data(config, "dexai-memory-a-old", tmp_path / "old-plugin", wrong)
    plugin_data(config, "dexai-memory-market", REPO, good)
    os.utime(old / "installed", (2e9, 2e9))  # installed last, but for another plugin directory
    env = {"CLAUDE_CONFIG_DIR": str(config), "DEXAI_MEMORY_HOME": str(isolated_home)}
    proc = run_bin("--version", env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("dexai, version ")
    proc = run_bin("memory", "list", env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_bin_dexai_without_an_install_says_how(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "none"), "DEXAI_HOOK_PYTHON": str(bare / "bin" / "python")}
    proc = run_bin("memory", "list", env=env, cwd=tmp_path)
    assert proc.returncode == 1
    assert "cannot import dexai_memory" in proc.stderr and "dexai-hook' install" in proc.stderr


def test_plugin_install_asks_only_for_what_the_plugin_uses() -> None:
    sys.path.insert(0, str(REPO / "hooks"))
    try:
        import install
    finally:
        sys.path.remove(str(REPO / "hooks"))
    argv = install.pip_install(["python", "-m", "pip"], "/src/dexai-memory")
    assert argv[-1] == "/src/dexai-memory[sdk]"
    assert argv[argv.index("--no-binary") + 1] == "claude-agent-sdk"  # no second Claude Code CLI


@pytest.mark.e2e
def test_plugin_validates_with_nothing_to_report() -> None:
    for target in (REPO, REPO / ".claude-plugin" / "plugin.json"):
        result = validate_plugin(target, strict=True)
        assert result.ok and not result.errors and not result.warnings, (result.errors, result.warnings)
        assert result.report["hosts"]["declared"]["plugin"] is True  # network.hosts is set
        directory = result.report["directory"]
        assert directory["findings"] == [] and directory["undecided"] == [], directory  # the icon is there


@pytest.fixture
def seeded(isolated_home: Path, embedder: Embedder) -> Iterator[Path]:
    import asyncio

    async def seed() -> None:
        async with NativeProvider(isolated_home / "memory.db", embedder=embedder) as store:
            await store.add(Memory(content=FACT, user_id="alice", importance=8))

    asyncio.run(seed())
    yield isolated_home
    from dexai_memory.config import load_settings
    from dexai_memory.daemon.control import stop

    stop(load_settings(home=isolated_home), timeout=15)


def tool_results(api: FakeMessagesAPI) -> list[dict[str, Any]]:
    return [block for request in api.message_requests() for message in request.body["messages"]
            if isinstance(message.get("content"), list)
            for block in message["content"] if block.get("type") == "tool_result"]


def _text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


@pytest.mark.e2e
def test_the_bash_tool_reaches_dexai_through_the_plugin_bin(tmp_path: Path, seeded: Path) -> None:
    prompt = "Which memories do you have? Run dexai."
    command = "command -v dexai && dexai memory list"
    with FakeMessagesAPI() as api:
        api.enqueue(Reply(tool_uses=[ToolUse("Bash", {"command": command, "description": "list memories"})]),
                    when=lambda body: prompt in last_user_text(body))
        run = ClaudeRun(home=tmp_path / "claude-home", base_url=api.base_url, cwd=tmp_path / "project",
                        plugin_dirs=[REPO],
                        env={"DEXAI_MEMORY_HOME": str(seeded), "DEXAI_MEMORY_USER": "alice",
                             "DEXAI_HOOK_PYTHON": sys.executable,
                             "PATH": "/usr/local/bin:/usr/bin:/bin"},  # no other dexai: only the plugin's
                        timeout=180)
        run(prompt).check()
        results = tool_results(api)
    assert len(results) == 1, results
    out = _text(results[0])
    assert not results[0].get("is_error"), out
    assert str(BIN) in out  # `dexai` is the plugin's bin/dexai
    assert FACT in out
