"""The Postgres provider: one PostgreSQL database (with pgvector) shared by many machines and a team.

:class:`PostgresProvider` is the :class:`~dexai_memory.providers.base.MemoryProvider`
on PostgreSQL, through psycopg 3 (async) and a connection pool; its parts:

- :mod:`.migrations`: the schema as numbered migrations (applied once, under an advisory lock);
- :mod:`.schema`: columns, row decoding, the WHERE / list queries and team scope;
- :mod:`.vectors`: the ``embedding`` column (pgvector, HNSW index) and its model;
- :mod:`.search`: hybrid search (full text and vectors, reciprocal rank fusion) in one round trip.

Every query is scoped by ``user_id``; a reader also sees the ``project-shared``
memories of its projects (:mod:`.schema`), and writes are owner-only. A server
that cannot be reached raises :class:`~dexai_memory.errors.ProviderUnavailable`,
so the failover wrapper (:mod:`dexai_memory.providers.fallback`) writes to the
local native store meanwhile and replays to the server when it is back.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ...config import SearchConfig, Settings
from ...embeddings import Embedder, make_embedder
from ...errors import (
    InvalidMemory,
    MemoryNotFound,
    MissingExtra,
    ProviderError,
    ProviderUnavailable,
)
from ...models import (
    HealthStatus,
    Memory,
    MemoryEvent,
    MemoryLink,
    SearchFilters,
    SearchResult,
    as_utc,
    utcnow,
)
from ..base import UPDATABLE_FIELDS, MemoryProvider, ProgressCallback
from ..capabilities import ProviderCapabilities
from . import migrations
from .database import Database
from .schema import (
    COLUMNS,
    INSERT_COLUMNS,
    SELECT,
    list_query,
    memory_params,
    row_to_memory,
    where_clause,
)
from .search import results, search_sql
from .vectors import Vectors

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'dexai-memory[postgres]'"


def import_psycopg() -> None:
    """Import psycopg and its pool; raise :class:`MissingExtra` naming the pip command if absent."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise MissingExtra(f"the postgres provider needs psycopg 3 and psycopg_pool: {INSTALL_HINT}") from exc


