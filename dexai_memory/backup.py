"""Backups of the data directory: ``memory.db`` and ``queue.db`` copied by SQLite's online backup API.

A backup is a directory ``<home>/backups/backup-<UTC time>/`` holding a
consistent copy of each database (taken while other processes keep
writing: the online backup API copies one snapshot), checked with
``PRAGMA quick_check``. Directories are 0700 and files 0600, like the data
directory. After each backup into ``<home>/backups`` only the newest
``backup.keep`` are kept.

``dexai memory backup`` makes one now, the daemon one every
``backup.interval_hours``; ``dexai memory restore-backup PATH`` puts one back
(refused while a daemon is running; the current file is first moved aside
as ``memory.db.bak-<time>``, with its ``-wal`` and ``-shm``).

Only the standard library is used: the backup API copies pages, so the
FTS5 and sqlite-vec tables come along without loading any extension.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

from .capture.queue import QUEUE_FILENAME
from .config import Settings
from .datadir import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, tighten
from .errors import StorageError
from .providers.native.damage import damage_reason
from .providers.native.driver import store_sqlite
from .providers.native.vectors import graph_dir

logger = logging.getLogger(__name__)

__all__ = ["Backup", "Restored", "create_backup", "daemon_running", "list_backups", "prune_backups",
           "restore_backup"]

BACKUP_PREFIX = "backup-"
SQLITE_HEADER = b"SQLite format 3\x00"
#: Seconds a backup waits for a database another process holds locked.
LOCK_TIMEOUT = 30.0


@dataclass(frozen=True)
class Backup:
    """One backup directory and the database files in it."""

    path: Path
    created_at: datetime
    files: tuple[str, ...]
    size_bytes: int

    def to_dict(self) -> dict[str, object]:
        return {"path": str(self.path), "created_at": self.created_at.isoformat(), "files": list(self.files),
                "size_bytes": self.size_bytes}


@dataclass(frozen=True)
class Restored:
    """What :func:`restore_backup` did: the files put back and where the previous ones went."""

    restored: tuple[Path, ...]
    set_aside: tuple[Path, ...]

    def to_dict(self) -> dict[str, object]:
        return {"restored": [str(p) for p in self.restored], "set_aside": [str(p) for p in self.set_aside]}


def _stamp(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S%fZ")


def _databases(settings: Settings) -> list[str]:
    return [settings.storage.db_filename, QUEUE_FILENAME]


def _copy(src: Path, dest: Path, driver: ModuleType) -> None:
    """Online backup of ``src`` into a new file ``dest`` (0600), checked, written under a temporary name,
    with ``driver`` (the SQLite library that opens ``src`` in this process, see
    :mod:`~dexai_memory.providers.native.driver`)."""
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))
    try:
        source = driver.connect(f"file:{src}?mode=ro", uri=True, timeout=LOCK_TIMEOUT)
        try:
            target = driver.connect(tmp)
            try:
                source.backup(target)
                target.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
                check = target.execute("PRAGMA quick_check").fetchone()[0]
            finally:
                target.close()
        finally:
            source.close()
        if check != "ok":
            raise StorageError(f"the copy of {src} failed its check ({check}); the source may be damaged")
        os.replace(tmp, dest)
    except (sqlite3.Error, driver.Error) as exc:
        raise StorageError(f"cannot back up {src}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)


def create_backup(settings: Settings, dest: Path | None = None, *, now: datetime | None = None) -> Backup:
    """Back up ``memory.db`` and ``queue.db`` (those that exist) into a new directory; returns it.

    ``dest`` is the directory to create (default
    ``<home>/backups/backup-<UTC time>``, after which older backups beyond
    ``backup.keep`` are deleted). Raises :class:`StorageError` when the store is
    marked damaged (the daemon's scheduled backups too), there is nothing to back up, the directory exists and is not empty, or a copy fails
    (a failed backup leaves no directory behind).
    """
    damaged = damage_reason(settings.db_path)
    if damaged is not None:  # a copy of it would push good backups out of the kept ones
        raise StorageError(f"{settings.db_path} is damaged ({damaged}): not backed up; put a good backup back "
                           "with 'dexai memory restore-backup PATH' ('dexai memory backup --list')")
    sources = [(name, settings.home / name) for name in _databases(settings) if (settings.home / name).is_file()]
    if not sources:
        raise StorageError(f"nothing to back up: no {' or '.join(_databases(settings))} in {settings.home}")
    managed = dest is None
    target = dest if dest is not None else settings.backup_dir / f"{BACKUP_PREFIX}{_stamp(now)}"
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise StorageError(f"{target} already exists and is not an empty directory")
    if managed:
        settings.backup_dir.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
        tighten(settings.backup_dir, PRIVATE_DIR_MODE)
    target.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    try:
        for name, src in sources:
            _copy(src, target / name, store_sqlite() if name == settings.storage.db_filename else sqlite3)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    backup = _describe(target)
    logger.info("backed up %s to %s (%d bytes)", ", ".join(n for n, _ in sources), target, backup.size_bytes)
    if managed:
        prune_backups(settings.backup_dir, settings.backup.keep)
    return backup


def _describe(path: Path) -> Backup:
    files = tuple(sorted(p.name for p in path.iterdir() if p.is_file() and not p.name.startswith(".")))
    stamp = path.name.removeprefix(BACKUP_PREFIX)
    try:
        created = datetime.strptime(stamp, "%Y%m%dT%H%M%S%fZ").replace(tzinfo=UTC)
    except ValueError:
        created = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return Backup(path, created, files, sum((path / f).stat().st_size for f in files))


def list_backups(settings: Settings) -> list[Backup]:
    """The backups in ``<home>/backups``, newest first."""
    if not settings.backup_dir.is_dir():
        return []
    dirs = [p for p in settings.backup_dir.iterdir() if p.is_dir() and p.name.startswith(BACKUP_PREFIX)]
    return [_describe(p) for p in sorted(dirs, key=lambda p: p.name, reverse=True)]


def prune_backups(directory: Path, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` backups in ``directory``; returns the deleted ones."""
    dirs = sorted((p for p in directory.iterdir() if p.is_dir() and p.name.startswith(BACKUP_PREFIX)),
                  key=lambda p: p.name, reverse=True)
    gone = dirs[max(1, keep):]
    for p in gone:
        shutil.rmtree(p, ignore_errors=True)
        logger.info("deleted old backup %s (backup.keep = %d)", p, keep)
    return gone


def daemon_running(settings: Settings) -> bool:
    """Whether a daemon (or another queue worker) is running on this data directory:
    it answers on the socket, or holds the queue's worker lock."""
    import socket

    # a ping on the socket (the daemon sits above this module: no import of its client here)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        try:
            sock.connect(str(settings.socket_path))
            sock.sendall(b'{"op": "ping"}\n')
            if sock.recv(65536):
                return True
        except OSError:
            pass
    lock = settings.home / (QUEUE_FILENAME + ".lock")
    if not lock.exists():
        return False
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _check_source(path: Path) -> None:
    try:
        with path.open("rb") as fh:
            header = fh.read(16)
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror}") from exc
    if header != SQLITE_HEADER:
        raise StorageError(f"{path} is not a SQLite database: nothing was restored")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            check = conn.execute("PRAGMA quick_check").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StorageError(f"{path} cannot be read as a database ({exc}): nothing was restored") from exc
    if check != "ok":
        raise StorageError(f"{path} failed its check ({check}): nothing was restored")


