"""Schema migrations of the Postgres store, as numbered functions (like the native store's).

Each ``mNNN_name()`` returns the SQL of migration NNN. :func:`migrate` applies
the missing ones in order, each in one transaction together with its row in
``schema_migrations``, while holding a transaction-level advisory lock: several
machines starting against a new server at once migrate it exactly once.

The vector column is not created here: its dimension depends on the embedder,
so the provider adds it (with its HNSW index) on first use
(:func:`dexai_memory.providers.postgres.vectors.setup`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...errors import MigrationError

if TYPE_CHECKING:
    import psycopg

logger = logging.getLogger(__name__)

MIGRATIONS: list[tuple[int, str, Callable[[], str]]] = []
#: Key of the advisory lock held while migrating (any fixed 64-bit number of ours).
MIGRATION_LOCK = 0x6465_7861_6900_0001


def migration(fn: Callable[[], str]) -> Callable[[], str]:
    """Register ``fn`` (named ``mNNN_description``) as migration NNN."""
    MIGRATIONS.append((int(fn.__name__[1:4]), fn.__name__, fn))
    MIGRATIONS.sort(key=lambda m: m[0])
    return fn


@migration
def m001_initial() -> str:
    """Memories (full text in a generated ``tsvector`` with a GIN index), their events, store metadata."""
    return """
        CREATE TABLE memories (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            project TEXT,
            content TEXT NOT NULL,
            type TEXT NOT NULL,
            importance INTEGER NOT NULL DEFAULT 5,
            confidence DOUBLE PRECISION NOT NULL DEFAULT 0.8,
            mention_count INTEGER NOT NULL DEFAULT 1,
            tier TEXT NOT NULL DEFAULT 'L2',
            source_ids JSONB NOT NULL DEFAULT '[]',
            session_id TEXT,
            created_at TIMESTAMPTZ NOT NULL,
            updated_at TIMESTAMPTZ,
            valid_from TIMESTAMPTZ NOT NULL,
            valid_until TIMESTAMPTZ,
            superseded_by TEXT,
            superseded_at TIMESTAMPTZ,
            archived BOOLEAN NOT NULL DEFAULT FALSE,
            pinned BOOLEAN NOT NULL DEFAULT FALSE,
            deleted BOOLEAN NOT NULL DEFAULT FALSE,
            retrieval_count INTEGER NOT NULL DEFAULT 0,
            citation_count INTEGER NOT NULL DEFAULT 0,
            last_accessed TIMESTAMPTZ,
            metadata JSONB NOT NULL DEFAULT '{}',
            fts TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', content)) STORED
        );
        CREATE INDEX ix_memories_user ON memories (user_id, created_at DESC);
        CREATE INDEX ix_memories_user_type ON memories (user_id, type, tier);
        CREATE INDEX ix_memories_session ON memories (session_id);
        CREATE INDEX ix_memories_superseded_by ON memories (superseded_by);
        CREATE INDEX ix_memories_fts ON memories USING GIN (fts);

        CREATE TABLE memory_events (
            id BIGSERIAL PRIMARY KEY,
            memory_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            action TEXT NOT NULL,
            reason TEXT NOT NULL,
            at TIMESTAMPTZ NOT NULL,
            related_id TEXT,
            details JSONB NOT NULL DEFAULT '{}'
        );
        -- one event per (memory, action, moment): a replayed event is not stored twice
        CREATE UNIQUE INDEX ux_events_once ON memory_events (user_id, memory_id, action, at, COALESCE(related_id, ''));

        CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """


@migration
def m002_team_scope() -> str:
    """Team scope: ``user-private`` (default) or ``project-shared``, and who works in which project."""
    return """
        ALTER TABLE memories ADD COLUMN scope TEXT NOT NULL DEFAULT 'user-private'
            CHECK (scope IN ('user-private', 'project-shared'));
        CREATE INDEX ix_memories_shared ON memories (project) WHERE scope = 'project-shared';
        CREATE TABLE project_members (
            user_id TEXT NOT NULL,
            project TEXT NOT NULL,
            joined_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (user_id, project)
        );
    """


@migration
def m003_links() -> str:
    """Links between memories (found at consolidation, followed by recall): one row per (user, a, b, kind)."""
    return """
        CREATE TABLE memory_links (
            id BIGSERIAL PRIMARY KEY,
            user_id TEXT NOT NULL,
            memory_a TEXT NOT NULL,
            memory_b TEXT NOT NULL,
            kind TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            created_at TIMESTAMPTZ NOT NULL,
            UNIQUE (user_id, memory_a, memory_b, kind)
        );
        CREATE INDEX ix_links_b ON memory_links (user_id, memory_b);
    """


@migration
def m004_ignore_count() -> str:
    """``ignore_count``: times a memory was in a prompt's recall block and the reply did not use it
    (:mod:`dexai_memory.lifecycle.usage`); ranking weighs it against ``citation_count``."""
    return "ALTER TABLE memories ADD COLUMN ignore_count INTEGER NOT NULL DEFAULT 0;"


async def current_version(conn: psycopg.AsyncConnection) -> int:
    """The highest applied migration number (0 for a new schema)."""
    await conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                       "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
    row = await (await conn.execute("SELECT MAX(version) FROM schema_migrations")).fetchone()
    return int(row[0] or 0) if row else 0


async def migrate(conn: psycopg.AsyncConnection, schema: str) -> list[str]:
    """Create ``schema`` and the ``vector`` extension if missing, then apply pending migrations.

    Runs in one transaction under :data:`MIGRATION_LOCK`; returns the names applied.
    Raises :class:`MigrationError` (everything rolled back) on failure.
    """
    import psycopg
    from psycopg import sql

    applied: list[str] = []
    try:
        async with conn.transaction():
            await conn.execute("SET LOCAL statement_timeout = 0")  # a migration of a large table takes long
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
            await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
            version = await current_version(conn)
            for number, name, fn in MIGRATIONS:
                if number <= version:
                    continue
                await conn.execute(fn())  # type: ignore[arg-type]  # our own constant SQL
                await conn.execute("INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (number, name))
                applied.append(name)
    except psycopg.errors.InsufficientPrivilege as exc:
        raise MigrationError(f"postgres migration failed: {exc} (ask the database's owner to run "
                             "'CREATE EXTENSION vector' and to grant you CREATE on the database)") from exc
    except psycopg.Error as exc:
        raise MigrationError(f"postgres migration failed: {exc}") from exc
    for name in applied:
        logger.info("applied postgres migration %s", name)
    return applied


async def extension_schema(conn: psycopg.AsyncConnection) -> str | None:
    """The schema the ``vector`` extension lives in (None when it is not installed)."""
    row = await (await conn.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'vector'")).fetchone()
    return str(row[0]) if row else None


def latest_version() -> int:
    """The number of the newest migration this version of dexai-memory knows."""
    return MIGRATIONS[-1][0]
