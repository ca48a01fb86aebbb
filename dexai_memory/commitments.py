"""Commitments: promises and reminders with what / who / when and a status.

The pipeline stores every extracted commitment twice:
as a memory (type COMMITMENT, searchable like any other, its details in
``metadata["commitment"]``) and in a commitment store that answers "what is
open / due soon" and tracks status:

* :class:`NativeCommitmentStore` - the ``commitments`` table of the native
  provider's database (migration m002);
* :class:`MemoryCommitmentStore` - for providers without that table: the
  COMMITMENT memories themselves, status kept in their metadata.

:func:`commitment_store` picks the right one for a provider. Adding is
idempotent: a commitment's id is derived from its user, source turns and
text, so replaying a turn does not add it twice.
"""

from __future__ import annotations

import abc
import builtins
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .errors import InvalidMemory, MemoryNotFound
from .models import Commitment, Memory, MemoryType, SearchFilters, as_utc, utcnow
from .providers.base import MemoryProvider

#: Status values a commitment can have.
STATUSES = ("open", "done", "cancelled")


def commitment_id(user_id: str, what: str, source_ids: Sequence[str]) -> str:
    """The deterministic id of a commitment ('c_' + 20 hex chars)."""
    key = "\x1f".join([user_id, ",".join(sorted(source_ids)), " ".join(what.lower().split())])
    return "c_" + hashlib.sha256(key.encode()).hexdigest()[:20]


def _check_status(status: str) -> str:
    status = status.strip().lower()
    if status not in STATUSES:
        raise InvalidMemory(f"unknown commitment status {status!r} (expected one of: {', '.join(STATUSES)})")
    return status


@dataclass(frozen=True, slots=True)
class CommitmentRecord:
    """A stored commitment."""

    id: str
    user_id: str
    what: str
    who: str | None = None
    due_at: datetime | None = None
    due_text: str | None = None
    status: str = "open"
    memory_id: str | None = None
    source_ids: tuple[str, ...] = ()
    session_id: str | None = None
    project: str | None = None
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "user_id": self.user_id, "what": self.what, "who": self.who,
            "due_at": self.due_at.isoformat() if self.due_at else None, "due_text": self.due_text,
            "status": self.status, "memory_id": self.memory_id, "source_ids": list(self.source_ids),
            "session_id": self.session_id, "project": self.project, "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
        }


class CommitmentStore(abc.ABC):
    """Where commitments are tracked. Every method is scoped by ``user_id``."""

    @abc.abstractmethod
    async def add(self, commitment: Commitment, *, user_id: str, memory_id: str | None = None,
                  source_ids: Sequence[str] = (), session_id: str | None = None,
                  project: str | None = None) -> CommitmentRecord:
        """Track ``commitment``; returns the record (the existing one if it was added before)."""

    @abc.abstractmethod
    async def list(self, *, user_id: str, status: str | None = "open", project: str | None = None,
                   limit: int = 100) -> builtins.list[CommitmentRecord]:
        """Commitments of ``user_id`` (with ``status``, or all when None), soonest due first."""

    @abc.abstractmethod
    async def set_status(self, commitment_id: str, status: str, *, user_id: str) -> CommitmentRecord:
        """Change the status (open, done, cancelled). Raises :class:`MemoryNotFound`."""

    async def due_soon(self, *, user_id: str, days: float = 7.0, project: str | None = None,
                       now: datetime | None = None) -> builtins.list[CommitmentRecord]:
        """Open commitments due within ``days`` (including those already past due), soonest first."""
        horizon = (now or utcnow()) + timedelta(days=days)
        return [c for c in await self.list(user_id=user_id, status="open", project=project, limit=10_000)
                if c.due_at is not None and c.due_at <= horizon]


def _sort_key(c: CommitmentRecord) -> tuple[int, str, str]:
    return (0 if c.due_at else 1, c.due_at.isoformat() if c.due_at else "", c.created_at.isoformat())


