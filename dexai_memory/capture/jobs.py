"""The rows of the queue's ``jobs`` table: a queued :class:`Job`, a :class:`DeadLetter`, and the
SQL that marks jobs done or failed and lists, retries and purges them.

Functions take a :class:`sqlite3.Connection` on the queue file
(:func:`dexai_memory.capture.queue_file.connect`); the
:class:`~dexai_memory.capture.queue.ExtractionQueue` calls them from its own
threads. ``dead_letters`` is a view of the jobs that failed for good.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import DexaiMemoryError
from ..limits import LimitsConfig, clip
from ..models import ExtractedNote, Turn

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Job:
    """One queued turn with the recent context it was said in."""

    id: int
    turn: Turn
    context: tuple[str, ...] = ()
    #: Failed runs so far (the handler raised).
    attempts: int = 0
    #: The notes extracted from this turn by an earlier attempt that did not finish (see
    #: :meth:`ExtractionQueue.save_notes`), or None if it was never extracted.
    notes: tuple[ExtractedNote, ...] | None = None
    #: Runs begun so far, counted on disk before each run starts: ``runs - attempts`` runs ended
    #: with the process (killed, out of memory) rather than with a result or an error.
    runs: int = 0

    @property
    def unfinished(self) -> int:
        """Runs of this job the worker died in."""
        return max(0, self.runs - self.attempts)

    @property
    def key(self) -> tuple[str, str]:
        """The idempotency key: (user id, turn id)."""
        return self.turn.user_id, self.turn.id


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A job that failed ``max_retries + 1`` times, with its last error."""

    id: int
    user_id: str
    turn_id: str
    attempts: int
    error: str
    failed_at: float
    content: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "user_id": self.user_id, "turn_id": self.turn_id, "attempts": self.attempts,
                "error": self.error, "failed_at": self.failed_at, "content": self.content}


def row_to_job(row: Sequence[Any], max_chars: int = LimitsConfig.max_turn_chars) -> Job:
    """The job of a ``jobs`` row read as (id, payload, attempts, notes[, runs]); the turn's text and its
    context lines held to ``max_chars`` (a row an older version queued uncapped)."""
    data = json.loads(row[1])
    turn = data["turn"]
    if isinstance(turn, dict) and isinstance(turn.get("content"), str):
        turn["content"] = clip(turn["content"], max_chars)
    notes = None
    if row[3] is not None:
        try:
            notes = tuple(ExtractedNote.from_dict(n) for n in json.loads(row[3]))
        except (ValueError, KeyError, TypeError, DexaiMemoryError) as exc:  # extract again rather than lose the turn
            logger.warning("job %s: unreadable notes journal (%s); extracting again", row[0], exc)
    context = tuple(clip(str(c), max_chars) for c in data.get("context") or ())
    return Job(id=int(row[0]), turn=Turn.from_dict(turn), context=context, attempts=int(row[2]), notes=notes,
               runs=int(row[4]) if len(row) > 4 else 0)


def journal_notes(c: sqlite3.Connection, notes: Mapping[int, Sequence[ExtractedNote]]) -> None:
    """Save the notes extracted for jobs (job id -> notes) in their rows, in one transaction."""
    rows = [(json.dumps([n.to_dict() for n in ns]), time.time(), job_id) for job_id, ns in notes.items()]
    c.execute("BEGIN IMMEDIATE")
    c.executemany("UPDATE jobs SET notes = ?, updated_at = ? WHERE id = ?", rows)
    c.execute("COMMIT")


def mark_started(c: sqlite3.Connection, ids: Sequence[int]) -> None:
    """Count one more run of jobs, committed before the run begins: a job whose run kills the
    process (out of memory, SIGKILL) is counted all the same, and its budget runs out."""
    c.execute("BEGIN IMMEDIATE")
    c.executemany("UPDATE jobs SET runs = runs + 1, updated_at = ? WHERE id = ? AND status = 'pending'",
                  [(time.time(), i) for i in ids])
    c.execute("COMMIT")


