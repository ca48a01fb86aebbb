"""Backups: `dexai memory backup` (online backup of memory.db and queue.db, keeping the newest N),
`dexai memory restore-backup` (refused while a daemon runs, the current file kept aside), and the
daemon's scheduled backup."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from dexai_memory.backup import create_backup, list_backups
from dexai_memory.capture.queue import ExtractionQueue, enqueue_turn
from dexai_memory.cli.main import cli
from dexai_memory.config import Settings, load_settings
from dexai_memory.daemon.ipc import IpcServer
from dexai_memory.providers.native import NativeProvider
from dexai_memory.providers.native.vectors import graph_dir


@pytest.fixture(autouse=True)
def keep_umask() -> Iterator[None]:
    old = os.umask(0o022)
    os.umask(old)
    yield
    os.umask(old)


def dexai(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def ok(*args: str) -> Result:
    result = dexai(*args)
    assert result.exit_code == 0, result.output
    return result


def contents(user: str = "sam") -> set[str]:
    return {m["content"] for m in json.loads(ok("memory", "list", "--user", user, "--json").stdout)}


def test_backup_then_restore_brings_back_the_memories_and_keeps_the_current_file(isolated_home: Path) -> None:
    ok("memory", "add", "Sam likes tea", "--user", "sam")
    enqueue_turn(isolated_home / "queue.db", {"id": "t1", "user_id": "sam", "content": "a queued turn"})
    made = json.loads(ok("memory", "backup", "--json").stdout)
    path = Path(made["path"])
    assert path.parent == isolated_home / "backups" and set(made["files"]) == {"memory.db", "queue.db"}
    for f in path.iterdir():  # self-contained, private, checkable copies
        assert f.stat().st_mode & 0o777 == 0o600
        with sqlite3.connect(f) as conn:
            assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    assert path.stat().st_mode & 0o777 == 0o700
    ok("memory", "add", "Sam moved to Lisbon", "--user", "sam")
    assert contents() == {"Sam likes tea", "Sam moved to Lisbon"}
    listed = ok("memory", "backup", "--list").output
    assert str(path) in listed
    graphs = graph_dir(isolated_home / "memory.db")  # saved HNSW graphs of the current vectors
    graphs.mkdir()
    (graphs / "user.usearch").write_bytes(b"graph")
    restored = json.loads(ok("memory", "restore-backup", str(path), "--yes", "--json").stdout)
    assert contents() == {"Sam likes tea"}
    assert not graphs.exists()  # of the replaced database: built again by the next search
    aside = [Path(p) for p in restored["set_aside"]]
    main_aside = next(p for p in aside if p.name.startswith("memory.db.bak-") and not p.name.endswith(("-wal", "-shm")))
    with sqlite3.connect(main_aside) as conn:  # the replaced data is still there, whole
        assert conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 2


def test_backup_keeps_only_the_newest_backups(isolated_home: Path) -> None:
    ok("memory", "add", "Sam likes tea", "--user", "sam")
    settings = dataclasses.replace(load_settings(), backup=dataclasses.replace(load_settings().backup, keep=2))
    made = [create_backup(settings) for _ in range(4)]
    assert [b.path for b in list_backups(settings)] == [made[3].path, made[2].path]


def test_backup_to_an_explicit_directory_and_refusals(isolated_home: Path, tmp_path: Path) -> None:
    result = dexai("memory", "backup")
    assert result.exit_code == 1 and "nothing to back up" in result.output
    ok("memory", "add", "Sam likes tea", "--user", "sam")
    out = tmp_path / "offsite"
    ok("memory", "backup", "-o", str(out))
    assert (out / "memory.db").is_file() and not (isolated_home / "backups").exists()
    again = dexai("memory", "backup", "-o", str(out))
    assert again.exit_code == 1 and "not an empty directory" in again.output
    bad = tmp_path / "garbage.db"
    bad.write_text("not a database")
    refused = dexai("memory", "restore-backup", str(bad), "--yes")
    assert refused.exit_code == 1 and "not a SQLite database" in refused.output
    assert contents() == {"Sam likes tea"}  # nothing was moved


async def test_restore_is_refused_while_a_daemon_answers_on_the_socket(isolated_home: Path) -> None:
    # the CLI runs its own event loop: call it from a thread
    await asyncio.to_thread(ok, "memory", "add", "Sam likes tea", "--user", "sam")
    path = Path(json.loads((await asyncio.to_thread(ok, "memory", "backup", "--json")).stdout)["path"])
    settings = load_settings()
    server = IpcServer(settings.socket_path)

    async def ping(_req: dict[str, object]) -> dict[str, object]:
        return {"ok": True}

    server.register("ping", ping)
    await server.start()
    try:
        result = await asyncio.to_thread(dexai, "memory", "restore-backup", str(path), "--yes")
    finally:
        await server.aclose()
    assert result.exit_code == 1 and "daemon is running" in result.output
    assert not list(isolated_home.glob("memory.db.bak-*"))
    # a queue worker holding the queue (a daemon that is too busy to answer) is refused too
    queue = ExtractionQueue.from_settings(settings)
    queue.claim()
    try:
        busy = await asyncio.to_thread(dexai, "memory", "restore-backup", str(path), "--yes")
    finally:
        queue.close()
    assert busy.exit_code == 1 and "daemon is running" in busy.output
    await asyncio.to_thread(ok, "memory", "restore-backup", str(path), "--yes")


async def test_daemon_runs_a_scheduled_backup(isolated_home: Path) -> None:
    from dexai_memory.daemon import MemoryDaemon
    from dexai_memory.supersession.rules import OfflineClassifier
    from tests.pipeline_fakes import EchoExtractor, JoinSummarizer

    settings: Settings = load_settings()
    async with NativeProvider(settings.db_path, embedder=None) as provider:
        daemon = MemoryDaemon(settings, provider, classifier=OfflineClassifier(), summarizer=JoinSummarizer(),
                              extractor=EchoExtractor())
        async with daemon:
            assert "backup" in daemon.next_runs()
            report = await daemon.run_backup()
        assert "memory.db" in report["files"] and daemon.runs["backup"] == 1
        assert [str(b.path) for b in list_backups(settings)] == [report["path"]]


def test_corrupt_database_message_points_at_restore_backup(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    (isolated_home / "memory.db").write_text("garbage")
    result = dexai("memory", "list", "--user", "sam")
    assert result.exit_code == 1 and "dexai memory restore-backup" in result.output
    doctor = dexai("memory", "doctor")
    assert "dexai memory restore-backup" in doctor.output


BACKUP_BESIDE_WRITES = """
import asyncio, sys, threading
from dexai_memory.backup import create_backup
from dexai_memory.config import load_settings
from dexai_memory.models import Memory
from dexai_memory.providers.native import NativeProvider

