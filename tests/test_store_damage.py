"""Damaged memory databases: never written to, named by ``dexai memory doctor`` (exit 1), and every
command fails with one line naming ``restore-backup`` (no traceback). Real SQLite files, the real
CLI entry point, a real daemon for damage that appears while it runs.

Damage kinds: a store emptied in place (``> memory.db``), an empty file where backups show the
store held memories, garbage over the whole file but its header, garbage sprinkled on every
page, and two indexes that disagree with their table (only ``integrity_check`` sees it).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from dexai_memory.cli.main import cli
from dexai_memory.config import load_settings
from dexai_memory.errors import DatabaseCorrupt
from dexai_memory.models import Memory
from dexai_memory.providers.native import NativeProvider
from dexai_memory.providers.native.damage import mark_path


def dexai(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    return result.exit_code, result.output


def seeded(home: Path) -> Path:
    """A store with a few memories, closed (checkpointed: the main file holds them)."""
    home.mkdir(parents=True, exist_ok=True)
    for text in ("I like green tea in the morning", "My dog is called Rex", "I work on the billing service"):
        code, out = dexai("memory", "add", text)
        assert code == 0, out
    return home / "memory.db"


def emptied(db: Path) -> None:
    db.write_bytes(b"")


def empty_with_backups(db: Path) -> None:
    code, out = dexai("memory", "backup")
    assert code == 0, out
    db.unlink()
    db.write_bytes(b"")
    old = time.time() - 120  # not a file another process is setting up right now
    os.utime(db, (old, old))


def garbage_but_header(db: Path) -> None:
    size = db.stat().st_size
    with db.open("r+b") as fh:
        fh.seek(100)
        fh.write(os.urandom(size - 100))


def garbage_on_every_page(db: Path) -> None:
    rng = random.Random(7)
    size = db.stat().st_size
    with db.open("r+b") as fh:
        for page in range(1, size // 4096):
            fh.seek(page * 4096 + rng.randrange(0, 4096 - 64))
            fh.write(rng.randbytes(64))


def index_disagrees(db: Path) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    roots = dict(conn.execute("SELECT name, rootpage FROM sqlite_schema WHERE name IN "
                              "('ix_memories_user', 'ix_memories_session')").fetchall())
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("UPDATE sqlite_schema SET rootpage = ? WHERE name = 'ix_memories_user'", (roots["ix_memories_session"],))
    conn.execute("UPDATE sqlite_schema SET rootpage = ? WHERE name = 'ix_memories_session'", (roots["ix_memories_user"],))
    conn.close()


DAMAGE: dict[str, Callable[[Path], None]] = {
    "emptied-in-place": emptied,
    "empty-with-backups": empty_with_backups,
    "garbage-but-header": garbage_but_header,
    "garbage-on-every-page": garbage_on_every_page,
    "index-disagrees": index_disagrees,
}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_damage_is_named_by_doctor_and_refused_by_every_command(kind: str, isolated_home: Path) -> None:
    db = seeded(isolated_home)
    DAMAGE[kind](db)
    before = digest(db)
    code, out = dexai("memory", "doctor")
    assert code == 1, out
    assert "FAIL  provider (native)" in out and "restore-backup" in out and "Traceback" not in out
    for args in (("memory", "list"), ("memory", "add", "I like coffee as well"), ("memory", "search", "tea"),
                 ("memory", "stats"), ("memory", "backup")):
        code, out = dexai(*args)
        assert code == 1, (args, out)
        lines = [line for line in out.splitlines() if line.startswith("Error:")]
        assert len(lines) == 1 and "restore-backup" in lines[0] and "Traceback" not in out, (args, out)
    assert digest(db) == before  # never written to, not even recreated empty
    assert not list((isolated_home / "backups").glob("*/memory.db")) or kind == "empty-with-backups"


def test_a_restored_backup_is_used_again(isolated_home: Path) -> None:
    db = seeded(isolated_home)
    code, out = dexai("memory", "backup")
    assert code == 0, out
    garbage_on_every_page(db)
    assert dexai("memory", "list")[0] == 1
    assert mark_path(db).exists()
    backup = next((isolated_home / "backups").glob("backup-*"))
    code, out = dexai("memory", "restore-backup", "--yes", str(backup))
    assert code == 0, out
    assert not mark_path(db).exists()
    code, out = dexai("memory", "list")
    assert code == 0 and "My dog is called Rex" in out
    assert dexai("memory", "doctor")[0] in (0, 1)  # other checks may fail here; the store is not one of them
    assert "FAIL  provider" not in dexai("memory", "doctor")[1]


def test_a_new_empty_file_is_a_new_store(isolated_home: Path) -> None:
    """``touch memory.db`` in a fresh data directory, or a file another process is setting up: a new
    store, set up as usual; removing an emptied store's file starts over too."""
    isolated_home.mkdir(parents=True)
    (isolated_home / "memory.db").touch()
    assert dexai("memory", "add", "I like green tea")[0] == 0
    emptied(isolated_home / "memory.db")
    assert dexai("memory", "list")[0] == 1
    (isolated_home / "memory.db").unlink()
    assert dexai("memory", "add", "I like green tea")[0] == 0


