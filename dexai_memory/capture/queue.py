"""The durable extraction queue: gated turns wait here for the extractor.

Storage
    One SQLite file, ``<home>/queue.db`` (stdlib :mod:`sqlite3`, WAL,
    ``synchronous=NORMAL``), separate from the memory store so a hook process
    can write to it with nothing but the standard library
    (:func:`~dexai_memory.capture.queue_file.enqueue_turn`). A row of ``jobs``
    is one turn, keyed by ``(user_id, turn_id)``: enqueueing the same turn
    twice stores it once, and a turn already done is never queued again.
    ``dead_letters`` is a view of the jobs that failed for good. The file's
    schema and connections are in :mod:`dexai_memory.capture.queue_file`, the
    SQL over its rows in :mod:`dexai_memory.capture.jobs`; this module holds
    the worker's side, :class:`ExtractionQueue`.

Durability
    :meth:`ExtractionQueue.enqueue` commits the row before it returns (one
    indexed ``INSERT OR IGNORE``; WAL with ``synchronous=NORMAL`` does not
    fsync on commit, so it takes tens of microseconds, and a committed row
    survives a crash or ``kill -9`` of the process - only a power loss can
    lose the last commits). Nothing is ever only in memory: the in-memory
    buffer is a window onto the table.

Exactly once
    A job is marked ``done`` only after its results are stored, so after a
    crash it is processed again (at least once). Processing is made
    idempotent by the pipeline (:mod:`dexai_memory.pipeline`), checked
    *before* each write, because the memory store is another database (or
    another service) and cannot share the queue's transaction:

    * every memory written from a turn gets a deterministic id derived from
      the user, the source turn ids and the content; if that id already
      exists the note was stored before the crash and is skipped;
    * a note that the supersession step would merge into an existing memory
      (UPDATE / NOOP) is skipped when that memory's ``source_ids`` already
      contain all of the note's turns: the turn was counted already.

    * the notes extracted for a job are journaled in its row
      (:meth:`ExtractionQueue.save_notes`, column ``notes``) before any is
      stored, and a retry reuses them instead of extracting again, so a
      model that words a note differently on a second call (Haiku) cannot
      store it twice.

    Together: exactly once, with the offline extractor and with Haiku.

Memory bound and overflow
    At most ``max_queue_size`` jobs are held in memory. Beyond it the
    ``overflow_policy`` applies, and is logged: ``spill`` keeps the job on
    disk only and loads it when the buffer drains (a turn that passed the
    gate is never dropped); ``reject`` refuses it with :class:`QueueError`.

Failures
    A failed batch is retried job by job, so one bad turn does not hold back
    the others. A failed job waits ``retry_backoff * 2**(attempt-1)`` seconds
    (kept across restarts) and after ``max_retries`` retries becomes a dead
    letter with its error; :meth:`ExtractionQueue.retry_dead_letters` (``dexai
    memory retry``) puts dead letters back.

    A run that never ends the same way counts too: each run of a job is
    counted on disk *before* it begins (:func:`~dexai_memory.capture.jobs.mark_started`),
    so a turn whose extraction kills the process every time (out of memory,
    SIGKILL) is seen: after ``max_killed_runs`` runs (``limits.max_killed_runs``)
    that ended with the process, it becomes a dead letter when it is next
    picked up. A job that was run before runs alone, never in a batch, so the
    jobs queued behind it are extracted (and a job only sharing a batch with
    the culprit is not blamed twice). A worker stopped in the middle of a run
    (the daemon's shutdown) takes its count back.

Bounds
    A turn's text and each of its context lines are held to ``max_turn_chars``
    (``limits.max_turn_chars``: head and tail around ``[... N characters cut
    ...]``, :func:`~dexai_memory.limits.clip`) when queued and again when read
    back, so no job costs the extractor more than that, whoever wrote the row.

One consumer
    :meth:`ExtractionQueue.run` (the worker) holds an exclusive lock file
    (``queue.db.lock``) while it runs, so two daemons never process the same
    file. Enqueueing needs no lock.

Only the standard library is imported here.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import logging
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import QueueError
from ..models import ExtractedNote, Turn
from . import jobs as table
from .jobs import DeadLetter, Job, row_to_job
from .queue_file import (  # the hook side, importable from here too
    INSERT_JOB,
    MAX_KILLED_RUNS,
    MAX_TURN_CHARS,
    QUEUE_FILENAME,
    claim_worker_lock,
    connect,
    enqueue_turn,
    job_payload,
    queue_path,
    release_worker_lock,
    retry_locked,
)

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["QUEUE_FILENAME", "DeadLetter", "ExtractionQueue", "Job", "JobHandler", "QueueError", "QueueStats",
           "enqueue_turn", "queue_path"]

logger = logging.getLogger(__name__)


def _insert(c: sqlite3.Connection, row: tuple[Any, ...]) -> tuple[int, int | None]:
    cur = c.execute(INSERT_JOB, row)
    return cur.rowcount, cur.lastrowid


#: What the worker calls with a batch of jobs; raising marks the batch failed.
JobHandler = Callable[[Sequence["Job"]], Awaitable[None]]


@dataclass(slots=True)
class QueueStats:
    """Counters of one queue instance (since it was opened) and the table's counts."""

    pending: int = 0
    in_memory: int = 0
    dead: int = 0
    done: int = 0
    processed: int = 0
    failed_attempts: int = 0
    spilled: int = 0
    rejected: int = 0
    batches: int = 0
    last_batch_ms: float | None = None
    mean_batch_ms: float | None = None
    oldest_pending_age_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__ if k != "extra"} | self.extra  # type: ignore[attr-defined]


