"""The command hooks as real processes: the plugin's launcher (``hooks/dexai-hook``), answered by
a real daemon over its socket (``curl``), and the Python client when no daemon answers."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dexai_memory.config import load_settings
from dexai_memory.daemon.core import MemoryDaemon
from dexai_memory.daemon.executor import STARTED
from dexai_memory.daemon.session_state import read_marker, remember_injected, write_marker
from dexai_memory.embeddings import Embedder
from dexai_memory.models import Memory, MemoryType, SearchFilters
from dexai_memory.providers.native import NativeProvider
from tests.hook_daemon import (
    answer_of,
    launch,
    launch_sync,
    queued_events,
    queued_turns,
    running_daemon,
    write_transcript,
)

FORBIDDEN = ("anthropic", "claude_agent_sdk", "numpy", "onnxruntime", "spacy", "aiosqlite", "sqlean")


async def seed(provider: NativeProvider) -> None:
    await provider.add(Memory(content="The deploy password hint is PINEAPPLE-42", user_id="alice", importance=8))
    await provider.add(Memory(content="Alice prefers tabs over spaces", user_id="alice", type=MemoryType.PREFERENCE,
                              importance=8))
    await provider.add(Memory(content="Bob's deploy hint is MANGO-7", user_id="bob"))


@pytest.fixture
async def provider(isolated_home: Path, embedder: Embedder) -> AsyncIterator[NativeProvider]:
    isolated_home.mkdir(parents=True, exist_ok=True)
    async with NativeProvider(isolated_home / "memory.db", embedder=embedder) as p:
        await seed(p)
        yield p


@pytest.fixture
async def daemon(provider: NativeProvider, isolated_home: Path) -> AsyncIterator[MemoryDaemon]:
    async with running_daemon(load_settings(home=isolated_home), provider, serve_socket=True) as d:
        yield d


async def test_user_prompt_submit_recalls_once_per_session(daemon: MemoryDaemon, tmp_path: Path) -> None:
    home = daemon.settings.home
    # a session whose start block was injected (with nothing in it): what follows is recall alone
    remember_injected(daemon.settings, "s1", [], extra={STARTED: True})
    payload = {"session_id": "s1", "prompt": "what is my deploy password hint?", "cwd": str(tmp_path)}
    text = answer_of(await launch("user-prompt-submit", payload, home), "UserPromptSubmit")
    assert "PINEAPPLE-42" in text and "MANGO" not in text
    assert text.startswith("<dexai-memory>") and len(text) < 10_000
    assert daemon.ipc.requests >= 1
    hits = [m for m in await daemon.provider.list(user_id="alice") if "PINEAPPLE" in m.content]
    for _ in range(100):  # counted in the background, after the answer
        if (await daemon.provider.get(hits[0].id, user_id="alice")).retrieval_count:
            break
        await asyncio.sleep(0.02)
    assert (await daemon.provider.get(hits[0].id, user_id="alice")).retrieval_count == 1
    # already injected in this session: not repeated
    assert answer_of(await launch("user-prompt-submit", payload, home), "UserPromptSubmit") == ""


async def test_irrelevant_prompt_injects_nothing(daemon: MemoryDaemon, tmp_path: Path) -> None:
    remember_injected(daemon.settings, "s1", [], extra={STARTED: True})  # its start block is in
    payload = {"session_id": "s1", "prompt": "rename variable x to y in utils", "cwd": str(tmp_path)}
    assert answer_of(await launch("user-prompt-submit", payload, daemon.settings.home), "UserPromptSubmit") == ""


async def test_session_start_injects_profile(daemon: MemoryDaemon, tmp_path: Path) -> None:
    proc = await launch("session-start", {"session_id": "s1", "source": "startup", "cwd": str(tmp_path)},
                        daemon.settings.home)
    text = answer_of(proc, "SessionStart")
    assert "Persistent context:" in text and "Alice prefers tabs over spaces" in text


async def test_the_first_prompt_brings_the_block_no_session_start_delivered(daemon: MemoryDaemon,
                                                                              tmp_path: Path) -> None:
    """A session whose SessionStart answer never reached the model (queued at a cold start and
    replayed, timed out, or no SessionStart hook): its block comes with the first prompt, once,
    ahead of recall; after a SessionStart that answered, the first prompt does not repeat it."""
    home = daemon.settings.home
    start = {"session_id": "s-async", "source": "startup", "cwd": str(tmp_path)}
    prompt = {"session_id": "s-async", "prompt": "what is my deploy password hint?", "cwd": str(tmp_path)}
    first = answer_of(await launch("user-prompt-submit", prompt, home), "UserPromptSubmit")
    assert "Persistent context:" in first and "Alice prefers tabs over spaces" in first
    assert first.index("Alice prefers tabs") < first.index("PINEAPPLE-42")  # the block, then recall
    assert first.count("Alice prefers tabs over spaces") == 1  # recall does not repeat the block
    again = {**prompt, "prompt": "and which indentation do I prefer?"}
    assert "Persistent context:" not in answer_of(await launch("user-prompt-submit", again, home), "UserPromptSubmit")

    synced = {**start, "session_id": "s-sync"}
    assert "Alice prefers tabs" in answer_of(await launch("session-start", synced, home), "SessionStart")
    after = answer_of(await launch("user-prompt-submit", {**prompt, "session_id": "s-sync"}, home), "UserPromptSubmit")
    assert "Persistent context:" not in after and "Alice prefers tabs" not in after


async def test_pre_compact_then_session_start_compact(daemon: MemoryDaemon, tmp_path: Path) -> None:
    home, settings = daemon.settings.home, daemon.settings
    transcript = write_transcript(tmp_path / "t.jsonl", [("user", "what is my deploy password hint?"),
                                                         ("assistant", "It is in your notes.")])
    pre = await launch("pre-compact", {"session_id": "s2", "trigger": "manual", "transcript_path": str(transcript),
                                       "cwd": str(tmp_path)}, home)
    assert pre.returncode == 0 and "Preserve:" in pre.stdout  # plain-text instructions, not JSON
    marker = read_marker(settings, "s2")
    assert marker and "deploy password hint" in marker["snapshot"]
    backups = list((home / "transcripts").glob("s2-*-manual.jsonl"))
    assert len(backups) == 1 and backups[0].read_text() == transcript.read_text()
    snapshot = await daemon.provider.get("snapshot_s2", user_id="alice")
    assert snapshot.type is MemoryType.SNAPSHOT and "deploy password hint" in snapshot.content
    archived = await daemon.provider.list(user_id="alice", filters=SearchFilters(types=(MemoryType.TRANSCRIPT,)))
    assert archived and archived[0].metadata["path"].endswith("-manual.jsonl")
    proc = await launch("session-start", {"session_id": "s2", "source": "compact", "cwd": str(tmp_path)}, home)
    text = answer_of(proc, "SessionStart")
    assert "PINEAPPLE-42" in text and "Session state:" in text and "Alice prefers tabs" in text
    assert read_marker(settings, "s2") is None


async def test_user_prompt_submit_reinjects_when_marker_left(daemon: MemoryDaemon, tmp_path: Path) -> None:
    settings = daemon.settings
    write_marker(settings, "s3", {"trigger": "auto", "snapshot": "Current task: ship the release",
                                  "last_prompt": "deploy password hint"})
    proc = await launch("user-prompt-submit", {"session_id": "s3", "prompt": "ok", "cwd": str(tmp_path)},
                        settings.home)
    text = answer_of(proc, "UserPromptSubmit")
    assert "Current task: ship the release" in text and "Persistent context:" in text
    assert read_marker(settings, "s3") is None


async def test_stop_enqueues_gated_turns(daemon: MemoryDaemon, tmp_path: Path) -> None:
    home = daemon.settings.home
    base = {"session_id": "s4", "cwd": str(tmp_path)}
    await launch("user-prompt-submit", {**base, "prompt": "I prefer dark roast coffee, remember that",
                                        "prompt_id": "p1"}, home)
    proc = await launch("stop", {**base, "last_assistant_message": "ok"}, home, "--async")
    assert proc.returncode == 0 and json.loads(proc.stdout) == {}
    tool = await launch("post-tool-use", {**base, "tool_name": "Bash", "tool_use_id": "t1",
                                          "tool_response": {"stdout": "ls: nothing"}}, home)
    assert tool.returncode == 0
    # "ok" and the bare ls output do not pass the gate
    assert queued_turns(home) == {"s4:user:p1": "I prefer dark roast coffee, remember that"}


@pytest.mark.parametrize("case", ["bad-stdin", "unknown-event", "not-an-object"])
async def test_a_hook_the_daemon_cannot_use_answers_a_noop(daemon: MemoryDaemon, case: str) -> None:
    event, stdin = "user-prompt-submit", json.dumps({"session_id": "s5", "prompt": "deploy password hint"})
    if case == "unknown-event":
        event = "no-such-event"
    elif case == "bad-stdin":
        stdin = "{not json"
    else:
        stdin = "[1, 2]"
    proc = await launch(event, stdin, daemon.settings.home)
    assert proc.returncode == 0 and json.loads(proc.stdout) == {}
    assert daemon.running  # and it keeps serving
    again = await launch("session-start", {"session_id": "s5", "source": "startup"}, daemon.settings.home)
    assert "Alice prefers tabs" in answer_of(again, "SessionStart")


def test_a_daemon_that_cannot_start_never_fails_the_hook(isolated_home: Path) -> None:
    """Autostart on, a store the daemon cannot open: the hook waits its budget, keeps the event
    for the next daemon and answers a no-op; the failure is in hooks.log, not on stderr."""
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("hooks:\n  cold_start_wait_seconds: 2\n")
    (isolated_home / "memory.db").write_bytes(b"this is not a database" * 100)
    payload = {"session_id": "s5", "prompt": "deploy password hint"}
    proc = launch_sync("user-prompt-submit", payload, isolated_home, DEXAI_DAEMON_AUTOSTART="1")
    assert proc.returncode == 0 and json.loads(proc.stdout) == {} and proc.stderr == ""
    assert [e["payload"]["prompt"] for e in queued_events(isolated_home)] == ["deploy password hint"]
    assert "queued for it to replay" in (isolated_home / "hooks.log").read_text()


async def test_memory_off_per_project_and_for_subagents(provider: NativeProvider, isolated_home: Path,
                                                        tmp_path: Path) -> None:
    project = tmp_path / "secret-project"
    project.mkdir()
    (isolated_home / "memory.yaml").write_text(f"hooks:\n  disabled_projects: [{project}]\n")
    payload = {"session_id": "s6", "prompt": "deploy password hint", "cwd": str(project)}
    sub = {"session_id": "s7", "prompt": "deploy password hint", "cwd": str(tmp_path), "agent_id": "a1"}
    async with running_daemon(load_settings(home=isolated_home), provider, serve_socket=True):
        assert answer_of(await launch("user-prompt-submit", payload, isolated_home), "UserPromptSubmit") == ""
        assert answer_of(await launch("user-prompt-submit", sub, isolated_home), "UserPromptSubmit") == ""
        # the hook's own environment turns it off too
        other = {"session_id": "s8", "prompt": "deploy password hint", "cwd": str(tmp_path)}
        proc = await launch("user-prompt-submit", other, isolated_home, DEXAI_MEMORY_DISABLED="1")
        assert answer_of(proc, "UserPromptSubmit") == ""
    (isolated_home / "memory.yaml").write_text("hooks:\n  subagents: true\n")
    async with running_daemon(load_settings(home=isolated_home), provider, serve_socket=True):
        proc = await launch("user-prompt-submit", sub, isolated_home)
        assert "PINEAPPLE" in answer_of(proc, "UserPromptSubmit")


_CLIENT_CODE = (
    "import io, json, sys\n"
    "from dexai_memory.hooks.client import run\n"
    "outs = []\n"
    "for ev, p in [('session-start', {'source': 'startup'}), ('user-prompt-submit', {'prompt': 'deploy password hint'}),"
    " ('post-tool-use', {'tool_name': 'Bash', 'tool_response': 'Deployed to staging for Sarah tomorrow'}),"
    " ('stop', {'last_assistant_message': 'I will remember you prefer tea'}), ('post-compact', {})]:\n"
    "    out = io.StringIO()\n"
    "    run(ev, io.StringIO(json.dumps({**p, 'session_id': 'x' + ev})), out)\n"
    "    outs.append(out.getvalue())\n"
    "print(json.dumps([outs, sorted(sys.modules)]))\n"
)


def _client(home: Path) -> tuple[list[str], list[str]]:
    proc = subprocess.run([sys.executable, "-c", _CLIENT_CODE], capture_output=True, text=True, timeout=60,
                          check=True, env={**os.environ, "DEXAI_MEMORY_HOME": str(home), "DEXAI_MEMORY_USER": "alice"})
    outs, modules = json.loads(proc.stdout)
    return outs, modules


async def test_the_python_client_imports_no_heavy_module(daemon: MemoryDaemon) -> None:
    """A daemon answers: the client forwards and imports nothing of the store, the gate or the
    extraction; the answer is the daemon's recall."""
    outs, modules = await asyncio.to_thread(_client, daemon.settings.home)
    assert "Alice prefers tabs" in outs[0] and "PINEAPPLE-42" in outs[1]
    unused = {"dexai_memory.capture.gate", "dexai_memory.capture.admit", "dexai_memory.extraction",
              "dexai_memory.providers", "dexai_memory.recall", "dexai_memory.daemon.core", "asyncio"}
    assert not {m for m in modules if m.split(".")[0] in FORBIDDEN or m in unused}