async def test_damage_found_while_the_daemon_runs_stops_its_writes(isolated_home: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A store too big for the check at open, damaged where only ``integrity_check`` looks: once
    the check finds it (doctor, or the daemon's own check), the running daemon refuses every
    write, keeps answering, and the mark makes every later open refuse it too."""
    from dexai_memory.providers.native import database
    from tests.hook_daemon import handle, running_daemon

    settings = load_settings(home=isolated_home)
    async with NativeProvider(settings.db_path, embedder=None) as provider:
        for text in ("I like green tea", "My dog is called Rex"):
            await provider.add(Memory(text, user_id="alice"))
    index_disagrees(settings.db_path)
    monkeypatch.setattr(database, "QUICK_CHECK_MAX_BYTES", 0)  # as if too big to check at open
    async with NativeProvider(settings.db_path, embedder=None) as provider, \
            running_daemon(settings, provider) as daemon:
        await provider.add(Memory("I like coffee", user_id="alice"))  # unseen yet: written
        with pytest.raises(DatabaseCorrupt, match="restore-backup"):
            await provider.database.check(full=True)
        with pytest.raises(DatabaseCorrupt, match="restore-backup"):
            await provider.add(Memory("I like cocoa", user_id="alice"))
        assert (await provider.health_check()).problems
        assert await handle(daemon, "session-end", {"session_id": "s"}) == {}  # still answering
        assert daemon.running
    conn = sqlite3.connect(f"file:{settings.db_path}?mode=ro", uri=True)
    assert [r[0] for r in conn.execute("SELECT content FROM memories ORDER BY content")] == [
        "I like coffee", "I like green tea", "My dog is called Rex"]  # nothing after the damage was found
    conn.close()
    assert mark_path(settings.db_path).exists()
    monkeypatch.undo()
    with pytest.raises(DatabaseCorrupt, match="restore-backup"):
        async with NativeProvider(settings.db_path, embedder=None):
            pass


def test_a_10k_store_gets_the_full_check_at_open(tmp_path: Path) -> None:
    """A 10,000-memory store is under the full check's size limit, so every open runs
    ``integrity_check`` on it (its cost, 40-60 ms here, is a figure of the note, not a test)."""
    from dexai_memory.embeddings import HashingEmbedder
    from dexai_memory.providers.native.database import INTEGRITY_CHECK_MAX_BYTES

    db = tmp_path / "memory.db"

    async def fill() -> None:
        async with NativeProvider(db, embedder=HashingEmbedder(384)) as provider:
            for batch in range(10):
                await provider.add_many([Memory(f"note {batch} {i} about the garden and the river",
                                                user_id="a") for i in range(1000)])

    asyncio.run(fill())
    assert db.stat().st_size < INTEGRITY_CHECK_MAX_BYTES


def test_the_scheduled_backup_refuses_a_damaged_store(isolated_home: Path) -> None:
    """The daemon's backups go through create_backup too: a damaged store is never copied over
    the good backups."""
    from dexai_memory.backup import create_backup
    from dexai_memory.errors import StorageError

    settings = load_settings(home=isolated_home)
    assert dexai("memory", "add", "I like green tea")[0] == 0
    create_backup(settings)
    index_disagrees(settings.db_path)
    assert dexai("memory", "doctor")[0] == 1
    with pytest.raises(StorageError, match="restore-backup"):
        create_backup(settings)
    assert len(list((isolated_home / "backups").glob("backup-*"))) == 1
