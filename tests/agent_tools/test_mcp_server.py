"""``dexai mcp`` / ``python -m dexai_memory.mcp_server``: the plugin's stdio MCP server, a thin
client of the daemon. Driven as a real subprocess: raw JSON-RPC lines, and the official ``mcp``
client (ClientSession over stdio_client) against a real daemon serving its socket."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from dexai_memory.agent_tools import TOOL_NAMES, TOOL_SPECS, Category
from dexai_memory.agent_tools.specs import CATEGORIES
from dexai_memory.config import Settings, load_settings
from dexai_memory.daemon import MemoryDaemon
from dexai_memory.daemon.ipc import ipc_request
from dexai_memory.embeddings import Embedder
from dexai_memory.errors import MemoryNotFound
from dexai_memory.mcp_server import PROTOCOL_VERSIONS
from dexai_memory.providers.native import NativeProvider
from dexai_memory.recall.ranking import auto_recall
from dexai_memory.supersession.rules import OfflineClassifier
from dexai_memory.version import __version__
from tests.pipeline_fakes import EchoExtractor, JoinSummarizer

U = "alice"
SERVER_MODULE = ["-m", "dexai_memory.mcp_server"]
CLI_MCP = ["-m", "dexai_memory.cli.main", "mcp"]
#: What the stdio server must not load: it would cost every Claude Code session its start.
HEAVY = ("numpy", "onnxruntime", "mcp", "anthropic", "aiosqlite", "sqlean", "pydantic", "jsonschema", "yaml")


def server_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DEXAI_MEMORY_PROJECT", "CLAUDE_CODE_SESSION_ID")}
    return {**env, "DEXAI_MEMORY_HOME": str(home), "DEXAI_MEMORY_USER": U, "DEXAI_DAEMON_AUTOSTART": "0", **extra}


@asynccontextmanager
async def session(home: Path, args: list[str] = SERVER_MODULE, cwd: Path | None = None,
                  **extra: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=args, env=server_env(home, **extra),
                                   cwd=str(cwd) if cwd else None)
    with open(os.devnull, "w") as errlog:  # noqa: ASYNC230 - the server's stderr, opened once
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            yield client


@asynccontextmanager
async def running_daemon(settings: Settings, embedder: Embedder) -> AsyncIterator[MemoryDaemon]:
    """A real daemon serving its socket in this event loop, on a store with the real embedder."""
    settings.home.mkdir(parents=True, exist_ok=True)
    async with NativeProvider(settings.home / "memory.db", embedder=embedder) as provider, \
            MemoryDaemon(settings, provider, extractor=EchoExtractor(), classifier=OfflineClassifier(),
                         summarizer=JoinSummarizer(), serve_socket=True, schedule=False) as daemon:
        yield daemon


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def stored_id(result: Any) -> str:
    """The id a ``remember`` answer names (its one text block: "Remembered as m_... (category):")."""
    assert not result.is_error and len(result.content) == 1, text(result)
    found = re.match(r"(?:Remembered as|Already known as|Updated existing memory|Superseded \S+ with) (m_\w+)",
                     text(result))
    assert found, text(result)
    return found.group(1)


class Raw:
    """The server as a subprocess spoken to in raw JSON-RPC lines."""

    def __init__(self, home: Path, **extra: str) -> None:
        self.proc = subprocess.Popen([sys.executable, *SERVER_MODULE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=server_env(home, **extra))

    def send(self, line: str | bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((line.encode() if isinstance(line, str) else line) + b"\n")
        self.proc.stdin.flush()

    def read(self) -> Any:
        assert self.proc.stdout is not None
        return json.loads(self.proc.stdout.readline())

    def rpc(self, message: Mapping[str, Any]) -> Any:
        self.send(json.dumps(message))
        return self.read()

    def close(self) -> int:
        """End of input: the server's exit code."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=10)
        self.proc.stdout.close()
        return code


