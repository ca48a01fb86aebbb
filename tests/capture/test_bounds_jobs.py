"""A job that never finishes never blocks the jobs behind it: killed each time, or failing each
time, it ends as a dead letter and the others are extracted."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from dexai_memory.capture.queue import ExtractionQueue, Job
from dexai_memory.errors import ExtractionError
from dexai_memory.models import Turn

REPO = Path(__file__).resolve().parents[2]

#: A worker process: drains the queue; a job whose text holds POISON kills the process (as an
#: out-of-memory kill would), every other job is written to done.txt.
WORKER = """
import asyncio, os, signal, sys
from pathlib import Path
from dexai_memory.capture.queue import ExtractionQueue

home = Path(sys.argv[1])

async def handle(jobs):
    for job in jobs:
        if "POISON" in job.turn.content:
            os.kill(os.getpid(), signal.SIGKILL)
    with open(home / "done.txt", "a") as fh:
        fh.writelines(job.turn.id + "\\n" for job in jobs)

queue = ExtractionQueue(home / "queue.db", batch_size=5, flush_interval=0.01, max_retries=3,
                        retry_backoff=0.0, max_killed_runs=3).open()
asyncio.run(queue.drain(handle))
queue.close()
"""


def _states(path: Path) -> dict[str, tuple[str, int, str | None]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT turn_id, status, runs, last_error FROM jobs").fetchall()
    return {r[0]: (r[1], int(r[2]), r[3]) for r in rows}


def test_a_job_that_kills_its_worker_every_time_becomes_a_dead_letter(tmp_path: Path) -> None:
    queue = ExtractionQueue(tmp_path / "queue.db").open()
    queue.enqueue(Turn(id="poison", user_id="u", content="POISON: a turn whose extraction runs out of memory"))
    for i in range(3):
        queue.enqueue(Turn(id=f"ok{i}", user_id="u", content=f"I moved to Lisbon in year {i}"))
    queue.close()
    exits = []
    for _ in range(8):  # a supervisor restarting the worker each time it dies
        proc = subprocess.run([sys.executable, "-c", WORKER, str(tmp_path)], cwd=REPO, capture_output=True,
                              text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
        exits.append(proc.returncode)
        if proc.returncode == 0:
            break
    # the first run (a batch of all four) and two runs of the poison alone die; the fourth start
    # sets it aside and extracts the others
    assert exits == [-signal.SIGKILL] * 3 + [0]
    states = _states(tmp_path / "queue.db")
    status, runs, error = states["poison"]
    assert status == "dead" and runs == 3 and error and "died" in error
    assert all(states[f"ok{i}"][0] == "done" for i in range(3))
    assert sorted((tmp_path / "done.txt").read_text().split()) == ["ok0", "ok1", "ok2"]

    queue = ExtractionQueue(tmp_path / "queue.db").open()
    [letter] = queue.dead_letters()
    assert letter.turn_id == "poison" and "POISON" in letter.content
    assert queue.retry_dead_letters() == 1  # put back with a fresh budget
    assert _states(tmp_path / "queue.db")["poison"][:2] == ("pending", 0)
    queue.close()


def test_a_job_that_raises_every_time_becomes_a_dead_letter_and_the_next_is_done(tmp_path: Path) -> None:
    queue = ExtractionQueue(tmp_path / "queue.db", batch_size=5, flush_interval=0.01, max_retries=2,
                            retry_backoff=0.0).open()
    queue.enqueue(Turn(id="bad", user_id="u", content="a turn the extractor always fails on"))
    queue.enqueue(Turn(id="good", user_id="u", content="I moved to Lisbon"))
    done: list[str] = []
    calls: list[list[str]] = []

    async def handle(jobs: Sequence[Job]) -> None:
        calls.append([j.turn.id for j in jobs])
        if any(j.turn.id == "bad" for j in jobs):
            raise ExtractionError("the model refused")
        done.extend(j.turn.id for j in jobs)

    asyncio.run(asyncio.wait_for(queue.drain(handle), 30))  # retries are due at once (no backoff)
    assert done == ["good"]
    [letter] = queue.dead_letters()
    assert letter.turn_id == "bad" and letter.attempts == 3 and "refused" in letter.error
    assert calls.count(["bad"]) == 3  # one failed batch, then alone: max_retries + 1 runs
    queue.close()


def test_a_stopped_worker_takes_its_run_back(tmp_path: Path) -> None:
    """A run cut short by the daemon's shutdown (cancelled) does not count against the job."""
    queue = ExtractionQueue(tmp_path / "queue.db", flush_interval=0.01).open()
    queue.enqueue(Turn(id="slow", user_id="u", content="I moved to Lisbon"))
    started = asyncio.Event()

    async def handle(jobs: Sequence[Job]) -> None:
        started.set()
        await asyncio.sleep(60)

    async def run_then_stop() -> None:
        worker = asyncio.create_task(queue.run(handle))
        await asyncio.wait_for(started.wait(), 10)
        assert _states(tmp_path / "queue.db")["slow"][1] == 1  # counted before the run began
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)

    asyncio.run(run_then_stop())
    assert _states(tmp_path / "queue.db")["slow"][:2] == ("pending", 0)
    queue.close()


def test_an_older_queue_file_gains_the_runs_column(tmp_path: Path) -> None:
    path = tmp_path / "queue.db"
    with sqlite3.connect(path) as conn:  # a version 3 file, before runs were counted
        conn.executescript(
            "CREATE TABLE jobs (id INTEGER PRIMARY KEY, user_id TEXT NOT NULL, turn_id TEXT NOT NULL, "
            "payload TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0, "
            "not_before REAL NOT NULL DEFAULT 0, last_error TEXT, enqueued_at REAL NOT NULL, "
            "updated_at REAL NOT NULL, notes TEXT, UNIQUE (user_id, turn_id));"
            "INSERT INTO jobs (user_id, turn_id, payload, enqueued_at, updated_at) VALUES "
            "('u', 't', '{\"turn\": {\"id\": \"t\", \"user_id\": \"u\", \"content\": \"I moved to Lisbon\"}}', 0, 0);"
            "PRAGMA user_version = 3;")
    queue = ExtractionQueue(path).open()
    seen: list[str] = []

    async def handle(jobs: Sequence[Job]) -> None:
        seen.extend(j.turn.id for j in jobs)

    asyncio.run(queue.drain(handle))
    queue.close()
    assert seen == ["t"] and _states(path)["t"] == ("done", 1, None)
