"""The CLI's changes by hand go through the running daemon, the one writer of ``memory.db``:
``edit``, ``pin`` / ``unpin``, ``forget`` / ``restore``, ``supersede``, ``done``, ``clear`` /
``undo``, ``prune`` and ``facts pin`` / ``facts remove`` are ``store.run`` requests
(:mod:`dexai_memory.lifecycle.requests`) run under the daemon's write lock; with no daemon, the
same function runs in the command's process, with the same answers and errors."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from dexai_memory.config import load_settings
from dexai_memory.daemon import MemoryDaemon
from dexai_memory.embeddings import Embedder
from dexai_memory.models import Memory, MemoryType, utcnow
from dexai_memory.providers.native import NativeProvider
from tests.hook_daemon import running_daemon

U = "alice"


def dexai_sync(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dexai_memory.cli.main", *args, "--user", U, "--json"],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "DEXAI_MEMORY_HOME": str(home)})


async def dexai(home: Path, *args: str) -> Any:
    done = await asyncio.to_thread(dexai_sync, home, *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def test_changes_by_hand_are_made_by_the_daemon(isolated_home: Path, embedder: Embedder) -> None:
    settings = load_settings()
    isolated_home.mkdir(parents=True, exist_ok=True)
    async with NativeProvider(settings.db_path, embedder=embedder) as provider:
        lives = await provider.add(Memory(content="Sam lives in Porto", user_id=U, type=MemoryType.FACT))
        call = await provider.add(Memory(content="Call the bank on Friday", user_id=U, type=MemoryType.COMMITMENT))
        async with running_daemon(settings, provider, serve_socket=True) as daemon:
            before = daemon.ipc.requests
            async with daemon.write_lock:  # the daemon is busy writing: the command waits for it
                pinning = asyncio.create_task(dexai(isolated_home, "memory", "pin", lives.id))
                await asyncio.sleep(1.5)
                assert not pinning.done()
                assert not (await provider.get(lives.id, user_id=U)).pinned
            assert (await pinning)["pinned"] is True
            assert (await provider.get(lives.id, user_id=U)).pinned

            edited = await dexai(isolated_home, "memory", "edit", lives.id, "--importance", "9", "--set", "src=cli")
            assert edited["importance"] == 9 and edited["metadata"]["src"] == "cli"
            assert (await dexai(isolated_home, "memory", "unpin", lives.id))["pinned"] is False
            new = await dexai(isolated_home, "memory", "supersede", lives.id, "Sam lives in Lisbon",
                              "--reason", "moved")
            assert new["content"] == "Sam lives in Lisbon"
            assert (await provider.get(lives.id, user_id=U, include_deleted=True)).superseded_by == new["id"]
            assert (await dexai(isolated_home, "memory", "forget", new["id"]))["forgotten"] is True
            assert (await dexai(isolated_home, "memory", "restore", new["id"]))["id"] == new["id"]
            closed = await dexai(isolated_home, "memory", "done", call.id)
            assert closed["metadata"]["commitment"]["status"] == "done"
            assert (await dexai(isolated_home, "memory", "facts", "pin", new["id"]))["pinned"] is True
            assert (await dexai(isolated_home, "memory", "facts", "remove", new["id"]))["removed"] is True
            assert (await dexai(isolated_home, "memory", "restore", new["id"]))["deleted"] is False
            report = await dexai(isolated_home, "memory", "prune", "--dry-run")
            assert "facts_before" in report and report["expired"] == []
            cleared = await dexai(isolated_home, "memory", "clear", "--yes")
            assert cleared["cleared"] >= 2 and await provider.count(user_id=U) == 0
            assert (await dexai(isolated_home, "memory", "undo"))["restored"] == cleared["cleared"]

            # the store's refusals come back as the command's error, as without a daemon
            missing = await asyncio.to_thread(dexai_sync, isolated_home, "memory", "pin", "m_nope")
            assert missing.returncode != 0 and "m_nope" in missing.stderr
            served = daemon.ipc.requests - before
        assert served >= 14  # each of the 14 commands above was a request to the daemon

    # no daemon: the same function in the command's process, the same error
    alone = await asyncio.to_thread(dexai_sync, isolated_home, "memory", "pin", "m_nope")
    assert alone.returncode == missing.returncode and alone.stderr.strip() == missing.stderr.strip()
    assert (await dexai(isolated_home, "memory", "unpin", call.id))["pinned"] is False


async def test_a_bad_store_request_is_a_clear_error(isolated_home: Path, embedder: Embedder) -> None:
    from dexai_memory.daemon.ipc import ipc_request

    settings = load_settings()
    isolated_home.mkdir(parents=True, exist_ok=True)
    async with NativeProvider(settings.db_path, embedder=embedder) as provider, \
            running_daemon(settings, provider, serve_socket=True) as daemon:
        assert isinstance(daemon, MemoryDaemon)
        for request, error in (
                ({"name": "erase-everything", "user_id": U}, "unknown store operation 'erase-everything'"),
                ({"name": "pin"}, "pin needs a user_id"),
                ({"name": "pin", "user_id": U}, "pin needs memory_id"),
                ({"name": "resolve", "user_id": U, "contradiction_id": "7"}, "contradiction_id (a number)")):
            reply = await asyncio.to_thread(ipc_request, settings.socket_path, {"op": "store.run", **request}, 10)
            assert reply is not None and reply["ok"] is False and error in reply["error"], reply


async def test_recall_as_of_is_answered_by_the_daemon_as_without_it(isolated_home: Path, embedder: Embedder) -> None:
    """``dexai memory recall --as-of`` is one more ``recall`` request: a running daemon answers it,
    with the block the command's own process gives when no daemon runs."""
    settings = load_settings()
    isolated_home.mkdir(parents=True, exist_ok=True)
    question = ("memory", "recall", "--query", "Where does Sam live?")
    porto = await dexai(isolated_home, "memory", "add", "Sam lives in Porto with two cats")
    await asyncio.sleep(0.05)
    between = utcnow().isoformat()
    await asyncio.sleep(0.05)
    await dexai(isolated_home, "memory", "supersede", porto["id"], "Sam lives in Lisbon with two cats",
                "--reason", "moved")
    alone = [await dexai(isolated_home, *question, "--as-of", between), await dexai(isolated_home, *question)]
    async with NativeProvider(settings.db_path, embedder=embedder) as provider:
        async with running_daemon(settings, provider, serve_socket=True) as daemon:
            before = daemon.ipc.requests
            served = [await dexai(isolated_home, *question, "--as-of", between), await dexai(isolated_home, *question)]
            assert daemon.ipc.requests - before == 2
    then, now = served
    assert "Porto" in then["text"] and "Lisbon" not in then["text"]
    assert "Lisbon" in now["text"] and "Porto" not in now["text"]
    assert [r["text"] for r in served] == [r["text"] for r in alone]