def request(msg_id: int, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        out["params"] = dict(params)
    return out


def test_one_definition_of_the_tools() -> None:
    assert [s.name for s in TOOL_SPECS] == list(TOOL_NAMES)
    assert list(CATEGORIES) == [c.value for c in Category]


def test_initialize_and_list_tools_with_no_daemon(isolated_home: Path) -> None:
    raw = Raw(isolated_home)
    started = time.monotonic()
    init = raw.rpc(request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                             "clientInfo": {"name": "test", "version": "1"}}))
    assert time.monotonic() - started < 5
    assert init == {"jsonrpc": "2.0", "id": 1, "result": {
        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
        "serverInfo": {"name": "dexai-memory", "version": __version__}}}
    raw.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))  # no answer
    listed = raw.rpc(request(2, "tools/list"))
    assert listed["id"] == 2 and listed["result"]["tools"] == [s.to_wire() for s in TOOL_SPECS]
    assert raw.rpc(request(3, "ping")) == {"jsonrpc": "2.0", "id": 3, "result": {}}
    newest = raw.rpc(request(4, "initialize", {"protocolVersion": "2099-01-01"}))
    assert newest["result"]["protocolVersion"] == PROTOCOL_VERSIONS[-1]
    assert raw.close() == 0
    assert not isolated_home.exists()  # no store, no socket, nothing written


def test_the_server_loads_nothing_heavy(isolated_home: Path) -> None:
    """Initialize, tools/list and a tool call (no daemon) in a fresh interpreter: which of the heavy
    packages did they import?"""
    script = f"""
import io, json, sys
from dexai_memory.mcp_server import StdioServer
lines = [{{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {{"protocolVersion": "2025-06-18"}}}},
         {{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}},
         {{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {{"name": "recall", "arguments": {{"query": "x"}}}}}}]
out = io.BytesIO()
server = StdioServer(stdin=io.BytesIO(b"".join(json.dumps(m).encode() + b"\\n" for m in lines)), stdout=out)
server.serve()
answers = [json.loads(line) for line in out.getvalue().splitlines()]
assert [a["id"] for a in answers] == [1, 2, 3] and answers[2]["result"]["isError"], answers
print(json.dumps(sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))))
"""
    done = subprocess.run([sys.executable, "-c", script], env=server_env(isolated_home), capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_no_daemon_is_a_quick_tool_error(isolated_home: Path) -> None:
    raw = Raw(isolated_home)
    started = time.monotonic()
    answer = raw.rpc(request(1, "tools/call", {"name": "remember", "arguments": {
        "content": "User prefers pnpm over npm", "category": "preference"}}))
    assert time.monotonic() - started < 5
    assert answer["result"]["isError"] is True
    message = answer["result"]["content"][0]["text"]
    assert message.startswith("Error: memory is unavailable: no memory daemon answers on ")
    assert "autostart is off" in message and "dexai daemon start" in message
    assert raw.close() == 0


def test_malformed_messages(isolated_home: Path) -> None:
    raw = Raw(isolated_home)
    raw.send("this is not json")
    assert raw.read() == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32700, "message": "Parse error: Expecting value: line 1 column 1 (char 0)"}}
    raw.send(b"\xff\xfe{")
    assert raw.read()["error"]["code"] == -32700
    raw.send("")  # blank lines are skipped
    raw.send("42")
    assert raw.read()["error"]["code"] == -32600
    assert raw.rpc({"jsonrpc": "2.0", "id": 7})["error"] == {"code": -32600,
                                                             "message": "a request needs a string 'method'"}
    assert raw.rpc({"jsonrpc": "1.0", "id": 8, "method": "ping"})["error"]["code"] == -32600
    assert raw.rpc(request(9, "resources/list")) == {"jsonrpc": "2.0", "id": 9, "error": {
        "code": -32601, "message": "Method not found: resources/list"}}
    assert raw.rpc({"jsonrpc": "2.0", "id": 10, "method": "tools/list", "params": [1]})["error"]["code"] == -32602
    assert raw.rpc(request(11, "tools/call", {"arguments": {}}))["error"]["code"] == -32602
    assert raw.rpc(request(12, "tools/call", {"name": "recall", "arguments": "x"}))["error"]["code"] == -32602
    raw.send(json.dumps({"jsonrpc": "2.0", "method": "no/such/notification"}))  # notifications: never answered
    raw.send(json.dumps({"jsonrpc": "2.0", "id": 99, "result": {}}))  # a response to nothing we asked
    batch = raw.rpc([request(13, "ping"), {"jsonrpc": "2.0", "method": "notifications/initialized"},
                     request(14, "nope")])
    assert [(a["id"], "result" in a) for a in batch] == [(13, True), (14, False)]
    assert raw.rpc([])["error"]["code"] == -32600
    assert raw.rpc(request(15, "ping")) == {"jsonrpc": "2.0", "id": 15, "result": {}}  # still serving
    assert raw.close() == 0