def restore_backup(settings: Settings, source: Path, *, queue: bool = False) -> Restored:
    """Put a backup back: ``source`` is a backup directory (or one ``memory.db`` file).

    ``memory.db`` is restored; ``queue.db`` too with ``queue=True`` (the
    current queue may hold turns newer than the backup, so it is kept by
    default). Refused (:class:`StorageError`) while a daemon is running. Each
    current file is moved aside first as ``<name>.bak-<UTC time>`` (with its
    ``-wal`` / ``-shm``), so a restore can itself be undone; every source is
    checked before anything is moved. The saved HNSW graphs of the replaced
    database (``memory.db.ann/``) are removed: the next search builds them again.
    """
    if daemon_running(settings):
        raise StorageError("a daemon is running on this data directory: stop it first ('dexai daemon' "
                           "in its terminal: Ctrl-C, or kill its process), then restore")
    source = Path(source)
    if source.is_dir():
        names = [settings.storage.db_filename] + ([QUEUE_FILENAME] if queue else [])
        pairs = [(source / n, settings.home / n) for n in names if (source / n).is_file()]
        if not any(n == settings.storage.db_filename for n in (s.name for s, _ in pairs)):
            raise StorageError(f"{source} holds no {settings.storage.db_filename}: not a backup directory")
    elif source.is_file():
        pairs = [(source, settings.db_path)]
    else:
        raise StorageError(f"no backup at {source} (list them with 'dexai memory backup --list')")
    for src, _ in pairs:
        _check_source(src)
    settings.home.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    stamp, restored, aside = _stamp(), [], []
    for src, dest in pairs:
        tmp = dest.with_name(f".{dest.name}.restoring-{os.getpid()}")
        _copy(src, tmp, sqlite3)  # neither file is open in this process
        for suffix in ("", "-wal", "-shm"):
            current = dest.with_name(dest.name + suffix)
            if current.exists():
                moved = dest.with_name(f"{dest.name}.bak-{stamp}{suffix}")
                os.replace(current, moved)
                aside.append(moved)
        os.replace(tmp, dest)
        if dest.name == settings.storage.db_filename:  # saved vector graphs of the replaced database
            shutil.rmtree(graph_dir(dest), ignore_errors=True)
        with contextlib.suppress(OSError):
            os.chmod(dest, PRIVATE_FILE_MODE)
        restored.append(dest)
        logger.warning("restored %s from %s", dest, src)
    return Restored(tuple(restored), tuple(aside))
