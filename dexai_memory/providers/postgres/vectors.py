"""The vector side of the Postgres store: the ``embedding`` column, its HNSW index and its model.

The column's dimension depends on the embedder, so it is added on first use
(like the native store's ``vec0`` table), under the migration lock so that
machines starting at once add it once, and the model that made the vectors is
recorded in ``store_meta``. A provider whose embedder is another model keeps
vector search off (full text only) rather than mixing two models' vectors.

:class:`Vectors` decides which memories get a vector, defers them during a bulk
ingest and fills the missing ones later.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from ...models import Memory, MemoryType
from .migrations import MIGRATION_LOCK
from .schema import vector_literal

if TYPE_CHECKING:
    import psycopg

    from ...embeddings import Embedder
    from ..base import ProgressCallback
    from .database import Database

logger = logging.getLogger(__name__)


async def meta(conn: psycopg.AsyncConnection, key: str) -> str | None:
    """A value of ``store_meta`` (None when unset)."""
    row = await (await conn.execute("SELECT value FROM store_meta WHERE key = %s", (key,))).fetchone()
    return str(row[0]) if row else None


async def setup(conn: psycopg.AsyncConnection, embedder: Embedder | None) -> bool:
    """Add the ``embedding`` column and its HNSW index for ``embedder`` on first use.

    Returns whether the stored vectors are ``embedder``'s (vector search on).
    """
    if embedder is None:
        return False
    async with conn.transaction():
        await conn.execute("SET LOCAL statement_timeout = 0")  # an index on a large table takes minutes
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        model = await meta(conn, "embedding_model")
        dim = await meta(conn, "embedding_dim")
        if model is None:
            await conn.execute(f"ALTER TABLE memories ADD COLUMN IF NOT EXISTS embedding vector({int(embedder.dim)})")
            await conn.execute("CREATE INDEX IF NOT EXISTS ix_memories_embedding ON memories "
                               "USING hnsw (embedding vector_cosine_ops)")
            await conn.execute("INSERT INTO store_meta (key, value) VALUES ('embedding_model', %s), "
                               "('embedding_dim', %s)", (embedder.model_id, str(embedder.dim)))
            return True
    if model == embedder.model_id and int(dim or 0) == embedder.dim:
        return True
    logger.warning("vectors in the postgres store were made by %s, not %s: vector search is off",
                   model, embedder.model_id)
    return False


class Vectors:
    """The vectors of one store: which memories get one, deferred writes, filling the missing ones."""

    def __init__(self, database: Database, embedder: Embedder | None, *, embed_transcripts: bool):
        self.database = database
        self.embedder = embedder
        self.embed_transcripts = embed_transcripts
        #: Whether the stored vectors are the embedder's (set by the provider on start).
        self.ready = False
        self._defer_depth = 0

    async def setup(self) -> bool:
        """Set up the vector column for the embedder (see :func:`setup`); returns :attr:`ready`."""
        async with self.database.connection() as conn:
            self.ready = await setup(conn, self.embedder)
        return self.ready

    def embeds(self, memory: Memory) -> bool:
        """Whether ``memory`` gets a vector (``search.embed_transcripts`` off: transcripts are full text only)."""
        return self.embed_transcripts or memory.type is not MemoryType.TRANSCRIPT

    async def of(self, memories: Sequence[Memory]) -> list[str | None]:
        """The vector (pgvector text) of each memory; None where it is stored without one
        (no embedder, another model's store, inside :meth:`deferred`)."""
        picks = [i for i, m in enumerate(memories) if self.embeds(m)]
        out: list[str | None] = [None] * len(memories)
        if self.embedder is None or not self.ready or self._defer_depth or not picks:
            return out
        vecs = await self.embedder.aembed_batch([memories[i].content for i in picks])
        for i, vec in zip(picks, vecs, strict=True):
            out[i] = vector_literal(vec)
        return out

    @contextlib.asynccontextmanager
    async def deferred(self) -> AsyncIterator[None]:
        """Inside the block, new memories are stored without a vector; :meth:`fill` adds them later."""
        self._defer_depth += 1
        try:
            yield
        finally:
            self._defer_depth -= 1

    def _missing(self) -> str:
        skip = "" if self.embed_transcripts else f" AND type <> '{MemoryType.TRANSCRIPT.value}'"
        return f"embedding IS NULL AND NOT deleted{skip}"

    async def pending(self) -> int:
        """How many memories wait for a vector."""
        if not self.ready:
            return 0
        rows = await self.database.fetch(f"SELECT COUNT(*) FROM memories WHERE {self._missing()}")
        return int(rows[0][0])

    async def fill(self, *, progress: ProgressCallback | None, batch: int, limit: int | None) -> int:
        """Embed memories stored without a vector, ``batch`` per statement; returns how many."""
        if self.embedder is None or not self.ready:
            return 0
        rows = await self.database.fetch(f"SELECT id, content FROM memories WHERE {self._missing()} ORDER BY id"
                                         + (" LIMIT %s" if limit else ""), (limit,) if limit else ())
        for start in range(0, len(rows), batch):
            chunk = rows[start:start + batch]
            vecs = await self.embedder.aembed_batch([r[1] for r in chunk])
            async with self.database.connection() as conn, conn.cursor() as cur:
                await cur.executemany("UPDATE memories SET embedding = %s::vector WHERE id = %s",
                                      [(vector_literal(v), r[0]) for r, v in zip(chunk, vecs, strict=True)])
            if progress:
                progress(len(chunk))
        return len(rows)