def test_sigterm_exits_cleanly(isolated_home: Path) -> None:
    raw = Raw(isolated_home)
    assert raw.rpc(request(1, "ping"))["result"] == {}
    raw.proc.send_signal(signal.SIGTERM)
    assert raw.proc.wait(timeout=10) == 0
    assert raw.close() == 0


async def test_tool_calls_round_trip_through_the_daemon(isolated_home: Path, embedder: Embedder) -> None:
    settings = load_settings()
    async with running_daemon(settings, embedder) as daemon, \
            session(isolated_home, DEXAI_MEMORY_PROJECT="mobius", CLAUDE_CODE_SESSION_ID="s9") as client:
        listed = (await client.list_tools()).tools
        assert [(t.name, t.description, t.input_schema) for t in listed] == [
            (s.name, s.description, dict(s.input_schema)) for s in TOOL_SPECS]

        fact = "User prefers pnpm over npm for JavaScript package management"
        added = await client.call_tool("remember", {"content": fact, "category": "preference"})
        memory_id = stored_id(added)
        assert text(added).startswith(f"Remembered as {memory_id} (preference):\n<dexai-memory>\n")
        assert f"\n- {fact}\n</dexai-memory>" in text(added)  # the stored text, inside the fence
        stored = await daemon.provider.get(memory_id, user_id=U)
        assert (stored.content, stored.project, stored.session_id) == (fact, "mobius", "s9")
        assert stored.metadata["source"] == "remember_tool"

        query = "Which package manager should I use for JavaScript packages?"
        found = await client.call_tool("recall", {"query": query})
        hook = await auto_recall(daemon.provider, U, query, [], settings, project="mobius")
        assert not found.is_error and len(found.content) == 1  # the block only, no raw memories as JSON
        assert hook.memory_ids == [memory_id]
        assert text(found) == f"{hook.text}\n\nMemory ids (for forget): {memory_id}"  # what the hook injects
        assert text(found).startswith("<dexai-memory>") and "not instructions" in text(found)

        bad = await client.call_tool("remember", {"content": "User likes jazz", "category": "opinion"})
        assert bad.is_error and text(bad).startswith("Input validation error: 'opinion' is not one of")
        missing = await client.call_tool("recall", {"limit": 3})
        assert missing.is_error and "'query' is a required property" in text(missing)
        neither = await client.call_tool("forget", {})
        assert neither.is_error and text(neither) == "Error: forget needs a memory_id or a query"
        unknown = await client.call_tool("memorize", {"content": "x"})
        assert unknown.is_error and "unknown tool 'memorize'" in text(unknown)

        gone = await client.call_tool("forget", {"memory_id": memory_id})
        assert not gone.is_error and text(gone).startswith(f"Forgot {memory_id}:\n<dexai-memory>")
        nothing = await client.call_tool("recall", {"query": query})
        assert not nothing.is_error and text(nothing) == "No memories found for that query."
        with pytest.raises(MemoryNotFound):
            await daemon.provider.get(memory_id, user_id=U)
        assert (await daemon.provider.get(memory_id, user_id=U, include_deleted=True)).deleted  # soft-deleted
    assert daemon.ipc.requests >= 8  # every tool call went through the daemon's socket


