"""An in-memory mirror of the vectors for fast exact KNN.

sqlite-vec's ``vec0`` table is the durable store of every memory's vector, but
its brute-force KNN has no SIMD in the PyPI wheel: measured on this project's
2-core machine, ~18 ms at 10k and ~150 ms at 100k memories. A float32 matrix
per user, scored with one BLAS matrix-vector product, gives the same ranking
(exact cosine; the vectors are unit length) in ~2 ms at 10k and ~20 ms at
100k, for 1.5 KB of RAM per memory.

The product runs on one BLAS thread: with two cores shared by the daemon, the
embedder and SQLite, OpenBLAS's threaded matrix-vector product gave a p95 of
16 ms at 10k where one thread gives 1.5 ms. Above ``search.ann_threshold``
vectors a user is searched through an HNSW graph instead (:mod:`.ann`, optional
usearch), its candidates rescored exactly; below it, results are exact.

:class:`VectorIndex` is loaded lazily per user from ``vec0`` on the first
search, kept in step by the provider's own writes, and dropped when another
connection changes the database (SQLite's ``PRAGMA data_version``), so a CLI
import while the daemon runs is never missed.

:class:`Vectors` owns the rest of the vector side of one store: the ``vec0``
table (created for the embedder's dimension, its model recorded in
``store_meta``), the memories waiting for a vector (``vectors_pending``, see
:meth:`Vectors.deferred`) and filling or re-making them in batches.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import logging
import shutil
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import StorageError
from . import ann

if TYPE_CHECKING:
    import sqlite3

    import aiosqlite

    from ...embeddings import Embedder
    from ..base import ProgressCallback
    from .database import Database

logger = logging.getLogger(__name__)

_MIN_CAPACITY = 256
#: Users with more vectors than this are searched through an ANN graph when usearch is installed.
DEFAULT_ANN_THRESHOLD = 20_000

_blas: Any = None


def _one_blas_thread() -> contextlib.AbstractContextManager[Any]:
    """A context running BLAS on one thread (threadpoolctl; a no-op without it)."""
    global _blas
    if _blas is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - a core dependency
            _blas = False
        else:
            _blas = ThreadpoolController()
    return _blas.limit(limits=1, user_api="blas") if _blas else contextlib.nullcontext()


class _UserVectors:
    """A growable matrix of one user's vectors with their SQLite rowids."""

    def __init__(self, dim: int, rowids: np.ndarray, matrix: np.ndarray):
        n = len(rowids)
        capacity = max(_MIN_CAPACITY, n * 2)
        self.rowids = np.full(capacity, -1, dtype=np.int64)
        self.matrix = np.zeros((capacity, dim), dtype=np.float32)
        self.rowids[:n] = rowids
        self.matrix[:n] = matrix
        self.size = n
        self.position = {int(r): i for i, r in enumerate(rowids)}
        #: The HNSW graph once built (see :meth:`build_ann`), and the changes made while it was built.
        self.ann: ann.AnnIndex | None = None
        self.ann_building = False
        #: Whether the graph was restored from disk rather than built (benchmarks and tests).
        self.ann_restored = False
        self._ann_log: list[tuple[int, np.ndarray | None]] = []
        self._ann_lock = threading.Lock()

    def add(self, rowids: np.ndarray, vectors: np.ndarray) -> None:
        need = self.size + len(rowids)
        if need > len(self.rowids):
            capacity = max(need, len(self.rowids) * 2)
            grown_ids = np.full(capacity, -1, dtype=np.int64)
            grown = np.zeros((capacity, self.matrix.shape[1]), dtype=np.float32)
            grown_ids[: self.size] = self.rowids[: self.size]
            grown[: self.size] = self.matrix[: self.size]
            self.rowids, self.matrix = grown_ids, grown
        for rowid, vec in zip(rowids, vectors, strict=True):
            slot = self.position.get(int(rowid))
            if slot is None:
                slot = self.size
                self.size += 1
                self.position[int(rowid)] = slot
                self.rowids[slot] = rowid
            self.matrix[slot] = vec
        with self._ann_lock:
            if self.ann is not None:
                self.ann.add(rowids, vectors)
            elif self.ann_building:
                self._ann_log.extend((int(r), np.array(v, dtype=np.float32)) for r, v in zip(rowids, vectors,
                                                                                           strict=True))

    def remove(self, rowid: int) -> None:
        slot = self.position.pop(rowid, None)
        if slot is not None:
            self.rowids[slot] = -1
            self.matrix[slot] = 0.0
        with self._ann_lock:
            if self.ann is not None:
                self.ann.remove(rowid)
            elif self.ann_building:
                self._ann_log.append((rowid, None))

    def build_ann(self, dim: int, saved: Path | None = None) -> None:
        """Build the HNSW graph of the current vectors (blocking; run in a thread), or restore it
        from ``saved`` and bring it up to date; then catch up with the changes made meanwhile,
        publish it, and save it to ``saved`` when it was built or changed."""
        n = self.size
        rowids, matrix = self.rowids[:n].copy(), self.matrix[:n].copy()
        live = rowids >= 0
        rowids, matrix = rowids[live], matrix[live]
        try:
            graph = ann.AnnIndex.restore(saved, dim) if saved is not None else None
            changed = True
            if graph is not None:
                known = graph.keys()
                gone = np.setdiff1d(known, rowids, assume_unique=True)
                new = ~np.isin(rowids, known, assume_unique=True)
                if len(gone) + int(new.sum()) > len(rowids) // 4:  # mostly other vectors: build afresh
                    graph = None
                else:
                    for rowid in gone.tolist():
                        graph.remove(rowid)
                    graph.add(rowids[new], matrix[new], threads=2)
                    changed = bool(len(gone) or new.any())
                    self.ann_restored = True
            if graph is None:
                graph = ann.AnnIndex(dim)
                graph.add(rowids, matrix, threads=2)
        except Exception:
            logger.exception("building the ANN index failed: searches stay exact")
            with self._ann_lock:
                self._ann_log.clear()
            return
        if saved is not None and changed:
            try:
                graph.save(saved)
            except Exception:  # noqa: BLE001 - the graph works without its copy on disk
                logger.warning("could not save the ANN index to %s", saved, exc_info=True)
        with self._ann_lock:
            for rowid, vec in self._ann_log:
                if vec is None:
                    graph.remove(rowid)
                else:
                    graph.add(np.array([rowid], dtype=np.int64), vec[None, :])
            if saved is not None and self._ann_log:  # the copy on disk still holds what changed meanwhile
                saved.unlink(missing_ok=True)
            self._ann_log.clear()
            self.ann = graph
            self.ann_building = False
        logger.info("ANN index of %d vectors ready", len(graph))

    def ann_knn(self, query: np.ndarray, k: int) -> list[tuple[int, float]] | None:
        """The ANN candidates rescored exactly, best first; None when the graph is not ready."""
        graph = self.ann
        if graph is None or k > ann.MAX_K:
            return None
        found = graph.search(query, k)
        slots = [self.position[r] for r in found.tolist() if r in self.position]
        if not slots:
            return []
        idx = np.array(slots, dtype=np.int64)
        sims = self.matrix[idx] @ query.astype(np.float32)
        order = np.argsort(-sims, kind="stable")
        return [(int(self.rowids[idx[i]]), float(sims[i])) for i in order]

    def knn(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        if self.size == 0:
            return []
        with _one_blas_thread():
            sims = self.matrix[: self.size] @ query.astype(np.float32)
        live = self.rowids[: self.size] >= 0
        n_live = len(self.position)
        if n_live < self.size:  # removed rows keep their slot: never rank them
            sims = np.where(live, sims, -np.inf)
        k = min(k, n_live)
        if k <= 0:
            return []
        top = np.argpartition(-sims, k - 1)[:k] if k < self.size else np.arange(self.size)
        top = top[np.argsort(-sims[top], kind="stable")]
        top = top[np.isfinite(sims[top])][:k]
        return list(zip(self.rowids[top].tolist(), sims[top].tolist(), strict=True))


class VectorIndex:
    """Per-user in-memory vectors (see the module docstring)."""

    def __init__(self, dim: int, *, ann_threshold: int = DEFAULT_ANN_THRESHOLD, max_vectors: int = 0,
                 ann_dir: Path | None = None):
        self.dim = dim
        #: Where users' HNSW graphs are saved and restored from (None: rebuilt in each process).
        self.ann_dir = ann_dir
        #: Users with more vectors are searched through an HNSW graph (0: always exact).
        self.ann_threshold = ann_threshold
        #: Past this many vectors in memory, the users searched least recently are dropped (0: no limit).
        self.max_vectors = max_vectors
        #: Loaded users, least recently searched first.
        self._users: dict[str, _UserVectors] = {}
        #: The ``PRAGMA data_version`` the loaded data matches.
        self.data_version: int | None = None

    def loaded(self, user_id: str) -> bool:
        """Whether ``user_id``'s vectors are in memory."""
        return user_id in self._users

    def load(self, user_id: str, rows: list[tuple[int, bytes]]) -> None:
        """Install a user's vectors from ``(rowid, float32 blob)`` rows."""
        self.load_arrays(user_id, *_arrays(rows, self.dim))

    def load_arrays(self, user_id: str, rowids: np.ndarray, matrix: np.ndarray) -> None:
        """Install a user's vectors: ``matrix[i]`` is the vector of ``rowids[i]``; then drop the
        users searched least recently while the index holds more than :attr:`max_vectors`."""
        self._users.pop(user_id, None)
        self._users[user_id] = _UserVectors(self.dim, rowids, matrix)
        if self.max_vectors:
            total = len(self)
            for other in builtins.list(self._users):
                if total <= self.max_vectors or other == user_id:
                    break
                total -= self._users.pop(other).size
                logger.info("vectors of %s dropped from memory (search.index_max_vectors)", other)

    def load_from(self, conn: sqlite3.Connection, user_id: str) -> None:
        """Install ``user_id``'s vectors read from ``memories_vec`` on ``conn`` (see :func:`read_user_vectors`)."""
        self.load_arrays(user_id, *read_user_vectors(conn, user_id, self.dim))

    def add(self, user_id: str, rowids: list[int], vectors: np.ndarray) -> None:
        """Mirror new or re-embedded vectors (ignored for users not loaded yet)."""
        users = self._users.get(user_id)
        if users is not None:
            users.add(np.asarray(rowids, dtype=np.int64), np.asarray(vectors, dtype=np.float32))

    def remove(self, user_id: str, rowid: int) -> None:
        """Forget one vector."""
        users = self._users.get(user_id)
        if users is not None:
            users.remove(rowid)

    def clear(self) -> None:
        """Drop everything (reloaded lazily)."""
        self._users.clear()

    def knn(self, user_id: str, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` most similar ``(rowid, cosine)`` of a loaded user, best first: exact, or
        from the user's ANN graph when it has more than :attr:`ann_threshold` vectors."""
        users = self._users.get(user_id)
        if users is None:
            return []
        if self.max_vectors and next(reversed(self._users)) != user_id:  # most recently searched: last
            self._users[user_id] = self._users.pop(user_id)
        if self.uses_ann(user_id):
            found = users.ann_knn(query, k)
            if found is not None:
                return found[:k]
        return users.knn(query, k)

    def uses_ann(self, user_id: str) -> bool:
        """Whether ``user_id`` is past the ANN threshold (starting the graph's build in a thread
        the first time, when usearch is installed); searches stay exact until it is ready."""
        users = self._users.get(user_id)
        if users is None or not self.ann_threshold or users.size <= self.ann_threshold:
            return False
        if users.ann is None and not users.ann_building and ann.available():
            users.ann_building = True
            threading.Thread(target=users.build_ann, args=(self.dim, self.ann_path(user_id)),
                             name=f"ann-build-{user_id[:20]}", daemon=True).start()
        return users.ann is not None

    def ann_path(self, user_id: str) -> Path | None:
        """The file of ``user_id``'s saved graph (see :func:`saved_graph`), None without :attr:`ann_dir`."""
        return None if self.ann_dir is None else saved_graph(self.ann_dir, user_id)

    def wait_for_ann(self, user_id: str, timeout: float = 600.0) -> bool:
        """Block until ``user_id``'s ANN graph is built (benchmarks and tests); whether it is."""
        import time

        deadline = time.monotonic() + timeout
        users = self._users.get(user_id)
        while users is not None and users.ann_building and time.monotonic() < deadline:
            time.sleep(0.05)
        return users is not None and users.ann is not None

    def __len__(self) -> int:
        return sum(u.size for u in self._users.values())


#: The layout of sqlite-vec's shadow tables that :func:`read_user_vectors` reads (sqlite-vec 0.1.x).
_CHUNKS_SQL = ('CREATE TABLE "memories_vec_chunks"(chunk_id INTEGER PRIMARY KEY AUTOINCREMENT,size INTEGER NOT NULL,'
               'sequence_id integer,partition00,validity BLOB NOT NULL, rowids BLOB NOT NULL)')
_VECTORS_SQL = 'CREATE TABLE "memories_vec_vector_chunks00"(rowid PRIMARY KEY,vectors BLOB NOT NULL)'


def read_user_vectors(conn: sqlite3.Connection, user_id: str, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``user_id``'s ``(rowids, float32 matrix)`` from ``memories_vec``, in its storage order.

    ``SELECT rowid, embedding FROM memories_vec WHERE user_id = ?`` walks every
    row of the table, whoever owns it, and decodes rows one at a time: 7 s for
    a user of 10k memories in a store of 1M (100 users), 28 s for a user of 1M.
    sqlite-vec keeps a user's vectors in chunks of 1,024 (``memories_vec_chunks``:
    the partition key, a validity bitmap and the rowids of a chunk;
    ``memories_vec_vector_chunks00``: its vectors as one float32 blob), so the
    user's chunks are read whole, in one statement, and unpacked with numpy
    (then put in rowid order, the ``SELECT``'s).
    Falls back to the ``SELECT`` when the shadow tables are not the layout
    this reads (another sqlite-vec version).
    """
    layout = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE name IN "
                               "('memories_vec_chunks', 'memories_vec_vector_chunks00')").fetchall())
    if layout.get("memories_vec_chunks") != _CHUNKS_SQL or layout.get("memories_vec_vector_chunks00") != _VECTORS_SQL:
        return _arrays(conn.execute("SELECT rowid, embedding FROM memories_vec WHERE user_id = ?",
                                    (user_id,)).fetchall(), dim)
    ids, parts = [], []
    for size, validity, rowids, vectors in conn.execute(
            "SELECT c.size, c.validity, c.rowids, v.vectors FROM memories_vec_chunks c "
            "JOIN memories_vec_vector_chunks00 v ON v.rowid = c.chunk_id WHERE c.partition00 = ? "
            "ORDER BY c.chunk_id", (user_id,)):
        valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[:size].astype(bool)
        if not valid.any():
            continue
        ids.append(np.frombuffer(rowids, dtype=np.int64, count=size)[valid])
        parts.append(np.frombuffer(vectors, dtype=np.float32, count=size * dim).reshape(size, dim)[valid])
    if not ids:
        return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
    rowids_all, matrix = np.concatenate(ids), np.concatenate(parts)
    del ids, parts
    if len(rowids_all) > 1 and bool((np.diff(rowids_all) < 0).any()):  # the SELECT's order: ties rank the same
        order = np.argsort(rowids_all, kind="stable")
        return rowids_all[order], matrix[order]
    return rowids_all, matrix


def _arrays(rows: Sequence[tuple[int, bytes]], dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rowid, float32 blob)`` rows as ``(rowids, matrix)``."""
    rowids = np.array([r[0] for r in rows], dtype=np.int64)
    if not rows:
        return rowids, np.zeros((0, dim), dtype=np.float32)
    return rowids, np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)


def graph_dir(db_path: Path) -> Path:
    """The folder of a store's saved HNSW graphs: ``<database>.ann`` (derived data: a restore
    of the database removes it, and the graphs are built again)."""
    return db_path.with_name(db_path.name + ".ann")


def saved_graph(ann_dir: Path, user_id: str) -> Path:
    """The file of ``user_id``'s saved HNSW graph in ``ann_dir`` (named by a hash of the id)."""
    return ann_dir / f"{hashlib.sha256(user_id.encode()).hexdigest()[:32]}.usearch"


def blob(vector: np.ndarray) -> bytes:
    """A vector as ``vec0`` stores it (float32 bytes)."""
    return vector.astype(np.float32).tobytes()


def bulk_embedder(own: Embedder, given: Embedder | None) -> Embedder:
    """``given`` if any (checked to be the same model as ``own``), else ``own``."""
    if given is None:
        return own
    if given.model_id != own.model_id or given.dim != own.dim:
        raise StorageError(f"embedder {given.model_id} is not the store's model {own.model_id}")
    return given


class Vectors:
    """The vectors of one store (see the module docstring); the embedder is the provider's,
    passed to each call (the pipeline may wrap it in a cache after the store opened)."""

    def __init__(self, database: Database, *, ann_threshold: int = DEFAULT_ANN_THRESHOLD, max_vectors: int = 0):
        self.database = database
        #: ``search.ann_threshold``: the size above which a user's KNN uses an ANN graph (0: never).
        self.ann_threshold = ann_threshold
        #: ``search.index_max_vectors``: the in-memory index's bound (0: none).
        self.max_vectors = max_vectors
        #: Saved HNSW graphs (:mod:`.ann`), beside the database file.
        self.ann_dir = graph_dir(database.path)
        #: Whether ``memories_vec`` exists and holds the current embedder's vectors.
        self.ready = False
        #: The in-memory mirror of ``memories_vec`` (None: vector search reads ``vec0``).
        self.index: VectorIndex | None = None
        self._defer_depth = 0

    async def setup(self, embedder: Embedder | None, *, use_index: bool) -> None:
        """Create ``memories_vec`` for ``embedder`` on first use, or check that the stored
        vectors are its own (otherwise vector search stays off until a re-embed)."""
        self.ready = False
        self.index = None
        if embedder is None:
            return
        model = await self.database.meta("embedding_model")
        dim = await self.database.meta("embedding_dim")
        if model is None:
            await self.database.write(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS memories_vec USING vec0("
                f"user_id text partition key, embedding float[{embedder.dim}] distance_metric=cosine)"
            )
            await self.database.set_meta("embedding_model", embedder.model_id)
            await self.database.set_meta("embedding_dim", str(embedder.dim))
            self.ready = True
        elif model == embedder.model_id and int(dim or 0) == embedder.dim:
            self.ready = True
        if self.ready and use_index:
            self.index = VectorIndex(embedder.dim, ann_threshold=self.ann_threshold, max_vectors=self.max_vectors,
                                     ann_dir=self.ann_dir)
        if not self.ready:
            logger.warning("vectors in %s were made by %s, not %s: vector search is off until "
                           "'dexai memory reembed'", self.database.path, model, embedder.model_id)

    def forget_saved_graph(self, user_id: str) -> None:
        """Delete ``user_id``'s saved HNSW graph (a vector was deleted or re-made: the copy on disk
        must not keep it; the graph is saved again at its next build)."""
        saved_graph(self.ann_dir, user_id).unlink(missing_ok=True)

    # ------------------------------------------------------------------ deferred vectors
    @contextlib.asynccontextmanager
    async def deferred(self) -> AsyncIterator[None]:
        """Inside the block, new memories are stored without vectors (see
        :meth:`NativeProvider.deferred_vectors <dexai_memory.providers.native.provider.NativeProvider.deferred_vectors>`)."""
        self._defer_depth += 1
        try:
            yield
        finally:
            self._defer_depth -= 1

    @property
    def deferring(self) -> bool:
        """Whether a :meth:`deferred` block is open."""
        return self._defer_depth > 0

    async def pending(self) -> int:
        """How many memories wait for their vector."""
        rows = builtins.list(await self.database.conn.execute_fetchall("SELECT COUNT(*) FROM vectors_pending"))
        return int(rows[0][0])

    async def embed(self, embedder: Embedder | None, texts: Sequence[str]) -> np.ndarray | None:
        """Vectors of ``texts`` to store now; None without an embedder, while the stored vectors
        are another model's, or inside a :meth:`deferred` block."""
        if embedder is None or not self.ready or self._defer_depth:
            return None
        return await embedder.aembed_batch(list(texts))

    # ------------------------------------------------------------------ rows
    @staticmethod
    async def insert(db: aiosqlite.Connection, rows: Sequence[tuple[int, str, np.ndarray]]) -> None:
        """Store ``(rowid, user_id, vector)`` rows, inside the caller's transaction."""
        await db.executemany("INSERT INTO memories_vec (rowid, user_id, embedding) VALUES (?, ?, ?)",
                             [(rowid, user_id, blob(vec)) for rowid, user_id, vec in rows])

    @staticmethod
    async def queue(db: aiosqlite.Connection, rowids: Sequence[int]) -> None:
        """Mark memories as waiting for a vector, inside the caller's transaction."""
        await db.executemany("INSERT OR IGNORE INTO vectors_pending (rowid) VALUES (?)", [(r,) for r in rowids])

    def mirror(self, user_ids: Sequence[str], rowids: Sequence[int], vectors: np.ndarray) -> None:
        """Add stored vectors (``vectors[j]`` of ``rowids[j]``, owned by ``user_ids[j]``) to the index."""
        if self.index is None:
            return
        for user_id in dict.fromkeys(user_ids):
            picks = [j for j, u in enumerate(user_ids) if u == user_id]
            if picks:
                self.index.add(user_id, [rowids[j] for j in picks], vectors[picks])

    # ------------------------------------------------------------------ filling
    async def fill(self, bulk: Embedder, *, progress: ProgressCallback | None, batch: int,
                   limit: int | None) -> int:
        """Embed memories waiting for a vector with ``bulk``, ``batch`` per transaction; returns how many."""
        sql = ("SELECT p.rowid, m.user_id, m.content FROM vectors_pending p JOIN memories m ON m.rowid = p.rowid "
               "ORDER BY p.rowid")
        rows = builtins.list(await self.database.conn.execute_fetchall(sql + (" LIMIT ?" if limit else ""),
                                                                      (limit,) if limit else ()))
        done = 0
        for start in range(0, len(rows), batch):
            chunk = rows[start:start + batch]
            vectors = await bulk.aembed_batch([r[2] for r in chunk])
            rowids = [r[0] for r in chunk]
            marks = ",".join("?" * len(rowids))
            async with self.database.transaction() as db:
                # a row may have got its vector meanwhile (content edited): replace it
                await db.execute(f"DELETE FROM memories_vec WHERE rowid IN ({marks})", rowids)
                await self.insert(db, [(r[0], r[1], v) for r, v in zip(chunk, vectors, strict=True)])
                await db.execute(f"DELETE FROM vectors_pending WHERE rowid IN ({marks})", rowids)
            self.mirror([r[1] for r in chunk], rowids, vectors)
            done += len(chunk)
            if progress:
                progress(len(chunk))
        if limit is None or len(rows) < limit:  # rows whose memory was hard-deleted
            await self.database.write("DELETE FROM vectors_pending WHERE rowid NOT IN (SELECT rowid FROM memories)")
        return done

    async def remake(self, embedder: Embedder, bulk: Embedder, *, progress: ProgressCallback | None, batch: int,
                     use_index: bool) -> int:
        """Drop every vector and embed every memory again with ``bulk`` (``embedder``'s model)."""
        await self.database.write("DROP TABLE IF EXISTS memories_vec")
        if self.index is not None:
            self.index.clear()
        shutil.rmtree(self.ann_dir, ignore_errors=True)  # graphs of the old vectors
        await self.database.write("DELETE FROM store_meta WHERE key IN ('embedding_model', 'embedding_dim')")
        await self.setup(embedder, use_index=use_index)
        async with self.database.conn.execute("SELECT rowid, user_id, content FROM memories WHERE deleted = 0") as cur:
            rows = builtins.list(await cur.fetchall())
        for start in range(0, len(rows), batch):
            chunk = rows[start:start + batch]
            vectors = await bulk.aembed_batch([r[2] for r in chunk])
            async with self.database.transaction() as db:
                await self.insert(db, [(r[0], r[1], v) for r, v in zip(chunk, vectors, strict=True)])
            if progress:
                progress(len(chunk))
        await self.database.write("DELETE FROM vectors_pending")
        return len(rows)

