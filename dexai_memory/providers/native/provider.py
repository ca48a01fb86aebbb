"""The native provider: one SQLite file (WAL) with FTS5 BM25 and sqlite-vec vectors.

Search is hybrid: BM25 over an FTS5 index (porter stemming, stop words removed
from queries) and cosine KNN over a ``vec0`` table partitioned by user, fused
by weighted reciprocal rank fusion (``search.fusion``; BM25-only and
vector-only are selectable, and an embedder-less configuration is BM25-only).

The stock ``sqlite3`` module of many Python builds cannot load extensions, so
connections come from ``sqlean`` (a sqlite3-compatible build with extension
loading and FTS5) and are driven through ``aiosqlite``'s worker thread.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import logging
import re
import shutil
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import aiosqlite
import numpy as np

from ...config import PRIVATE_DIR_MODE, SearchConfig, Settings, private_file
from ...embeddings import Embedder, make_embedder
from ...errors import DatabaseCorrupt, InvalidMemory, MemoryNotFound, MigrationError, StorageError
from ...models import (
    HealthStatus,
    Memory,
    MemoryEvent,
    MemoryType,
    SearchFilters,
    SearchResult,
    utcnow,
)
from ..base import UPDATABLE_FIELDS, MemoryProvider, ProgressCallback
from . import migrations
from .vectors import VectorIndex

logger = logging.getLogger(__name__)

SQLITE_HEADER = b"SQLite format 3\x00"
#: Types left out of search unless asked for: raw transcripts and snapshots have their own readers.
SEARCH_EXCLUDED_TYPES = (MemoryType.TRANSCRIPT.value, MemoryType.SNAPSHOT.value)

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t don ll ve re m d isn aren wasn weren hasn haven hadn doesn didn won
    wouldn shan shouldn mustn can't also get got like really yeah oh ok okay hey hi""".split()
)
_WORD = re.compile(r"\w+", re.UNICODE)
_COLUMNS = (
    "id", "user_id", "project", "content", "type", "importance", "confidence", "mention_count", "tier",
    "source_ids", "session_id", "created_at", "updated_at", "valid_from", "valid_until", "superseded_by",
    "superseded_at", "archived", "pinned", "deleted", "retrieval_count", "citation_count", "last_accessed",
    "metadata",
)
_SELECT = ", ".join(f"m.{c}" for c in _COLUMNS)
#: Seconds a writer keeps retrying a database another process holds locked (on top of busy_timeout).
DEFAULT_BUSY_RETRY_SECONDS = 60.0


def is_busy(exc: BaseException) -> bool:
    """Whether a sqlite error means "another connection holds the lock" (SQLITE_BUSY / SQLITE_LOCKED)."""
    text = str(exc).lower()
    return "database is locked" in text or "database table is locked" in text or "database is busy" in text


def ts(value: datetime | None) -> str | None:
    """A datetime as a fixed-width UTC string that sorts like time."""
    if value is None:
        return None
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def fts_query(text: str, max_terms: int = 32) -> str | None:
    """An FTS5 OR-query of the content words of ``text`` (None if it has none)."""
    words = [w.lower() for w in _WORD.findall(text)]
    terms = [w for w in dict.fromkeys(words) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]
    if not terms:
        return None
    return " OR ".join(f'"{t}"' for t in terms[:max_terms])


def _row_to_memory(row: Sequence[Any]) -> Memory:
    data = dict(zip(_COLUMNS, row, strict=True))
    data["source_ids"] = tuple(json.loads(data["source_ids"] or "[]"))
    data["metadata"] = json.loads(data["metadata"] or "{}")
    for flag in ("archived", "pinned", "deleted"):
        data[flag] = bool(data[flag])
    return Memory(**data)


def _memory_params(m: Memory) -> tuple[Any, ...]:
    return (
        m.id, m.user_id, m.project, m.content, m.type.value, m.importance, m.confidence, m.mention_count,
        m.tier.value, json.dumps(list(m.source_ids)), m.session_id, ts(m.created_at), ts(m.updated_at),
        ts(m.valid_from), ts(m.valid_until), m.superseded_by, ts(m.superseded_at), int(m.archived),
        int(m.pinned), int(m.deleted), m.retrieval_count, m.citation_count, ts(m.last_accessed),
        json.dumps(dict(m.metadata), default=str),
    )