async def main() -> None:
    settings = load_settings()
    async with NativeProvider(settings.db_path, embedder=None) as provider:
        stop = threading.Event()
        async def write() -> int:
            n = 0
            while not stop.is_set():
                await provider.add(Memory(content=f"Sam note {n} " + "x" * 200, user_id="sam"))
                n += 1
            return n
        writer = asyncio.create_task(write())
        for _ in range(40):
            await asyncio.to_thread(create_backup, settings, settings.home / "copies" / str(_))
        stop.set()
        written = await writer
        assert len(await provider.list(user_id="sam", limit=100000)) == written
    print("OK", written)

asyncio.run(main())
"""


def test_backups_run_beside_the_providers_writes_in_one_process(isolated_home: Path) -> None:
    """What the daemon does: its scheduled backup copies memory.db while its provider writes. Both must
    use one SQLite library (two copies in one process share POSIX locks and reset each other's WAL
    index: the process died of SIGBUS when the backup used the stdlib beside the provider's sqlean)."""
    import subprocess
    import sys

    isolated_home.mkdir(parents=True, exist_ok=True)
    run = subprocess.run([sys.executable, "-c", BACKUP_BESIDE_WRITES], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "DEXAI_MEMORY_HOME": str(isolated_home)})
    assert run.returncode == 0 and run.stdout.startswith("OK"), (run.returncode, run.stderr[-2000:])
    assert len(list((isolated_home / "copies").iterdir())) == 40