def test_with_no_daemon_the_client_queues_every_event_and_imports_no_heavy_module(isolated_home: Path) -> None:
    outs, modules = _client(isolated_home)
    assert outs == ["{}\n"] * 5
    assert [e["event"] for e in queued_events(isolated_home)] == [
        "session-start", "user-prompt-submit", "post-tool-use", "stop", "post-compact"]
    assert not [m for m in modules if m.split(".")[0] in FORBIDDEN]


async def test_reflection_hint_reaches_the_model_on_user_prompt_submit(daemon: MemoryDaemon) -> None:
    """A stated preference / correction / "remember this" adds a hint to consider `remember`
    (dexai_memory.triggers), through UserPromptSubmit's additionalContext; not repeated at once."""
    from dexai_memory.triggers import HINT_PREFIX

    home = daemon.settings.home

    async def said(session: str, prompt: str) -> str:
        proc = await launch("user-prompt-submit", {"session_id": session, "prompt": prompt}, home)
        return answer_of(proc, "UserPromptSubmit")

    assert HINT_PREFIX in await said("h1", "From now on, always run make check before every push.")
    assert HINT_PREFIX not in await said("h1", "Open the parser module.")
    assert HINT_PREFIX not in await said("h1", "Always use ruff, never flake8.")  # cool-down
    assert "correct" in (await said("h2", "No, I meant the staging cluster, not production.")).lower()


async def test_our_own_memory_tool_results_are_not_captured_again(daemon: MemoryDaemon) -> None:
    for tool in ("mcp__plugin_dexai-memory_dexai-memory__recall", "mcp__dexai_memory__recall"):
        payload = {"session_id": "own", "tool_name": tool, "tool_use_id": tool,
                   "tool_response": "I live in Lisbon and my dentist is Dr Costa on Friday"}
        assert (await launch("post-tool-use", payload, daemon.settings.home)).returncode == 0
    assert queued_turns(daemon.settings.home) == {}

