"""Where Claude Code keeps past sessions, and the record of those memory learned from.

Claude Code writes every session's transcript to ``<config>/projects/<project slug>/<session>.jsonl``
(``<config>``: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``), and keeps them 30 days by default.
``dexai memory learn-history`` (:mod:`dexai_memory.history`) replays them; this module is what
the other doors need without reading a transcript: the files (:func:`transcript_files`), one
file's :class:`Fingerprint` (size, modification time, a digest of its last line: a session that
grew since is learned again, an unchanged one is skipped), and the :class:`HistoryLog`, the
per-user record of the sessions learned, at ``<home>/history/learned-<user>.json``. The record
is what makes a run resumable (written after every batch of sessions) and what the panel lists
(``GET /api/history/sessions``). The SessionStart offer to learn them is recorded once per user
in the same file (:meth:`HistoryLog.offered`).

Standard library only (the daemon's SessionStart reads it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["CONFIG_ENV", "Fingerprint", "HistoryLog", "claude_config_dir", "projects_dir", "transcript_files"]

#: The variable Claude Code reads for its configuration directory (default ``~/.claude``).
CONFIG_ENV = "CLAUDE_CONFIG_DIR"
#: Bytes read from the end of a transcript for its last line's digest.
TAIL_BYTES = 64 * 1024


def claude_config_dir(environ: dict[str, str] | None = None) -> Path:
    """``$CLAUDE_CONFIG_DIR``, else ``~/.claude`` (``$HOME`` of ``environ`` when given)."""
    env = os.environ if environ is None else environ
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV]).expanduser()
    home = env.get("HOME")
    return (Path(home) if home else Path.home()) / ".claude"


def projects_dir(config: Path | None = None) -> Path:
    """``<config>/projects``: one folder per project, one ``<session>.jsonl`` per session."""
    return (config or claude_config_dir()) / "projects"


def transcript_files(projects: Path) -> list[Path]:
    """The session transcripts under ``projects`` (``*/*.jsonl``, non-empty regular files), by path."""
    if not projects.is_dir():
        return []
    found = []
    for path in projects.glob("*/*.jsonl"):
        try:
            if path.is_file() and path.stat().st_size > 0:
                found.append(path)
        except OSError:
            continue
    return sorted(found)


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What identifies one state of a transcript file: learned in this state, it is skipped."""

    size: int
    mtime_ns: int
    last_line: str

    @classmethod
    def of(cls, path: Path) -> Fingerprint:
        """The file's size, modification time and a digest of its last non-empty line."""
        with path.open("rb") as fh:
            stat = os.fstat(fh.fileno())
            fh.seek(max(0, stat.st_size - TAIL_BYTES))
            tail = fh.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
        return cls(stat.st_size, stat.st_mtime_ns, hashlib.sha256(tail).hexdigest()[:20])

    def matches(self, entry: dict[str, Any] | None) -> bool:
        """Whether the logged ``entry`` of a session was learned from this very state of its file."""
        return bool(entry) and all(entry.get(k) == v for k, v in asdict(self).items())  # type: ignore[union-attr]


def _sessions(data: dict[str, Any]) -> dict[str, Any]:
    found = data.get("sessions")
    return found if isinstance(found, dict) else {}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class HistoryLog:
    """The sessions learned for one user (see the module docstring): session id -> their entry
    (``file``, ``project``, ``cwd``, ``prompts``, ``first_at``, ``last_at``, ``learned_at``, the
    :class:`Fingerprint` fields, and ``forgotten_at`` once its memories were dropped)."""

    def __init__(self, home: Path, user_id: str):
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in user_id)[:100]
        self.path = home / "history" / f"learned-{safe}.json"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One change at a time (a learning run, the daemon's API and its SessionStart share the file)."""
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(self.path.with_suffix(".lock"), "a") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # none yet, or unreadable: learning again is idempotent
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        tmp.replace(self.path)

    def sessions(self) -> dict[str, dict[str, Any]]:
        """Every session learned: id -> its entry."""
        found = self._read().get("sessions")
        return {str(k): v for k, v in found.items() if isinstance(v, dict)} if isinstance(found, dict) else {}

    def record(self, entries: dict[str, dict[str, Any]]) -> None:
        """Add or replace the entries of sessions just learned (stamped ``learned_at``)."""
        with self._locked():
            data = self._read()
            sessions = _sessions(data)
            for sid, entry in entries.items():
                sessions[sid] = {**entry, "learned_at": _now(), "forgotten_at": None}
            self._write({**data, "sessions": sessions})

    def mark_forgotten(self, session_id: str, forgotten: bool = True) -> bool:
        """Stamp (or clear) the session's ``forgotten_at``; False when it was never learned."""
        with self._locked():
            data = self._read()
            sessions = _sessions(data)
            if session_id not in sessions:
                return False
            sessions[session_id]["forgotten_at"] = _now() if forgotten else None
            self._write({**data, "sessions": sessions})
            return True

    def offered(self) -> str | None:
        """When the SessionStart offer to learn past sessions was made (None: never)."""
        value = self._read().get("offered_at")
        return str(value) if value else None

    def record_offer(self, count: int) -> None:
        """Record that the offer was made (for ``count`` sessions): it is made once."""
        with self._locked():
            self._write({**self._read(), "offered_at": _now(), "offered_sessions": count})
