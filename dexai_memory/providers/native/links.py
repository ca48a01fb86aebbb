"""The native store's ``memory_links`` table (migration m006): the links between memories
behind :meth:`~dexai_memory.providers.base.MemoryProvider.add_links` and
:meth:`~dexai_memory.providers.base.MemoryProvider.links`."""

from __future__ import annotations

from collections.abc import Sequence

import aiosqlite

from ...models import MemoryLink, as_utc, utcnow
from .database import Database
from .schema import ts

#: Ids per ``IN (...)`` list (SQLite's default limit on parameters is far above it).
_CHUNK = 500
_SELECT = "id, memory_a, memory_b, kind, reason, created_at"


async def add_links(database: Database, links: Sequence[MemoryLink]) -> int:
    """Insert ``links`` (one already stored is ignored) in one transaction; returns how many were new."""
    if not links:
        return 0
    async with database.transaction() as db:
        before = db.total_changes
        await db.executemany(
            "INSERT OR IGNORE INTO memory_links (user_id, memory_a, memory_b, kind, reason, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(k.user_id, k.memory_a, k.memory_b, k.kind, k.reason, ts(k.created_at)) for k in links])
        return db.total_changes - before


async def links_of(db: aiosqlite.Connection, memory_ids: Sequence[str], *, user_id: str) -> list[MemoryLink]:
    """Every link of ``user_id`` with one of ``memory_ids`` at either end, oldest first (one statement
    per :data:`_CHUNK` ids: recall asks on every prompt)."""
    ids = list(dict.fromkeys(memory_ids))
    rows: dict[int, tuple[str, ...]] = {}
    for start in range(0, len(ids), _CHUNK):
        part = ids[start:start + _CHUNK]
        marks = ",".join("?" * len(part))
        # a UNION, not an OR: each side searches its own index (a by the unique key, b by ix_links_b)
        found = await db.execute_fetchall(
            f"SELECT {_SELECT} FROM memory_links WHERE user_id = ? AND memory_a IN ({marks}) UNION "
            f"SELECT {_SELECT} FROM memory_links WHERE user_id = ? AND memory_b IN ({marks})",
            [user_id, *part, user_id, *part])
        rows.update({r[0]: tuple(r[1:]) for r in found})
    return [MemoryLink(user_id, a, b, kind, reason, as_utc(at) or utcnow())
            for _, (a, b, kind, reason, at) in sorted(rows.items())]


async def forget_links(db: aiosqlite.Connection, memory_id: str, *, user_id: str) -> None:
    """Drop every link of an erased memory (inside the caller's transaction)."""
    await db.execute("DELETE FROM memory_links WHERE user_id = ? AND (memory_a = ? OR memory_b = ?)",
                     (user_id, memory_id, memory_id))