def unmark_started(c: sqlite3.Connection, ids: Sequence[int]) -> None:
    """Take back the run :func:`mark_started` counted for jobs still pending (the worker was
    stopped: the run did not fail, the job waits for the next start)."""
    c.executemany("UPDATE jobs SET runs = MAX(0, runs - 1) WHERE id = ? AND status = 'pending'",
                  [(i,) for i in ids])


def mark_done(c: sqlite3.Connection, ids: Sequence[int]) -> None:
    """Mark jobs ``done`` (their results are stored), in one transaction."""
    now = time.time()
    c.execute("BEGIN IMMEDIATE")
    c.executemany("UPDATE jobs SET status = 'done', updated_at = ?, last_error = NULL WHERE id = ?",
                  [(now, i) for i in ids])
    c.execute("COMMIT")


def mark_failed(c: sqlite3.Connection, ids: Iterable[int], error: str, *, dead: bool,
                attempts: int | None = None, delay: float = 0.0) -> None:
    """Record a failed attempt of jobs: back to ``pending`` after ``delay`` seconds, or ``dead``
    (a dead letter); ``attempts`` (None: one more than before) and the error are kept."""
    now = time.time()
    status = "dead" if dead else "pending"
    rows = [(status, now + delay, error[:4000], now, attempts, i) for i in ids]
    c.executemany("UPDATE jobs SET status = ?, not_before = ?, last_error = ?, updated_at = ?, "
                  "attempts = COALESCE(?, attempts + 1) WHERE id = ?", rows)


def pending_count(c: sqlite3.Connection, *, due_only: bool = False) -> int:
    """Jobs waiting on disk (optionally only those not in a retry backoff)."""
    if due_only:
        row = c.execute("SELECT COUNT(*) FROM jobs WHERE status = 'pending' AND not_before <= ?",
                        (time.time(),)).fetchone()
    else:
        row = c.execute("SELECT COUNT(*) FROM jobs WHERE status = 'pending'").fetchone()
    return int(row[0])


def status_counts(c: sqlite3.Connection) -> tuple[dict[str, int], float | None]:
    """(jobs per status, when the oldest pending job was enqueued or None)."""
    counts = dict(c.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status").fetchall())
    oldest = c.execute("SELECT MIN(enqueued_at) FROM jobs WHERE status = 'pending'").fetchone()[0]
    return counts, oldest


def dead_letters(c: sqlite3.Connection, *, user_id: str | None = None, limit: int = 1000) -> list[DeadLetter]:
    """Jobs that failed for good, oldest first (optionally one user's)."""
    sql = "SELECT id, user_id, turn_id, attempts, error, failed_at, payload FROM dead_letters"
    params: list[Any] = []
    if user_id is not None:
        sql += " WHERE user_id = ?"
        params.append(user_id)
    sql += " ORDER BY id LIMIT ?"
    params.append(limit)
    out = []
    for r in c.execute(sql, params).fetchall():
        try:
            content = str(json.loads(r[6])["turn"]["content"])
        except (ValueError, KeyError, TypeError):
            content = ""
        out.append(DeadLetter(int(r[0]), r[1], r[2], int(r[3]), r[4] or "", float(r[5]), content))
    return out


def retry_dead_letters(c: sqlite3.Connection, ids: Iterable[int] | None = None, *,
                       user_id: str | None = None) -> int:
    """Put dead letters back to ``pending`` with a fresh retry budget. Returns how many."""
    now = time.time()
    sql = ("UPDATE jobs SET status = 'pending', attempts = 0, runs = 0, not_before = 0, updated_at = ? "
           "WHERE status = 'dead'")
    params: list[Any] = [now]
    if user_id is not None:
        sql += " AND user_id = ?"
        params.append(user_id)
    if ids is not None:
        id_list = [int(i) for i in ids]
        if not id_list:
            return 0
        sql += f" AND id IN ({','.join('?' * len(id_list))})"
        params.extend(id_list)
    return int(c.execute(sql, params).rowcount)


def purge_done(c: sqlite3.Connection, older_than_seconds: float) -> int:
    """Delete ``done`` rows older than this (their turns could then be queued again)."""
    cutoff = time.time() - older_than_seconds
    return int(c.execute("DELETE FROM jobs WHERE status = 'done' AND updated_at < ?", (cutoff,)).rowcount)
