"""End to end with the real Claude Code CLI (bundled in claude-agent-sdk) against the
fake Messages API: the plugin's command hooks and the SDK callbacks, manual and auto
compaction, a marketplace install, and a hook that crashes internally."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dexai_memory.config import load_settings
from dexai_memory.demo.claude_cli import ClaudeRun, build_env, claude_binary
from dexai_memory.demo.fakeapi import (
    FakeMessagesAPI,
    RecordedRequest,
    Reply,
    is_compaction_prompt,
    text_of,
)
from dexai_memory.embeddings import Embedder
from dexai_memory.models import Memory, MemoryType
from dexai_memory.providers.native import NativeProvider
from dexai_memory.recall.block import FENCE_CLOSE, FENCE_OPEN
from testing.plugin_check import validate_plugin

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
FACT = "The deploy password hint is PINEAPPLE-42"
PREFERENCE = "Alice prefers tabs over spaces"


def outside_memory_blocks(text: str) -> str:
    return re.sub(re.escape(FENCE_OPEN) + r".*?" + re.escape(FENCE_CLOSE), "", text, flags=re.S)


def first_request_after_compaction(api: FakeMessagesAPI) -> RecordedRequest:
    requests = api.message_requests()
    idx = max(i for i, r in enumerate(requests) if is_compaction_prompt(r.body))
    assert idx + 1 < len(requests), "no request after the compaction request"
    return requests[idx + 1]


def assert_fact_survived(request: RecordedRequest) -> None:
    text = text_of(request)
    assert FACT in text, "the planted fact did not reach the model after compaction"
    assert FACT not in outside_memory_blocks(text), "the fact came from the summary, not from memory"
    assert "This session is being continued from a previous conversation" in text


@pytest.fixture
async def home(isolated_home: Path, embedder: Embedder) -> AsyncIterator[Path]:
    async with NativeProvider(isolated_home / "memory.db", embedder=embedder) as p:
        await p.add(Memory(content=FACT, user_id="alice", importance=8, source_ids=("t1",)))
        await p.add(Memory(content=PREFERENCE, user_id="alice", type=MemoryType.PREFERENCE, importance=8))
    yield isolated_home
    from dexai_memory.config import load_settings
    from dexai_memory.daemon.control import stop

    stop(load_settings(home=isolated_home), timeout=15)  # the daemon the hooks started


@pytest.fixture
def api() -> AsyncIterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as server:  # its default compaction summary keeps nothing
        yield server


def cli_env(home: Path) -> dict[str, str]:
    # `dexai` of this interpreter first on PATH: the plugin launcher finds its Python there.
    # the hooks start the daemon as they do for a user (the test suite turns autostart off)
    return {"DEXAI_MEMORY_HOME": str(home), "DEXAI_MEMORY_USER": "alice", "DEXAI_DAEMON_AUTOSTART": "1",
            "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}


def runner(tmp_path: Path, api: FakeMessagesAPI, home: Path, **kw: object) -> ClaudeRun:
    return ClaudeRun(home=tmp_path / "claude-home", base_url=api.base_url, cwd=tmp_path / "project",
                     env=cli_env(home), timeout=180, **kw)  # type: ignore[arg-type]


def test_plugin_validates() -> None:
    for target in (REPO, REPO / ".claude-plugin" / "plugin.json"):
        result = validate_plugin(target, strict=True)
        assert result.ok, (result.errors, result.warnings)
    hooks = json.loads((REPO / "hooks" / "hooks.json").read_text())["hooks"]
    assert {"SessionStart", "UserPromptSubmit", "PreCompact", "PostCompact", "PostToolUse", "Stop",
            "SessionEnd"} <= set(hooks)


def test_plugin_manual_compaction(tmp_path: Path, api: FakeMessagesAPI, home: Path) -> None:
    run = runner(tmp_path, api, home, plugin_dirs=[REPO])
    first = run("What is the deploy password hint?").check()
    assert FACT in text_of(api.message_requests()[-1])  # auto-recall on the first prompt
    assert PREFERENCE in text_of(api.message_requests()[-1])  # SessionStart profile
    run.resume("/compact").check()
    assert any(is_compaction_prompt(r.body) for r in api.message_requests())
    run.resume("What were we doing?").check()
    assert_fact_survived(first_request_after_compaction(api))
    settings = load_settings(home=home)
    assert not list(settings.home.joinpath("hooks").glob("compact-*.json"))  # the marker was consumed
    assert list(settings.home.joinpath("transcripts").glob(f"{first.session_id}-*-manual.jsonl"))


def test_plugin_auto_compaction(tmp_path: Path, api: FakeMessagesAPI, home: Path) -> None:
    run = runner(tmp_path, api, home, plugin_dirs=[REPO], autocompact=100_000)
    run("Let's plan the release.").check()
    api.enqueue(Reply(text="Sure, a big plan.", input_tokens=90_000))
    run.resume("Add the rollout steps.").check()
    run.resume("Continue with the deploy password hint.").check()
    compactions = [r for r in api.message_requests() if is_compaction_prompt(r.body)]
    assert len(compactions) == 1
    assert_fact_survived(first_request_after_compaction(api))
    transcripts = list((home / "transcripts").glob("*-auto.jsonl"))
    assert len(transcripts) == 1


def test_plugin_installed_from_marketplace_dir(tmp_path: Path, api: FakeMessagesAPI, home: Path) -> None:
    market = tmp_path / "market"
    plugin = market / "plugins" / "dexai-memory"
    shutil.copytree(REPO / ".claude-plugin", plugin / ".claude-plugin")
    (plugin / ".claude-plugin" / "marketplace.json").unlink()
    shutil.copytree(REPO / "hooks", plugin / "hooks")
    manifest = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    manifest["plugins"][0]["source"] = "./plugins/dexai-memory"
    (market / ".claude-plugin").mkdir(parents=True)
    (market / ".claude-plugin" / "marketplace.json").write_text(json.dumps(manifest))
    claude_home = tmp_path / "claude-home"
    env = build_env(claude_home, api.base_url, cli_env(home))
    for argv in (["plugin", "marketplace", "add", str(market)], ["plugin", "install", "dexai-memory@dexai-memory"]):
        proc = subprocess.run([str(claude_binary()), *argv], env=env, capture_output=True, text=True, timeout=120,
                              check=False)
        assert proc.returncode == 0, proc.stderr + proc.stdout
    run = runner(tmp_path, api, home)  # no --plugin-dir: the installed plugin runs
    run("What is the deploy password hint?").check()
    assert FACT in text_of(api.message_requests()[-1])


def test_crashing_hook_does_not_stop_the_session(tmp_path: Path, api: FakeMessagesAPI, home: Path) -> None:
    (home / "memory.db").write_bytes(b"definitely not sqlite " * 200)
    for suffix in ("-wal", "-shm"):
        (home / f"memory.db{suffix}").unlink(missing_ok=True)
    run = runner(tmp_path, api, home, plugin_dirs=[REPO])
    assert run("What is the deploy password hint?").check().text == "OK."
    run.resume("/compact").check()
    assert run.resume("Still there?").check().text == "OK."
    # no daemon can start on that store: every hook answered a no-op and kept its event for later
    assert "no daemon answered" in (home / "hooks.log").read_text()
    from dexai_memory.capture.queue_file import queue_path, queued_events

    kept = {data["event"] for _row, data in queued_events(queue_path(home))}
    assert {"session-start", "user-prompt-submit"} <= kept, kept


async def test_sdk_callbacks_manual_compaction(tmp_path: Path, api: FakeMessagesAPI, home: Path,
                                               embedder: Embedder) -> None:
    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

    from dexai_memory.hooks.sdk import memory_hooks

    settings = load_settings(home=home)
    (tmp_path / "project").mkdir()
    async with NativeProvider(settings.db_path, embedder=embedder) as provider:
        options = ClaudeAgentOptions(
            hooks=memory_hooks(provider, user_id="alice", settings=settings),  # type: ignore[arg-type]
            env=build_env(tmp_path / "claude-home", api.base_url, cli_env(home)),
            cli_path=str(claude_binary()), cwd=str(tmp_path / "project"), permission_mode="bypassPermissions")
        async with ClaudeSDKClient(options) as client:
            for prompt in ("What is the deploy password hint?", "/compact", "What were we doing?"):
                await client.query(prompt)
                async for _ in client.receive_response():
                    pass
        assert FACT in text_of(api.message_requests()[0])
        assert_fact_survived(first_request_after_compaction(api))
        snapshots = await provider.list(user_id="alice", filters=__import__(
            "dexai_memory.models", fromlist=["SearchFilters"]).SearchFilters(types=(MemoryType.SNAPSHOT,)))
        assert snapshots and "deploy password hint" in snapshots[0].content


def test_dexai_demo_succeeds(tmp_path: Path) -> None:
    # a user's default: the hooks start the daemon (the test suite turns autostart off)
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
           "DEXAI_DAEMON_AUTOSTART": "1"}
    proc = subprocess.run([sys.executable, "-m", "dexai_memory.cli.main", "demo", "--json"], capture_output=True,
                          text=True, env=env, timeout=600, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["ok"] and len(report["survived"]) == len(report["keys"]) == 4 and report["from_summary"] == []
    assert report["stored"], "the demo must show what the hooks stored"
