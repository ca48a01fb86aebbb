"""Commitments: promises, reminders and goals with what / who / when and a status.

A commitment has one shape on every provider: a memory of type COMMITMENT,
searchable like any other, its details in ``metadata["commitment"]``
(``what``, ``who``, ``due_at``, ``due_text``, ``status``; ``closed_at`` and
``due_shown_at`` once they apply). Recall's "Coming up" section, the
persistent context's goal, closing (:mod:`dexai_memory.lifecycle.closing`)
and the panel all read that metadata. :class:`CommitmentStore` answers
"what is open / due soon" from it and changes a status. (The native store's
earlier ``commitments`` table is folded into these memories by migration
m005.)

Adding is idempotent: a commitment stored without a memory gets a memory id
derived from its user, source turns and text, so replaying a turn does not
add it twice.
"""

from __future__ import annotations

import builtins
import hashlib
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


def _sort_key(c: CommitmentRecord) -> tuple[int, str, str]:
    return (0 if c.due_at else 1, c.due_at.isoformat() if c.due_at else "", c.created_at.isoformat())


def _meta_commitment(commitment: Commitment) -> dict[str, Any]:
    return {"what": commitment.what, "who": commitment.who,
            "due_at": commitment.due_at.isoformat() if commitment.due_at else None,
            "due_text": commitment.due_text, "status": commitment.status}


class CommitmentStore:
    """Commitments of a provider's users, read from and written to their COMMITMENT memories.

    The record id is the memory id. Every method is scoped by ``user_id``.
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
        """Track ``commitment`` on the memory ``memory_id`` (or on a new COMMITMENT memory with a
        deterministic id); returns the record (the existing one if it was added before)."""
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

    async def due_soon(self, *, user_id: str, days: float = 7.0, project: str | None = None,
                       now: datetime | None = None) -> builtins.list[CommitmentRecord]:
        """Open commitments due within ``days`` (including those already past due), soonest first."""
        horizon = (now or utcnow()) + timedelta(days=days)
        return [c for c in await self.list(user_id=user_id, status="open", project=project, limit=10_000)
                if c.due_at is not None and c.due_at <= horizon]

    async def list(self, *, user_id: str, status: str | None = "open", project: str | None = None,
                   limit: int = 100) -> builtins.list[CommitmentRecord]:
        """Commitments of ``user_id`` (with ``status``, or all when None), soonest due first."""
        wanted = _check_status(status) if status is not None else None
        memories = await self.provider.list(
            user_id=user_id, filters=SearchFilters(types=(MemoryType.COMMITMENT,), project=project), limit=10_000)
        out = [r for r in (self._record(m) for m in memories) if r and (wanted is None or r.status == wanted)]
        return sorted(out, key=_sort_key)[:limit]

    async def set_status(self, commitment_id: str, status: str, *, user_id: str) -> CommitmentRecord:
        """Change the status (open, done, cancelled). Raises :class:`MemoryNotFound`."""
        m = await self.provider.get(commitment_id, user_id=user_id)
        meta = dict(m.metadata.get("commitment") or {"what": m.content})
        meta["status"] = _check_status(status)
        m = await self.provider.update(commitment_id, user_id=user_id, metadata={**m.metadata, "commitment": meta})
        record = self._record(m)
        assert record is not None
        return record
