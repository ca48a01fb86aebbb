"""The native provider: one SQLite file (WAL) with FTS5 BM25 and sqlite-vec vectors.

:class:`NativeProvider` is the :class:`~dexai_memory.providers.base.MemoryProvider`
on that file; it writes and reads the ``memories`` table and its events, and
leaves the rest to its parts:

- :mod:`.database`: the file and the one connection (opening, migrations with a
  backup, the write lock, busy retries, error translation);
- :mod:`.schema`: the table's columns, row decoding and WHERE / list / full-text
  queries;
- :mod:`.vectors`: the vectors (``vec0``, deferred vectors, the in-memory index);
- :mod:`.search`: hybrid search, BM25 (a large store's query without its common words) and
  vectors fused by reciprocal rank.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import shutil
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import aiosqlite
import numpy as np

from ...config import SearchConfig, Settings
from ...embeddings import Embedder, make_embedder
from ...errors import InvalidMemory, MemoryNotFound, StorageError
from ...models import (
    HealthStatus,
    Memory,
    MemoryEvent,
    MemoryLink,
    MemoryType,
    SearchFilters,
    SearchResult,
    utcnow,
)
from ..base import UPDATABLE_FIELDS, MemoryProvider, ProgressCallback
from ..capabilities import ProviderCapabilities
from .contradictions import NativeContradictionLog
from .damage import is_corruption
from .database import DEFAULT_BUSY_RETRY_SECONDS, Database
from .links import add_links, forget_links, links_of
from .schema import COLUMNS, SELECT, list_query, memory_params, row_to_memory, ts, where_clause
from .search import TermCounts, hybrid_search
from .vectors import Vectors, blob, bulk_embedder

logger = logging.getLogger(__name__)


class NativeProvider(MemoryProvider):
    """SQLite-backed provider. Use ``async with NativeProvider(path, embedder=...)``."""

    name = "native"
    capabilities = ProviderCapabilities(history=True, as_of=True, hard_delete=True, vector_search=True, exact_search=True,
                                       restore=True, list_users=True, links=True)

    def __init__(self, path: str | Path, *, embedder: Embedder | None = None,
                 search: SearchConfig | None = None, busy_timeout_ms: int = 5000, vector_index: bool = True,
                 busy_retry_seconds: float = DEFAULT_BUSY_RETRY_SECONDS):
        super().__init__()
        #: Serve vector KNN from an in-memory mirror of vec0 (see :mod:`dexai_memory.providers.native.vectors`).
        self.use_vector_index = vector_index
        self.path = Path(path)
        self.embedder = embedder
        self.search_config = search or SearchConfig()
        #: The file and its connection; a write still finding the database locked after
        #: ``busy_timeout_ms`` is retried for ``busy_retry_seconds``, then fails with StorageError.
        self.database = Database(self.path, busy_timeout_ms=busy_timeout_ms, busy_retry_seconds=busy_retry_seconds)
        self.vectors = Vectors(self.database, ann_threshold=self.search_config.ann_threshold,
                               max_vectors=self.search_config.index_max_vectors)
        #: Rows matched per query word, for BM25 in a large store (``search.bm25_prune_threshold``).
        self.term_counts = TermCounts()
        self.backup_path: Path | None = None
        self.contradiction_log = NativeContradictionLog(self.database)

    @classmethod
    def from_settings(cls, settings: Settings) -> NativeProvider:
        """A provider on ``settings.db_path`` with the configured embedder and search."""
        return cls(settings.db_path, embedder=make_embedder(settings.embedding), search=settings.search,
                   busy_timeout_ms=settings.storage.busy_timeout_ms,
                   busy_retry_seconds=settings.storage.busy_retry_seconds)

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        if self.database.is_open:
            return
        await self.database.open()
        self.backup_path = self.database.backup_path
        await self.vectors.setup(self.embedder, use_index=self.use_vector_index)

    async def aclose(self) -> None:
        await self.database.close()

    @property
    def db(self) -> aiosqlite.Connection:
        """The open connection (StorageError when the provider is not started)."""
        return self.database.conn

    # ------------------------------------------------------------------ vectors
    async def reembed(self, *, progress: ProgressCallback | None = None, batch: int = 256,
                      embedder: Embedder | None = None) -> int:
        """Drop all vectors and embed every memory again with the current embedder
        (or ``embedder``, the same model: see :meth:`fill_vectors`)."""
        if self.embedder is None:
            raise StorageError("embedding.backend is 'none': there is nothing to embed with")
        bulk = bulk_embedder(self.embedder, embedder)
        return await self.vectors.remake(self.embedder, bulk, progress=progress, batch=batch,
                                         use_index=self.use_vector_index)

    @contextlib.asynccontextmanager
    async def deferred_vectors(self) -> AsyncIterator[None]:
        """Inside the block, new memories are stored without vectors and queued in ``vectors_pending``.

        They are found by BM25 at once; :meth:`fill_vectors` embeds them later
        (``dexai memory reembed --missing``, the daemon's ``vectors`` job, or
        ``dexai memory ingest --vectors now``). A content edit inside the block
        queues its memory the same way.
        """
        async with self.vectors.deferred():
            yield

    async def pending_vectors(self) -> int:
        """How many memories wait for their vector (see :meth:`deferred_vectors`)."""
        return await self.vectors.pending()

    async def fill_vectors(self, *, progress: ProgressCallback | None = None, batch: int = 256,
                           limit: int | None = None, embedder: Embedder | None = None) -> int:
        """Embed memories waiting for a vector, ``batch`` per transaction; returns how many.

        ``limit`` bounds the work of one call (the daemon fills in slices).
        ``embedder`` (same model) replaces the provider's for this call: the
        CLI passes one that uses every core. Does nothing without an embedder
        or when the stored vectors belong to another model (run :meth:`reembed`).
        """
        if self.embedder is None or not self.vectors.ready:
            return 0
        return await self.vectors.fill(bulk_embedder(self.embedder, embedder), progress=progress, batch=batch,
                                       limit=limit)

    # ------------------------------------------------------------------ writes
    async def _insert(self, memories: Sequence[Memory], embeddings: np.ndarray | None) -> None:
        import sqlean

        placeholders = ", ".join("?" * len(COLUMNS))
        sql = f"INSERT INTO memories ({', '.join(COLUMNS)}) VALUES ({placeholders})"
        # embeddings[j] belongs to memories[embedded[j]] (see _embeds)
        embedded = [i for i, m in enumerate(memories) if self._embeds(m)]
        try:
            async with self.database.transaction() as db:
                if len(memories) == 1:
                    cur = await db.execute(sql, memory_params(memories[0]))
                    assert cur.lastrowid is not None  # an INSERT always sets it
                    rowids = [cur.lastrowid]
                else:
                    await db.executemany(sql, [memory_params(m) for m in memories])
                    ids = [m.id for m in memories]
                    rowid_of: dict[str, int] = {}
                    for start in range(0, len(ids), 500):
                        part = ids[start:start + 500]
                        rowid_of.update({r[0]: r[1] for r in await db.execute_fetchall(
                            f"SELECT id, rowid FROM memories WHERE id IN ({','.join('?' * len(part))})", part)})
                    rowids = [rowid_of[i] for i in ids]
                if embeddings is None and self.vectors.deferring and self.vectors.ready and embedded:
                    await self.vectors.queue(db, [rowids[i] for i in embedded])
                if embeddings is not None:
                    await self.vectors.insert(db, [(rowids[i], memories[i].user_id, vec)
                                                   for i, vec in zip(embedded, embeddings, strict=True)])
        except sqlean.IntegrityError as exc:
            raise InvalidMemory(f"a memory with that id already exists: {exc}") from exc
        if embeddings is not None:
            self.vectors.mirror([memories[i].user_id for i in embedded], [rowids[i] for i in embedded],
                                embeddings)

    def _embeds(self, memory: Memory) -> bool:
        """Whether ``memory`` gets a vector (``search.embed_transcripts`` off: L3 transcripts are BM25-only)."""
        return self.search_config.embed_transcripts or memory.type is not MemoryType.TRANSCRIPT

    async def _embed_memories(self, memories: Sequence[Memory]) -> np.ndarray | None:
        """Vectors of the memories that get one (see :meth:`_embeds`), in order."""
        return await self.vectors.embed(self.embedder, [m.content for m in memories if self._embeds(m)])

    async def add(self, memory: Memory) -> Memory:
        await self._insert([memory], await self._embed_memories([memory]))
        return memory

    async def add_many(self, memories: Iterable[Memory], *, progress: ProgressCallback | None = None,
                       batch: int = 500) -> builtins.list[Memory]:
        """Store many memories in batched transactions (embedding batched too)."""
        items = builtins.list(memories)
        for start in range(0, len(items), batch):
            chunk = items[start:start + batch]
            await self._insert(chunk, await self._embed_memories(chunk))
            if progress:
                progress(len(chunk))
        return items

    async def update(self, memory_id: str, *, user_id: str, **changes: Any) -> Memory:
        unknown = set(changes) - UPDATABLE_FIELDS
        if unknown:
            raise InvalidMemory(f"cannot update field(s): {', '.join(sorted(unknown))}")
        current = await self.get(memory_id, user_id=user_id)
        updated = current.replace(**changes, updated_at=utcnow())
        params = dict(zip(COLUMNS, memory_params(updated), strict=True))
        cols = sorted(set(changes) | {"updated_at"})
        sql = f"UPDATE memories SET {', '.join(f'{c} = ?' for c in cols)} WHERE id = ? AND user_id = ?"
        if "content" not in changes or updated.content == current.content or not self.vectors.ready:
            # one statement: atomic on its own, no explicit transaction (ingest merges thousands of notes)
            await self.database.write(sql, [params[c] for c in cols] + [memory_id, user_id])
            return updated
        vec = await self.vectors.embed(self.embedder, [updated.content]) if self._embeds(updated) else None
        async with self.database.transaction() as db:
            # the content changed and vectors are on: replace the vector in the same transaction
            await db.execute(sql, [params[c] for c in cols] + [memory_id, user_id])
            rows = builtins.list(await db.execute_fetchall("SELECT rowid FROM memories WHERE id = ?", (memory_id,)))
            rowid = rows[0][0] if rows else None
            await db.execute("DELETE FROM memories_vec WHERE rowid = ?", (rowid,))
            if vec is not None:
                await db.execute("INSERT INTO memories_vec (rowid, user_id, embedding) VALUES (?, ?, ?)",
                                 (rowid, user_id, blob(vec[0])))
            elif self.vectors.deferring and self._embeds(updated):
                await db.execute("INSERT OR IGNORE INTO vectors_pending (rowid) VALUES (?)", (rowid,))
        self.vectors.forget_saved_graph(user_id)
        index = self.vectors.index
        if index is not None and rowid is not None:
            if vec is not None:
                index.add(user_id, [rowid], vec[:1])
            else:
                index.remove(user_id, rowid)
        return updated

    async def delete(self, memory_id: str, *, user_id: str, hard: bool = False) -> bool:
        async with self.db.execute("SELECT rowid, deleted FROM memories WHERE id = ? AND user_id = ?",
                                   (memory_id, user_id)) as cur:
            row = await cur.fetchone()
        if row is None:
            return False
        rowid, deleted = row
        if not hard:
            if deleted:
                return False
            await self.database.write("UPDATE memories SET deleted = 1, updated_at = ? WHERE rowid = ?",
                                      (ts(utcnow()), rowid))
            await self.record_event(MemoryEvent(memory_id, "FORGET", "soft delete by request", utcnow()),
                                    user_id=user_id)
            return True
        async with self.database.transaction() as db:
            await db.execute("DELETE FROM memories WHERE rowid = ?", (rowid,))
            await db.execute("DELETE FROM vectors_pending WHERE rowid = ?", (rowid,))
            if self.vectors.ready:
                await db.execute("DELETE FROM memories_vec WHERE rowid = ?", (rowid,))
            await db.execute("DELETE FROM memory_events WHERE memory_id = ? AND user_id = ?", (memory_id, user_id))
            await forget_links(db, memory_id, user_id=user_id)
        self.vectors.forget_saved_graph(user_id)
        if self.vectors.index is not None:
            self.vectors.index.remove(user_id, rowid)
        return True

    async def restore(self, memory_id: str, *, user_id: str) -> Memory:
        """Undo a soft delete (``forget`` without ``--hard``)."""
        await self.get(memory_id, user_id=user_id, include_deleted=True)
        await self.database.write("UPDATE memories SET deleted = 0, updated_at = ? WHERE id = ? AND user_id = ?",
                                  (ts(utcnow()), memory_id, user_id))
        await self.record_event(MemoryEvent(memory_id, "RESTORE", "restored by request", utcnow()), user_id=user_id)
        return await self.get(memory_id, user_id=user_id)

    async def record_event(self, event: MemoryEvent, *, user_id: str) -> None:
        await self.record_events([event], user_id=user_id)

    async def record_events(self, events: Sequence[MemoryEvent], *, user_id: str) -> None:
        """Append many events in one statement (ingest records one per new note)."""
        async with self.database.write_lock:
            await self.db.executemany(
                "INSERT INTO memory_events (memory_id, user_id, action, reason, at, related_id, details) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(e.memory_id, user_id, e.action, e.reason, ts(e.at), e.related_id,
                  json.dumps(dict(e.details), default=str)) for e in events],
            )

    async def events(self, memory_id: str, *, user_id: str) -> builtins.list[MemoryEvent]:
        async with self.db.execute(
            "SELECT memory_id, action, reason, at, related_id, details FROM memory_events "
            "WHERE memory_id = ? AND user_id = ? ORDER BY id", (memory_id, user_id)
        ) as cur:
            rows = await cur.fetchall()
        return [MemoryEvent(r[0], r[1], r[2], datetime.fromisoformat(r[3]), r[4], json.loads(r[5] or "{}"))
                for r in rows]

    async def record_retrieval(self, memory_ids: Sequence[str], *, user_id: str, refresh: bool = True,
                               ignored: bool = False) -> None:
        if not memory_ids:
            return
        where = f"WHERE user_id = ? AND id IN ({','.join('?' * len(memory_ids))})"
        if ignored:  # one statement, ``updated_at`` untouched: being ignored is no reference (expiry)
            await self.database.write(f"UPDATE memories SET ignore_count = ignore_count + 1 {where}",
                                      [user_id, *memory_ids])
            return
        await self.database.write(
            f"UPDATE memories SET retrieval_count = retrieval_count + 1, last_accessed = "
            f"{'?' if refresh else 'last_accessed'} {where}", [*([ts(utcnow())] if refresh else []), user_id, *memory_ids])

    async def add_links(self, links: Sequence[MemoryLink]) -> int:
        """Store links (the ``memory_links`` table); returns how many were new."""
        return await add_links(self.database, links)

    async def links(self, memory_ids: Sequence[str], *, user_id: str) -> builtins.list[MemoryLink]:
        return await links_of(self.db, memory_ids, user_id=user_id)

    # ------------------------------------------------------------------ reads
    async def get(self, memory_id: str, *, user_id: str, include_deleted: bool = False) -> Memory:
        rows = builtins.list(await self.db.execute_fetchall(
            f"SELECT {SELECT} FROM memories m WHERE m.id = ? AND m.user_id = ?", (memory_id, user_id)))
        row = rows[0] if rows else None
        if row is None or (row[COLUMNS.index("deleted")] and not include_deleted):
            raise MemoryNotFound(f"no memory {memory_id!r} for user {user_id!r}")
        return row_to_memory(row)

    async def list(self, *, user_id: str, filters: SearchFilters | None = None, limit: int = 100,
                   offset: int = 0) -> builtins.list[Memory]:
        sql, params = list_query(user_id, filters or SearchFilters(), limit=limit, offset=offset)
        return [row_to_memory(r) for r in await self.db.execute_fetchall(sql, params)]

    async def count(self, *, user_id: str, filters: SearchFilters | None = None) -> int:
        where, params = where_clause(user_id, filters or SearchFilters())
        async with self.db.execute(f"SELECT COUNT(*) FROM memories m WHERE {where}", params) as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def users(self) -> builtins.list[str]:
        """Every user id with at least one memory."""
        async with self.db.execute("SELECT DISTINCT user_id FROM memories ORDER BY user_id") as cur:
            return [r[0] for r in await cur.fetchall()]

    async def superseded_by(self, memory_id: str, *, user_id: str) -> builtins.list[Memory]:
        async with self.db.execute(f"SELECT {SELECT} FROM memories m WHERE m.superseded_by = ? AND m.user_id = ?",
                                   (memory_id, user_id)) as cur:
            return [row_to_memory(r) for r in await cur.fetchall()]

    async def search(self, query: str, *, user_id: str, filters: SearchFilters | None = None,
                     limit: int = 10) -> builtins.list[SearchResult]:
        """Hybrid search (:func:`~dexai_memory.providers.native.search.hybrid_search`)."""
        return await hybrid_search(self.db, self.vectors, self.embedder, self.search_config, query,
                                   user_id=user_id, filters=filters, limit=limit, terms=self.term_counts)

    # ------------------------------------------------------------------ health
    async def health_check(self) -> HealthStatus:
        problems: builtins.list[str] = []
        details: dict[str, Any] = {"path": str(self.path)}
        try:
            async with self.db.execute("SELECT vec_version()") as cur:
                details["sqlite_vec"] = (await cur.fetchone())[0]  # type: ignore[index]
            async with self.db.execute("SELECT sqlite_version()") as cur:
                details["sqlite"] = (await cur.fetchone())[0]  # type: ignore[index]
            async with self.db.execute("SELECT MAX(version) FROM schema_migrations") as cur:
                details["schema_version"] = (await cur.fetchone())[0]  # type: ignore[index]
            async with self.db.execute("SELECT COUNT(*), COUNT(DISTINCT user_id) FROM memories") as cur:
                total, users = await cur.fetchone()  # type: ignore[misc]
            details.update(memories=total, users=users)
            details["vectors_pending"] = await self.pending_vectors()
            async with self.db.execute("PRAGMA quick_check") as cur:
                check = (await cur.fetchone())[0]  # type: ignore[index]
            if check != "ok":
                problems.append(str(self.database.corrupt(f"integrity check failed: {check}")))
        except Exception as exc:  # any driver error is a health problem, reported not raised
            problems.append(str(self.database.corrupt(f"unreadable: {exc}")) if is_corruption(exc)
                            else f"database error: {exc}")
        if self.database.damaged and not problems:
            problems.append(str(self.database.corrupt(self.database.damaged)))
        details["embedder"] = self.embedder.model_id if self.embedder else "none (BM25 only)"
        details["vector_search"] = self.vectors.ready
        if self.embedder is not None and not self.vectors.ready:
            problems.append("vectors were made by another embedder: run 'dexai memory reembed'")
        if self.path.exists():
            details["size_bytes"] = self.path.stat().st_size
        return HealthStatus(healthy=not problems, provider=self.name, details=details, problems=tuple(problems))



def copy_with_backup(src: Path, dest: Path) -> Path | None:
    """Copy ``src`` over ``dest``, keeping the old ``dest`` as ``dest.bak`` first. Returns the backup."""
    backup = None
    if dest.exists():
        backup = dest.with_name(dest.name + ".bak")
        shutil.copy2(dest, backup)
    shutil.copy2(src, dest)
    return backup
