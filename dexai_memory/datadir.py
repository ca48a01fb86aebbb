"""The data directory and its privacy: where memories live (``$DEXAI_MEMORY_HOME`` or the
user data dir), created 0700, every file in it 0600, and the umask our processes run with."""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path

__all__ = ["HOME_ENV", "PRIVATE_DIR_MODE", "PRIVATE_FILE_MODE", "PRIVATE_UMASK", "ensure_home", "home_dir",
           "private_file", "private_umask", "tighten"]

logger = logging.getLogger(__name__)
#: Environment variable that overrides the data directory.
HOME_ENV = "DEXAI_MEMORY_HOME"


def home_dir() -> Path:
    """The data directory: ``$DEXAI_MEMORY_HOME`` if set, else the user data dir.

    The default is ``$XDG_DATA_HOME/dexai-memory`` (``~/.local/share/dexai-memory``).
    The directory is not created here; :func:`ensure_home` does that.
    """
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "dexai-memory"


#: Mode of the data directory and of every file in it: only the owner reads memories.
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
#: Umask of our processes (CLI, daemon, hooks): new files 0600, new directories 0700.
PRIVATE_UMASK = 0o077


def ensure_home(path: Path | None = None) -> Path:
    """Create the data directory (mode 0700) if needed and return it.

    An existing directory that group or others can read (0755 from an older
    version, or a hand-made one) is tightened to 0700, with a log line.
    """
    path = path or home_dir()
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    if tighten(path, PRIVATE_DIR_MODE):
        # a directory left open by an older version: its files were made readable too
        for sub in sorted(path.rglob("*")):
            if not sub.is_symlink() and (sub.is_dir() or sub.is_file()):
                tighten(sub, PRIVATE_DIR_MODE if sub.is_dir() else PRIVATE_FILE_MODE, quiet=True)
    return path


def tighten(path: Path, mode: int, *, quiet: bool = False) -> bool:
    """Drop the permission bits of ``path`` that ``mode`` does not grant (group and others; an owner's
    missing write bit stays missing), with a log line; quiet when it cannot (not ours, read-only).
    Returns whether the mode was changed."""
    try:
        current = stat.S_IMODE(path.stat().st_mode)
        if current & ~mode:
            os.chmod(path, current & mode)
            logger.log(logging.DEBUG if quiet else logging.WARNING,
                       "%s was mode %o: tightened to %o (memories are private)", path, current, current & mode)
            return True
    except OSError as exc:  # not ours, read-only file system: the open that follows reports it
        logger.debug("cannot tighten %s: %s", path, exc)
    return False


def private_file(path: Path) -> Path:
    """Make sure ``path`` (a database or state file) exists with mode 0600 before SQLite opens it.

    A missing file is created empty with 0600 (SQLite gives its ``-wal`` and
    ``-shm`` files the database file's mode); an existing one, and its
    ``-wal`` / ``-shm`` companions, are tightened to 0600. Errors are left
    to the open that follows (read-only file system, missing directory).
    """
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))
    except FileExistsError:
        for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            if p.exists():
                tighten(p, PRIVATE_FILE_MODE)
    except OSError as exc:
        logger.debug("cannot create %s: %s", path, exc)
    return path


def private_umask() -> None:
    """Set the process umask to 0077, so every file we create is 0600 and every directory 0700.

    Called by the CLI entry points and the hook runtime; a library caller
    keeps its own umask (the files we open ourselves use :func:`private_file`).
    """
    os.umask(PRIVATE_UMASK)


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (a temporary file beside it, then a rename), mode
    0600; on failure (disk full) no temporary file is left behind and the error is raised."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
