"""The Agent SDK session store on our data directory: the SDK's own conformance suite, statistics,
a round trip through the real Agent SDK client (bundled CLI, fake Messages API) and the CLI."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dexai_memory.cli.main import cli
from dexai_memory.config import load_settings
from dexai_memory.demo.claude_cli import build_env
from dexai_memory.demo.fakeapi import FakeMessagesAPI, Reply, ToolUse
from dexai_memory.extraction.claude_code import bundled_cli
from dexai_memory.sessions.store import SessionStore

KEY = {"project_key": "proj", "session_id": "s1"}


async def test_the_sdk_conformance_suite(tmp_path: Path) -> None:
    from claude_agent_sdk.testing import run_session_store_conformance

    counter = itertools.count()
    await run_session_store_conformance(lambda: SessionStore(tmp_path / f"sessions-{next(counter)}.db"))


def assistant(msg_id: str, *blocks: dict[str, Any], usage: dict[str, int] | None = None, uuid: str) -> dict[str, Any]:
    return {"type": "assistant", "uuid": uuid, "message": {"id": msg_id, "role": "assistant", "content": list(blocks),
                                                          "usage": usage or {}}}


async def test_tool_statistics_and_tokens_are_counted_once(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    usage = {"input_tokens": 100, "cache_read_input_tokens": 50, "output_tokens": 20}
    batch = [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "Fix the failing test"}},
        # one message written as two entries (thinking, then tool use) carries its usage twice
        assistant("m1", {"type": "text", "text": "Looking."}, usage=usage, uuid="a1"),
        assistant("m1", {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}, usage=usage, uuid="a2"),
        {"type": "user", "uuid": "u2", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": "no such file"}]}},
        assistant("m2", {"type": "tool_use", "id": "t2", "name": "Bash", "input": {}},
                  {"type": "tool_use", "id": "t3", "name": "Read", "input": {}}, usage={"output_tokens": 5}, uuid="a3"),
    ]
    await store.append(KEY, batch)
    await store.append(KEY, batch[-1:])  # the SDK retries a batch: stored and counted once
    loaded = await store.load(KEY)
    assert loaded == batch
    info = store.info("s1")
    assert info is not None
    assert (info.tools.total_calls, dict(info.tools.by_tool), info.tools.failures) == (3, {"Bash": 1, "Read": 2}, 1)
    assert (info.input_tokens, info.output_tokens) == (150, 25)
    assert info.first_prompt == "Fix the failing test" and info.entries == 5
    assert (tmp_path / "sessions.db").stat().st_mode & 0o777 == 0o600


@pytest.mark.skipif(bundled_cli() is None, reason="claude-agent-sdk without its bundled CLI")
async def test_round_trip_through_the_agent_sdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real Agent SDK session mirrors into the store; with the local transcript gone it resumes from it."""
    from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query

    def responder(body: dict[str, Any]) -> Reply | None:
        last = body["messages"][-1]["content"]
        if isinstance(last, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last):
            return Reply(text="The file does not exist.")
        if "codename" in json.dumps(body["messages"][-1]):
            return Reply(text="BLUE-HERON.")
        return Reply(tool_uses=[ToolUse("Read", {"file_path": str(tmp_path / "missing.txt")})])

    claude_home = tmp_path / "claude-home"
    claude_home.mkdir()
    store = SessionStore.open(load_settings())
    with FakeMessagesAPI(responder=responder) as api:
        env = build_env(claude_home, api.base_url, auth="token")
        monkeypatch.setenv("HOME", str(claude_home))  # the SDK mirrors what its CLI writes under the same HOME

        def options(**kw: Any) -> ClaudeAgentOptions:
            return ClaudeAgentOptions(env=env, cwd=str(tmp_path), session_store=store, tools=["Read"],
                                      allowed_tools=["Read"], permission_mode="bypassPermissions", setting_sources=[],
                                      max_turns=4, **kw)

        async def run(prompt: str, **kw: Any) -> ResultMessage:
            result = None
            async for message in query(prompt=prompt, options=options(**kw)):
                if isinstance(message, ResultMessage):
                    result = message
            assert result is not None and not result.is_error, result
            return result

        first = await run("The project codename is BLUE-HERON. Read missing.txt please.")
        sid = first.session_id
        info = store.info(sid)
        assert info is not None and info.entries >= 4
        assert (dict(info.tools.by_tool), info.tools.failures) == ({"Read": 1}, 1)
        assert info.input_tokens > 0 and info.output_tokens > 0
        assert "BLUE-HERON" in (info.first_prompt or "")

        shutil.rmtree(claude_home / ".claude" / "projects")  # the local transcript is gone
        api.clear()
        await run("What is the codename?", resume=sid)
        resumed = api.message_requests()[0].body
        assert "The project codename is BLUE-HERON" in json.dumps(resumed["messages"])  # history from the store
    assert [s.session_id for s in store.sessions()] == [sid]