class PostgresProvider(MemoryProvider):
    """PostgreSQL + pgvector provider. Use ``async with PostgresProvider(dsn, embedder=...)``."""

    name = "postgres"
    capabilities = ProviderCapabilities(history=True, as_of=True, hard_delete=True, vector_search=True, exact_search=True,
                                       restore=True, list_users=True, links=True)

    def __init__(self, dsn: str, *, embedder: Embedder | None = None, search: SearchConfig | None = None,
                 schema: str = "dexai_memory", pool_size: int = 5, statement_timeout_seconds: float = 10.0,
                 connect_timeout_seconds: float = 5.0, ef_search: int = 100):
        super().__init__()
        if not dsn:
            raise ProviderUnavailable("no postgres connection string: set $DEXAI_POSTGRES_DSN "
                                      "(or postgres.dsn_env)")
        self.embedder = embedder
        self.search_config = search or SearchConfig()
        self.schema = schema
        #: The server and the pool (the DSN stays private to it: it may hold a password).
        self.database = Database(dsn, schema=schema, pool_size=pool_size,
                                 statement_timeout_seconds=statement_timeout_seconds,
                                 connect_timeout_seconds=connect_timeout_seconds, ef_search=ef_search)
        self.vectors = Vectors(self.database, embedder, embed_transcripts=self.search_config.embed_transcripts)

    @classmethod
    def from_settings(cls, settings: Settings) -> PostgresProvider:
        """A provider on the server named by ``$<postgres.dsn_env>``, with the configured embedder."""
        pg = settings.postgres
        return cls(os.environ.get(pg.dsn_env, ""), embedder=make_embedder(settings.embedding),
                   search=settings.search, schema=pg.schema, pool_size=pg.pool_size,
                   statement_timeout_seconds=pg.statement_timeout_seconds,
                   connect_timeout_seconds=pg.connect_timeout_seconds, ef_search=pg.ef_search)

    def __repr__(self) -> str:
        return f"PostgresProvider({self.database.server!r}, schema={self.schema!r})"

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        if self.database.is_open:
            return
        import_psycopg()
        await self.database.open()
        try:
            await self.vectors.setup()
        except BaseException:
            await self.database.close()  # a later start() tries the whole start again
            raise

    async def aclose(self) -> None:
        await self.database.close()

    @property
    def vectors_ready(self) -> bool:
        """Whether the stored vectors are the embedder's (vector search on)."""
        return self.vectors.ready

    # ------------------------------------------------------------------ vectors
    @contextlib.asynccontextmanager
    async def deferred_vectors(self) -> AsyncIterator[None]:
        """Inside the block, new memories are stored without a vector; :meth:`fill_vectors` adds them."""
        async with self.vectors.deferred():
            yield

    async def pending_vectors(self) -> int:
        """How many memories wait for a vector."""
        return await self.vectors.pending()

    async def fill_vectors(self, *, progress: ProgressCallback | None = None, batch: int = 256,
                           limit: int | None = None, embedder: Embedder | None = None) -> int:
        """Embed memories stored without a vector, ``batch`` per statement; returns how many (with the
        provider's own embedder: ``embedder`` is accepted for the interface and not used)."""
        return await self.vectors.fill(progress=progress, batch=batch, limit=limit)

    # ------------------------------------------------------------------ writes
    async def _insert(self, memories: Sequence[Memory]) -> None:
        vecs = await self.vectors.of(memories)
        cols = ", ".join(INSERT_COLUMNS)
        marks = ", ".join(["%s"] * len(INSERT_COLUMNS))
        rows = [memory_params(m) for m in memories]
        members = sorted({(m.user_id, m.project) for m in memories if m.project})
        async with self.database.connection() as conn, conn.transaction(), conn.cursor() as cur:
            if self.vectors_ready:
                await cur.executemany(f"INSERT INTO memories ({cols}, embedding) VALUES ({marks}, %s::vector)",
                                      [(*r, v) for r, v in zip(rows, vecs, strict=True)])
            else:
                await cur.executemany(f"INSERT INTO memories ({cols}) VALUES ({marks})", rows)
            if members:
                await cur.executemany("INSERT INTO project_members (user_id, project) VALUES (%s, %s) "
                                      "ON CONFLICT DO NOTHING", members)

    async def add(self, memory: Memory) -> Memory:
        await self._insert([memory])
        return memory

    async def add_many(self, memories: Iterable[Memory], *, progress: ProgressCallback | None = None,
                       batch: int = 500) -> builtins.list[Memory]:
        """Store many memories, ``batch`` per transaction (embedding batched too)."""
        items = builtins.list(memories)
        for start in range(0, len(items), batch):
            chunk = items[start:start + batch]
            await self._insert(chunk)
            if progress:
                progress(len(chunk))
        return items

    async def _own(self, memory_id: str, user_id: str, *, include_deleted: bool = False) -> Memory:
        rows = await self.database.fetch(f"SELECT {SELECT} FROM memories m WHERE m.id = %s AND m.user_id = %s",
                                         (memory_id, user_id))
        if not rows or (rows[0][COLUMNS.index("deleted")] and not include_deleted):
            raise MemoryNotFound(f"no memory {memory_id!r} for user {user_id!r}")
        return row_to_memory(rows[0])

    async def update(self, memory_id: str, *, user_id: str, **changes: Any) -> Memory:
        """Change fields of one of ``user_id``'s own memories (a shared memory changes only by its owner)."""
        unknown = set(changes) - UPDATABLE_FIELDS
        if unknown:
            raise InvalidMemory(f"cannot update field(s): {', '.join(sorted(unknown))}")
        current = await self._own(memory_id, user_id)
        updated = current.replace(**changes, updated_at=utcnow())
        values = dict(zip(INSERT_COLUMNS, memory_params(updated), strict=True))
        cols = sorted(set(changes) | {"updated_at", "scope"})
        sets = [f"{c} = %s" for c in cols]
        params = [values[c] for c in cols]
        if "content" in changes and updated.content != current.content and self.vectors_ready:
            vec = (await self.vectors.of([updated]))[0]
            sets.append("embedding = %s::vector")
            params.append(vec)
        members = [(user_id, updated.project)] if updated.project and updated.project != current.project else []
        async with self.database.connection() as conn, conn.transaction():
            await conn.execute(f"UPDATE memories SET {', '.join(sets)} WHERE id = %s AND user_id = %s",  # type: ignore[arg-type]
                               [*params, memory_id, user_id])
            for member in members:
                await conn.execute("INSERT INTO project_members (user_id, project) VALUES (%s, %s) "
                                   "ON CONFLICT DO NOTHING", member)
        return updated

    async def delete(self, memory_id: str, *, user_id: str, hard: bool = False) -> bool:
        rows = await self.database.fetch("SELECT deleted FROM memories WHERE id = %s AND user_id = %s",
                                         (memory_id, user_id))
        if not rows:
            return False
        if not hard:
            if rows[0][0]:
                return False
            await self.database.fetch("UPDATE memories SET deleted = TRUE, updated_at = %s WHERE id = %s AND user_id = %s "
                              "RETURNING id", (utcnow(), memory_id, user_id))
            await self.record_event(MemoryEvent(memory_id, "FORGET", "soft delete by request", utcnow()),
                                    user_id=user_id)
            return True
        async with self.database.connection() as conn, conn.transaction():
            cur = await conn.execute("DELETE FROM memories WHERE id = %s AND user_id = %s", (memory_id, user_id))
            await conn.execute("DELETE FROM memory_events WHERE memory_id = %s AND user_id = %s",
                               (memory_id, user_id))
            await conn.execute("DELETE FROM memory_links WHERE user_id = %s AND (memory_a = %s OR memory_b = %s)",
                               (user_id, memory_id, memory_id))
        return cur.rowcount > 0

    async def restore(self, memory_id: str, *, user_id: str) -> Memory:
        """Undo a soft delete (``forget`` without ``--hard``)."""
        await self._own(memory_id, user_id, include_deleted=True)
        await self.database.fetch("UPDATE memories SET deleted = FALSE, updated_at = %s WHERE id = %s AND user_id = %s "
                          "RETURNING id", (utcnow(), memory_id, user_id))
        await self.record_event(MemoryEvent(memory_id, "RESTORE", "restored by request", utcnow()), user_id=user_id)
        return await self._own(memory_id, user_id)

    async def record_event(self, event: MemoryEvent, *, user_id: str) -> None:
        await self.record_events([event], user_id=user_id)

    async def record_events(self, events: Sequence[MemoryEvent], *, user_id: str) -> None:
        """Append events in one statement; an event already stored (a replay) is not stored twice."""
        from psycopg.types.json import Jsonb

        if not events:
            return
        async with self.database.connection() as conn, conn.cursor() as cur:
            await cur.executemany(
                "INSERT INTO memory_events (memory_id, user_id, action, reason, at, related_id, details) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                [(e.memory_id, user_id, e.action, e.reason, e.at, e.related_id,
                  Jsonb(json.loads(json.dumps(dict(e.details), default=str)))) for e in events])

    async def events(self, memory_id: str, *, user_id: str) -> builtins.list[MemoryEvent]:
        rows = await self.database.fetch("SELECT memory_id, action, reason, at, related_id, details FROM memory_events "
                                 "WHERE memory_id = %s AND user_id = %s ORDER BY id", (memory_id, user_id))
        return [MemoryEvent(r[0], r[1], r[2], r[3], r[4], dict(r[5] or {})) for r in rows]

    async def record_retrieval(self, memory_ids: Sequence[str], *, user_id: str, refresh: bool = True,
                               ignored: bool = False) -> None:
        if not memory_ids:
            return
        if ignored:  # ``updated_at`` untouched: being ignored is no reference (lifecycle expiry)
            await self.database.fetch("UPDATE memories SET ignore_count = ignore_count + 1 "
                                      "WHERE user_id = %s AND id = ANY(%s) RETURNING id",
                                      (user_id, builtins.list(memory_ids)))
            return
        await self.database.fetch("UPDATE memories SET retrieval_count = retrieval_count + 1, "
                                  "last_accessed = COALESCE(%s, last_accessed) "
                                  "WHERE user_id = %s AND id = ANY(%s) RETURNING id",
                                  (utcnow() if refresh else None, user_id, builtins.list(memory_ids)))

    async def add_links(self, links: Sequence[MemoryLink]) -> int:
        """Store links (the ``memory_links`` table) in one statement; returns how many were new."""
        if not links:
            return 0
        columns = builtins.list(zip(*[(k.user_id, k.memory_a, k.memory_b, k.kind, k.reason, k.created_at)
                                      for k in links], strict=True))
        rows = await self.database.fetch(
            "INSERT INTO memory_links (user_id, memory_a, memory_b, kind, reason, created_at) "
            "SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::timestamptz[]) "
            "ON CONFLICT DO NOTHING RETURNING id", [builtins.list(c) for c in columns])
        return len(rows)

    async def links(self, memory_ids: Sequence[str], *, user_id: str) -> builtins.list[MemoryLink]:
        ids = builtins.list(dict.fromkeys(memory_ids))
        if not ids:
            return []
        rows = await self.database.fetch(
            "SELECT memory_a, memory_b, kind, reason, created_at FROM memory_links WHERE user_id = %s "
            "AND (memory_a = ANY(%s) OR memory_b = ANY(%s)) ORDER BY id", (user_id, ids, ids))
        return [MemoryLink(user_id, a, b, kind, reason, as_utc(at) or utcnow()) for a, b, kind, reason, at in rows]

    # ------------------------------------------------------------------ reads
    async def get(self, memory_id: str, *, user_id: str, include_deleted: bool = False) -> Memory:
        """One of ``user_id``'s memories, or a project-shared memory of one of its projects."""
        rows = await self.database.fetch(
            f"SELECT {SELECT} FROM memories m WHERE m.id = %s AND (m.user_id = %s OR (m.scope = 'project-shared' "
            "AND m.project IN (SELECT project FROM project_members WHERE user_id = %s)))",
            (memory_id, user_id, user_id))
        if not rows or (rows[0][COLUMNS.index("deleted")] and not include_deleted):
            raise MemoryNotFound(f"no memory {memory_id!r} for user {user_id!r}")
        return row_to_memory(rows[0])

    async def list(self, *, user_id: str, filters: SearchFilters | None = None, limit: int = 100,
                   offset: int = 0) -> builtins.list[Memory]:
        sql, params = list_query(user_id, filters or SearchFilters(), limit=limit, offset=offset)
        return [row_to_memory(r) for r in await self.database.fetch(sql, params)]

    async def count(self, *, user_id: str, filters: SearchFilters | None = None) -> int:
        where, params = where_clause(user_id, filters or SearchFilters())
        rows = await self.database.fetch(f"SELECT COUNT(*) FROM memories m WHERE {where}", params)
        return int(rows[0][0])

    async def users(self) -> builtins.list[str]:
        """Every user id with at least one memory."""
        return [r[0] for r in await self.database.fetch("SELECT DISTINCT user_id FROM memories ORDER BY user_id")]

    async def superseded_by(self, memory_id: str, *, user_id: str) -> builtins.list[Memory]:
        return [row_to_memory(r) for r in await self.database.fetch(
            f"SELECT {SELECT} FROM memories m WHERE m.superseded_by = %s AND m.user_id = %s", (memory_id, user_id))]

    async def search(self, query: str, *, user_id: str, filters: SearchFilters | None = None,
                     limit: int = 10) -> builtins.list[SearchResult]:
        """Hybrid search in one round trip (:mod:`dexai_memory.providers.postgres.search`)."""
        if not query or not query.strip() or limit <= 0:
            return []
        vector: np.ndarray | None = None
        if self.embedder is not None and self.vectors_ready and self.search_config.fusion in ("rrf", "vector"):
            vector = await self.embedder.aembed(query)
        built = search_sql(self.search_config, query, vector, user_id=user_id, filters=filters, limit=limit)
        if built is None:
            return []
        return results(await self.database.fetch(*built))

    # ------------------------------------------------------------------ health
    async def health_check(self) -> HealthStatus:
        """Connection, server and pgvector versions, schema version, counts; problems when any is off."""
        problems: builtins.list[str] = []
        details: dict[str, Any] = {"server": self.database.server, "schema": self.schema}
        try:
            rows = await self.database.fetch(
                "SELECT current_setting('server_version'), (SELECT extversion FROM pg_extension "
                "WHERE extname = 'vector'), (SELECT MAX(version) FROM schema_migrations), "
                "(SELECT COUNT(*) FROM memories), (SELECT COUNT(DISTINCT user_id) FROM memories)")
            version, vector_version, schema_version, total, users = rows[0]
            details.update(postgres=version, pgvector=vector_version, schema_version=schema_version,
                           memories=total, users=users)
            if vector_version is None:
                problems.append("the pgvector extension is not installed")
            if schema_version != migrations.latest_version():
                problems.append(f"schema version {schema_version}, this dexai-memory expects "
                                f"{migrations.latest_version()}")
            details["vectors_pending"] = await self.pending_vectors()
        except ProviderUnavailable:
            raise
        except ProviderError as exc:
            problems.append(str(exc))
        details["embedder"] = self.embedder.model_id if self.embedder else "none (full text only)"
        details["vector_search"] = self.vectors_ready
        if self.embedder is not None and not self.vectors_ready:
            problems.append("vectors in the store were made by another embedder: vector search is off")
        return HealthStatus(healthy=not problems, provider=self.name, details=details, problems=tuple(problems))
