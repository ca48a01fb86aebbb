"""The native store's ``contradictions`` table (migration m004), behind
:class:`~dexai_memory.providers.contradictions.ContradictionLog`."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...errors import MemoryNotFound
from ...models import Contradiction, as_utc
from ..contradictions import ContradictionLog
from .database import Database
from .schema import ts

_COLUMNS = "id, user_id, memory_a, memory_b, reason, detected_at, resolution, resolved_at, note, auto"


def _row(row: Sequence[Any]) -> Contradiction:
    cid, user, a, b, reason, detected, resolution, resolved, note, auto = row
    return Contradiction(user, a, b, reason=reason, detected_at=as_utc(detected) or datetime.min,
                         resolution=resolution, resolved_at=as_utc(resolved), note=note, auto=bool(auto), id=int(cid))


class NativeContradictionLog(ContradictionLog):
    """Contradictions in the native database's ``contradictions`` table."""

    def __init__(self, database: Database):
        self.database = database

    async def add(self, contradiction: Contradiction) -> Contradiction:
        c = contradiction
        async with self.database.transaction() as db:
            cur = await db.execute(
                "INSERT INTO contradictions (user_id, memory_a, memory_b, reason, detected_at, resolution, "
                "resolved_at, note, auto) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (c.user_id, c.memory_a, c.memory_b, c.reason, ts(c.detected_at), c.resolution, ts(c.resolved_at),
                 c.note, int(c.auto)))
            rowid = cur.lastrowid
        return await self.get(int(rowid or 0), user_id=c.user_id)

    async def get(self, contradiction_id: int, *, user_id: str) -> Contradiction:
        async with self.database.conn.execute(f"SELECT {_COLUMNS} FROM contradictions WHERE id = ? AND user_id = ?",
                                              (contradiction_id, user_id)) as cur:
            row = await cur.fetchone()
        if row is None:
            raise MemoryNotFound(f"no contradiction {contradiction_id} for user {user_id!r}")
        return _row(row)

    async def list(self, *, user_id: str, open_only: bool = True, limit: int = 100) -> builtins.list[Contradiction]:
        sql = f"SELECT {_COLUMNS} FROM contradictions WHERE user_id = ?"
        if open_only:
            sql += " AND resolution IS NULL"
        sql += " ORDER BY detected_at DESC, id DESC LIMIT ?"
        async with self.database.conn.execute(sql, (user_id, limit)) as cur:
            return [_row(r) for r in await cur.fetchall()]

    async def resolve(self, contradiction_id: int, *, user_id: str, resolution: str, note: str | None,
                      at: datetime) -> Contradiction:
        await self.get(contradiction_id, user_id=user_id)
        await self.database.write(
            "UPDATE contradictions SET resolution = ?, resolved_at = ?, note = ?, auto = 0 WHERE id = ? AND user_id = ?",
            (resolution, ts(at), note, contradiction_id, user_id))
        return await self.get(contradiction_id, user_id=user_id)
