"""No write is lost when hooks, the queue and a big import write the same files at once."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from dexai_memory.capture.queue import QueueError, enqueue_turn
from dexai_memory.errors import StorageError
from dexai_memory.models import Memory
from dexai_memory.providers.native import NativeProvider
from dexai_memory.providers.native.driver import store_sqlite

ROOT = Path(__file__).resolve().parents[2]
HOOKS, PER_HOOK, IMPORTED = 8, 12, 5000


def test_concurrent_hooks_and_an_import_lose_no_write(tmp_path: Path) -> None:
    """8 hook-like processes (queue + memory writes, fresh connections) and a 5,000-memory
    import in one transaction, all on the same real files, with a 10 ms busy_timeout so the
    locks are met: every turn and every memory is stored, and no process fails."""
    home = tmp_path / "home"
    home.mkdir()
    # the import process creates memory.db first, so the hooks meet its long write transaction
    procs = [subprocess.Popen([sys.executable, "-m", "tests.concurrent_writer", str(home), "import", str(IMPORTED),
                               "10"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)]
    procs += [subprocess.Popen([sys.executable, "-m", "tests.concurrent_writer", str(home), f"hook{w}",
                                str(PER_HOOK), "10"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True) for w in range(HOOKS)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and out.strip() == "OK", err[-2000:]
    with closing(store_sqlite().connect(home / "memory.db")) as conn:
        assert conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == IMPORTED + HOOKS * PER_HOOK
    with sqlite3.connect(home / "queue.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM jobs").fetchone()[0] == HOOKS * PER_HOOK


async def test_a_write_locked_past_the_retry_window_fails_loudly(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Bounded: a database held locked longer than busy_retry_seconds gives StorageError, not a hang
    or a silent drop (and the queue gives QueueError)."""
    path = tmp_path / "memory.db"
    async with NativeProvider(path, busy_timeout_ms=1, busy_retry_seconds=0.2) as p:
        import sqlean  # the provider's SQLite library: POSIX locks are per process, per library

        holder = sqlean.connect(str(path), isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StorageError, match="locked"):
                await p.add(Memory(content="waits for the lock", user_id="u"))
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        await p.add(Memory(content="stored once the lock is gone", user_id="u"))
        assert await p.count(user_id="u") == 1
    queue = tmp_path / "queue.db"
    enqueue_turn(queue, {"id": "t0", "user_id": "u", "content": "first"})
    holder = sqlite3.connect(queue, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    import dexai_memory.capture.queue_file as q

    monkeypatch.setattr(q, "BUSY_RETRY_SECONDS", 0.2)
    try:
        with pytest.raises(QueueError, match="locked"):
            q.enqueue_turn(queue, {"id": "t1", "user_id": "u", "content": "second"}, timeout=0.01)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