async def test_bulk_commands_write_while_the_daemon_lends_its_write_lock(isolated_home: Path, tmp_path: Path,
                                                                        embedder: Embedder) -> None:
    """``ingest``, ``import`` and ``consolidate`` write from their own process, but while a daemon
    runs they hold its write lock (``writer.lease``): they wait for the daemon's own writes, the
    daemon's wait for them, and the lease is given back at the end."""
    settings = load_settings()
    isolated_home.mkdir(parents=True, exist_ok=True)
    turns = tmp_path / "chat.jsonl"
    turns.write_text("".join(json.dumps({"id": f"t{i}", "role": "user", "content": f"Remember that my {k} is {v}."})
                             + "\n" for i, (k, v) in enumerate([("editor", "helix"), ("shell", "fish"),
                                                                ("laptop", "a ThinkPad")])))
    exported = tmp_path / "export.jsonl"
    exported.write_text(json.dumps({"content": "The staging server is stage.example.com", "type": "FACT"}) + "\n")
    async with NativeProvider(settings.db_path, embedder=embedder) as provider, \
            running_daemon(settings, provider, serve_socket=True) as daemon:
        asked: list[str] = []
        for op in ("writer.lease", "writer.release"):
            inner = daemon.ipc.handlers[op]

            async def counted(req: dict[str, Any], inner: Any = inner, op: str = op) -> dict[str, Any]:
                asked.append(op)
                return await inner(req)  # type: ignore[no-any-return]
            daemon.ipc.handlers[op] = counted
        async with daemon.write_lock:  # the daemon is writing: the ingest waits for its turn
            ingesting = asyncio.create_task(dexai(isolated_home, "memory", "ingest", str(turns), "--vectors", "later"))
            await asyncio.sleep(2.0)
            assert not ingesting.done() and asked == ["writer.lease"]
        assert (await ingesting)["turns"] == 3
        assert asked == ["writer.lease", "writer.release"] and not daemon.write_lock.locked()
        imported = await dexai(isolated_home, "memory", "import", str(exported))
        assert imported["imported"] == 1 and asked[2:] == ["writer.lease", "writer.release"]
        await dexai(isolated_home, "memory", "consolidate")  # one lease per user's run
        assert asked[4:] == ["writer.lease", "writer.release"] and not daemon.write_lock.locked()
        stored = [m.content for m in await provider.list(user_id=U, limit=50)]
        assert "The staging server is stage.example.com" in stored and any("helix" in c for c in stored)


async def test_a_lease_ends_when_its_holder_forgets_it(isolated_home: Path, embedder: Embedder) -> None:
    from dexai_memory.daemon.ipc import ipc_request

    settings = load_settings()
    isolated_home.mkdir(parents=True, exist_ok=True)
    async with NativeProvider(settings.db_path, embedder=embedder) as provider, \
            running_daemon(settings, provider, serve_socket=True) as daemon:
        lease = await asyncio.to_thread(ipc_request, settings.socket_path, {"op": "writer.lease", "seconds": 1}, 10)
        assert lease is not None and lease["lease"] and daemon.write_lock.locked()
        await asyncio.sleep(1.5)  # never released: taken back after its seconds
        assert not daemon.write_lock.locked()
        late = await asyncio.to_thread(ipc_request, settings.socket_path,
                                       {"op": "writer.release", "lease": lease["lease"]}, 10)
        assert late == {"released": False} or late.get("released") is False
        bad = await asyncio.to_thread(ipc_request, settings.socket_path, {"op": "writer.lease", "seconds": "x"}, 10)
        assert bad is not None and bad.get("ok") is False and not daemon.write_lock.locked()
