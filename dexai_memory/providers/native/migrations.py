"""Schema migrations of the native SQLite store, as numbered functions.

Each ``mNNN_name()`` returns the SQL script of migration NNN; the script runs
once, inside one transaction together with its row in the ``schema_migrations``
table, so a failed migration leaves the database as it was. :func:`migrate` applies the missing ones in
order. Before it changes a database that already holds data, the caller
(:class:`~dexai_memory.providers.native.database.Database`) copies the file to a
backup, so nothing is overwritten without one.

The vector table (``memories_vec``) is not created here: its dimension depends
on the embedder, so the provider creates it on first use
(:meth:`~dexai_memory.providers.native.vectors.Vectors.setup`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ...errors import MigrationError

logger = logging.getLogger(__name__)

Conn = Any  # a sqlite3-compatible connection (sqlean or stdlib)
MIGRATIONS: list[tuple[int, str, Callable[[], str]]] = []


def migration(fn: Callable[[], str]) -> Callable[[], str]:
    """Register ``fn`` (named ``mNNN_description``) as migration NNN."""
    number = int(fn.__name__[1:4])
    MIGRATIONS.append((number, fn.__name__, fn))
    MIGRATIONS.sort(key=lambda m: m[0])
    return fn


@migration
def m001_initial() -> str:
    return (
        """
        CREATE TABLE memories (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL,
            project TEXT,
            content TEXT NOT NULL,
            type TEXT NOT NULL,
            importance INTEGER NOT NULL DEFAULT 5,
            confidence REAL NOT NULL DEFAULT 0.8,
            mention_count INTEGER NOT NULL DEFAULT 1,
            tier TEXT NOT NULL DEFAULT 'L2',
            source_ids TEXT NOT NULL DEFAULT '[]',
            session_id TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT,
            valid_from TEXT NOT NULL,
            valid_until TEXT,
            superseded_by TEXT,
            superseded_at TEXT,
            archived INTEGER NOT NULL DEFAULT 0,
            pinned INTEGER NOT NULL DEFAULT 0,
            deleted INTEGER NOT NULL DEFAULT 0,
            retrieval_count INTEGER NOT NULL DEFAULT 0,
            citation_count INTEGER NOT NULL DEFAULT 0,
            last_accessed TEXT,
            metadata TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX ix_memories_user ON memories (user_id, created_at);
        CREATE INDEX ix_memories_user_type ON memories (user_id, type, tier);
        CREATE INDEX ix_memories_session ON memories (session_id);
        CREATE INDEX ix_memories_superseded_by ON memories (superseded_by);

        CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, content='memories', content_rowid='rowid', tokenize='porter unicode61'
        );
        CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, content) VALUES (new.rowid, new.content);
        END;
        CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
        END;
        CREATE TRIGGER memories_au AFTER UPDATE OF content ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
            INSERT INTO memories_fts(rowid, content) VALUES (new.rowid, new.content);
        END;

        CREATE TABLE memory_events (
            id INTEGER PRIMARY KEY,
            memory_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            action TEXT NOT NULL,
            reason TEXT NOT NULL,
            at TEXT NOT NULL,
            related_id TEXT,
            details TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX ix_events_memory ON memory_events (memory_id);

        CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        """
    )


@migration
def m002_commitments() -> str:
    """Commitments: what, who, when, status, with provenance."""
    return (
        """
        CREATE TABLE commitments (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            project TEXT,
            memory_id TEXT,
            what TEXT NOT NULL,
            who TEXT,
            due_at TEXT,
            due_text TEXT,
            status TEXT NOT NULL DEFAULT 'open',
            source_ids TEXT NOT NULL DEFAULT '[]',
            session_id TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT
        );
        CREATE INDEX ix_commitments_user ON commitments (user_id, status, due_at);
        """
    )


@migration
def m003_vectors_pending() -> str:
    """Memories stored without their vector yet (a deferred bulk ingest); filled by ``fill_vectors``."""
    return "CREATE TABLE vectors_pending (rowid INTEGER PRIMARY KEY);"


@migration
def m004_contradictions() -> str:
    """Contradictions between memories: a, b, when, how resolved (NULL = open), a note."""
    return (
        """
        CREATE TABLE contradictions (
            id INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            memory_a TEXT NOT NULL,
            memory_b TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            detected_at TEXT NOT NULL,
            resolution TEXT CHECK (resolution IN ('a_wins', 'b_wins', 'both_valid', 'merged')),
            resolved_at TEXT,
            note TEXT,
            auto INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX ix_contradictions_user ON contradictions (user_id, resolution, detected_at);
        """
    )


@migration
def m005_commitments_into_memories() -> str:
    """One commitment shape: the ``commitments`` table folded into the COMMITMENT memories' metadata.

    Recall, closing and the panel read ``metadata.commitment`` of the memories; the table was
    written beside it and read by nothing else. Its rows are kept: a memory without the metadata
    gets it from its row, a row closed in the table closes its still-open memory, and a row with
    no memory id becomes a COMMITMENT memory of its own (queued for a vector). Rows whose memory
    was erased (``forget --hard``) go with it. Then the table is dropped.
    """
    row_meta = ("json_object('what', c.what, 'who', c.who, 'due_at', c.due_at, 'due_text', c.due_text, "
                "'status', c.status)")
    return (
        f"""
        UPDATE memories SET metadata = json_set(metadata, '$.commitment', json((
            SELECT {row_meta} FROM commitments c WHERE c.memory_id = memories.id
            AND c.user_id = memories.user_id ORDER BY c.created_at LIMIT 1)))
        WHERE json_type(metadata, '$.commitment') IS NULL
          AND EXISTS (SELECT 1 FROM commitments c WHERE c.memory_id = memories.id AND c.user_id = memories.user_id);

        UPDATE memories SET metadata = json_set(metadata, '$.commitment.status', (
            SELECT c.status FROM commitments c WHERE c.memory_id = memories.id AND c.user_id = memories.user_id
            AND c.status != 'open' ORDER BY c.updated_at DESC LIMIT 1))
        WHERE COALESCE(json_extract(metadata, '$.commitment.status'), 'open') = 'open'
          AND EXISTS (SELECT 1 FROM commitments c WHERE c.memory_id = memories.id AND c.user_id = memories.user_id
                      AND c.status != 'open');

        INSERT OR IGNORE INTO memories (id, user_id, project, content, type, importance, source_ids, session_id,
                                        created_at, updated_at, valid_from, metadata)
        SELECT 'm_' || substr(c.id, 3), c.user_id, c.project, c.what, 'COMMITMENT', 5, c.source_ids, c.session_id,
               c.created_at, c.updated_at, c.created_at, json_object('commitment', json({row_meta}))
        FROM commitments c WHERE c.memory_id IS NULL;

        INSERT OR IGNORE INTO vectors_pending (rowid)
        SELECT m.rowid FROM memories m JOIN commitments c ON m.id = 'm_' || substr(c.id, 3)
        WHERE c.memory_id IS NULL;

        DROP TABLE commitments;
        """
    )


@migration
def m006_links() -> str:
    """Links between memories (found at consolidation, followed by recall): a, b, kind, why, when;
    one row per (user, a, b, kind)."""
    return (
        """
        CREATE TABLE memory_links (
            id INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            memory_a TEXT NOT NULL,
            memory_b TEXT NOT NULL,
            kind TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            UNIQUE (user_id, memory_a, memory_b, kind)
        );
        CREATE INDEX ix_links_b ON memory_links (user_id, memory_b);
        """
    )


@migration
def m007_ignore_count() -> str:
    """``ignore_count``: times a memory was in a prompt's recall block and the reply did not use it
    (:mod:`dexai_memory.lifecycle.usage`); ranking weighs it against ``citation_count``."""
    return "ALTER TABLE memories ADD COLUMN ignore_count INTEGER NOT NULL DEFAULT 0;"


@migration
def m008_block_indexes() -> str:
    """Indexes for the session block's reads (pinned, top tier, by type: snapshots, commitments,
    preferences), newest first: without them a read that finds nothing walks every row of the
    user (~4 ms each at 10k memories, five of them at every session start)."""
    return (
        """
        CREATE INDEX ix_memories_user_pinned ON memories (user_id, pinned, created_at);
        CREATE INDEX ix_memories_user_tier ON memories (user_id, tier, created_at);
        CREATE INDEX ix_memories_user_type_created ON memories (user_id, type, created_at);
        """
    )


def current_version(conn: Conn) -> int:
    """The highest applied migration number (0 for a new database)."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " applied_at TEXT NOT NULL)"
    )
    row = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def pending(conn: Conn) -> list[tuple[int, str, Callable[[], str]]]:
    """Migrations not yet applied to ``conn``."""
    version = current_version(conn)
    return [m for m in MIGRATIONS if m[0] > version]


def migrate(conn: Conn) -> list[str]:
    """Apply pending migrations, each in its own transaction. Returns their names.

    Raises :class:`MigrationError` (the failed migration rolled back) on failure.
    """
    applied = []
    for number, name, fn in pending(conn):
        stamp = datetime.now(UTC).isoformat()
        script = (
            f"BEGIN;\n{fn()}\n"
            f"INSERT INTO schema_migrations (version, name, applied_at) VALUES ({number}, '{name}', '{stamp}');\n"
            "COMMIT;"
        )
        try:
            conn.executescript(script)
        except Exception as exc:  # sqlite errors of any driver
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise MigrationError(f"migration {name} failed: {exc}") from exc
        logger.info("applied migration %s", name)
        applied.append(name)
    return applied
