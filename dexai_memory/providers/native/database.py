"""The native store's SQLite file and its one connection.

:class:`Database` opens the file (checking it is SQLite, 0600, WAL, migrated
with a backup first), holds the provider's single ``aiosqlite`` connection,
and runs every write under one lock, retrying while another process holds the
database locked and turning sqlite errors into :class:`~dexai_memory.errors.StorageError`
that say what to do.

The stock ``sqlite3`` module of many Python builds cannot load extensions, so
connections come from ``sqlean`` (a sqlite3-compatible build with extension
loading and FTS5) and are driven through ``aiosqlite``'s worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import aiosqlite

from ...datadir import PRIVATE_DIR_MODE, private_file
from ...errors import DatabaseCorrupt, MigrationError, StorageError
from ...models import utcnow
from . import migrations
from .damage import (
    RESTORE_HINT,
    damage_reason,
    is_corruption,
    lost_content,
    mark_damaged,
    remember_file,
)
from .schema import SQLITE_HEADER

logger = logging.getLogger(__name__)

#: Seconds a writer keeps retrying a database another process holds locked (on top of busy_timeout).
DEFAULT_BUSY_RETRY_SECONDS = 60.0
#: Largest file ``PRAGMA integrity_check`` runs on at every open (bytes): about 30,000 memories;
#: 40-60 ms for 10,000 (20 MB). It also finds an index that disagrees with its table, which
#: ``quick_check`` does not.
INTEGRITY_CHECK_MAX_BYTES = 64 * 1024 * 1024
#: Largest file ``PRAGMA quick_check`` runs on at open (bytes; about 120,000 memories, half a
#: second). A bigger store is checked by the daemon's health check and ``dexai memory doctor``.
QUICK_CHECK_MAX_BYTES = 256 * 1024 * 1024


def is_busy(exc: BaseException) -> bool:
    """Whether a sqlite error means "another connection holds the lock" (SQLITE_BUSY / SQLITE_LOCKED)."""
    text = str(exc).lower()
    return "database is locked" in text or "database table is locked" in text or "database is busy" in text


class Database:
    """The store file and the connection every task of one provider shares (see the module docstring)."""

    def __init__(self, path: Path, *, busy_timeout_ms: int = 5000,
                 busy_retry_seconds: float = DEFAULT_BUSY_RETRY_SECONDS):
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        #: A write that still finds the database locked after busy_timeout is retried (with a growing
        #: pause) until this many seconds have passed, then fails with StorageError: no silent loss.
        self.busy_retry_seconds = busy_retry_seconds
        #: The copy made before the last migration of a database holding data (None: no migration).
        self.backup_path: Path | None = None
        self.write_lock = asyncio.Lock()
        self._db: aiosqlite.Connection | None = None
        #: Why the file is damaged, once seen (every write is refused from then on).
        self.damaged: str | None = None

    # ------------------------------------------------------------------ lifecycle
    @property
    def is_open(self) -> bool:
        return self._db is not None

    def corrupt(self, reason: str) -> DatabaseCorrupt:
        """Mark the file damaged (here and in its damage mark, :mod:`.damage`) and return the
        error that says so."""
        if self.damaged is None:
            self.damaged = reason.encode("utf-8", "replace").decode("utf-8")
            logger.error("%s is damaged: %s; it is no longer written to", self.path, reason)
            mark_damaged(self.path, reason)
        return DatabaseCorrupt(f"{self.path} is damaged ({self.damaged}): {RESTORE_HINT}")

    def _check_file(self) -> None:
        marked = damage_reason(self.path)
        if marked is not None:
            self.damaged = marked
            raise DatabaseCorrupt(f"{self.path} is damaged ({marked}): {RESTORE_HINT}")
        lost = lost_content(self.path)
        if lost is not None:  # not recreated empty over the loss
            self.corrupt(lost)
            raise DatabaseCorrupt(f"{lost}: {RESTORE_HINT} (or remove the empty file to start a new store)")
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
            private_file(self.path)  # 0600 before SQLite creates it (its -wal and -shm copy the mode)
            return
        private_file(self.path)  # an older 0644 file (and its -wal / -shm) is tightened
        try:
            with self.path.open("rb") as fh:
                header = fh.read(16)
        except OSError as exc:
            raise StorageError(f"cannot read database {self.path}: {exc.strerror}") from exc
        if header and header != SQLITE_HEADER:
            raise DatabaseCorrupt(
                f"{self.path} is not a SQLite database (it was left untouched). "
                "Move it aside or restore a backup ('dexai memory backup --list', then "
                "'dexai memory restore-backup PATH'), then run the command again."
            )

    def _connector(self) -> Any:
        import sqlean
        import sqlite_vec

        conn = sqlean.connect(str(self.path), isolation_level=None, check_same_thread=False)
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        return conn

    async def open(self) -> None:
        """Open (creating or migrating) the file; a no-op when already open."""
        if self._db is not None:
            return
        self._check_file()
        import sqlean

        try:
            db = await aiosqlite.Connection(self._connector, 64)
        except (sqlean.DatabaseError, UnicodeDecodeError) as exc:
            raise self.corrupt(f"cannot open it: {_said(exc)}") from exc
        except sqlean.Error as exc:
            raise StorageError(f"cannot open {self.path}: {exc}") from exc
        try:
            await self._check_at_open(db)  # before anything that may write
            # a new file is set up by whichever of several processes starting at once gets there first
            await self.retry_busy("open", lambda: db.execute("PRAGMA journal_mode = WAL"))
            await db.execute("PRAGMA synchronous = NORMAL")
            await db.execute("PRAGMA foreign_keys = ON")
            await self._migrate(db)
            remember_file(self.path)
        except (sqlean.DatabaseError, UnicodeDecodeError, MigrationError) as exc:
            await db.close()
            if is_busy(exc):
                raise StorageError(f"{self.path} stayed locked by another process: {exc}") from exc
            if "readonly" in str(exc) or "read-only" in str(exc):
                raise StorageError(f"{self.path} is read-only ({exc}): check the file's and the data "
                                   "directory's permissions ('dexai memory doctor')") from exc
            if isinstance(exc, MigrationError) and not is_corruption(exc):
                raise
            raise self.corrupt(f"unreadable: {_said(exc)}") from exc
        except BaseException:
            await db.close()
            raise
        self._db = db

    async def _check_at_open(self, db: aiosqlite.Connection) -> None:
        """``PRAGMA integrity_check`` on a file up to :data:`INTEGRITY_CHECK_MAX_BYTES`,
        ``quick_check`` up to :data:`QUICK_CHECK_MAX_BYTES` (raises :class:`DatabaseCorrupt` and
        marks the file when it fails)."""
        try:
            size = self.path.stat().st_size
        except OSError:
            return
        if size == 0 or size > QUICK_CHECK_MAX_BYTES:
            return
        await self.check(db, full=size <= INTEGRITY_CHECK_MAX_BYTES)

    async def check(self, db: aiosqlite.Connection | None = None, *, full: bool = True) -> None:
        """Run ``PRAGMA integrity_check`` (``full``) or ``quick_check`` on the open connection
        (or ``db``); raises :class:`DatabaseCorrupt` and marks the file when it fails."""
        conn = db or self.conn
        pragma = "integrity_check(3)" if full else "quick_check(3)"
        try:
            rows = await self.retry_busy("check", lambda: conn.execute_fetchall(f"PRAGMA {pragma}"))
        except StorageError:
            raise
        except Exception as exc:
            if is_corruption(exc):
                raise self.corrupt(f"unreadable: {_said(exc)}") from exc
            raise
        problems = [str(r[0]) for r in rows]
        if problems != ["ok"]:
            raise self.corrupt(f"integrity check failed: {'; '.join(problems)[:160]}")

    async def _migrate(self, db: aiosqlite.Connection) -> None:
        def run(conn: Any) -> tuple[int, list[str]]:
            todo = migrations.pending(conn)
            version = migrations.current_version(conn)
            return version, [name for _, name, _ in todo]

        conn = db._conn  # the sqlite connection, used only inside the worker thread below
        version, todo = await self.retry_busy("migrate", lambda: db._execute(run, conn))  # type: ignore[attr-defined]
        if not todo:
            return
        if version > 0:
            stamp = utcnow().strftime("%Y%m%dT%H%M%S")
            backup = self.path.with_name(f"{self.path.name}.bak-v{version}-{stamp}")
            await db._execute(self._backup_to, conn, backup)  # type: ignore[attr-defined]
            self.backup_path = backup
            logger.info("backed up %s to %s before migrating", self.path, backup)
        deadline = time.monotonic() + self.busy_retry_seconds
        while True:
            try:
                await db._execute(migrations.migrate, conn)  # type: ignore[attr-defined]
                return
            except MigrationError as exc:
                # another process opening the same new file at the same moment migrated it first
                # ("already exists") or holds it ("locked"): done if nothing is left, else try again
                if not (is_busy(exc) or "already exists" in str(exc)):
                    raise
                _, left = await db._execute(run, conn)  # type: ignore[attr-defined]
                if not left:
                    return
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)

    @staticmethod
    def _backup_to(conn: Any, dest: Path) -> None:
        import sqlean

        target = sqlean.connect(str(dest))
        try:
            conn.backup(target)
        finally:
            target.close()

    async def close(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()

    @property
    def conn(self) -> aiosqlite.Connection:
        """The open connection (StorageError when not open)."""
        if self._db is None:
            raise StorageError("the provider is not started: use 'async with provider:' or await start()")
        return self._db

    # ------------------------------------------------------------------ writes
    async def retry_busy(self, what: str, op: Callable[[], Awaitable[Any]]) -> Any:
        """``await op()``, again after a growing pause while the database is locked by another
        process (beyond ``busy_timeout``), for at most ``busy_retry_seconds``; then StorageError.
        Other sqlite operational errors (read-only, disk full) become StorageError at once."""
        import sqlean

        deadline = time.monotonic() + self.busy_retry_seconds
        pause, attempt = 0.01, 0
        while True:
            try:
                return await op()
            except sqlean.OperationalError as exc:
                if not is_busy(exc):
                    raise self.storage_error(exc, "open" if what in ("open", "migrate") else "write") from exc
                attempt += 1
                if time.monotonic() + pause > deadline:
                    raise StorageError(f"{self.path} stayed locked by another process for "
                                       f"{self.busy_retry_seconds:.0f}s ({what}): {exc}") from exc
                logger.info("%s: %s is locked by another process (attempt %d), retrying in %.2fs",
                            what, self.path.name, attempt, pause)
                await asyncio.sleep(pause)
                pause = min(pause * 2, 0.5)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT`` on the shared connection, rolled back on any error.

        Every write goes through :attr:`write_lock`: tasks sharing one provider
        (the daemon's worker, its scheduled jobs, hook requests) share one
        connection, and a statement sent while another task's transaction is
        open would become part of it.
        """
        import sqlean

        async with self.write_lock:
            self.refuse_if_damaged()
            await self.retry_busy("begin", lambda: self.conn.execute("BEGIN IMMEDIATE"))
            try:
                yield self.conn
                await self.retry_busy("commit", lambda: self.conn.execute("COMMIT"))
            except BaseException as exc:
                if self.conn.in_transaction:  # a COMMIT interrupted by cancellation may have ended it
                    with contextlib.suppress(Exception):
                        await self.conn.execute("ROLLBACK")
                if isinstance(exc, sqlean.DatabaseError | UnicodeDecodeError) and is_corruption(exc) \
                        and not isinstance(exc, StorageError):
                    raise self.corrupt(f"a write failed: {_said(exc)}") from exc
                if isinstance(exc, sqlean.OperationalError):
                    raise self.storage_error(exc, "write") from exc
                raise

    async def write(self, sql: str, params: Sequence[Any] = ()) -> None:
        """One write statement (atomic on its own), outside any other task's transaction."""
        import sqlean

        async with self.write_lock:
            self.refuse_if_damaged()
            try:
                await self.retry_busy("write", lambda: self.conn.execute(sql, params))
            except (sqlean.DatabaseError, UnicodeDecodeError) as exc:
                if is_corruption(exc):
                    raise self.corrupt(f"a write failed: {_said(exc)}") from exc
                if isinstance(exc, sqlean.OperationalError):
                    raise self.storage_error(exc, "write") from exc
                raise

    def refuse_if_damaged(self) -> None:
        """Raise :class:`DatabaseCorrupt` when the file was found damaged: no write touches it."""
        if self.damaged is not None:
            raise DatabaseCorrupt(f"{self.path} is damaged ({self.damaged}): {RESTORE_HINT}")

    def storage_error(self, exc: BaseException, what: str) -> StorageError:
        """A sqlite error of a write as a StorageError that says what to do."""
        text = _said(exc)
        if is_corruption(exc):
            return self.corrupt(f"cannot {what} it: {text}")
        if "readonly" in text or "read-only" in text:
            return StorageError(f"cannot {what} {self.path}: it is read-only ({text}); check the permissions of "
                                "the file and of the data directory ('dexai memory doctor')")
        if "disk is full" in text or "disk I/O" in text:
            return StorageError(f"cannot {what} {self.path}: {text} (free some disk space; nothing was "
                                "half-written)")
        return StorageError(f"cannot {what} {self.path}: {text}")

    # ------------------------------------------------------------------ store_meta
    async def meta(self, key: str) -> str | None:
        """A value of the ``store_meta`` table (None when unset)."""
        async with self.conn.execute("SELECT value FROM store_meta WHERE key = ?", (key,)) as cur:
            row = await cur.fetchone()
        return row[0] if row else None

    async def set_meta(self, key: str, value: str) -> None:
        """Set a value of the ``store_meta`` table."""
        await self.write("INSERT INTO store_meta (key, value) VALUES (?, ?) "
                         "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))


def _said(exc: BaseException) -> str:
    """A driver error's message, printable (SQLite may quote garbage bytes of a damaged file)."""
    if isinstance(exc, UnicodeDecodeError):
        return "its schema holds undecodable bytes"
    return str(exc).encode("utf-8", "replace").decode("utf-8")[:300]