def test_the_cli_lists_shows_and_deletes(tmp_path: Path) -> None:
    import asyncio

    store = SessionStore.open(load_settings())
    asyncio.run(store.append(KEY, [{"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hello"}},
                                   assistant("m1", {"type": "tool_use", "id": "t1", "name": "Grep", "input": {}},
                                             usage={"input_tokens": 7, "output_tokens": 3}, uuid="a1")]))
    runner = CliRunner()
    listed = json.loads(runner.invoke(cli, ["sessions", "list", "--json"]).stdout)
    assert [(s["session_id"], s["tool_stats"]["by_tool"], s["token_usage"]["total_tokens"]) for s in listed] == \
        [("s1", {"Grep": 1}, 10)]
    shown = runner.invoke(cli, ["sessions", "show", "s1"])
    assert shown.exit_code == 0 and "Grep 1" in shown.stdout and "first prompt: hello" in shown.stdout
    missing = runner.invoke(cli, ["sessions", "show", "nope"])
    assert missing.exit_code == 1 and "no stored session" in missing.stderr
    assert runner.invoke(cli, ["sessions", "delete", "s1"], input="n\n").exit_code == 1  # asked, declined
    deleted = runner.invoke(cli, ["sessions", "delete", "s1", "--yes"])
    assert deleted.exit_code == 0 and "2 entries" in deleted.stdout
    assert asyncio.run(store.load(KEY)) is None and store.sessions() == []


async def test_tasks_follow_the_todo_list_and_subagents_and_finished_ones_are_pruned_after_a_day(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dexai_memory.sessions import store as store_module

    clock = [1_700_000_000_000]
    monkeypatch.setattr(store_module, "_now_ms", lambda: clock[0])
    store = SessionStore(tmp_path / "sessions.db")

    def todos(*items: tuple[str, str], uuid: str) -> dict[str, Any]:
        return assistant(uuid, {"type": "tool_use", "id": f"tw-{uuid}", "name": "TodoWrite", "input": {
            "todos": [{"content": c, "status": s, "activeForm": c} for c, s in items]}}, uuid=uuid)

    await store.append(KEY, [
        todos(("Write the migration", "in_progress"), ("Update the docs", "pending"), ("Drop the old table", "pending"),
              uuid="a1"),
        assistant("m2", {"type": "tool_use", "id": "sub1", "name": "Task",
                         "input": {"description": "Survey the call sites", "prompt": "..."}}, uuid="a2"),
    ])
    info = store.info("s1")
    assert info is not None
    assert {t.description: t.status for t in info.tasks} == {
        "Write the migration": "running", "Update the docs": "pending", "Drop the old table": "pending",
        "Survey the call sites": "running"}
    clock[0] += 60_000
    await store.append(KEY, [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "sub1", "content": "12 call sites"}]}},
        # the list moves on: the migration is done, the docs are running, the table drop was dropped unfinished
        todos(("Write the migration", "completed"), ("Update the docs", "in_progress"), uuid="a3"),
    ])
    info = store.info("s1")
    assert info is not None
    assert {t.description: t.status for t in info.tasks} == {
        "Write the migration": "completed", "Update the docs": "running", "Survey the call sites": "completed"}
    assert info.as_dict()["active_tasks"][0]["description"] == "Write the migration"
    clock[0] += store_module.FINISHED_TASK_TTL_MS - 1_000  # finished under 24 h ago: kept
    await store.append(KEY, [{"type": "user", "uuid": "u2", "message": {"role": "user", "content": "go on"}}])
    assert len(store.info("s1").tasks) == 3  # type: ignore[union-attr]
    clock[0] += 2_000  # a day later: the finished ones are pruned, the running one stays
    await store.append(KEY, [{"type": "user", "uuid": "u3", "message": {"role": "user", "content": "and?"}}])
    info = store.info("s1")
    assert info is not None and [(t.description, t.status) for t in info.tasks] == [("Update the docs", "running")]
