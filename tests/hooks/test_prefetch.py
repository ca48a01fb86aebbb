"""The file-aware prefetch on PostToolUse: what is known about the file a tool read or edited,
the command that failed or the branch switched to, as the plugin's command hooks get it from a
real daemon (launcher processes over its socket) and as the Agent SDK callbacks get it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from dexai_memory.capture.episodes import build_episode
from dexai_memory.config import load_settings
from dexai_memory.daemon.core import MemoryDaemon
from dexai_memory.daemon.prefetch_items import branch_of, items_for, prefetch_file
from dexai_memory.daemon.session_state import load_session, remember_injected
from dexai_memory.embeddings import Embedder
from dexai_memory.models import Memory
from dexai_memory.providers.native import NativeProvider
from dexai_memory.text.tokens import count_tokens
from tests.hook_daemon import launch, running_daemon

from .test_hook_runtime import FORBIDDEN

CWD = "/home/alice/shop"
DECISION = "We decided src/billing/invoice.py must round with Decimal, never float"
VPN = "The nightly export dies with ConnectionResetError when the VPN is down: reconnect the VPN and rerun it"
BRANCH = "Branch feature/csv-export waits for the finance team's schema review before merging"
OTHER_PROJECT = "In the other repo src/billing/invoice.py is generated code"
THIS_PROJECT = "src/billing/invoice.py is imported by the nightly export"
UNRELATED = ("Alice prefers tabs over spaces", "The deploy password hint is PINEAPPLE-42",
             "Invoices are emailed to customers on the first of the month")


def _episode_memory() -> Memory:
    tid = "toolu_1"
    entries: list[dict[str, Any]] = [
        {"type": "user", "uuid": "a", "message": {"role": "user", "content": "make the frontend tests pass"}},
        {"type": "assistant", "uuid": "b", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": "npm test"}}]}},
        {"type": "user", "uuid": "c", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tid, "is_error": True,
             "content": "TypeError: Cannot read properties of undefined (reading 'cartTotal')"}]}},
        {"type": "assistant", "uuid": "d", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_2", "name": "Edit",
             "input": {"file_path": "web/cart.ts", "old_string": "a", "new_string": "b"}},
            {"type": "tool_use", "id": "toolu_3", "name": "Bash", "input": {"command": "npm test"}}]}},
        {"type": "user", "uuid": "e", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_3", "content": "all passed"}]}},
    ]
    episode = build_episode(entries, "old-session")
    assert episode is not None
    return episode.memory("alice")


@pytest.fixture
async def store(isolated_home: Path, embedder: Embedder) -> AsyncIterator[NativeProvider]:
    isolated_home.mkdir(parents=True, exist_ok=True)
    async with NativeProvider(isolated_home / "memory.db", embedder=embedder) as p:
        for text in (DECISION, VPN, BRANCH, *UNRELATED):
            await p.add(Memory(content=text, user_id="alice", importance=6))
        await p.add(Memory(content=DECISION + " (bob's copy)", user_id="bob"))
        await p.add(Memory(content=OTHER_PROJECT, user_id="alice", importance=6, project="/home/alice/other-repo"))
        await p.add(Memory(content=THIS_PROJECT, user_id="alice", importance=6, project=CWD))
        await p.add(_episode_memory())
        yield p


@pytest.fixture
async def daemon(store: NativeProvider, isolated_home: Path) -> AsyncIterator[MemoryDaemon]:
    async with running_daemon(load_settings(home=isolated_home), store, serve_socket=True) as d:
        yield d


async def post(daemon: MemoryDaemon, tool: str, args: dict[str, Any], *, session: str = "s1", response: Any = "ok",
         failure: str | None = None, **env: str) -> tuple[str, str]:
    payload: dict[str, Any] = {"session_id": session, "cwd": CWD, "tool_name": tool, "tool_input": args,
                               "hook_event_name": "PostToolUseFailure" if failure is not None else "PostToolUse",
                               "tool_use_id": f"toolu_{tool}_{len(json.dumps(args))}"}
    if failure is not None:
        payload["error"] = failure
    else:
        payload["tool_response"] = response
    proc = await launch("post-tool-use", payload, daemon.settings.home, **env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    if not out:
        return "", ""
    return out["hookSpecificOutput"]["hookEventName"], out["hookSpecificOutput"]["additionalContext"]


async def test_reading_a_file_brings_what_was_decided_about_it_once_per_session(daemon: MemoryDaemon) -> None:
    event, text = await post(daemon, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"})
    assert event == "PostToolUse" and DECISION in text and text.startswith("<dexai-memory>")
    assert "bob" not in text and not any(u in text for u in UNRELATED)
    assert THIS_PROJECT in text and OTHER_PROJECT not in text  # another repository's file of that name is another file
    assert count_tokens(text) <= daemon.settings.hooks.prefetch_tokens
    # the same file again (read or edited): nothing repeated
    assert (await post(daemon, "Edit", {"file_path": f"{CWD}/src/billing/invoice.py"}))[1] == ""
    assert (await post(daemon, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"}))[1] == ""
    state = json.loads(prefetch_file(daemon.settings, "s1").read_text())
    assert state == {"items": ["file:src/billing/invoice.py"]}
    shown = load_session(daemon.settings, "s1")["injected"]
    assert len(shown) == 2  # auto-recall will not repeat them; Stop counts their citations
    assert prefetch_file(daemon.settings, "s1").stat().st_mode & 0o077 == 0
    # another session gets it again
    assert DECISION in (await post(daemon, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"}, session="s2"))[1]


async def test_what_the_session_already_shows_is_not_repeated(daemon: MemoryDaemon) -> None:
    settings = daemon.settings
    ids = [m.id for m in await daemon.provider.list(user_id="alice") if m.content == DECISION]
    remember_injected(settings, "s1", ids)  # e.g. the L1 block or auto-recall showed it
    text = (await post(daemon, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"}))[1]
    assert THIS_PROJECT in text and DECISION not in text


async def test_a_files_without_memories_and_other_tools_add_nothing(daemon: MemoryDaemon) -> None:
    assert await post(daemon, "Read", {"file_path": f"{CWD}/src/shipping/label.py"}) == ("", "")
    assert await post(daemon, "Glob", {"pattern": "**/*.py"}) == ("", "")
    assert await post(daemon, "Bash", {"command": "ls -la"}, response={"stdout": "x", "stderr": ""}) == ("", "")


async def test_budget_and_off_switch(store: NativeProvider, isolated_home: Path) -> None:
    (isolated_home / "memory.yaml").write_text("hooks:\n  prefetch_tokens: 0\n")
    async with running_daemon(load_settings(home=isolated_home), store, serve_socket=True) as daemon:
        assert await post(daemon, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"}) == ("", "")
    (isolated_home / "memory.yaml").write_text("hooks:\n  prefetch_tokens: 62\n")
    async with running_daemon(load_settings(home=isolated_home), store, serve_socket=True) as daemon:
        event, text = await post(daemon, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"}, session="s3")
    assert event == "PostToolUse" and 0 < count_tokens(text) <= 62
    assert text.count("\n- ") == 1 and DECISION not in text  # one line fits (cut when it must), not two


async def test_a_failing_command_brings_the_known_fix(daemon: MemoryDaemon) -> None:
    error = ("Traceback (most recent call last):\n  File \"export.py\", line 3, in <module>\n"
             "ConnectionResetError: [Errno 104] Connection reset by peer")
    event, text = await post(daemon, "Bash", {"command": "python export.py"}, failure=error)
    assert event == "PostToolUseFailure" and VPN in text
    # an error an earlier session fixed: its episode (errors_fixed) comes back
    event, text = await post(daemon, "Bash", {"command": "npm test"},
                       failure="TypeError: Cannot read properties of undefined (reading 'cartTotal')")
    assert event == "PostToolUseFailure" and "Earlier session" in text and "cart.ts" in text
    # a PostToolUse result with a non-zero exit code counts as a failure too
    assert (await post(daemon, "Bash", {"command": "python export.py"}, session="s4",
                response={"stdout": "", "stderr": "ConnectionResetError: reset", "exitCode": 1}))[1].count("VPN") >= 1


async def test_a_branch_switch_brings_what_is_known_about_the_branch(daemon: MemoryDaemon) -> None:
    event, text = await post(daemon, "Bash", {"command": "git checkout feature/csv-export"},
                       response={"stdout": "", "stderr": "Switched to branch 'feature/csv-export'"})
    assert event == "PostToolUse" and BRANCH in text
    assert branch_of("git switch -c fix/x") == "fix/x" and branch_of("git checkout -- a.py") is None
    assert branch_of("cd repo && git checkout main") == "main"
    assert items_for({"tool_name": "Bash", "tool_input": {"command": "git checkout main"}}) == []


async def test_hook_output_stays_valid_when_its_state_is_garbage(daemon: MemoryDaemon) -> None:
    prefetch_file(daemon.settings, "s9").parent.mkdir(parents=True, exist_ok=True)
    prefetch_file(daemon.settings, "s9").write_text("{not json")
    assert await post(daemon, "Read", {"file_path": f"{CWD}/x.py"}, session="s9") == ("", "")
    assert await post(daemon, "Read", "not an object", session="s9") == ("", "")  # type: ignore[arg-type]
    event, text = await post(daemon, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"}, session="s9")
    assert event == "PostToolUse" and DECISION in text


async def test_the_prefetch_path_imports_no_heavy_module(daemon: MemoryDaemon) -> None:
    """No embedder, numpy or sqlean in the hook process on PostToolUse (the Python client): the
    daemon looks the items up and answers."""
    code = (
        "import io, json, sys\n"
        "from dexai_memory.hooks.client import run\n"
        f"for p in [{{'tool_name': 'Read', 'tool_input': {{'file_path': '{CWD}/src/billing/invoice.py'}}}},"
        " {'tool_name': 'Bash', 'tool_input': {'command': 'python x.py'}, 'hook_event_name': 'PostToolUseFailure',"
        "  'error': 'ConnectionResetError: reset'},"
        " {'tool_name': 'Bash', 'tool_input': {'command': 'git checkout feature/csv-export'}, 'tool_response': {}}]:\n"
        f"    out = io.StringIO(); run('post-tool-use', io.StringIO(json.dumps({{**p, 'session_id': 'x', 'cwd': '{CWD}'}})), out)\n"
        "    assert 'additionalContext' in out.getvalue(), out.getvalue()\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})))\n"
    )
    env = {**os.environ, "DEXAI_MEMORY_HOME": str(daemon.settings.home), "DEXAI_MEMORY_USER": "alice"}
    proc = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", code], capture_output=True, text=True,
                                   timeout=60, check=False, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


async def test_agent_sdk_hooks_prefetch_in_process(store: NativeProvider, isolated_home: Path) -> None:
    from dexai_memory.hooks.sdk import MemoryHooks

    sdk = MemoryHooks(store, user_id="alice", settings=load_settings(home=isolated_home))
    try:
        hooks = sdk.as_dict()
        read = {"session_id": "sdk1", "cwd": CWD, "tool_name": "Read", "hook_event_name": "PostToolUse",
                "tool_input": {"file_path": f"{CWD}/src/billing/invoice.py"}, "tool_response": "x"}
        out = await hooks["PostToolUse"][0].hooks[0](read, "t1", None)
        assert DECISION in out["hookSpecificOutput"]["additionalContext"]
        failed = {"session_id": "sdk1", "cwd": CWD, "tool_name": "Bash", "hook_event_name": "PostToolUseFailure",
                  "tool_input": {"command": "python export.py"}, "error": "ConnectionResetError: reset by peer"}
        out = await hooks["PostToolUseFailure"][0].hooks[0](failed, "t2", None)
        assert out["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"
        assert VPN in out["hookSpecificOutput"]["additionalContext"]
    finally:
        await sdk.aclose()


async def test_after_a_compaction_the_file_is_looked_up_again(daemon: MemoryDaemon) -> None:
    assert DECISION in (await post(daemon, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"}, session="c1"))[1]
    assert (await launch("session-end", {"session_id": "c1", "cwd": CWD}, daemon.settings.home)).returncode == 0
    # a resumed session still shows what was prefetched: not repeated
    assert (await post(daemon, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"}, session="c1"))[1] == ""
    # the compaction summary replaced it: the next read brings again what the re-injected block lacks
    proc = await launch("session-start", {"session_id": "c1", "source": "compact", "cwd": CWD}, daemon.settings.home)
    assert proc.returncode == 0
    settings = daemon.settings
    assert not prefetch_file(settings, "c1").exists()
    text = (await post(daemon, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"}, session="c1"))[1]
    reinjected = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    for memory in (DECISION, THIS_PROJECT):
        assert (memory in reinjected) != (memory in text), memory  # shown once after the compaction
    assert json.loads(prefetch_file(settings, "c1").read_text())["items"] == ["file:src/billing/invoice.py"]  # again