def where_clause(user_id: str, f: SearchFilters, *, for_search: bool = False) -> tuple[str, list[Any]]:
    """SQL condition (on alias ``m``) and parameters for ``f``, always scoped to ``user_id``."""
    clauses = ["m.user_id = ?", "m.deleted = 0"]
    params: list[Any] = [user_id]
    if f.project is not None:
        clauses.append("m.project = ?")
        params.append(f.project)
    if f.types:
        clauses.append(f"m.type IN ({','.join('?' * len(f.types))})")
        params.extend(t.value for t in f.types)
    elif for_search:
        clauses.append(f"m.type NOT IN ({','.join('?' * len(SEARCH_EXCLUDED_TYPES))})")
        params.extend(SEARCH_EXCLUDED_TYPES)
    if f.tiers:
        clauses.append(f"m.tier IN ({','.join('?' * len(f.tiers))})")
        params.extend(t.value for t in f.tiers)
    if f.session_id is not None:
        clauses.append("m.session_id = ?")
        params.append(f.session_id)
    if f.as_of is not None:
        clauses.append("m.valid_from <= ? AND (m.valid_until IS NULL OR m.valid_until > ?)")
        params.extend([ts(f.as_of), ts(f.as_of)])
    else:
        if f.valid_only:
            clauses.append("m.superseded_by IS NULL AND m.valid_until IS NULL")
        if not f.include_archived:
            clauses.append("m.archived = 0")
    if f.created_after is not None:
        clauses.append("m.created_at >= ?")
        params.append(ts(f.created_after))
    if f.created_before is not None:
        clauses.append("m.created_at < ?")
        params.append(ts(f.created_before))
    if f.pinned is not None:
        clauses.append("m.pinned = ?")
        params.append(int(f.pinned))
    if f.min_importance is not None:
        clauses.append("m.importance >= ?")
        params.append(f.min_importance)
    return " AND ".join(clauses), params


@dataclass(frozen=True, slots=True)
class _Candidate:
    rowid: int
    bm25_rank: int | None = None
    vector_rank: int | None = None
    similarity: float | None = None


