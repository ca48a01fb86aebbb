"""The durable extraction queue: batching, overflow, retries, dead letters, crash safety."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from dexai_memory.capture.queue import ExtractionQueue, Job, enqueue_turn
from dexai_memory.errors import QueueError
from dexai_memory.models import Memory, SearchFilters, Turn

REPO = Path(__file__).resolve().parents[2]


def turn(i: int | str, user: str = "u", content: str | None = None) -> Turn:
    return Turn(id=f"T{i}", user_id=user, content=content or f"turn number {i}", session_id="s1")


class Recorder:
    """A job handler that records batches and fails for the turn ids in ``bad``."""

    def __init__(self, bad: Sequence[str] = ()):
        self.batches: list[list[str]] = []
        self.bad = set(bad)

    async def __call__(self, jobs: Sequence[Job]) -> None:
        ids = [j.turn.id for j in jobs]
        self.batches.append(ids)
        failing = self.bad & set(ids)
        if failing:
            raise RuntimeError(f"cannot extract {sorted(failing)}")

    @property
    def seen(self) -> list[str]:
        return [i for b in self.batches for i in b]


def make_queue(tmp_path: Path, **kw: object) -> ExtractionQueue:
    defaults: dict[str, object] = {"batch_size": 3, "flush_interval": 60.0, "max_retries": 2, "retry_backoff": 0.0}
    defaults.update(kw)
    return ExtractionQueue(tmp_path / "queue.db", **defaults).open()  # type: ignore[arg-type]


async def test_enqueue_batches_and_idempotent_key(tmp_path: Path) -> None:
    q = make_queue(tmp_path)
    assert [q.enqueue(turn(i)) for i in range(7)] == [True] * 7
    assert q.enqueue(turn(3)) is False  # same (user, turn id): stored once
    assert q.enqueue(turn(3, user="other")) is True  # the key includes the user
    handler = Recorder()
    assert await q.drain(handler) == 8
    assert [len(b) for b in handler.batches] == [3, 3, 2]
    assert sorted(handler.seen) == sorted([f"T{i}" for i in range(7)] + ["T3"])
    assert q.enqueue(turn(1)) is False  # done turns are never queued again
    assert await q.drain(handler) == 0
    s = q.stats()
    assert (s.pending, s.done, s.dead) == (0, 8, 0)
    q.close()


async def test_spill_keeps_every_turn(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    q = make_queue(tmp_path, max_queue_size=2, overflow_policy="spill")
    with caplog.at_level(logging.WARNING, logger="dexai_memory.capture.queue"):
        for i in range(6):
            assert q.enqueue(turn(i))
    s = q.stats()
    assert (s.in_memory, s.spilled, s.pending) == (2, 4, 6)
    assert any("spilled to disk" in r.getMessage() for r in caplog.records)
    handler = Recorder()
    assert await q.drain(handler) == 6
    assert sorted(handler.seen) == [f"T{i}" for i in range(6)]
    assert len(handler.seen) == 6  # nothing twice
    q.close()


async def test_reject_policy_raises_and_stores_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    q = make_queue(tmp_path, max_queue_size=2, overflow_policy="reject")
    q.enqueue(turn(1))
    q.enqueue(turn(2))
    with caplog.at_level(logging.WARNING, logger="dexai_memory.capture.queue"), pytest.raises(QueueError, match="full"):
        q.enqueue(turn(3))
    assert any("rejected" in r.getMessage() for r in caplog.records)
    assert q.pending_count() == 2
    assert q.stats().rejected == 1
    q.close()


async def test_failed_job_retried_then_dead_letter_then_replayed(tmp_path: Path) -> None:
    q = make_queue(tmp_path, max_retries=2)
    for i in range(4):
        q.enqueue(turn(i, content=f"text {i}"))
    handler = Recorder(bad=["T2"])
    assert await q.drain(handler) == 3
    # the failing batch was split so its other job went through; T2 tried 1 + 2 retries
    assert handler.seen.count("T2") == 4
    dead = q.dead_letters()
    assert [(d.turn_id, d.attempts, d.content) for d in dead] == [("T2", 3, "text 2")]
    assert "RuntimeError: cannot extract ['T2']" in dead[0].error
    assert q.stats().dead == 1
    # the doctor's read-only query of the view works on the file
    import sqlite3

    conn = sqlite3.connect(tmp_path / "queue.db")
    assert conn.execute("SELECT COUNT(*) FROM dead_letters").fetchone()[0] == 1
    conn.close()
    assert q.retry_dead_letters() == 1
    assert q.dead_letters() == []
    fixed = Recorder()
    assert await q.drain(fixed) == 1
    assert fixed.seen == ["T2"]
    assert q.stats().done == 4
    q.close()


async def test_backoff_keeps_job_on_disk(tmp_path: Path) -> None:
    q = make_queue(tmp_path, max_retries=3, retry_backoff=30.0)
    q.enqueue(turn(1))
    handler = Recorder(bad=["T1"])
    assert await q.drain(handler) == 0
    assert handler.seen == ["T1"]  # not retried before its backoff is over
    assert q.pending_count() == 1 and q.pending_count(due_only=True) == 0
    with sqlite3.connect(q.path) as c:
        row = c.execute("SELECT attempts, not_before, last_error FROM jobs").fetchone()
    assert row[0] == 1 and row[1] > time.time() + 20 and "cannot extract" in row[2]
    q.close()


async def test_worker_batches_and_flush(tmp_path: Path) -> None:
    q = make_queue(tmp_path, batch_size=3, flush_interval=60.0)
    handler = Recorder()
    worker = asyncio.create_task(q.run(handler))
    try:
        for i in range(4):
            q.enqueue(turn(i))
        # a full batch goes at once; the partial one waits for the interval or a flush
        for _ in range(200):
            if handler.batches:
                break
            await asyncio.sleep(0.01)
        assert handler.batches == [["T0", "T1", "T2"]]
        assert await q.flush(timeout=5) is True
        assert handler.batches[-1] == ["T3"]
        # a turn written straight to the file by another process is picked up too
        enqueue_turn(tmp_path / "queue.db", turn(9))
        assert await q.flush(timeout=5) is True
        assert handler.seen[-1] == "T9"
    finally:
        worker.cancel()
        with pytest.raises(asyncio.CancelledError):
            await worker
    assert q.pending_count() == 0
    q.close()


async def test_partial_batch_goes_after_flush_interval(tmp_path: Path) -> None:
    q = make_queue(tmp_path, batch_size=10, flush_interval=0.05)
    handler = Recorder()
    worker = asyncio.create_task(q.run(handler))
    try:
        q.enqueue(turn(1))
        for _ in range(300):
            if handler.batches:
                break
            await asyncio.sleep(0.01)
        assert handler.batches == [["T1"]]
    finally:
        worker.cancel()
        with pytest.raises(asyncio.CancelledError):
            await worker
    q.close()


async def test_one_consumer_at_a_time(tmp_path: Path) -> None:
    q1, q2 = make_queue(tmp_path), make_queue(tmp_path)
    worker = asyncio.create_task(q1.run(Recorder()))
    await asyncio.sleep(0.05)
    try:
        with pytest.raises(QueueError, match="another worker"):
            await q2.drain(Recorder())
    finally:
        worker.cancel()
        with pytest.raises(asyncio.CancelledError):
            await worker
    assert await q2.drain(Recorder()) == 0  # the lock is released on stop
    q1.close()
    q2.close()


def test_enqueue_from_plain_stdlib_process(tmp_path: Path) -> None:
    """A hook process appends with the standard library only (no numpy, aiosqlite, anthropic)."""
    db = tmp_path / "queue.db"
    code = (
        "import sys, json\n"
        "from dexai_memory.capture.queue import enqueue_turn\n"
        f"ok = enqueue_turn({str(db)!r}, {{'id': 'H1', 'user_id': 'u', 'content': 'I moved to Lisbon', "
        "'session_id': 's'}, context=['earlier'])\n"
        "again = enqueue_turn(" + repr(str(db)) + ", {'id': 'H1', 'user_id': 'u', 'content': 'x'})\n"
        "heavy = sorted(m for m in ('numpy', 'aiosqlite', 'anthropic', 'sqlean', 'yaml') if m in sys.modules)\n"
        "print(json.dumps([ok, again, heavy]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == '[true, false, []]'
    q = make_queue(tmp_path)
    jobs: list[Job] = []

    async def take(batch: Sequence[Job]) -> None:
        jobs.extend(batch)

    assert asyncio.run(q.drain(take)) == 1
    assert jobs[0].turn.content == "I moved to Lisbon" and jobs[0].context == ("earlier",)
    q.close()


# --------------------------------------------------------------------------- crash safety
N_TURNS = 15


def _worker(home: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tests.queue_worker", str(home), mode, str(N_TURNS)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


@pytest.mark.parametrize("replay", ["fast", "fast-reworded"])
def test_sigkill_mid_batch_loses_nothing_and_does_nothing_twice(tmp_path: Path, replay: str) -> None:
    """``fast-reworded``: the restarted worker's extractor words notes differently (a model's second
    call); the notes journaled before the kill are reused, so nothing is stored twice."""
    home = tmp_path / "h"
    proc = _worker(home, "slow")
    stored = 0
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            if line.startswith("STORED"):
                stored += 1
                if stored == 7:  # batch 1 (5 turns) done, batch 2 two notes in: kill mid-batch
                    break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stdout.close()
        assert proc.stderr is not None
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    assert stored == 7

    again = _worker(home, replay)
    out, err = again.communicate(timeout=60)
    assert again.returncode == 0, err
    assert "DONE" in out
    assert "'skipped': 2" in out  # the two notes stored before the kill were replayed and recognised

    from dexai_memory.providers.native import NativeProvider

    async def stored_memories() -> list[Memory]:
        async with NativeProvider(home / "memory.db") as p:
            return await p.list(user_id="u", filters=SearchFilters(valid_only=False, include_archived=True),
                                limit=1000)

    memories = asyncio.run(stored_memories())
    by_source: dict[str, int] = {}
    for m in memories:
        for s in m.source_ids:
            by_source[s] = by_source.get(s, 0) + 1
    assert by_source == {f"T{i}": 1 for i in range(N_TURNS)}  # every turn stored, each exactly once
    assert all(m.mention_count == 1 for m in memories)
    reworded = sorted(m.source_ids[0] for m in memories if m.content.startswith("Entry "))
    if replay == "fast-reworded":  # batch 2 came from its journal; batch 3 was extracted by the new wording
        assert reworded == sorted(f"T{i}" for i in range(10, N_TURNS))
    else:
        assert reworded == []
    q = ExtractionQueue(home / "queue.db").open()
    s = q.stats()
    assert (s.pending, s.done, s.dead) == (0, N_TURNS, 0)
    q.close()


# --------------------------------------------------------------------------- notes journal
def test_version_1_queue_file_gains_the_notes_journal(tmp_path: Path) -> None:
    import sqlite3

    from dexai_memory.capture.queue_file import SCHEMA_VERSION

    path = tmp_path / "queue.db"
    old = sqlite3.connect(path)
    old.executescript("""
        CREATE TABLE jobs (id INTEGER PRIMARY KEY, user_id TEXT NOT NULL, turn_id TEXT NOT NULL,
            payload TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0,
            not_before REAL NOT NULL DEFAULT 0, last_error TEXT, enqueued_at REAL NOT NULL,
            updated_at REAL NOT NULL, UNIQUE (user_id, turn_id));
        PRAGMA user_version = 1;""")
    old.close()
    assert enqueue_turn(path, {"id": "t1", "user_id": "u", "content": "I live in Oslo"}) is True
    conn = sqlite3.connect(path)
    assert "notes" in {r[1] for r in conn.execute("PRAGMA table_info(jobs)")}
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert "hook_events" in {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()


async def test_journaled_notes_come_back_with_the_job(tmp_path: Path) -> None:
    from dexai_memory.models import Commitment, ExtractedNote, MemoryType, utcnow

    note = ExtractedNote("Sam will call Ana on Friday", type=MemoryType.COMMITMENT, importance=7, confidence=0.9,
                         source_ids=("t1",), event_date="2026-11-27", entities=("Sam", "Ana"), category="decision",
                         commitment=Commitment("call Ana", who="Ana", due_at=utcnow(), due_text="Friday"))
    assert ExtractedNote.from_dict(note.to_dict()) == note
    q = ExtractionQueue(tmp_path / "queue.db").open()
    q.enqueue(Turn(id="t1", user_id="u", content="I'll call Ana on Friday"))
    seen: list[Job] = []

    async def fail_after_journal(jobs: Sequence[Job]) -> None:
        seen.extend(jobs)
        await q.save_notes({jobs[0].id: [note]})
        raise RuntimeError("crash before storing")

    q.max_retries, q.retry_backoff = 1, 0.0
    await q.drain(fail_after_journal)
    assert [j.notes for j in seen] == [None, (note,)]  # the retry sees what the first attempt extracted
    q.close()


def test_threads_share_the_queue_and_close_under_them_safely(tmp_path: Path) -> None:
    """Enqueue and inspection run on any thread (the daemon's health check reads in a thread
    while the loop enqueues and stop() closes): a sqlite3 connection used by two threads at once,
    or closed under one, crashes the whole process, so this runs in a child process."""
    script = f"""
import sys, threading
sys.path[:0] = {sys.path!r}
from dexai_memory.capture.queue import ExtractionQueue, QueueError
from dexai_memory.models import Turn
q = ExtractionQueue({str(tmp_path / "queue.db")!r}).open()
errors = []
def reader():
    try:
        while True:
            q.stats(); q.pending_count(); q.dead_letters()
    except QueueError:
        pass  # closed: a clear error, not a crash
    except Exception as exc:
        errors.append(exc)
def writer(k):
    try:
        for i in range(300):
            q.enqueue(Turn(id=f"T{{k}}-{{i}}", user_id="u", content="I use tabs for Go code, spaces elsewhere"))
    except QueueError:
        pass
    except Exception as exc:
        errors.append(exc)
threads = [threading.Thread(target=reader) for _ in range(3)] + [threading.Thread(target=writer, args=(k,)) for k in range(3)]
for t in threads: t.start()
import time; time.sleep(0.3)
q.close()
for t in threads: t.join()
assert not errors, errors
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"