class ExtractionQueue:
    """The queue (see the module docstring). ``open()`` / ``close()`` or ``with``.

    ``enqueue`` is synchronous and never waits on extraction; the worker
    coroutine :meth:`run` (owned by the daemon) or :meth:`drain` (one-shot,
    for the CLI) processes jobs with a :data:`JobHandler`.
    """

    def __init__(self, path: str | Path, *, batch_size: int = 5, flush_interval: float = 5.0,
                 max_queue_size: int = 1000, overflow_policy: str = "spill", max_retries: int = 3,
                 retry_backoff: float = 2.0, max_turn_chars: int = MAX_TURN_CHARS,
                 max_killed_runs: int = MAX_KILLED_RUNS):
        if overflow_policy not in ("spill", "reject"):
            raise QueueError(f"unknown overflow policy {overflow_policy!r} (spill or reject)")
        self.path = Path(path)
        self.batch_size = max(1, batch_size)
        self.flush_interval = max(0.0, flush_interval)
        self.max_queue_size = max(1, max_queue_size)
        self.overflow_policy = overflow_policy
        self.max_retries = max(0, max_retries)
        self.retry_backoff = max(0.0, retry_backoff)
        self.max_turn_chars = max(1000, max_turn_chars)
        self.max_killed_runs = max(1, max_killed_runs)
        self._conn: sqlite3.Connection | None = None  # enqueue (caller's thread)
        self._wconn: sqlite3.Connection | None = None  # worker (worker threads)
        self._wlock = threading.Lock()
        self._clock = threading.Lock()  # the caller's connection: enqueue and inspection, any thread
        self._buffer: collections.deque[Job] = collections.deque()
        self._known: set[int] = set()
        self._first_buffered_at: float | None = None
        self._wake: asyncio.Event | None = None
        self._idle: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._flush_requested = False
        self._running = False
        self._lock_fd: int | None = None
        self._stats = QueueStats()
        self._batch_ms: list[float] = []

    @classmethod
    def from_settings(cls, settings: Settings) -> ExtractionQueue:
        """A queue on ``<home>/queue.db`` with the ``extraction`` settings."""
        ex = settings.extraction
        return cls(queue_path(settings.home), batch_size=ex.batch_size, flush_interval=ex.flush_interval_seconds,
                   max_queue_size=ex.max_queue_size, overflow_policy=ex.overflow_policy,
                   max_retries=ex.max_retries, retry_backoff=ex.retry_backoff_seconds,
                   max_turn_chars=settings.limits.max_turn_chars, max_killed_runs=settings.limits.max_killed_runs)

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> ExtractionQueue:
        """Open (and create) the file. Idempotent. Raises :class:`QueueError`."""
        if self._conn is None:
            self._conn = connect(self.path)
            self._wconn = connect(self.path)
        return self

    def close(self) -> None:
        """Close the file. Everything accepted is already on disk."""
        # Waits for any thread still running a statement (a worker after a cancel, a health check).
        with self._clock, self._wlock:
            for conn in (self._conn, self._wconn):
                if conn is not None:
                    conn.close()
            self._conn = self._wconn = None
        self._running = False
        if self._lock_fd is not None:
            release_worker_lock(self._lock_fd)
            self._lock_fd = None
        self._buffer.clear()
        self._known.clear()

    def __enter__(self) -> ExtractionQueue:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # A sqlite3 connection must never run statements on two threads at once nor be closed under
    # one (that crashes the process, not just the call): each connection has its own lock, and
    # every statement runs under it, on whichever thread asks.
    def _sql(self, fn: Callable[[sqlite3.Connection], Any], what: str) -> Any:
        with self._clock:
            conn = self._conn
            if conn is None:
                raise QueueError("the extraction queue is not open")
            return retry_locked(lambda: fn(conn), what)

    def _worker_sql(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        with self._wlock:
            conn = self._wconn
            if conn is None:
                raise QueueError("the extraction queue is not open")
            return retry_locked(lambda: fn(conn), "queue write")

    async def _w(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        return await asyncio.to_thread(self._worker_sql, fn)

    # ------------------------------------------------------------------ producer side
    def enqueue(self, turn: Turn, context: Sequence[str] = ()) -> bool:
        """Accept a turn: commit it to disk and hand it to the worker. Never waits on extraction.

        Returns False when the turn (same user and id) was queued before.
        Raises :class:`QueueError` when the file cannot be written, or when
        the buffer is full and the overflow policy is ``reject``.
        """
        if self.overflow_policy == "reject" and len(self._buffer) >= self.max_queue_size:
            self._stats.rejected += 1
            logger.warning("extraction queue full (%d jobs in memory): turn %s rejected (overflow_policy=reject)",
                           len(self._buffer), turn.id)
            raise QueueError(f"the extraction queue is full ({self.max_queue_size} jobs); turn {turn.id} rejected")
        user_id, turn_id, payload = job_payload(turn, context, max_chars=self.max_turn_chars)
        now = time.time()
        try:
            rowcount, lastrowid = self._sql(lambda c: _insert(c, (user_id, turn_id, payload, now, now)),
                                            f"enqueue {turn_id}")
        except sqlite3.Error as exc:
            raise QueueError(f"cannot enqueue turn {turn_id}: {exc}") from exc
        if rowcount == 0:
            logger.debug("turn %s of %s already queued: ignored", turn_id, user_id)
            return False
        job_id = int(lastrowid or 0)
        if len(self._buffer) < self.max_queue_size:
            self._buffer.append(row_to_job((job_id, payload, 0, None), self.max_turn_chars))
            self._known.add(job_id)
            if self._first_buffered_at is None:
                self._first_buffered_at = time.monotonic()
        else:
            self._stats.spilled += 1
            level = logging.WARNING if self._stats.spilled == 1 or self._stats.spilled % 100 == 0 else logging.DEBUG
            logger.log(level, "extraction queue full (%d jobs in memory): turn %s spilled to disk, processed "
                       "later (%d spilled so far)", len(self._buffer), turn_id, self._stats.spilled)
        if len(self._buffer) >= self.batch_size:
            self.notify()
        return True

    def notify(self) -> None:
        """Wake the worker now (for example after another process wrote to the file, or a hook's
        turn ended)."""
        if self._wake is None or self._loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._wake.set()
        else:
            self._loop.call_soon_threadsafe(self._wake.set)

    # ------------------------------------------------------------------ consumer side
    @property
    def running(self) -> bool:
        """True while a worker (:meth:`run` or :meth:`drain`) is consuming."""
        return self._running

    async def run(self, handler: JobHandler) -> None:
        """The worker loop: batches of ``batch_size`` (or fewer after ``flush_interval``
        seconds, or on :meth:`flush`) go to ``handler``. Runs until cancelled.

        Raises :class:`QueueError` if another worker holds the queue.
        """
        await self._consume(handler, forever=True)

    async def drain(self, handler: JobHandler) -> int:
        """Process every job that is due now, then return how many were done.

        For one-shot callers (``dexai memory retry``, ``ingest``, tests).
        """
        before = self._stats.processed
        await self._consume(handler, forever=False)
        return self._stats.processed - before

    def claim(self) -> None:
        """Become this file's one consumer now (done by :meth:`run` / :meth:`drain` otherwise).

        Raises :class:`QueueError` if another worker holds the queue.
        """
        self.open()
        if self._running:
            raise QueueError("a worker is already consuming this queue")
        self._lock_fd = claim_worker_lock(self.path)
        self._running = True
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        with contextlib.suppress(RuntimeError):
            self._loop = asyncio.get_running_loop()

    async def _consume(self, handler: JobHandler, *, forever: bool) -> None:
        if not (self._running and self._lock_fd is not None):
            self.claim()
        self._loop = asyncio.get_running_loop()
        try:
            while True:
                batch = await self._next_batch(forever)
                if batch is None:
                    return
                await self._process(batch, handler)
        finally:
            self._running = False
            self._wake = None
            if self._idle is not None:
                self._idle.set()
            if self._lock_fd is not None:
                release_worker_lock(self._lock_fd)
                self._lock_fd = None

    async def _refill(self) -> int:
        room = self.max_queue_size - len(self._buffer)
        if room <= 0:
            return 0
        now = time.time()
        rows = await self._w(lambda c: c.execute(
            "SELECT id, payload, attempts, notes, runs FROM jobs WHERE status = 'pending' AND not_before <= ? "
            "ORDER BY id LIMIT ?", (now, room + len(self._known))).fetchall())
        added = 0
        for row in rows:
            if int(row[0]) in self._known or added >= room:
                continue
            killed = int(row[4]) - int(row[2])  # runs begun that ended with the process
            if killed >= self.max_killed_runs:
                logger.error("extraction of job %s: the worker died during %d of its runs (killed, out of memory?); "
                             "kept as a dead letter", row[0], killed)
                await self._w(functools.partial(
                    table.mark_failed, ids=[int(row[0])], dead=True, attempts=int(row[4]),
                    error=f"the worker died during {killed} runs of this job (killed, out of memory?)"))
                continue
            try:
                job = row_to_job(row, self.max_turn_chars)
            except (ValueError, KeyError, TypeError) as exc:
                await self._w(functools.partial(table.mark_failed, ids=[int(row[0])],
                                                error=f"unreadable queued payload: {exc}", dead=True))
                continue
            self._buffer.append(job)
            self._known.add(job.id)
            added += 1
        if added and self._first_buffered_at is None:
            self._first_buffered_at = time.monotonic()
        return added

    async def _next_wait(self) -> float:
        """Seconds until the earliest job in backoff is due (capped)."""
        nb = await self._w(lambda c: c.execute(
            "SELECT MIN(not_before) FROM jobs WHERE status = 'pending'").fetchone()[0])
        cap = self.flush_interval or 1.0
        if nb is None:
            return cap
        return max(0.01, min(cap, float(nb) - time.time()))

    async def _next_batch(self, forever: bool) -> list[Job] | None:
        assert self._wake is not None and self._idle is not None
        while True:
            if not self._buffer:
                await self._refill()
            if not self._buffer:
                self._flush_requested = False
                self._idle.set()
                if not forever:
                    return None
                self._wake.clear()
                delay = await self._next_wait()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), delay)
                continue
            self._idle.clear()
            age = time.monotonic() - (self._first_buffered_at or time.monotonic())
            if (len(self._buffer) >= self.batch_size or self._flush_requested or not forever
                    or age >= self.flush_interval or self._buffer[0].runs):
                batch = self._take_batch()
                self._first_buffered_at = time.monotonic() if self._buffer else None
                return batch
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.flush_interval - age)

    def _take_batch(self) -> list[Job]:
        """The next batch from the buffer: a job run before (and not finished) alone, else up to
        ``batch_size`` fresh jobs."""
        if self._buffer[0].runs:
            return [self._buffer.popleft()]
        batch: list[Job] = []
        while self._buffer and len(batch) < self.batch_size and not self._buffer[0].runs:
            batch.append(self._buffer.popleft())
        return batch

    async def _process(self, batch: list[Job], handler: JobHandler) -> None:
        start = time.perf_counter()
        ids = [job.id for job in batch]
        await self._w(lambda c: table.mark_started(c, ids))  # on disk before the run: a kill counts
        try:
            try:
                await handler(batch)
            except Exception as exc:  # any failure is kept (retry, then dead letter), never dropped
                if len(batch) == 1:
                    await self._failed(batch[0], exc)
                else:
                    logger.warning("extraction batch of %d failed (%s): retrying its jobs one by one",
                                   len(batch), exc)
                    for job in batch:
                        try:
                            await handler([job])
                        except Exception as one_exc:  # noqa: BLE001 - same policy, per job
                            await self._failed(job, one_exc)
                        else:
                            await self._done([job])
            else:
                await self._done(batch)
        except asyncio.CancelledError:
            # bounded cleanup: the jobs are still 'pending' on disk; the stopped run does not count
            # against them; forget them in memory
            with contextlib.suppress(QueueError, sqlite3.Error):
                self._worker_sql(lambda c: table.unmark_started(c, ids))
            for job in batch:
                self._known.discard(job.id)
            raise
        finally:
            for job in batch:
                self._known.discard(job.id)
        elapsed = (time.perf_counter() - start) * 1000.0
        self._stats.batches += 1
        self._stats.last_batch_ms = round(elapsed, 3)
        self._batch_ms.append(elapsed)
        del self._batch_ms[:-100]
        self._stats.mean_batch_ms = round(sum(self._batch_ms) / len(self._batch_ms), 3)

    async def save_notes(self, notes: Mapping[int, Sequence[ExtractedNote]]) -> None:
        """Journal the notes extracted for jobs (job id -> notes) before they are stored.

        If the process dies before the jobs are ``done``, the retry reuses
        these notes instead of extracting again: a model that words a note
        differently on the second call cannot store it twice.
        """
        if not notes:
            return
        await self._w(lambda c: table.journal_notes(c, notes))

    async def _done(self, jobs: Sequence[Job]) -> None:
        ids = [j.id for j in jobs]
        await self._w(lambda c: table.mark_done(c, ids))
        self._stats.processed += len(ids)

    async def _failed(self, job: Job, exc: BaseException) -> None:
        attempts = job.attempts + 1
        self._stats.failed_attempts += 1
        error = f"{type(exc).__name__}: {exc}"
        if attempts > self.max_retries:
            logger.error("extraction of turn %s (user %s) failed %d time(s), kept as a dead letter: %s",
                         job.turn.id, job.turn.user_id, attempts, error)
            await self._w(lambda c: table.mark_failed(c, [job.id], error, dead=True, attempts=attempts))
        else:
            delay = self.retry_backoff * 2 ** (attempts - 1)
            logger.warning("extraction of turn %s (user %s) failed (attempt %d of %d), retrying in %.1fs: %s",
                           job.turn.id, job.turn.user_id, attempts, self.max_retries + 1, delay, error)
            await self._w(lambda c: table.mark_failed(c, [job.id], error, dead=False, attempts=attempts,
                                                      delay=delay))

    async def flush(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109 - part of the API
        """Process everything that is due now, without waiting for a full batch.

        Returns True when nothing due is left (jobs waiting for a retry
        backoff stay on disk), False after ``timeout`` seconds or when no
        worker is running (the jobs then stay on disk for the next one).
        """
        if not self._running or self._idle is None:
            return self.pending_count(due_only=True) == 0
        self._flush_requested = True
        self._idle.clear()
        self.notify()
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True

    # ------------------------------------------------------------------ inspection
    def pending_count(self, *, due_only: bool = False) -> int:
        """Jobs waiting on disk (optionally only those not in a retry backoff)."""
        return int(self._sql(lambda c: table.pending_count(c, due_only=due_only), "count jobs"))

    def stats(self) -> QueueStats:
        """Counts from the file plus this instance's counters."""
        counts, oldest = self._sql(table.status_counts, "count jobs")
        s = self._stats
        s.pending, s.dead, s.done = counts.get("pending", 0), counts.get("dead", 0), counts.get("done", 0)
        s.in_memory = len(self._buffer)
        s.oldest_pending_age_s = round(time.time() - oldest, 3) if oldest else None
        return s

    def dead_letters(self, *, user_id: str | None = None, limit: int = 1000) -> list[DeadLetter]:
        """Jobs that failed for good, oldest first (optionally one user's)."""
        return list(self._sql(lambda c: table.dead_letters(c, user_id=user_id, limit=limit), "read dead letters"))

    def retry_dead_letters(self, ids: Iterable[int] | None = None, *, user_id: str | None = None) -> int:
        """Put dead letters back in the queue with a fresh retry budget. Returns how many."""
        count = int(self._sql(lambda c: table.retry_dead_letters(c, ids, user_id=user_id), "retry dead letters"))
        if count:
            logger.info("%d dead letter(s) put back in the extraction queue", count)
            self.notify()
        return count

    def purge_done(self, older_than_seconds: float = 30 * 86400) -> int:
        """Delete ``done`` rows older than this (their turns could then be queued again)."""
        return int(self._sql(lambda c: table.purge_done(c, older_than_seconds), "purge done jobs"))
