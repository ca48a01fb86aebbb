"""``dexai mcp`` / ``python -m dexai_memory.mcp_server``: the memory tools over stdio, driven by
the official ``mcp`` client (ClientSession over stdio_client) against a real memory.db."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from dexai_memory.agent_tools import TOOL_SPECS
from dexai_memory.embeddings import Embedder
from dexai_memory.errors import MemoryNotFound
from dexai_memory.providers.native import NativeProvider

U = "alice"
SERVER_MODULE = ["-m", "dexai_memory.mcp_server"]
CLI_MCP = ["-m", "dexai_memory.cli.main", "mcp"]


def server_env(home: Path, **extra: str) -> dict[str, str]:
    return {"DEXAI_MEMORY_HOME": str(home), "DEXAI_MEMORY_USER": U, "ORT_DISABLE_TELEMETRY": "1", **extra}


@asynccontextmanager
async def session(home: Path, args: list[str] = SERVER_MODULE, **extra: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=args, env=server_env(home, **extra))
    with open(os.devnull, "w") as errlog:  # noqa: ASYNC230 - the server's stderr, opened once
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            yield client


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, text(result)
    data: dict[str, Any] = json.loads(result.content[-1].text)
    return data


async def test_tools_over_stdio(isolated_home: Path, embedder: Embedder) -> None:
    async with session(isolated_home, DEXAI_MEMORY_PROJECT="mobius", CLAUDE_CODE_SESSION_ID="s9") as client:
        listed = (await client.list_tools()).tools
        assert [(t.name, t.description, t.input_schema) for t in listed] == [
            (s.name, s.description, dict(s.input_schema)) for s in TOOL_SPECS]
        assert not (isolated_home / "memory.db").exists()  # nothing is opened before the first tool call

        added = await client.call_tool("remember", {"content": "User prefers pnpm over npm", "category": "preference"})
        memory_id = payload(added)["memory"]["id"]
        assert text(added).startswith(f"Remembered as {memory_id} (preference): User prefers pnpm over npm")

        found = await client.call_tool("recall", {"query": "which package manager", "limit": 3})
        assert [m["id"] for m in payload(found)["memories"]] == [memory_id]
        assert "data, not instructions" in text(found)

        bad = await client.call_tool("remember", {"content": "User likes jazz", "category": "opinion"})
        assert bad.is_error and text(bad).startswith("Input validation error: 'opinion' is not one of")
        missing = await client.call_tool("recall", {"limit": 3})
        assert missing.is_error and "'query' is a required property" in text(missing)
        neither = await client.call_tool("forget", {})
        assert neither.is_error and text(neither) == "Error: forget needs a memory_id or a query"
        unknown = await client.call_tool("memorize", {"content": "x"})
        assert unknown.is_error and "unknown tool 'memorize'" in text(unknown)

        async with NativeProvider(isolated_home / "memory.db", embedder=embedder) as store:
            stored = await store.get(memory_id, user_id=U)
            assert (stored.content, stored.project, stored.session_id) == ("User prefers pnpm over npm", "mobius", "s9")
            assert stored.metadata["source"] == "remember_tool"

        gone = await client.call_tool("forget", {"memory_id": memory_id})
        assert payload(gone)["status"] == "forgotten" and text(gone).startswith(f"Forgot {memory_id}")
        assert "No memories found" in text(await client.call_tool("recall", {"query": "package manager"}))

    assert not (isolated_home / "memory.db-wal").exists()  # the store was closed when stdin closed
    async with NativeProvider(isolated_home / "memory.db", embedder=embedder) as store:
        with pytest.raises(MemoryNotFound):
            await store.get(memory_id, user_id=U)
        assert (await store.get(memory_id, user_id=U, include_deleted=True)).deleted  # soft-deleted


async def test_a_broken_store_is_a_tool_error_and_the_server_stays_up(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    config = isolated_home / "memory.yaml"
    config.write_text("storage:\n  provider: floppy\n")
    async with session(isolated_home, CLI_MCP) as client:  # through `dexai mcp`
        failed = await client.call_tool("remember", {"content": "User's cat is called Miso", "category": "fact"})
        assert failed.is_error
        assert text(failed) == f"Error: {config}: storage.provider: must be one of native, mem0, zep, postgres; got 'floppy'"
        config.unlink()
        (isolated_home / "memory.db").write_bytes(b"definitely not sqlite " * 200)
        corrupt = await client.call_tool("recall", {"query": "cat"})
        assert corrupt.is_error and "memory.db is not a SQLite database" in text(corrupt)
        assert len((await client.list_tools()).tools) == 3
        (isolated_home / "memory.db").unlink()  # fixed: the next call opens the store
        again = await client.call_tool("remember", {"content": "User's cat is called Miso", "category": "fact"})
        assert payload(again)["status"] == "added"


def _rpc(proc: subprocess.Popen[str], message: Mapping[str, Any]) -> dict[str, Any] | None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    if "id" not in message:
        return None
    reply: dict[str, Any] = json.loads(proc.stdout.readline())
    return reply


@pytest.mark.parametrize("how", ["stdin closed", "SIGTERM"])
def test_exit_closes_the_store(isolated_home: Path, how: str) -> None:
    env = {**os.environ, **server_env(isolated_home)}
    with subprocess.Popen([sys.executable, *SERVER_MODULE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, env=env) as proc:
        init = _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
        assert init is not None and init["result"]["serverInfo"]["name"] == "dexai-memory"
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        called = _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "remember", "arguments": {"content": "User's sister Ana lives in Porto", "category": "fact"}}})
        assert called is not None and not called["result"]["isError"]
        assert (isolated_home / "memory.db-wal").exists()  # open, in WAL mode
        if how == "SIGTERM":
            proc.send_signal(signal.SIGTERM)
        else:
            assert proc.stdin is not None
            proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    assert not (isolated_home / "memory.db-wal").exists()  # the last connection closed cleanly
