"""The queue file, ``<home>/queue.db``: its schema, connections and the hook's enqueue.

What a hook process needs to put a turn in the extraction queue, with nothing
but the standard library and no class to build: :func:`connect` (creates the
file 0600 with its schema, WAL, ``synchronous=NORMAL``, and upgrades a
version 1 file), :func:`enqueue_turn` (one committed ``INSERT OR IGNORE``), the hook events
no daemon answered in time (:func:`save_event`, replayed by the daemon at its start),
:func:`retry_locked` (bounded retries while another process holds the file
locked) and the worker's lock file (:func:`claim_worker_lock`).
:class:`~dexai_memory.capture.queue.ExtractionQueue` (the daemon's side)
opens the same file through :func:`connect`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..datadir import PRIVATE_DIR_MODE, private_file
from ..errors import QueueError
from ..limits import LimitsConfig, clip
from ..models import Turn

logger = logging.getLogger(__name__)

QUEUE_FILENAME = "queue.db"
SCHEMA_VERSION = 4
_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY,
    user_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    not_before REAL NOT NULL DEFAULT 0,
    last_error TEXT,
    enqueued_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    notes TEXT,
    runs INTEGER NOT NULL DEFAULT 0,
    UNIQUE (user_id, turn_id)
);
CREATE INDEX IF NOT EXISTS ix_jobs_status ON jobs (status, not_before, id);
CREATE TABLE IF NOT EXISTS hook_events (
    id INTEGER PRIMARY KEY,
    event TEXT NOT NULL,
    received_at REAL NOT NULL
);
CREATE VIEW IF NOT EXISTS dead_letters AS
    SELECT id, user_id, turn_id, payload, attempts, last_error AS error, updated_at AS failed_at
    FROM jobs WHERE status = 'dead';
"""
INSERT_JOB = ("INSERT OR IGNORE INTO jobs (user_id, turn_id, payload, status, enqueued_at, updated_at) "
              "VALUES (?, ?, ?, 'pending', ?, ?)")


def queue_path(home: str | Path) -> Path:
    """``<home>/queue.db``."""
    return Path(home) / QUEUE_FILENAME


#: Seconds SQLite itself waits on a lock (the ``timeout`` of :func:`sqlite3.connect`).
BUSY_TIMEOUT = 5.0
#: Seconds a write still finding the file locked after that is retried, with a growing pause,
#: before it fails with QueueError (bounded: a turn is never dropped silently).
BUSY_RETRY_SECONDS = 60.0


