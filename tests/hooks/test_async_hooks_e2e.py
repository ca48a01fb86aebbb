"""Issue 15: the plugin's async hooks through the real Claude Code CLI (plugin as installed, fake
Messages API, no API key).

PostToolUse of most tools runs with ``"async": true`` (nobody waits for it); the file tools and
``git checkout``/``git switch`` keep a synchronous PostToolUse, whose answer the very next
request carries. Stop stays synchronous in the plugin: measured with 2.1.330, an async Stop
makes every ``claude -p`` wait ~1.5 s more at its exit. ``claude -p`` sends SIGTERM to an async
hook ~10 ms after starting it, as it finishes; the fact said in the last turn of a ``-p``
session is stored either way, shown here with the plugin as shipped and with a copy of it whose
Stop is async (the launcher ignores that SIGTERM, and SessionEnd queues a turn whose Stop did
not finish)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from dexai_memory.capture.queue import ExtractionQueue
from dexai_memory.config import load_settings
from dexai_memory.demo.fakeapi import FakeMessagesAPI, ToolUse, text_of
from dexai_memory.providers.native import NativeProvider

from .test_installed_e2e import (  # noqa: F401 - mem_home is a fixture
    REPO,
    drained,
    mem_home,
    memory_text,
    replayed_by_a_later_daemon,
    runner,
    users_daemon,
)
from .test_prefetch_e2e import tool_session

pytestmark = pytest.mark.e2e

FIRST = "Let's plan the next release together."
FACT = "The codename of the next release is COPPER-FINCH and Priya Raman manages it."
BRANCH_FACT = "We decided the feature/ledger branch must never be merged before the finance audit."


def plugin_hooks() -> dict[str, list[dict[str, object]]]:
    return json.loads((REPO / "hooks" / "hooks.json").read_text())["hooks"]  # type: ignore[no-any-return]


def stored(home: Path) -> list[str]:
    async def read() -> list[str]:
        async with NativeProvider(load_settings(home=home).db_path, embedder=None) as provider:
            return [m.content for m in await provider.list(user_id="dana")]

    return asyncio.run(read())


def async_stop_plugin(dest: Path) -> Path:
    """A copy of the plugin (its manifest and hooks; the package comes from this environment)
    whose Stop hook is async."""
    for part in (".claude-plugin", "hooks", "commands"):
        shutil.copytree(REPO / part, dest / part)
    shutil.copy2(REPO / ".mcp.json", dest / ".mcp.json")
    hooks = json.loads((dest / "hooks" / "hooks.json").read_text())
    for group in hooks["hooks"]["Stop"]:
        for hook in group["hooks"]:
            hook["async"] = True
            hook["command"] += " --async"
    (dest / "hooks" / "hooks.json").write_text(json.dumps(hooks))
    return dest


def test_capture_of_most_tools_is_async_and_the_rest_synchronous() -> None:
    hooks = plugin_hooks()
    for event in ("UserPromptSubmit", "SessionStart", "PreCompact", "PostCompact", "SessionEnd", "Stop",
                  "PostToolUseFailure"):
        assert not any(h.get("async") for g in hooks[event] for h in g["hooks"]), event  # type: ignore[union-attr]
    sync = [g for g in hooks["PostToolUse"] if not any(h.get("async") for h in g["hooks"])]  # type: ignore[union-attr]
    assert {"Read", "Edit", "Write", "MultiEdit", "NotebookEdit"} <= set(str(sync[0]["matcher"]).split("|"))


@pytest.mark.parametrize("stop", ["sync", "async"], ids=["plugin", "async-stop"])
@pytest.mark.parametrize("autostart", [True, False], ids=["daemon-autostarted", "no-daemon-then-replayed"])
def test_the_fact_said_in_the_last_turn_of_a_print_session_is_stored(
        tmp_path: Path, mem_home: Path, autostart: bool, stop: str) -> None:  # noqa: F811
    with FakeMessagesAPI() as api:
        run = runner(tmp_path, api, mem_home, autostart=autostart)
        if stop == "async":
            run.plugin_dirs = [async_stop_plugin(tmp_path / "plugin")]
        run(FIRST).check()
        run.resume(FACT).check()  # the last turn: an async Stop gets SIGTERM as `claude -p` exits
    if autostart:
        drained(mem_home, 60)
    else:  # the events waited in queue.db: the daemon the user starts replays them
        replayed_by_a_later_daemon(mem_home)
    contents = stored(mem_home)
    assert any("COPPER-FINCH" in c for c in contents), contents
    assert len(contents) == len(set(contents)), f"stored twice: {contents}"
    with ExtractionQueue.from_settings(load_settings(home=mem_home)) as queue:
        assert queue.pending_count() == 0


def test_git_checkout_brings_what_is_known_about_the_branch_on_the_next_request(
        tmp_path: Path, mem_home: Path) -> None:  # noqa: F811
    """``git checkout`` runs through the synchronous ``if`` entry: its prefetch is in the request
    right after the tool; the async entry, which also captures it, adds no second copy."""
    project = tmp_path / "project"
    project.mkdir(parents=True)
    subprocess.run("git init -q -b main . && git commit -q --allow-empty -m init && git branch feature/ledger",
                   shell=True, cwd=project, check=True,
                   env={"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
                        "GIT_COMMITTER_EMAIL": "a@b", "PATH": "/usr/bin:/bin"})
    mem_home.mkdir(parents=True, exist_ok=True)
    (mem_home / "memory.yaml").write_text(  # the block brings neither facts nor the last session's snapshot
        "persistent_context:\n  enabled: false\nl1_block:\n  session_tokens: 0\n")
    prompt = "Switch to the branch we talked about."
    users_daemon(mem_home)  # autostart off: the user runs the daemon
    with FakeMessagesAPI() as api:
        run = runner(tmp_path, api, mem_home, autostart=False)
        run(BRANCH_FACT).check()
        drained(mem_home)
        _, after = tool_session(run, api, prompt, ToolUse("Bash", {"command": "git checkout feature/ledger"}), "Done.")
    remembered = memory_text(text_of(after))
    assert "finance audit" in remembered, remembered
    assert text_of(after).count("finance audit") == 1