class NativeProvider(MemoryProvider):
    """SQLite-backed provider. Use ``async with NativeProvider(path, embedder=...)``."""

    name = "native"
    capabilities = frozenset({"as_of", "history", "hard_delete", "vector_search", "exact_search"})

    def __init__(self, path: str | Path, *, embedder: Embedder | None = None,
                 search: SearchConfig | None = None, busy_timeout_ms: int = 5000, vector_index: bool = True,
                 busy_retry_seconds: float = DEFAULT_BUSY_RETRY_SECONDS):
        super().__init__()
        #: Serve vector KNN from an in-memory mirror of vec0 (see :mod:`dexai_memory.providers.native.vectors`).
        self.use_vector_index = vector_index
        self._index: VectorIndex | None = None
        self.path = Path(path)
        self.embedder = embedder
        self.search_config = search or SearchConfig()
        self.busy_timeout_ms = busy_timeout_ms
        #: A write that still finds the database locked after busy_timeout is retried (with a growing
        #: pause) until this many seconds have passed, then fails with StorageError: no silent loss.
        self.busy_retry_seconds = busy_retry_seconds
        self._db: aiosqlite.Connection | None = None
        self._vec_ready = False
        self._defer_depth = 0
        self._write_lock = asyncio.Lock()
        self.backup_path: Path | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> NativeProvider:
        """A provider on ``settings.db_path`` with the configured embedder and search."""
        return cls(settings.db_path, embedder=make_embedder(settings.embedding), search=settings.search,
                   busy_timeout_ms=settings.storage.busy_timeout_ms,
                   busy_retry_seconds=settings.storage.busy_retry_seconds)

    # ------------------------------------------------------------------ lifecycle
    def _check_file(self) -> None:
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
            private_file(self.path)  # 0600 before SQLite creates it (its -wal and -shm copy the mode)
            return
        private_file(self.path)  # an older 0644 file (and its -wal / -shm) is tightened
        try:
            with self.path.open("rb") as fh:
                header = fh.read(16)
        except OSError as exc:
            raise StorageError(f"cannot read database {self.path}: {exc.strerror}") from exc
        if header and header != SQLITE_HEADER:
            raise DatabaseCorrupt(
                f"{self.path} is not a SQLite database (it was left untouched). "
                "Move it aside or restore a backup ('dexai memory backup --list', then "
                "'dexai memory restore-backup PATH'), then run the command again."
            )

    def _connector(self) -> Any:
        import sqlean
        import sqlite_vec

        conn = sqlean.connect(str(self.path), isolation_level=None, check_same_thread=False)
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        return conn

    async def start(self) -> None:
        if self._db is not None:
            return
        self._check_file()
        import sqlean

        try:
            db = await aiosqlite.Connection(self._connector, 64)
        except sqlean.DatabaseError as exc:
            raise DatabaseCorrupt(f"cannot open {self.path}: {exc} (the file was left untouched; "
                                  "'dexai memory restore-backup PATH' puts a backup back)") from exc
        except sqlean.Error as exc:
            raise StorageError(f"cannot open {self.path}: {exc}") from exc
        try:
            # a new file is set up by whichever of several processes starting at once gets there first
            await self._retry_busy("open", lambda: db.execute("PRAGMA journal_mode = WAL"))
            await db.execute("PRAGMA synchronous = NORMAL")
            await db.execute("PRAGMA foreign_keys = ON")
            await self._migrate(db)
        except sqlean.DatabaseError as exc:
            await db.close()
            if is_busy(exc):
                raise StorageError(f"{self.path} stayed locked by another process: {exc}") from exc
            if "readonly" in str(exc) or "read-only" in str(exc):
                raise StorageError(f"{self.path} is read-only ({exc}): check the file's and the data "
                                   "directory's permissions ('dexai memory doctor')") from exc
            raise DatabaseCorrupt(f"{self.path} is unreadable: {exc} (the file was left untouched; "
                                  "'dexai memory restore-backup PATH' puts a backup back)") from exc
        except BaseException:
            await db.close()
            raise
        self._db = db
        await self._ensure_vec()

    async def _migrate(self, db: aiosqlite.Connection) -> None:
        def run(conn: Any) -> tuple[int, list[str]]:
            todo = migrations.pending(conn)
            version = migrations.current_version(conn)
            return version, [name for _, name, _ in todo]

        conn = db._conn  # the sqlite connection, used only inside the worker thread below
        version, todo = await self._retry_busy("migrate", lambda: db._execute(run, conn))  # type: ignore[attr-defined]
        if not todo:
            return
        if version > 0:
            stamp = utcnow().strftime("%Y%m%dT%H%M%S")
            backup = self.path.with_name(f"{self.path.name}.bak-v{version}-{stamp}")
            await db._execute(self._backup_to, conn, backup)  # type: ignore[attr-defined]
            self.backup_path = backup
            logger.info("backed up %s to %s before migrating", self.path, backup)
        deadline = time.monotonic() + self.busy_retry_seconds
        while True:
            try:
                await db._execute(migrations.migrate, conn)  # type: ignore[attr-defined]
                return
            except MigrationError as exc:
                # another process opening the same new file at the same moment migrated it first
                # ("already exists") or holds it ("locked"): done if nothing is left, else try again
                if not (is_busy(exc) or "already exists" in str(exc)):
                    raise
                _, left = await db._execute(run, conn)  # type: ignore[attr-defined]
                if not left:
                    return
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)

    async def _retry_busy(self, what: str, op: Callable[[], Awaitable[Any]]) -> Any:
        """``await op()``, again after a growing pause while the database is locked by another
        process (beyond ``busy_timeout``), for at most ``busy_retry_seconds``; then StorageError.
        Other sqlite operational errors (read-only, disk full) become StorageError at once."""
        import sqlean

        deadline = time.monotonic() + self.busy_retry_seconds
        pause, attempt = 0.01, 0
        while True:
            try:
                return await op()
            except sqlean.OperationalError as exc:
                if not is_busy(exc):
                    raise self._storage_error(exc, "open" if what in ("open", "migrate") else "write") from exc
                attempt += 1
                if time.monotonic() + pause > deadline:
                    raise StorageError(f"{self.path} stayed locked by another process for "
                                       f"{self.busy_retry_seconds:.0f}s ({what}): {exc}") from exc
                logger.info("%s: %s is locked by another process (attempt %d), retrying in %.2fs",
                            what, self.path.name, attempt, pause)
                await asyncio.sleep(pause)
                pause = min(pause * 2, 0.5)

    @staticmethod
    def _backup_to(conn: Any, dest: Path) -> None:
        import sqlean

        target = sqlean.connect(str(dest))
        try:
            conn.backup(target)
        finally:
            target.close()

    async def aclose(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()

    @property
    def db(self) -> aiosqlite.Connection:
        if self._db is None:
            raise StorageError("the provider is not started: use 'async with provider:' or await start()")
        return self._db

    async def _meta(self, key: str) -> str | None:
        async with self.db.execute("SELECT value FROM store_meta WHERE key = ?", (key,)) as cur:
            row = await cur.fetchone()
        return row[0] if row else None

    async def _set_meta(self, key: str, value: str) -> None:
        await self._write("INSERT INTO store_meta (key, value) VALUES (?, ?) "
                          "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    async def _ensure_vec(self) -> None:
        self._vec_ready = False
        self._index = None
        if self.embedder is None:
            return
        model = await self._meta("embedding_model")
        dim = await self._meta("embedding_dim")
        if model is None:
            await self._write(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS memories_vec USING vec0("
                f"user_id text partition key, embedding float[{self.embedder.dim}] distance_metric=cosine)"
            )
            await self._set_meta("embedding_model", self.embedder.model_id)
            await self._set_meta("embedding_dim", str(self.embedder.dim))
            self._vec_ready = True
        elif model == self.embedder.model_id and int(dim or 0) == self.embedder.dim:
            self._vec_ready = True
        if self._vec_ready and self.use_vector_index and self.embedder is not None:
            self._index = VectorIndex(self.embedder.dim)
        if not self._vec_ready:
            logger.warning("vectors in %s were made by %s, not %s: vector search is off until "
                           "'dexai memory reembed'", self.path, model, self.embedder.model_id)

    async def reembed(self, *, progress: ProgressCallback | None = None, batch: int = 256,
                      embedder: Embedder | None = None) -> int:
        """Drop all vectors and embed every memory again with the current embedder
        (or ``embedder``, the same model: see :meth:`fill_vectors`)."""
        if self.embedder is None:
            raise StorageError("embedding.backend is 'none': there is nothing to embed with")
        bulk = self._bulk_embedder(embedder)
        await self._write("DROP TABLE IF EXISTS memories_vec")
        if self._index is not None:
            self._index.clear()
        await self._write("DELETE FROM store_meta WHERE key IN ('embedding_model', 'embedding_dim')")
        await self._ensure_vec()
        async with self.db.execute("SELECT rowid, user_id, content FROM memories WHERE deleted = 0") as cur:
            rows = builtins.list(await cur.fetchall())
        for start in range(0, len(rows), batch):
            chunk = rows[start:start + batch]
            vectors = await bulk.aembed_batch([r[2] for r in chunk])
            async with self._transaction() as db:
                await db.executemany(
                    "INSERT INTO memories_vec (rowid, user_id, embedding) VALUES (?, ?, ?)",
                    [(r[0], r[1], v.astype(np.float32).tobytes()) for r, v in zip(chunk, vectors, strict=True)],
                )
            if progress:
                progress(len(chunk))
        await self._write("DELETE FROM vectors_pending")
        return len(rows)

    @contextlib.asynccontextmanager
    async def _transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT`` on the provider's connection, rolled back on any error.

        Every write of the provider goes through :attr:`_write_lock`: tasks
        sharing this provider (the daemon's worker, its scheduled jobs, hook
        requests) share one connection, and a statement sent while another
        task's transaction is open would become part of it.
        """
        import sqlean

        async with self._write_lock:
            await self._retry_busy("begin", lambda: self.db.execute("BEGIN IMMEDIATE"))
            try:
                yield self.db
                await self._retry_busy("commit", lambda: self.db.execute("COMMIT"))
            except BaseException as exc:
                if self.db.in_transaction:  # a COMMIT interrupted by cancellation may have ended it
                    with contextlib.suppress(Exception):
                        await self.db.execute("ROLLBACK")
                if isinstance(exc, sqlean.OperationalError):
                    raise self._storage_error(exc, "write") from exc
                raise

    async def _write(self, sql: str, params: Sequence[Any] = ()) -> None:
        """One write statement (atomic on its own), outside any other task's transaction."""
        import sqlean

        async with self._write_lock:
            try:
                await self._retry_busy("write", lambda: self.db.execute(sql, params))
            except sqlean.OperationalError as exc:
                raise self._storage_error(exc, "write") from exc

    def _storage_error(self, exc: BaseException, what: str) -> StorageError:
        """A sqlite error of a write as a StorageError that says what to do."""
        text = str(exc)
        if "readonly" in text or "read-only" in text:
            return StorageError(f"cannot {what} {self.path}: it is read-only ({text}); check the permissions of "
                                "the file and of the data directory ('dexai memory doctor')")
        if "disk is full" in text or "disk I/O" in text:
            return StorageError(f"cannot {what} {self.path}: {text} (free some disk space; nothing was "
                                "half-written)")
        return StorageError(f"cannot {what} {self.path}: {text}")

    @contextlib.asynccontextmanager
    async def deferred_vectors(self) -> AsyncIterator[None]:
        """Inside the block, new memories are stored without vectors and queued in ``vectors_pending``.

        They are found by BM25 at once; :meth:`fill_vectors` embeds them later
        (``dexai memory reembed --missing``, the daemon's ``vectors`` job, or
        ``dexai memory ingest --vectors now``). A content edit inside the block
        queues its memory the same way.
        """
        self._defer_depth += 1
        try:
            yield
        finally:
            self._defer_depth -= 1

    async def pending_vectors(self) -> int:
        """How many memories wait for their vector (see :meth:`deferred_vectors`)."""
        rows = builtins.list(await self.db.execute_fetchall("SELECT COUNT(*) FROM vectors_pending"))
        return int(rows[0][0])

    def _bulk_embedder(self, embedder: Embedder | None) -> Embedder:
        """``embedder`` if given (checked to be the same model), else the provider's own."""
        assert self.embedder is not None
        if embedder is None:
            return self.embedder
        if embedder.model_id != self.embedder.model_id or embedder.dim != self.embedder.dim:
            raise StorageError(f"embedder {embedder.model_id} is not the store's model {self.embedder.model_id}")
        return embedder

    async def fill_vectors(self, *, progress: ProgressCallback | None = None, batch: int = 256,
                           limit: int | None = None, embedder: Embedder | None = None) -> int:
        """Embed memories waiting for a vector, ``batch`` per transaction; returns how many.

        ``limit`` bounds the work of one call (the daemon fills in slices).
        ``embedder`` (same model) replaces the provider's for this call: the
        CLI passes one that uses every core. Does nothing without an embedder
        or when the stored vectors belong to another model (run :meth:`reembed`).
        """
        if self.embedder is None or not self._vec_ready:
            return 0
        bulk = self._bulk_embedder(embedder)
        sql = ("SELECT p.rowid, m.user_id, m.content FROM vectors_pending p JOIN memories m ON m.rowid = p.rowid "
               "ORDER BY p.rowid")
        rows = builtins.list(await self.db.execute_fetchall(sql + (" LIMIT ?" if limit else ""),
                                                            (limit,) if limit else ()))
        done = 0
        for start in range(0, len(rows), batch):
            chunk = rows[start:start + batch]
            vectors = await bulk.aembed_batch([r[2] for r in chunk])
            rowids = [r[0] for r in chunk]
            marks = ",".join("?" * len(rowids))
            async with self._transaction() as db:
                # a row may have got its vector meanwhile (content edited): replace it
                await db.execute(f"DELETE FROM memories_vec WHERE rowid IN ({marks})", rowids)
                await db.executemany(
                    "INSERT INTO memories_vec (rowid, user_id, embedding) VALUES (?, ?, ?)",
                    [(r[0], r[1], v.astype(np.float32).tobytes()) for r, v in zip(chunk, vectors, strict=True)],
                )
                await db.execute(f"DELETE FROM vectors_pending WHERE rowid IN ({marks})", rowids)
            if self._index is not None:
                for user_id in {r[1] for r in chunk}:
                    picks = [j for j, r in enumerate(chunk) if r[1] == user_id]
                    self._index.add(user_id, [rowids[j] for j in picks], vectors[picks])
            done += len(chunk)
            if progress:
                progress(len(chunk))
        if limit is None or len(rows) < limit:  # rows whose memory was hard-deleted
            await self._write("DELETE FROM vectors_pending WHERE rowid NOT IN (SELECT rowid FROM memories)")
        return done

    # ------------------------------------------------------------------ writes
    async def _insert(self, memories: Sequence[Memory], vectors: np.ndarray | None) -> None:
        import sqlean

        placeholders = ", ".join("?" * len(_COLUMNS))
        sql = f"INSERT INTO memories ({', '.join(_COLUMNS)}) VALUES ({placeholders})"
        # vectors[j] belongs to memories[embedded[j]] (see _embeds)
        embedded = [i for i, m in enumerate(memories) if self._embeds(m)]
        try:
            async with self._transaction() as db:
                if len(memories) == 1:
                    cur = await db.execute(sql, _memory_params(memories[0]))
                    assert cur.lastrowid is not None  # an INSERT always sets it
                    rowids = [cur.lastrowid]
                else:
                    await db.executemany(sql, [_memory_params(m) for m in memories])
                    ids = [m.id for m in memories]
                    rowid_of: dict[str, int] = {}
                    for start in range(0, len(ids), 500):
                        part = ids[start:start + 500]
                        rowid_of.update({r[0]: r[1] for r in await db.execute_fetchall(
                            f"SELECT id, rowid FROM memories WHERE id IN ({','.join('?' * len(part))})", part)})
                    rowids = [rowid_of[i] for i in ids]
                if vectors is None and self._defer_depth and self._vec_ready and embedded:
                    await db.executemany("INSERT OR IGNORE INTO vectors_pending (rowid) VALUES (?)",
                                         [(rowids[i],) for i in embedded])
                if vectors is not None:
                    await db.executemany(
                        "INSERT INTO memories_vec (rowid, user_id, embedding) VALUES (?, ?, ?)",
                        [(rowids[i], memories[i].user_id, vec.astype(np.float32).tobytes())
                         for i, vec in zip(embedded, vectors, strict=True)],
                    )
        except sqlean.IntegrityError as exc:
            raise InvalidMemory(f"a memory with that id already exists: {exc}") from exc
        if vectors is not None and self._index is not None:
            for user_id in {m.user_id for m in memories}:
                picks = [j for j, i in enumerate(embedded) if memories[i].user_id == user_id]
                if picks:
                    self._index.add(user_id, [rowids[embedded[j]] for j in picks], vectors[picks])

    async def _embed(self, texts: Sequence[str]) -> np.ndarray | None:
        if self.embedder is None or not self._vec_ready or self._defer_depth:
            return None
        return await self.embedder.aembed_batch(list(texts))

    def _embeds(self, memory: Memory) -> bool:
        """Whether ``memory`` gets a vector (``search.embed_transcripts`` off: L3 transcripts are BM25-only)."""
        return self.search_config.embed_transcripts or memory.type is not MemoryType.TRANSCRIPT

    async def _embed_memories(self, memories: Sequence[Memory]) -> np.ndarray | None:
        """Vectors of the memories that get one (see :meth:`_embeds`), in order."""
        return await self._embed([m.content for m in memories if self._embeds(m)])

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
        params = dict(zip(_COLUMNS, _memory_params(updated), strict=True))
        cols = sorted(set(changes) | {"updated_at"})
        sql = f"UPDATE memories SET {', '.join(f'{c} = ?' for c in cols)} WHERE id = ? AND user_id = ?"
        if "content" not in changes or updated.content == current.content or not self._vec_ready:
            # one statement: atomic on its own, no explicit transaction (ingest merges thousands of notes)
            await self._write(sql, [params[c] for c in cols] + [memory_id, user_id])
            return updated
        vec = await self._embed([updated.content]) if self._embeds(updated) else None
        async with self._transaction() as db:
            # the content changed and vectors are on: replace the vector in the same transaction
            await db.execute(sql, [params[c] for c in cols] + [memory_id, user_id])
            rows = builtins.list(await db.execute_fetchall("SELECT rowid FROM memories WHERE id = ?", (memory_id,)))
            rowid = rows[0][0] if rows else None
            await db.execute("DELETE FROM memories_vec WHERE rowid = ?", (rowid,))
            if vec is not None:
                await db.execute("INSERT INTO memories_vec (rowid, user_id, embedding) VALUES (?, ?, ?)",
                                 (rowid, user_id, vec[0].astype(np.float32).tobytes()))
            elif self._defer_depth and self._embeds(updated):
                await db.execute("INSERT OR IGNORE INTO vectors_pending (rowid) VALUES (?)", (rowid,))
        if self._index is not None and rowid is not None:
            if vec is not None:
                self._index.add(user_id, [rowid], vec[:1])
            else:
                self._index.remove(user_id, rowid)
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
            await self._write("UPDATE memories SET deleted = 1, updated_at = ? WHERE rowid = ?",
                              (ts(utcnow()), rowid))
            await self.record_event(MemoryEvent(memory_id, "FORGET", "soft delete by request", utcnow()),
                                    user_id=user_id)
            return True
        async with self._transaction() as db:
            await db.execute("DELETE FROM memories WHERE rowid = ?", (rowid,))
            await db.execute("DELETE FROM vectors_pending WHERE rowid = ?", (rowid,))
            if self._vec_ready:
                await db.execute("DELETE FROM memories_vec WHERE rowid = ?", (rowid,))
            await db.execute("DELETE FROM memory_events WHERE memory_id = ? AND user_id = ?", (memory_id, user_id))
        if self._index is not None:
            self._index.remove(user_id, rowid)
        return True

    async def restore(self, memory_id: str, *, user_id: str) -> Memory:
        """Undo a soft delete (``forget`` without ``--hard``)."""
        await self.get(memory_id, user_id=user_id, include_deleted=True)
        await self._write("UPDATE memories SET deleted = 0, updated_at = ? WHERE id = ? AND user_id = ?",
                          (ts(utcnow()), memory_id, user_id))
        await self.record_event(MemoryEvent(memory_id, "RESTORE", "restored by request", utcnow()), user_id=user_id)
        return await self.get(memory_id, user_id=user_id)

    async def record_event(self, event: MemoryEvent, *, user_id: str) -> None:
        await self.record_events([event], user_id=user_id)

    async def record_events(self, events: Sequence[MemoryEvent], *, user_id: str) -> None:
        """Append many events in one statement (ingest records one per new note)."""
        async with self._write_lock:
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

    async def record_retrieval(self, memory_ids: Sequence[str], *, user_id: str) -> None:
        if not memory_ids:
            return
        await self._write(
            f"UPDATE memories SET retrieval_count = retrieval_count + 1, last_accessed = ? "
            f"WHERE user_id = ? AND id IN ({','.join('?' * len(memory_ids))})",
            [ts(utcnow()), user_id, *memory_ids],
        )

    # ------------------------------------------------------------------ reads
    async def get(self, memory_id: str, *, user_id: str, include_deleted: bool = False) -> Memory:
        rows = builtins.list(await self.db.execute_fetchall(
            f"SELECT {_SELECT} FROM memories m WHERE m.id = ? AND m.user_id = ?", (memory_id, user_id)))
        row = rows[0] if rows else None
        if row is None or (row[_COLUMNS.index("deleted")] and not include_deleted):
            raise MemoryNotFound(f"no memory {memory_id!r} for user {user_id!r}")
        return _row_to_memory(row)

    async def list(self, *, user_id: str, filters: SearchFilters | None = None, limit: int = 100,
                   offset: int = 0) -> builtins.list[Memory]:
        where, params = where_clause(user_id, filters or SearchFilters())
        sql = f"SELECT {_SELECT} FROM memories m WHERE {where} ORDER BY m.created_at DESC, m.rowid DESC"
        if limit > 0:
            sql += " LIMIT ? OFFSET ?"
            params += [limit, offset]
        return [_row_to_memory(r) for r in await self.db.execute_fetchall(sql, params)]

    async def count(self, *, user_id: str, filters: SearchFilters | None = None) -> int:
        where, params = where_clause(user_id, filters or SearchFilters())
        async with self.db.execute(f"SELECT COUNT(*) FROM memories m WHERE {where}", params) as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def users(self) -> builtins.list[str]:
        """Every user id with at least one memory."""
        async with self.db.execute("SELECT DISTINCT user_id FROM memories ORDER BY user_id") as cur:
            return [r[0] for r in await cur.fetchall()]

    async def _superseded_by(self, memory_id: str, user_id: str) -> builtins.list[Memory]:
        async with self.db.execute(f"SELECT {_SELECT} FROM memories m WHERE m.superseded_by = ? AND m.user_id = ?",
                                   (memory_id, user_id)) as cur:
            return [_row_to_memory(r) for r in await cur.fetchall()]

    async def search(self, query: str, *, user_id: str, filters: SearchFilters | None = None,
                     limit: int = 10) -> builtins.list[SearchResult]:
        if not query or not query.strip() or limit <= 0:
            return []
        f = filters or SearchFilters()
        cfg = self.search_config
        where, params = where_clause(user_id, f, for_search=True)
        n = max(cfg.candidates, limit)
        cands: dict[int, _Candidate] = {}
        use_bm25 = cfg.fusion in ("rrf", "bm25") or not self._vec_ready
        use_vec = cfg.fusion in ("rrf", "vector") and self._vec_ready and self.embedder is not None
        vec_task: asyncio.Future[np.ndarray] | None = None
        if use_vec:
            assert self.embedder is not None
            # embed the query while the FTS query runs (onnxruntime and SQLite both release the GIL)
            vec_task = asyncio.ensure_future(self.embedder.aembed(query))
        try:
            if use_bm25:
                q = fts_query(query)
                if q:
                    rows = await self.db.execute_fetchall(
                        f"SELECT m.rowid FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
                        f"WHERE memories_fts MATCH ? AND {where} ORDER BY bm25(memories_fts) LIMIT ?",
                        [q, *params, n],
                    )
                    for rank, (rowid,) in enumerate(rows, 1):
                        cands[rowid] = _Candidate(rowid, bm25_rank=rank)
        except BaseException:
            if vec_task is not None:
                vec_task.cancel()
            raise
        if vec_task is not None and self._index is not None:
            vec = await vec_task
            for rank, (rowid, similarity) in enumerate(await self._index_knn(vec, user_id, where, params, n), 1):
                prev = cands.get(rowid, _Candidate(rowid))
                cands[rowid] = _Candidate(rowid, prev.bm25_rank, rank, similarity)
        elif vec_task is not None:
            vec = await vec_task
            k = min(4096, n * 4)
            async with self.db.execute(
                f"WITH knn AS (SELECT rowid, distance FROM memories_vec WHERE embedding MATCH ? AND k = ? "
                f"AND user_id = ?) SELECT m.rowid, knn.distance FROM knn JOIN memories m ON m.rowid = knn.rowid "
                f"WHERE {where} ORDER BY knn.distance LIMIT ?",
                [vec.astype(np.float32).tobytes(), k, user_id, *params, n],
            ) as cur:
                for rank, (rowid, distance) in enumerate(await cur.fetchall(), 1):
                    prev = cands.get(rowid, _Candidate(rowid))
                    cands[rowid] = _Candidate(rowid, prev.bm25_rank, rank, 1.0 - float(distance))
        if not cands:
            return []
        wb = cfg.bm25_weight if use_bm25 else 0.0
        wv = cfg.vector_weight if use_vec else 0.0
        best = (wb + wv) / (cfg.rrf_k + 1) or 1.0
        scored = []
        for c in cands.values():
            s = 0.0
            if c.bm25_rank is not None:
                s += wb / (cfg.rrf_k + c.bm25_rank)
            if c.vector_rank is not None:
                s += wv / (cfg.rrf_k + c.vector_rank)
            scored.append((s / best, c))
        scored.sort(key=lambda x: (-x[0], x[1].rowid))
        top = scored[:limit]
        rowids = [c.rowid for _, c in top]
        rows = await self.db.execute_fetchall(
            f"SELECT m.rowid, {_SELECT} FROM memories m WHERE m.rowid IN ({','.join('?' * len(rowids))})", rowids
        )
        by_rowid = {r[0]: _row_to_memory(r[1:]) for r in rows}
        return [SearchResult(by_rowid[c.rowid], round(s, 6), c.bm25_rank, c.vector_rank, c.similarity)
                for s, c in top if c.rowid in by_rowid]

    async def _index_knn(self, vec: np.ndarray, user_id: str, where: str, params: Sequence[Any],
                         n: int) -> builtins.list[tuple[int, float]]:
        """Top ``n`` (rowid, cosine) of ``user_id`` passing ``where``, from the in-memory index."""
        index = self._index
        assert index is not None
        version = builtins.list(await self.db.execute_fetchall("PRAGMA data_version"))[0][0]
        if version != index.data_version:  # another connection wrote: reload lazily
            index.clear()
            index.data_version = version
        if not index.loaded(user_id):
            async with self.db.execute("SELECT rowid, embedding FROM memories_vec WHERE user_id = ?",
                                       (user_id,)) as cur:
                index.load(user_id, [(r[0], r[1]) for r in await cur.fetchall()])
        hits: builtins.list[tuple[int, float]] = []
        k = n * 4
        while True:
            found = await asyncio.to_thread(index.knn, user_id, vec, k) if len(index) > 20_000 else \
                index.knn(user_id, vec, k)
            if not found:
                return []
            ids = [r for r, _ in found]
            keep = {r[0] for r in await self.db.execute_fetchall(
                f"SELECT m.rowid FROM memories m WHERE m.rowid IN ({','.join('?' * len(ids))}) AND {where}",
                [*ids, *params],
            )}
            hits = [(r, s) for r, s in found if r in keep]
            # filters removed too many: look further down the ranking (bounded)
            if len(hits) >= n or len(found) < k or k >= 16_384:
                return hits[:n]
            k *= 4

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
                problems.append(f"integrity check: {check}")
        except Exception as exc:  # any driver error is a health problem, reported not raised
            problems.append(f"database error: {exc}")
        details["embedder"] = self.embedder.model_id if self.embedder else "none (BM25 only)"
        details["vector_search"] = self._vec_ready
        if self.embedder is not None and not self._vec_ready:
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
