"""The vector side of the Postgres store: the ``embedding`` column, its HNSW index and its model.

The column's dimension depends on the embedder, so it is added on first use
(like the native store's ``vec0`` table), under the migration lock so that
machines starting at once add it once, and the model that made the vectors is
recorded in ``store_meta``. A provider whose embedder is another model keeps
vector search off (full text only) rather than mixing two models' vectors.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .migrations import MIGRATION_LOCK

if TYPE_CHECKING:
    import psycopg

    from ...embeddings import Embedder

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
