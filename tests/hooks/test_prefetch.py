"""File-aware prefetch: PostToolUse (and PostToolUseFailure) add what is known about the file,
failing command or branch a tool touched; run as real hook processes, with and without a daemon."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from dexai_memory.capture.episodes import build_episode
from dexai_memory.config import load_settings
from dexai_memory.daemon.actions import register_ipc_ops
from dexai_memory.daemon.prefetch_items import branch_of, items_for, prefetch_file
from dexai_memory.embeddings import Embedder
from dexai_memory.hooks import state as hook_state
from dexai_memory.models import Memory
from dexai_memory.providers.native import NativeProvider
from dexai_memory.text.tokens import count_tokens

from .test_hook_runtime import FORBIDDEN, _DaemonStub, hook

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
async def home(isolated_home: Path, embedder: Embedder) -> Path:
    async with NativeProvider(isolated_home / "memory.db", embedder=embedder) as p:
        for text in (DECISION, VPN, BRANCH, *UNRELATED):
            await p.add(Memory(content=text, user_id="alice", importance=6))
        await p.add(Memory(content=DECISION + " (bob's copy)", user_id="bob"))
        await p.add(Memory(content=OTHER_PROJECT, user_id="alice", importance=6, project="/home/alice/other-repo"))
        await p.add(Memory(content=THIS_PROJECT, user_id="alice", importance=6, project=CWD))
        await p.add(_episode_memory())
    return isolated_home


def post(home: Path, tool: str, args: dict[str, Any], *, session: str = "s1", response: Any = "ok",
         failure: str | None = None, **env: str) -> tuple[str, str]:
    payload: dict[str, Any] = {"session_id": session, "cwd": CWD, "tool_name": tool, "tool_input": args,
                               "hook_event_name": "PostToolUseFailure" if failure is not None else "PostToolUse",
                               "tool_use_id": f"toolu_{tool}_{len(json.dumps(args))}"}
    if failure is not None:
        payload["error"] = failure
    else:
        payload["tool_response"] = response
    proc = hook("post-tool-use", payload, home, **env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    if not out:
        return "", ""
    return out["hookSpecificOutput"]["hookEventName"], out["hookSpecificOutput"]["additionalContext"]


def test_reading_a_file_brings_what_was_decided_about_it_once_per_session(home: Path) -> None:
    event, text = post(home, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"})
    assert event == "PostToolUse" and DECISION in text and text.startswith("<dexai-memory>")
    assert "bob" not in text and not any(u in text for u in UNRELATED)
    assert THIS_PROJECT in text and OTHER_PROJECT not in text  # another repository's file of that name is another file
    assert count_tokens(text) <= load_settings(home=home).hooks.prefetch_tokens
    # the same file again (read or edited): nothing repeated
    assert post(home, "Edit", {"file_path": f"{CWD}/src/billing/invoice.py"})[1] == ""
    assert post(home, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"})[1] == ""
    state = json.loads(prefetch_file(load_settings(home=home), "s1").read_text())
    assert state == {"items": ["file:src/billing/invoice.py"]}
    shown = hook_state.load_session(load_settings(home=home), "s1")["injected"]
    assert len(shown) == 2  # auto-recall will not repeat them; Stop counts their citations
    assert prefetch_file(load_settings(home=home), "s1").stat().st_mode & 0o077 == 0
    # another session gets it again
    assert DECISION in post(home, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"}, session="s2")[1]


def test_what_the_session_already_shows_is_not_repeated(home: Path) -> None:
    settings = load_settings(home=home)
    ids = [m.id for m in asyncio.run(_all(home)) if m.content == DECISION]
    hook_state.remember_injected(settings, "s1", ids)  # e.g. the L1 block or auto-recall showed it
    text = post(home, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"})[1]
    assert THIS_PROJECT in text and DECISION not in text


async def _all(home: Path) -> list[Memory]:
    async with NativeProvider(home / "memory.db") as p:
        return await p.list(user_id="alice")


def test_a_files_without_memories_and_other_tools_add_nothing(home: Path) -> None:
    assert post(home, "Read", {"file_path": f"{CWD}/src/shipping/label.py"}) == ("", "")
    assert post(home, "Glob", {"pattern": "**/*.py"}) == ("", "")
    assert post(home, "Bash", {"command": "ls -la"}, response={"stdout": "x", "stderr": ""}) == ("", "")


def test_budget_and_off_switch(home: Path) -> None:
    (home / "memory.yaml").write_text("hooks:\n  prefetch_tokens: 0\n")
    assert post(home, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"}) == ("", "")
    (home / "memory.yaml").write_text("hooks:\n  prefetch_tokens: 62\n")
    event, text = post(home, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"}, session="s3")
    assert event == "PostToolUse" and 0 < count_tokens(text) <= 62
    assert text.count("\n- ") == 1 and DECISION not in text  # one line fits (cut when it must), not two


def test_a_failing_command_brings_the_known_fix(home: Path) -> None:
    error = ("Traceback (most recent call last):\n  File \"export.py\", line 3, in <module>\n"
             "ConnectionResetError: [Errno 104] Connection reset by peer")
    event, text = post(home, "Bash", {"command": "python export.py"}, failure=error)
    assert event == "PostToolUseFailure" and VPN in text
    # an error an earlier session fixed: its episode (errors_fixed) comes back
    event, text = post(home, "Bash", {"command": "npm test"},
                       failure="TypeError: Cannot read properties of undefined (reading 'cartTotal')")
    assert event == "PostToolUseFailure" and "Earlier session" in text and "cart.ts" in text
    # a PostToolUse result with a non-zero exit code counts as a failure too
    assert post(home, "Bash", {"command": "python export.py"}, session="s4",
                response={"stdout": "", "stderr": "ConnectionResetError: reset", "exitCode": 1})[1].count("VPN") >= 1


def test_a_branch_switch_brings_what_is_known_about_the_branch(home: Path) -> None:
    event, text = post(home, "Bash", {"command": "git checkout feature/csv-export"},
                       response={"stdout": "", "stderr": "Switched to branch 'feature/csv-export'"})
    assert event == "PostToolUse" and BRANCH in text
    assert branch_of("git switch -c fix/x") == "fix/x" and branch_of("git checkout -- a.py") is None
    assert branch_of("cd repo && git checkout main") == "main"
    assert items_for({"tool_name": "Bash", "tool_input": {"command": "git checkout main"}}) == []


def test_hook_output_stays_valid_when_memory_fails(home: Path) -> None:
    (home / "memory.db").unlink()
    (home / "memory.db").write_bytes(b"this is not a database" * 100)
    assert post(home, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"}) == ("", "")
    prefetch_file(load_settings(home=home), "s9").write_text("{not json")
    assert post(home, "Read", {"file_path": f"{CWD}/x.py"}, session="s9") == ("", "")


@pytest.fixture
async def daemon(home: Path, embedder: Embedder) -> AsyncIterator[_DaemonStub]:
    short = Path(tempfile.mkdtemp(prefix="dx"))  # Unix socket paths must stay short
    for name in ("memory.db", "memory.db-wal", "memory.db-shm"):
        if (home / name).exists():
            shutil.copy2(home / name, short / name)
    settings = load_settings(home=short)
    async with NativeProvider(settings.db_path, embedder=embedder) as provider:
        stub = _DaemonStub(settings, provider)
        register_ipc_ops(stub)
        await stub.ipc.start()
        try:
            yield stub
        finally:
            await stub.ipc.aclose()
    shutil.rmtree(short, ignore_errors=True)


async def test_the_daemon_answers_the_prefetch_when_it_runs(daemon: _DaemonStub) -> None:
    calls: list[dict[str, Any]] = []
    handler = daemon.ipc.handlers["hook.prefetch"]

    async def counted(req: dict[str, Any]) -> dict[str, Any]:
        calls.append(req)
        return await handler(req)

    daemon.ipc.register("hook.prefetch", counted)
    home = daemon.settings.home
    event, text = await asyncio.to_thread(post, home, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"},
                                          DEXAI_MEMORY_HOME=str(home))
    assert event == "PostToolUse" and DECISION in text and len(calls) == 1


def test_the_prefetch_path_imports_no_heavy_module(home: Path) -> None:
    """No embedder, numpy or sqlean on PostToolUse: the prefetch reads with BM25 when no daemon answers."""
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
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "DEXAI_MEMORY_HOME": str(home), "DEXAI_MEMORY_USER": "alice"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


async def test_agent_sdk_hooks_prefetch_in_process(home: Path, embedder: Embedder) -> None:
    from dexai_memory.hooks.sdk import memory_hooks

    async with NativeProvider(home / "memory.db", embedder=embedder) as provider:
        hooks = memory_hooks(provider, user_id="alice", settings=load_settings(home=home))
        read = {"session_id": "sdk1", "cwd": CWD, "tool_name": "Read", "hook_event_name": "PostToolUse",
                "tool_input": {"file_path": f"{CWD}/src/billing/invoice.py"}, "tool_response": "x"}
        out = await hooks["PostToolUse"][0].hooks[0](read, "t1", None)
        assert DECISION in out["hookSpecificOutput"]["additionalContext"]
        failed = {"session_id": "sdk1", "cwd": CWD, "tool_name": "Bash", "hook_event_name": "PostToolUseFailure",
                  "tool_input": {"command": "python export.py"}, "error": "ConnectionResetError: reset by peer"}
        out = await hooks["PostToolUseFailure"][0].hooks[0](failed, "t2", None)
        assert out["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"
        assert VPN in out["hookSpecificOutput"]["additionalContext"]


def test_after_a_compaction_the_file_is_looked_up_again(home: Path) -> None:
    assert DECISION in post(home, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"}, session="c1")[1]
    assert hook("session-end", {"session_id": "c1", "cwd": CWD}, home).returncode == 0
    # a resumed session still shows what was prefetched: not repeated
    assert post(home, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"}, session="c1")[1] == ""
    # the compaction summary replaced it: the next read brings again what the re-injected block lacks
    proc = hook("session-start", {"session_id": "c1", "source": "compact", "cwd": CWD}, home)
    assert proc.returncode == 0
    settings = load_settings(home=home)
    assert not prefetch_file(settings, "c1").exists()
    text = post(home, "Read", {"file_path": f"{CWD}/src/billing/invoice.py"}, session="c1")[1]
    reinjected = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    for memory in (DECISION, THIS_PROJECT):
        assert (memory in reinjected) != (memory in text), memory  # shown once after the compaction
    assert json.loads(prefetch_file(settings, "c1").read_text())["items"] == ["file:src/billing/invoice.py"]  # again
