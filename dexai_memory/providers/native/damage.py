"""A damaged memory database: how it is recognised, and the mark that keeps it from being written.

A database is *damaged* when SQLite says so (``database disk image is malformed``, ``file is
not a database``, a failing ``PRAGMA integrity_check`` or ``quick_check``), when its schema
cannot even be decoded, or when ``memory.db`` lost its content (below): creating a new store
over it would hide the loss.

Once seen, the damage is written down in ``memory.db.damaged`` (JSON: the reason, when, and the
file's device and inode). Every open of the store checks that mark (one ``stat``) and refuses
with :class:`~dexai_memory.errors.DatabaseCorrupt`, which names ``dexai memory restore-backup``;
so no process writes to the damaged file, even one that would not notice the damage itself
(a reader that never touches the bad pages). The mark holds only for that very file: a restored
backup (a new inode) or a file moved in by hand is not refused, and the stale mark is removed.

SQLite writes its header when it sets a store up (WAL mode), so a store file it wrote to is never
empty again. A zero-length ``memory.db`` is damage when it is the very file SQLite set up (its
device and inode recorded in ``memory.db.id``: it was emptied in place, ``> memory.db``), or when
it is older than :data:`SETUP_GRACE_SECONDS` and the data directory shows the store held memories
(a backup of it, a copy set aside by a migration or a restore, a non-empty ``-wal``).
Any other empty file (made by hand in a fresh data directory, or being set up by another process
right now) is a new store. A *missing* ``memory.db`` is always a new store: removing the damaged
or emptied file is how a user starts over on purpose.

Stdlib only.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from ...datadir import write_private

#: Marks of SQLite's own corruption errors (SQLITE_CORRUPT, SQLITE_NOTADB).
CORRUPTION_WORDS = ("malformed", "not a database", "corrupt")

RESTORE_HINT = ("nothing is written to it; restore a backup: 'dexai memory backup --list', then "
                "'dexai memory restore-backup PATH'")


def is_corruption(exc: BaseException) -> bool:
    """Whether a driver error means the file is damaged (not busy, read-only or full)."""
    if isinstance(exc, UnicodeDecodeError):
        return True  # SQLite's message quoted garbage of the file (a schema that cannot be decoded)
    text = str(exc).lower()
    return any(word in text for word in CORRUPTION_WORDS)


def mark_path(db: Path) -> Path:
    """The damage mark of ``db``: ``<db>.damaged``."""
    return db.with_name(db.name + ".damaged")


def mark_damaged(db: Path, reason: str) -> None:
    """Write the damage mark of ``db`` (best effort: a read-only or full disk keeps only the
    in-process refusal)."""
    try:
        st = os.stat(db)
    except OSError:
        return
    data = {"reason": reason[:500], "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "dev": st.st_dev, "ino": st.st_ino}
    with contextlib.suppress(OSError):  # the damage is raised all the same; the mark is a courtesy
        write_private(mark_path(db), json.dumps(data).encode())


def damage_reason(db: Path) -> str | None:
    """Why ``db`` was marked damaged, or None (no mark, or a mark of another file: removed)."""
    path = mark_path(db)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return "marked damaged"  # a mark we cannot read still stands
    try:
        st = os.stat(db)
    except FileNotFoundError:
        st = None
    except OSError:
        return str(data.get("reason") or "marked damaged") if isinstance(data, dict) else "marked damaged"
    if not isinstance(data, dict) or st is None or (data.get("dev"), data.get("ino")) != (st.st_dev, st.st_ino):
        clear_mark(db)  # the damaged file was replaced (a restore, by hand) or removed
        return None
    return f"{data.get('reason') or 'damaged'} (found {data.get('at') or 'earlier'})"


def clear_mark(db: Path) -> None:
    """Remove the damage mark of ``db`` (after a restore)."""
    with contextlib.suppress(OSError):
        mark_path(db).unlink()


def signs_of_data(db: Path) -> list[str]:
    """What in ``db``'s directory shows the store held data: copies of it (``<db>.bak-*``,
    ``backups/*/<db name>``), a non-empty ``-wal``."""
    home, name = db.parent, db.name
    signs: list[str] = []
    with contextlib.suppress(OSError):
        if any(home.glob(f"{name}.bak*")):
            signs.append(f"copies of it set aside ({name}.bak-*)")
    with contextlib.suppress(OSError):
        if any((home / "backups").glob(f"*/{name}")):
            signs.append(f"backups of it in {home / 'backups'}")
    with contextlib.suppress(OSError):
        if os.path.getsize(db.with_name(name + "-wal")) > 0:
            signs.append(f"its write-ahead log {name}-wal holds changes")
    return signs


#: Seconds a zero-length store file may be a new one being set up (another process created it and
#: is about to write SQLite's header) rather than one that lost its content.
SETUP_GRACE_SECONDS = 30.0


def id_path(db: Path) -> Path:
    """Which file SQLite set up as the store: ``<db>.id`` (JSON: device and inode)."""
    return db.with_name(db.name + ".id")


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return (int(data["dev"]), int(data["ino"])) if isinstance(data, dict) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remember_file(db: Path) -> None:
    """Record ``db`` (a store SQLite set up, not empty) as the store file, when not yet recorded:
    one small read per open, a write only after a restore or a new store."""
    try:
        st = os.stat(db)
    except OSError:
        return
    if st.st_size == 0 or _identity(id_path(db)) == (st.st_dev, st.st_ino):
        return
    path = id_path(db)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, json.dumps({"dev": st.st_dev, "ino": st.st_ino}).encode())
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:  # a read-only data directory: the record is a help, not a need
        with contextlib.suppress(OSError):
            tmp.unlink()


def lost_content(db: Path) -> str | None:
    """Why a zero-length ``db`` is a store that lost its content; None for a file that is not
    empty, or a new one.

    Lost: the very file SQLite set up as the store (:func:`remember_file`) was emptied in
    place; or an empty file older than :data:`SETUP_GRACE_SECONDS` where the data directory
    shows the store held memories (:func:`signs_of_data`). New: any other empty file (made by
    hand in a fresh data directory, or being set up by another process right now)."""
    try:
        st = os.stat(db)
    except OSError:
        return None
    if st.st_size != 0:
        return None
    if _identity(id_path(db)) == (st.st_dev, st.st_ino):
        return f"{db} is empty: the store file was emptied in place"
    if time.time() - st.st_mtime < SETUP_GRACE_SECONDS:
        return None
    signs = signs_of_data(db)
    return f"{db} is empty but held memories ({'; '.join(signs)})" if signs else None
