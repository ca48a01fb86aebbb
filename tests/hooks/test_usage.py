"""Usage tracking (issue 14): injected memories the reply used are counted as citations (once per
session), through the Agent SDK hooks and the daemon's socket operation, and shown by `get`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dexai_memory.cli.main import cli
from dexai_memory.config import Settings, load_settings
from dexai_memory.daemon.actions import HookActions
from dexai_memory.hooks.sdk import MemoryHooks
from dexai_memory.lifecycle.usage import used_in
from dexai_memory.models import Memory, MemoryType
from dexai_memory.providers.native import NativeProvider

U = "alice"


@pytest.mark.parametrize(("memory", "reply", "used"), [
    ("The staging database password hint is KIWI-9", "The hint for staging is KIWI-9, per the database notes.", True),
    ("The orders service runs on port 8443", "Point it at port 8443 of the orders service.", True),
    ("The orders service runs on port 8443", "Sure, I will look at the service.", False),
    ("Alice prefers short answers", "Here is a long and detailed answer.", False),
])
def test_used_in(memory: str, reply: str, used: bool) -> None:
    assert used_in(reply, Memory(content=memory, user_id=U)) is used


@pytest.fixture
def settings(isolated_home: Path) -> Settings:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\n")
    return load_settings(home=isolated_home)


@pytest.fixture
async def provider(settings: Settings) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(settings.db_path, embedder=None) as p:
        yield p


async def call(hooks: dict[str, Any], event: str, data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = await hooks[event][0].hooks[0](data, None, {"signal": None})
    return out


async def citations(provider: NativeProvider, memory_id: str, want: int) -> int:
    for _ in range(200):  # the SDK hook counts in the background, after the reply
        count = (await provider.get(memory_id, user_id=U)).citation_count
        if count >= want:
            return count
        await asyncio.sleep(0.01)
    return (await provider.get(memory_id, user_id=U)).citation_count


async def test_sdk_hooks_count_a_citation_once_per_session(provider: NativeProvider, settings: Settings,
                                                           tmp_path: Path) -> None:
    hint = await provider.add(Memory(content="The staging database password hint is KIWI-9", user_id=U,
                                     importance=8))
    other = await provider.add(Memory(content="Alice prefers short answers", user_id=U,
                                      type=MemoryType.PREFERENCE, importance=8))
    sdk = MemoryHooks(provider, user_id=U, settings=settings)  # a daemon on the provider, in this process
    try:
        hooks = sdk.as_dict()
        base = {"session_id": "s1", "cwd": str(tmp_path)}
        start = await call(hooks, "SessionStart", {**base, "source": "startup"})
        assert "KIWI-9" in json.dumps(start)
        await call(hooks, "Stop", {**base, "last_assistant_message": "The staging hint is KIWI-9 (database password)."})
        assert await citations(provider, hint.id, 1) == 1
        await call(hooks, "Stop", {**base, "last_assistant_message": "Again: KIWI-9 is the staging database hint."})
        await asyncio.sleep(0.1)
        assert (await provider.get(hint.id, user_id=U)).citation_count == 1  # once per session
        assert (await provider.get(other.id, user_id=U)).citation_count == 0  # injected, ignored
    finally:
        await sdk.aclose()


async def test_hook_events_over_the_daemon_socket_count_citations(provider: NativeProvider,
                                                                  settings: Settings) -> None:
    """The command hook's path: SessionStart and Stop as ``hook.event`` requests on a running
    daemon's socket; the reply's citation of an injected memory is counted."""
    from dexai_memory.daemon.ipc import ipc_request
    from tests.hook_daemon import event, running_daemon

    hint = await provider.add(Memory(content="The orders service runs on port 8443", user_id=U, importance=8))
    async with running_daemon(settings, provider, serve_socket=True):
        for name, payload in (("session-start", {"session_id": "s9", "source": "startup"}),
                              ("stop", {"session_id": "s9", "last_assistant_message":
                                        "Use port 8443 of the orders service."})):
            request = {"op": "hook.event", **event(name, payload, user=U).to_json()}
            reply = await asyncio.to_thread(ipc_request, settings.socket_path, request, 30.0)
            assert reply is not None and reply["ok"], reply
            if name == "session-start":
                assert "port 8443" in reply["answer"]["hookSpecificOutput"]["additionalContext"]
        assert await citations(provider, hint.id, 1) == 1


def test_get_shows_the_counts(settings: Settings) -> None:
    async def go() -> tuple[str, str]:
        async with NativeProvider(settings.db_path, embedder=None) as p:
            m = await p.add(Memory(content="The orders service runs on port 8443", user_id=U))
            other = await p.add(Memory(content="The billing service runs on port 9090", user_id=U))
            await p.record_retrieval([m.id, other.id], user_id=U)
            await HookActions(settings, p).record_usage(user_id=U, session_id="s1", injected=[m.id, other.id],
                                                        shown=[m.id, other.id],
                                                        reply="It listens on port 8443 (orders service).")
            return m.id, other.id

    used, ignored = asyncio.run(go())
    shown = CliRunner().invoke(cli, ["memory", "get", used, "--user", U], catch_exceptions=False).output
    assert "retrieval_count: 1" in shown and "citation_count: 1" in shown and "ignore_count" not in shown  # 0: hidden
    shown = CliRunner().invoke(cli, ["memory", "get", ignored, "--user", U], catch_exceptions=False).output
    assert "citation_count" not in shown and "ignore_count: 1" in shown
