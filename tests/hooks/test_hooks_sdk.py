"""The Agent SDK callbacks of memory_hooks(), called directly as the SDK calls them."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import HookMatcher

from dexai_memory.config import Settings, load_settings
from dexai_memory.daemon.session_state import read_marker
from dexai_memory.embeddings import Embedder
from dexai_memory.hooks.sdk import MemoryHooks, memory_hooks
from dexai_memory.models import Memory, MemoryType, SearchFilters
from dexai_memory.providers.native import NativeProvider


@pytest.fixture
def settings(isolated_home: Path) -> Settings:
    return load_settings(home=isolated_home)


@pytest.fixture
async def provider(settings: Settings, embedder: Embedder) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(settings.db_path, embedder=embedder) as p:
        await p.add(Memory(content="The staging database password hint is KIWI-9", user_id="alice", importance=8))
        await p.add(Memory(content="Alice prefers short answers", user_id="alice", type=MemoryType.PREFERENCE,
                           importance=8))
        yield p


@pytest.fixture
async def open_hooks() -> AsyncIterator[Callable[..., dict[str, list[HookMatcher]]]]:
    """``memory_hooks`` that stops the daemons it started on a provider at the end of the test."""
    made: list[MemoryHooks] = []

    def make(source: Any, **kw: Any) -> dict[str, list[HookMatcher]]:
        made.append(MemoryHooks(source, **kw))
        return made[-1].as_dict()

    yield make
    for hooks in made:
        await hooks.aclose()


async def call(hooks: dict[str, list[HookMatcher]], event: str, data: dict[str, Any]) -> dict[str, Any]:
    matcher = hooks[event][0]
    return await matcher.hooks[0](data, None, {"signal": None})  # type: ignore[arg-type, typeddict-item]


def context(out: dict[str, Any]) -> str:
    return str(out.get("hookSpecificOutput", {}).get("additionalContext", ""))


def transcript(tmp_path: Path) -> str:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps({"type": r, "message": {"role": r, "content": t}}) for r, t in [
        ("user", "what is the staging database password hint?"), ("assistant", "Looking it up.")]) + "\n")
    return str(path)


def test_hook_events_and_matchers(settings: Settings) -> None:
    hooks = memory_hooks(settings, user_id="alice")
    assert set(hooks) == {"UserPromptSubmit", "SessionStart", "PreCompact", "PostCompact", "PostToolUse",
                          "PostToolUseFailure", "Stop"}
    assert all(isinstance(m, HookMatcher) and m.hooks for ms in hooks.values() for m in ms)


async def test_user_prompt_submit_auto_recall(open_hooks: Callable[..., Any],
        provider: NativeProvider, settings: Settings, tmp_path: Path) -> None:
    hooks = open_hooks(provider, user_id="alice", settings=settings)
    out = await call(hooks, "UserPromptSubmit", {"session_id": "s1", "prompt": "staging database password hint?",
                                                 "cwd": str(tmp_path)})
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "KIWI-9" in context(out)
    again = await call(hooks, "UserPromptSubmit", {"session_id": "s1", "prompt": "staging database password hint?",
                                                   "cwd": str(tmp_path)})
    assert again == {}  # injected already in this session


async def test_compaction_cycle(open_hooks: Callable[..., Any],
        provider: NativeProvider, settings: Settings, tmp_path: Path) -> None:
    hooks = open_hooks(provider, user_id="alice", settings=settings)
    base = {"session_id": "s2", "cwd": str(tmp_path), "transcript_path": transcript(tmp_path)}
    assert await call(hooks, "PreCompact", {**base, "trigger": "manual", "custom_instructions": None}) == {}
    assert read_marker(settings, "s2") is not None
    snap = await provider.get("snapshot_s2", user_id="alice")
    assert "staging database password hint" in snap.content
    archived = await provider.list(user_id="alice", filters=SearchFilters(types=(MemoryType.TRANSCRIPT,)))
    assert len(archived) == 1 and await asyncio.to_thread(os.path.isfile, archived[0].metadata["path"])
    out = await call(hooks, "SessionStart", {**base, "source": "compact"})
    text = context(out)
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "KIWI-9" in text and "Alice prefers short answers" in text and "Session state:" in text
    assert read_marker(settings, "s2") is None
    assert await call(hooks, "PostCompact", {**base, "trigger": "manual"}) == {}


async def test_prompt_after_compaction_reinjects_when_session_start_missed(open_hooks: Callable[..., Any],
        provider: NativeProvider, settings: Settings, tmp_path: Path) -> None:
    hooks = open_hooks(provider, user_id="alice", settings=settings)
    base = {"session_id": "s3", "cwd": str(tmp_path), "transcript_path": transcript(tmp_path)}
    await call(hooks, "PreCompact", {**base, "trigger": "auto"})
    out = await call(hooks, "UserPromptSubmit", {**base, "prompt": "go on"})
    assert "Persistent context:" in context(out) and "Session state:" in context(out)
    assert read_marker(settings, "s3") is None


async def test_stop_queues_the_prompt_and_tool_results_stay_evidence(open_hooks: Callable[..., Any],
        provider: NativeProvider, settings: Settings, tmp_path: Path) -> None:
    hooks = open_hooks(provider, user_id="alice", settings=settings)
    base = {"session_id": "s4", "cwd": str(tmp_path)}
    await call(hooks, "UserPromptSubmit", {**base, "prompt": "Remember that I prefer Fridays for deploys",
                                           "prompt_id": "p9"})
    assert await call(hooks, "Stop", {**base, "last_assistant_message": "Noted!", "stop_hook_active": False}) == {}
    assert await call(hooks, "PostToolUse", {**base, "tool_name": "Read", "tool_use_id": "tu1",
                                             "tool_response": "Meeting with Dr. Smith next Tuesday at 3pm"}) == {}
    rows = sqlite3.connect(settings.home / "queue.db").execute("SELECT user_id, turn_id FROM jobs").fetchall()
    assert rows == [("alice", "s4:user:p9")]  # the reply and the tool result are evidence, not memories


async def test_internal_error_answers_empty(open_hooks: Callable[..., Any], settings: Settings,
                                           embedder: Embedder, tmp_path: Path) -> None:
    never_started = NativeProvider(settings.db_path, embedder=embedder)  # the daemon on it cannot start
    hooks = open_hooks(never_started, user_id="alice", settings=settings)
    base = {"session_id": "s5", "cwd": str(tmp_path)}
    assert await call(hooks, "UserPromptSubmit", {**base, "prompt": "hello"}) == {}
    provider = NativeProvider(settings.db_path, embedder=embedder)
    await provider.start()
    hooks = open_hooks(provider, user_id="alice", settings=settings)
    assert await call(hooks, "SessionStart", {**base, "source": "startup"}) == {}  # its daemon is up
    await provider.aclose()  # from now on every call to the store raises
    assert await call(hooks, "UserPromptSubmit", {**base, "prompt": "the staging database password hint?"}) == {}
    assert await call(hooks, "PreCompact", {**base, "trigger": "auto"}) == {}
    assert read_marker(settings, "s5") is not None  # written before the failing step


async def test_disabled_for_subagents_and_projects(open_hooks: Callable[..., Any],
        provider: NativeProvider, tmp_path: Path, isolated_home: Path) -> None:
    cfg = tmp_path / "m.yaml"
    cfg.write_text(f"hooks:\n  disabled_projects: [{tmp_path / 'private'}]\n")
    settings = load_settings(cfg, home=isolated_home)
    hooks = open_hooks(provider, user_id="alice", settings=settings)
    prompt = "staging database password hint?"
    assert await call(hooks, "UserPromptSubmit", {"session_id": "s6", "prompt": prompt,
                                                  "cwd": str(tmp_path / "private")}) == {}
    assert await call(hooks, "UserPromptSubmit", {"session_id": "s7", "prompt": prompt, "cwd": str(tmp_path),
                                                  "agent_id": "sub-1"}) == {}
    assert "KIWI-9" in context(await call(hooks, "UserPromptSubmit", {"session_id": "s8", "prompt": prompt,
                                                                      "cwd": str(tmp_path)}))


async def test_with_a_running_daemon(settings: Settings, tmp_path: Path) -> None:
    """SDK callbacks on a real MemoryDaemon: recall from its provider, Stop -> queue, PreCompact
    flushes the extraction so the turn's memory exists; the plugin's command hooks and
    ``memory_hooks(settings)`` (the socket) reach the same daemon."""
    from dexai_memory.daemon import MemoryDaemon
    from tests.hook_daemon import answer_of, launch

    daemon = MemoryDaemon(settings, serve_socket=True, schedule=False)
    async with daemon:
        await daemon.provider.add(Memory(content="The staging database password hint is KIWI-9", user_id="alice"))
        hooks = memory_hooks(daemon, user_id="alice")
        base = {"session_id": "d1", "cwd": str(tmp_path)}
        out = await call(hooks, "UserPromptSubmit", {**base, "prompt": "staging database password hint?"})
        assert "KIWI-9" in context(out)
        await call(hooks, "UserPromptSubmit", {**base, "prompt": "I prefer to deploy on Fridays with Sarah",
                                               "prompt_id": "p1"})
        assert await call(hooks, "Stop", {**base, "last_assistant_message": "Noted: Fridays with Sarah."}) == {}
        assert await call(hooks, "PreCompact", {**base, "trigger": "manual"}) == {}
        contents = [m.content for m in await daemon.provider.list(user_id="alice")]
        assert any("Fridays" in c and "Sarah" in c for c in contents)
        proc = await launch("user-prompt-submit", {"session_id": "d2", "prompt": "staging database password hint?"},
                            settings.home)
        assert "KIWI-9" in answer_of(proc, "UserPromptSubmit") and daemon.ipc.requests >= 1
        requests = daemon.ipc.requests
        over_socket = memory_hooks(settings, user_id="alice")
        out = await call(over_socket, "UserPromptSubmit", {"session_id": "d3", "prompt": "staging database hint?"})
        assert "KIWI-9" in context(out) and daemon.ipc.requests > requests


async def test_sdk_turns_carry_their_time_so_tomorrow_becomes_a_dated_commitment(settings: Settings,
                                                                                 tmp_path: Path) -> None:
    """One implementation of the events: the SDK path stamps turns like the command hooks, so a
    relative date resolves and a promise becomes a COMMITMENT (it drifted before)."""
    from dexai_memory.daemon import MemoryDaemon
    from dexai_memory.models import utcnow

    async with MemoryDaemon(settings, schedule=False) as daemon:
        hooks = memory_hooks(daemon, user_id="alice")
        base = {"session_id": "t1", "cwd": str(tmp_path)}
        await call(hooks, "UserPromptSubmit", {**base, "prompt": "I will call Priya about the Obelisk report "
                                                                 "tomorrow.", "prompt_id": "p1"})
        await call(hooks, "Stop", {**base, "last_assistant_message": "Noted."})
        await call(hooks, "PreCompact", {**base, "trigger": "manual"})
        memories = await daemon.provider.list(user_id="alice", filters=SearchFilters(types=(MemoryType.COMMITMENT,)))
    assert memories, "the promise was not stored as a commitment"
    tomorrow = (utcnow().date() + __import__("datetime").timedelta(days=1)).isoformat()
    assert any(tomorrow in json.dumps(m.metadata) or tomorrow in m.content for m in memories), \
        [(m.content, m.metadata) for m in memories]


async def test_provider_mode_extracts_queued_turns_in_process(open_hooks: Callable[..., Any],
        provider: NativeProvider, settings: Settings, tmp_path: Path) -> None:
    """memory_hooks(provider): no daemon process; the MemoryDaemon the first callback starts on
    the provider, in this process, stores the turn (in the background after Stop, and for
    certain at PreCompact)."""
    hooks = open_hooks(provider, user_id="alice", settings=settings)
    base = {"session_id": "pm1", "cwd": str(tmp_path)}
    await call(hooks, "UserPromptSubmit", {**base, "prompt": "I live in Lisbon and my dentist is Dr Costa",
                                           "prompt_id": "p1"})
    await call(hooks, "Stop", {**base, "last_assistant_message": "Noted."})
    assert await call(hooks, "PreCompact", {**base, "trigger": "manual"}) == {}
    contents = [m.content for m in await provider.list(user_id="alice")]
    assert any("Lisbon" in c for c in contents), contents
    rows = sqlite3.connect(settings.home / "queue.db").execute(
        "SELECT COUNT(*) FROM jobs WHERE status = 'pending'").fetchone()
    assert rows[0] == 0