def _is_busy(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "database is locked" in text or "database table is locked" in text or "database is busy" in text


def retry_locked(fn: Callable[[], Any], what: str, *, retry_seconds: float | None = None) -> Any:
    """``fn()``, again after a growing pause while another process holds the queue file locked
    (beyond the connection's own timeout), for at most ``retry_seconds`` (default
    :data:`BUSY_RETRY_SECONDS`); other errors, and the last busy error, pass through."""
    deadline = time.monotonic() + (BUSY_RETRY_SECONDS if retry_seconds is None else retry_seconds)
    pause, attempt = 0.01, 0
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or time.monotonic() + pause > deadline:
                raise
            attempt += 1
            logger.info("%s: the queue file is locked by another process (attempt %d), retrying in %.2fs",
                        what, attempt, pause)
            time.sleep(pause)
            pause = min(pause * 2, 0.5)


def connect(path: str | Path, *, timeout: float = BUSY_TIMEOUT) -> sqlite3.Connection:
    """A stdlib connection to the queue file (created 0600 with its schema if new), WAL, synchronous=NORMAL."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    created = not path.exists()
    private_file(path)
    conn: sqlite3.Connection | None = None
    try:
        conn = sqlite3.connect(str(path), timeout=timeout, isolation_level=None, check_same_thread=False)
        c = conn

        def setup() -> None:
            c.execute("PRAGMA journal_mode = WAL")
            c.execute("PRAGMA synchronous = NORMAL")
            version = c.execute("PRAGMA user_version").fetchone()[0]
            if version < SCHEMA_VERSION:
                # older files get the columns added since (version 1: the notes journal; up to 3: the
                # count of runs begun); new files get the whole schema
                c.execute("BEGIN IMMEDIATE")
                try:
                    current = c.execute("PRAGMA user_version").fetchone()[0]  # another process may have done it
                    if current < SCHEMA_VERSION:
                        statements = [part for part in _SCHEMA.split(";\n") if part.strip()]
                        if current == 1:
                            statements.append("ALTER TABLE jobs ADD COLUMN notes TEXT")
                        if current >= 1:
                            statements.append("ALTER TABLE jobs ADD COLUMN runs INTEGER NOT NULL DEFAULT 0")
                        statements.append(f"PRAGMA user_version = {SCHEMA_VERSION}")
                        for statement in statements:
                            c.execute(statement)
                    c.execute("COMMIT")
                except BaseException:
                    if c.in_transaction:
                        c.execute("ROLLBACK")
                    raise

        retry_locked(setup, "open")
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        if created:  # leave no empty queue.db behind (disk full, read-only directory)
            with contextlib.suppress(OSError):
                if path.stat().st_size == 0:
                    path.unlink()
        raise QueueError(f"cannot open the extraction queue {path}: {exc}") from exc
    return conn


#: Characters of a queued turn's text, and of each of its context lines, when the caller gives
#: no cap (``limits.max_turn_chars``): a longer one keeps its head and tail.
MAX_TURN_CHARS = LimitsConfig.max_turn_chars
#: Runs of one job the worker may die in before the job becomes a dead letter (``limits.max_killed_runs``).
MAX_KILLED_RUNS = LimitsConfig.max_killed_runs


def job_payload(turn: Turn | Mapping[str, Any], context: Sequence[str], *,
                max_chars: int = MAX_TURN_CHARS) -> tuple[str, str, str]:
    """(user id, turn id, the JSON payload of a ``jobs`` row) for a turn and its context, the
    turn's text and each context line held to ``max_chars`` (:func:`~dexai_memory.limits.clip`)."""
    data = turn.to_dict() if isinstance(turn, Turn) else dict(turn)
    for key in ("id", "user_id", "content"):
        if not data.get(key):
            raise QueueError(f"a queued turn needs {key!r}")
    data["id"], data["user_id"] = str(data["id"]), str(data["user_id"])
    data["content"] = clip(str(data["content"]), max_chars)
    lines = [clip(str(c), max_chars) for c in context]
    return data["user_id"], data["id"], json.dumps({"turn": data, "context": lines}, default=str)


def enqueue_turn(path: str | Path, turn: Turn | Mapping[str, Any], *, context: Sequence[str] = (),
                 timeout: float = BUSY_TIMEOUT, max_chars: int = MAX_TURN_CHARS) -> bool:
    """Append one turn to the queue file at ``path`` (standard library only).

    For hook processes that cannot reach a daemon: the turn is committed to
    disk and a daemon processes it when it next runs. ``turn`` is a
    :class:`Turn` or a dict with at least ``id``, ``user_id`` and ``content``.
    Returns False when that turn was already queued (or done). Gate and
    redaction are the caller's job; the text is held to ``max_chars``. A file locked by another process is
    waited for (``timeout`` seconds by SQLite, then bounded retries for
    :data:`BUSY_RETRY_SECONDS`). Raises :class:`QueueError`.
    """
    user_id, turn_id, row = job_payload(turn, context, max_chars=max_chars)
    conn = connect(path, timeout=timeout)
    try:
        now = time.time()
        return bool(retry_locked(lambda: conn.execute(INSERT_JOB, (user_id, turn_id, row, now, now)).rowcount > 0,
                                 f"enqueue {turn_id}"))
    except sqlite3.Error as exc:
        raise QueueError(f"cannot enqueue turn {turn_id}: {exc}") from exc
    finally:
        conn.close()



def save_event(path: str | Path, event: Mapping[str, Any]) -> None:
    """Commit a hook event (:meth:`~dexai_memory.daemon.event.HookEvent.to_json`) no daemon
    could answer in time; the daemon replays it at its start. Raises :class:`QueueError`."""
    data = json.dumps(dict(event), ensure_ascii=False)
    conn = connect(path)
    try:
        retry_locked(lambda: conn.execute("INSERT INTO hook_events (event, received_at) VALUES (?, ?)",
                                          (data, time.time())), "save a hook event")
    except sqlite3.Error as exc:
        raise QueueError(f"cannot queue the hook event in {path}: {exc}") from exc
    finally:
        conn.close()


def queued_events(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """The hook events waiting for replay, oldest first, as (row id, event)."""
    conn = connect(path)
    try:
        rows = retry_locked(lambda: conn.execute("SELECT id, event FROM hook_events ORDER BY id").fetchall(),
                            "read hook events")
    finally:
        conn.close()
    out = []
    for row, text in rows:
        try:
            data = json.loads(text)
        except ValueError:
            data = {}
        out.append((int(row), data if isinstance(data, dict) else {}))
    return out


def drop_event(path: str | Path, row: int) -> None:
    """Remove a replayed hook event."""
    conn = connect(path)
    try:
        retry_locked(lambda: conn.execute("DELETE FROM hook_events WHERE id = ?", (row,)), "drop a hook event")
    finally:
        conn.close()


def claim_worker_lock(path: Path) -> int:
    """Take the exclusive lock file ``<path>.lock`` of the queue's one consumer; returns its
    descriptor. Raises :class:`QueueError` if another worker holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(str(path) + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise QueueError(f"another worker (a running 'dexai daemon'?) is processing {path}") from None
    return fd


def release_worker_lock(fd: int) -> None:
    """Release and close a lock taken by :func:`claim_worker_lock`."""
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
