"""Clear all, and undo: ``dexai memory clear`` and ``dexai memory undo``.

The confirmation shows the exact count ("This will remove all 12
memories"), the clear takes effect at once, and it can be undone for a while.
:func:`clear_all` soft-deletes every memory of a user (one project's with
``project``) and writes what it cleared to ``<home>/undo/clear-<user>.json``;
:func:`undo_clear` restores the latest clear while it is younger than
``lifecycle.undo_minutes``. After that window the daemon's cleanup erases the
cleared memories for good (:func:`purge_expired`): a clear the user confirmed
is not kept forever.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DexaiMemoryError, MemoryNotFound
from ..models import SearchFilters, as_utc, utcnow

if TYPE_CHECKING:
    from ..limits import LifecycleConfig
    from ..providers.base import MemoryProvider

logger = logging.getLogger(__name__)

#: Most memories one clear reads (every memory of a user, in practice).
READ_LIMIT = 1_000_000


class NothingToUndo(DexaiMemoryError, LookupError):
    """There is no clear to undo (none, or older than ``lifecycle.undo_minutes``)."""


def undo_path(home: Path, user_id: str) -> Path:
    """The record of ``user_id``'s clears: ``<home>/undo/clear-<user>.json``."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in user_id)[:100]
    return home / "undo" / f"clear-{safe}.json"


@dataclass(frozen=True, slots=True)
class ClearRecord:
    """One clear: whose, which project (None = all), when, and the ids it soft-deleted."""

    user_id: str
    project: str | None
    cleared_at: datetime
    ids: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "project": self.project, "cleared_at": self.cleared_at.isoformat(),
                "ids": list(self.ids)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClearRecord:
        return cls(str(data["user_id"]), data.get("project"), as_utc(data["cleared_at"]) or utcnow(),
                   tuple(str(i) for i in data.get("ids") or ()))

    def undoable(self, cfg: LifecycleConfig, now: datetime) -> bool:
        """Whether it is still within ``lifecycle.undo_minutes``."""
        return now - self.cleared_at <= timedelta(minutes=cfg.undo_minutes)


def _read(path: Path) -> list[ClearRecord]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise DexaiMemoryError(f"cannot read the undo record {path}: {exc}") from exc
    return [ClearRecord.from_dict(r) for r in data.get("clears") or ()]


def _write(path: Path, records: list[ClearRecord]) -> None:
    if not records:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"clears": [r.to_dict() for r in records]}), encoding="utf-8")
    tmp.replace(path)


def _filters(project: str | None) -> SearchFilters:
    return SearchFilters(project=project, valid_only=False, include_archived=True)


async def count_to_clear(provider: MemoryProvider, user_id: str, project: str | None = None) -> int:
    """How many memories :func:`clear_all` would remove (superseded and archived ones included)."""
    return await provider.count(user_id=user_id, filters=_filters(project))


async def clear_all(provider: MemoryProvider, home: Path, user_id: str, project: str | None = None,
                    *, now: datetime | None = None) -> ClearRecord:
    """Soft-delete every memory of ``user_id`` (in ``project`` when given) and record it for
    :func:`undo_clear`. Returns the record (its ``ids`` are what was cleared)."""
    memories = await provider.list(user_id=user_id, filters=_filters(project), limit=READ_LIMIT)
    return await clear_ids(provider, home, user_id, [m.id for m in memories], project=project, now=now)


async def clear_ids(provider: MemoryProvider, home: Path, user_id: str, ids: Sequence[str], *,
                    project: str | None = None, now: datetime | None = None) -> ClearRecord:
    """Soft-delete the memories ``ids`` of ``user_id`` as one clear (``dexai memory undo`` brings
    them back within ``lifecycle.undo_minutes``); ``project`` only labels the record."""
    now = now or utcnow()
    record = ClearRecord(user_id, project, now, tuple(ids))
    path = undo_path(home, user_id)
    _write(path, [*_read(path), record])  # recorded first: an interrupted clear can still be undone
    for memory_id in record.ids:
        try:
            await provider.delete(memory_id, user_id=user_id)
        except MemoryNotFound:
            continue
    logger.info("cleared %d memories of %s%s", len(record.ids), user_id, f" in {project}" if project else "")
    return record


async def undo_clear(provider: MemoryProvider, home: Path, user_id: str, cfg: LifecycleConfig, *,
                     now: datetime | None = None) -> ClearRecord:
    """Restore what the latest clear of ``user_id`` removed; raises :class:`NothingToUndo`
    when there is none within ``lifecycle.undo_minutes``."""
    now = now or utcnow()
    path = undo_path(home, user_id)
    records = _read(path)
    if not records or not records[-1].undoable(cfg, now):
        raise NothingToUndo(f"no clear of {user_id} to undo (a clear can be undone for "
                            f"{cfg.undo_minutes:g} minutes, lifecycle.undo_minutes)")
    record = records[-1]
    for memory_id in record.ids:
        try:
            if (await provider.get(memory_id, user_id=user_id, include_deleted=True)).deleted:
                await provider.restore(memory_id, user_id=user_id)
        except MemoryNotFound:
            continue
    _write(path, records[:-1])
    logger.info("undid the clear of %d memories of %s", len(record.ids), user_id)
    return record


async def purge_expired(provider: MemoryProvider, home: Path, user_id: str, cfg: LifecycleConfig, *,
                        now: datetime | None = None) -> int:
    """Erase for good the memories of ``user_id``'s clears older than the undo window (those
    still forgotten). Returns how many were erased."""
    now = now or utcnow()
    path = undo_path(home, user_id)
    records = _read(path)
    keep = [r for r in records if r.undoable(cfg, now)]
    erased = 0
    for record in records:
        if record in keep:
            continue
        for memory_id in record.ids:
            try:
                if (await provider.get(memory_id, user_id=user_id, include_deleted=True)).deleted:
                    erased += int(await provider.delete(memory_id, user_id=user_id, hard=True))
            except MemoryNotFound:
                continue
    if len(keep) != len(records):
        _write(path, keep)
    return erased