class NativeCommitmentStore(CommitmentStore):
    """The native provider's ``commitments`` table (shares its connection)."""

    _COLUMNS = ("id", "user_id", "project", "memory_id", "what", "who", "due_at", "due_text", "status",
                "source_ids", "session_id", "created_at", "updated_at")

    def __init__(self, provider: Any):
        self.provider = provider

    @staticmethod
    def _ts(value: datetime | None) -> str | None:
        from .providers.native.schema import ts

        return ts(value)

    def _row(self, row: Sequence[Any]) -> CommitmentRecord:
        d = dict(zip(self._COLUMNS, row, strict=True))
        return CommitmentRecord(
            id=d["id"], user_id=d["user_id"], what=d["what"], who=d["who"], due_at=as_utc(d["due_at"]),
            due_text=d["due_text"], status=d["status"], memory_id=d["memory_id"],
            source_ids=tuple(json.loads(d["source_ids"] or "[]")), session_id=d["session_id"],
            project=d["project"], created_at=as_utc(d["created_at"]) or utcnow(), updated_at=as_utc(d["updated_at"]),
        )

    async def _get(self, cid: str, user_id: str) -> CommitmentRecord:
        async with self.provider.db.execute(
            f"SELECT {', '.join(self._COLUMNS)} FROM commitments WHERE id = ? AND user_id = ?", (cid, user_id)
        ) as cur:
            row = await cur.fetchone()
        if row is None:
            raise MemoryNotFound(f"no commitment {cid!r} for user {user_id!r}")
        return self._row(row)

    async def add(self, commitment: Commitment, *, user_id: str, memory_id: str | None = None,
                  source_ids: Sequence[str] = (), session_id: str | None = None,
                  project: str | None = None) -> CommitmentRecord:
        cid = commitment_id(user_id, commitment.what, source_ids)
        now = utcnow()
        await self.provider.database.write(  # under the write lock, outside other tasks' transactions
            f"INSERT OR IGNORE INTO commitments ({', '.join(self._COLUMNS)}) VALUES ({', '.join('?' * 13)})",
            (cid, user_id, project, memory_id, commitment.what, commitment.who, self._ts(commitment.due_at),
             commitment.due_text, _check_status(commitment.status), json.dumps(list(source_ids)), session_id,
             self._ts(now), None),
        )
        return await self._get(cid, user_id)

    async def list(self, *, user_id: str, status: str | None = "open", project: str | None = None,
                   limit: int = 100) -> builtins.list[CommitmentRecord]:
        sql = f"SELECT {', '.join(self._COLUMNS)} FROM commitments WHERE user_id = ?"
        params: builtins.list[Any] = [user_id]
        if status is not None:
            sql += " AND status = ?"
            params.append(_check_status(status))
        if project is not None:
            sql += " AND project = ?"
            params.append(project)
        sql += " ORDER BY due_at IS NULL, due_at, created_at LIMIT ?"
        params.append(limit)
        async with self.provider.db.execute(sql, params) as cur:
            return [self._row(r) for r in await cur.fetchall()]

    async def set_status(self, commitment_id: str, status: str, *, user_id: str) -> CommitmentRecord:
        await self._get(commitment_id, user_id)
        await self.provider.database.write("UPDATE commitments SET status = ?, updated_at = ? WHERE id = ? AND user_id = ?",
                                           (_check_status(status), self._ts(utcnow()), commitment_id, user_id))
        return await self._get(commitment_id, user_id)


def _meta_commitment(commitment: Commitment) -> dict[str, Any]:
    return {"what": commitment.what, "who": commitment.who,
            "due_at": commitment.due_at.isoformat() if commitment.due_at else None,
            "due_text": commitment.due_text, "status": commitment.status}


class MemoryCommitmentStore(CommitmentStore):
    """Fallback for providers without a commitments table: COMMITMENT memories with metadata.

    The record id is the memory id.
    """

    def __init__(self, provider: MemoryProvider):
        self.provider = provider

    @staticmethod
    def _record(m: Memory) -> CommitmentRecord | None:
        c = m.metadata.get("commitment")
        if not isinstance(c, Mapping):
            return None
        return CommitmentRecord(
            id=m.id, user_id=m.user_id, what=str(c.get("what") or m.content), who=c.get("who"),
            due_at=as_utc(c.get("due_at")), due_text=c.get("due_text"), status=str(c.get("status") or "open"),
            memory_id=m.id, source_ids=m.source_ids, session_id=m.session_id, project=m.project,
            created_at=m.created_at, updated_at=m.updated_at,
        )

    async def add(self, commitment: Commitment, *, user_id: str, memory_id: str | None = None,
                  source_ids: Sequence[str] = (), session_id: str | None = None,
                  project: str | None = None) -> CommitmentRecord:
        meta = _meta_commitment(commitment)
        _check_status(commitment.status)
        if memory_id is not None:
            m = await self.provider.get(memory_id, user_id=user_id)
            if not isinstance(m.metadata.get("commitment"), Mapping):
                m = await self.provider.update(memory_id, user_id=user_id,
                                               metadata={**m.metadata, "commitment": meta})
        else:
            cid = "m_" + commitment_id(user_id, commitment.what, source_ids)[2:]
            try:
                m = await self.provider.get(cid, user_id=user_id)
            except MemoryNotFound:
                m = await self.provider.add(Memory(
                    content=commitment.what, user_id=user_id, id=cid, type=MemoryType.COMMITMENT,
                    source_ids=tuple(source_ids), session_id=session_id, project=project,
                    metadata={"commitment": meta}))
        record = self._record(m)
        assert record is not None
        return record

    async def list(self, *, user_id: str, status: str | None = "open", project: str | None = None,
                   limit: int = 100) -> builtins.list[CommitmentRecord]:
        wanted = _check_status(status) if status is not None else None
        memories = await self.provider.list(
            user_id=user_id, filters=SearchFilters(types=(MemoryType.COMMITMENT,), project=project), limit=10_000)
        out = [r for r in (self._record(m) for m in memories) if r and (wanted is None or r.status == wanted)]
        return sorted(out, key=_sort_key)[:limit]

    async def set_status(self, commitment_id: str, status: str, *, user_id: str) -> CommitmentRecord:
        m = await self.provider.get(commitment_id, user_id=user_id)
        meta = dict(m.metadata.get("commitment") or {"what": m.content})
        meta["status"] = _check_status(status)
        m = await self.provider.update(commitment_id, user_id=user_id, metadata={**m.metadata, "commitment": meta})
        record = self._record(m)
        assert record is not None
        return record


def commitment_store(provider: MemoryProvider) -> CommitmentStore:
    """The commitments table for the native provider, COMMITMENT memories otherwise."""
    if provider.name == "native" and hasattr(provider, "db"):
        return NativeCommitmentStore(provider)
    return MemoryCommitmentStore(provider)