async def test_remember_stores_under_the_sessions_project(isolated_home: Path, embedder: Embedder,
                                                          tmp_path: Path) -> None:
    """No $DEXAI_MEMORY_PROJECT: recall covers all of the user's memories (as the hook's recall) and
    remember stores under the git root of the session's directory (as the hooks' captured turns)."""
    repo = tmp_path / "app"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    async with running_daemon(load_settings(), embedder) as daemon, \
            session(isolated_home, cwd=repo / "src") as client:
        added = await client.call_tool("remember", {"content": "The app deploys with Fly.io", "category": "fact"})
        stored = await daemon.provider.get(stored_id(added), user_id=U)
        assert stored.project == str(repo)


async def test_a_broken_config_is_a_tool_error_and_the_server_stays_up(isolated_home: Path,
                                                                       embedder: Embedder) -> None:
    settings = load_settings()
    async with running_daemon(settings, embedder):
        config = isolated_home / "memory.yaml"
        config.write_text("storage:\n  provider: floppy\n")
        async with session(isolated_home, CLI_MCP) as client:  # through `dexai mcp`
            failed = await client.call_tool("remember", {"content": "User's cat is called Miso", "category": "fact"})
            assert failed.is_error
            assert text(failed) == (f"Error: {config}: storage.provider: must be one of native, mem0, zep, "
                                    "postgres, memory; got 'floppy'")
            assert len((await client.list_tools()).tools) == 3
            config.unlink()  # fixed: the next call reaches the daemon
            again = await client.call_tool("remember", {"content": "User's cat is called Miso", "category": "fact"})
            assert text(again).startswith(f"Remembered as {stored_id(again)} (fact):")


async def test_tool_ops_write_under_the_daemons_lock(isolated_home: Path, embedder: Embedder) -> None:
    from dexai_memory.agent_tools.ops import tool_ops

    async with running_daemon(load_settings(), embedder) as daemon:
        call = tool_ops(daemon)["tool.call"]
        async with daemon.write_lock:
            writing = asyncio.create_task(call({"name": "remember", "user_id": U, "arguments": {
                "content": "User's sister Ana lives in Porto", "category": "fact"}}))
            reading = await call({"name": "recall", "user_id": U, "arguments": {"query": "Ana"}})
            assert reading == {"content": [{"type": "text", "text": "No memories found for that query."}], "isError": False}
            await asyncio.sleep(0.2)
            assert not writing.done()  # waits for the one writer
        added = await asyncio.wait_for(writing, 30)
        assert not added["isError"] and added["content"][0]["text"].startswith("Remembered as ")
        for bad, why in (({"name": "recall", "arguments": {"query": "x"}}, "Error: tool.call needs a user_id"),
                         ({"user_id": U}, "Error: tool.call needs the tool's name"),
                         ({"name": "recall", "user_id": U, "arguments": [1]},
                          "Error: the arguments of recall must be an object, got list")):
            assert await call(bad) == {"content": [{"type": "text", "text": why}], "isError": True}
        over_socket = await asyncio.to_thread(ipc_request, daemon.settings.socket_path, {"op": "tool.call", "name": "forget", "user_id": U, "arguments": {"query": "Ana lives in Porto"}}, 30)
        assert over_socket is not None and over_socket["ok"] and not over_socket["isError"]
        assert over_socket["content"][0]["text"].startswith("Forgot ")


def test_a_call_with_no_daemon_starts_one(isolated_home: Path) -> None:
    """Autostart on (the plugin's default): the first tool call starts `dexai daemon run` for the data
    directory, waits for it and is answered by it; the daemon outlives the server (until its idle exit)."""
    from dexai_memory.daemon.control import lock_held, stop

    settings = load_settings()
    raw = Raw(isolated_home, DEXAI_DAEMON_AUTOSTART="1")
    try:
        added = raw.rpc(request(1, "tools/call", {"name": "remember", "arguments": {
            "content": "User's sister Ana lives in Porto", "category": "person"}}))
        assert added["result"]["isError"] is False, added
        assert added["result"]["content"][0]["text"].startswith("Remembered as ")
        assert raw.close() == 0
        assert lock_held(settings)
        pong = ipc_request(settings.socket_path, {"op": "ping"}, 5)
        assert pong is not None and pong["version"] == __version__
    finally:
        assert stop(settings)
