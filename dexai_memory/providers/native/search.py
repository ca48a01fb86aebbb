"""Hybrid search of the native store.

BM25 over the FTS5 index (porter stemming, stop words removed from queries:
:func:`~dexai_memory.providers.native.schema.fts_query`) and cosine KNN over
the vectors (the in-memory :class:`~dexai_memory.providers.native.vectors.VectorIndex`,
or the ``vec0`` table partitioned by user), fused by weighted reciprocal rank
fusion (``search.fusion``; BM25-only and vector-only are selectable, and an
embedder-less configuration is BM25-only).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ...models import SearchFilters, SearchResult
from .bm25 import bm25_rowids, passing
from .schema import SELECT, fts_query, row_to_memory, where_clause
from .vectors import blob

if TYPE_CHECKING:
    import sqlite3

    import aiosqlite

    from ...config import SearchConfig
    from ...embeddings import Embedder
    from .keywords import TermCounts
    from .vectors import VectorIndex, Vectors

T = TypeVar("T")

@dataclass(frozen=True, slots=True)
class _Candidate:
    rowid: int
    bm25_rank: int | None = None
    vector_rank: int | None = None
    similarity: float | None = None


async def hybrid_search(db: aiosqlite.Connection, vectors: Vectors, embedder: Embedder | None, cfg: SearchConfig,
                        query: str, *, user_id: str, filters: SearchFilters | None = None,
                        limit: int = 10, terms: TermCounts | None = None) -> list[SearchResult]:
    """The best ``limit`` memories of ``user_id`` for ``query`` (see the module docstring), best first.

    With the in-memory vector index, the SQL runs in two calls of the
    connection's thread (:func:`_in_connection`): the BM25 candidates while the
    query is embedded in another thread, then the KNN, its filter, the fusion
    and the row fetch. Each call of ``aiosqlite`` is a hand-over between two
    threads; five of them cost more than the SQL at 10k memories.

    With ``terms`` (the store's :class:`~dexai_memory.providers.native.keywords.TermCounts`),
    a store above ``search.bm25_prune_threshold`` rows leaves the query's
    common words out of BM25 (:func:`~dexai_memory.providers.native.keywords.prune`).
    """
    if not query or not query.strip() or limit <= 0:
        return []
    f = filters or SearchFilters()
    where, params = where_clause(user_id, f, for_search=True)
    n = max(cfg.candidates, limit)
    use_bm25 = cfg.fusion in ("rrf", "bm25") or not vectors.ready
    use_vec = cfg.fusion in ("rrf", "vector") and vectors.ready and embedder is not None
    vec_task: asyncio.Future[np.ndarray] | None = None
    if use_vec:
        assert embedder is not None
        # embed the query while the FTS query runs (onnxruntime and SQLite both release the GIL)
        vec_task = asyncio.ensure_future(embedder.aembed(query))
    match = fts_query(query) if use_bm25 else None
    index = vectors.index if use_vec else None
    try:
        bm25_ids = await _in_connection(db, _prepare, match, where, params, n, index, user_id,
                                        (terms, cfg.bm25_prune_threshold) if terms is not None else None)
    except BaseException:
        if vec_task is not None:
            vec_task.cancel()
        raise
    cands = {rowid: _Candidate(rowid, bm25_rank=rank) for rank, rowid in enumerate(bm25_ids, 1)}
    wb = cfg.bm25_weight if use_bm25 else 0.0
    wv = cfg.vector_weight if use_vec else 0.0
    if vec_task is not None and index is not None:
        vec = await vec_task
        return await _in_connection(db, _finish, cands, (wb, wv, cfg.rrf_k), limit, index, vec, user_id, where,
                                    params, n)
    if vec_task is not None:
        vec = await vec_task
        k = min(4096, n * 4)
        async with db.execute(
            f"WITH knn AS (SELECT rowid, distance FROM memories_vec WHERE embedding MATCH ? AND k = ? "
            f"AND user_id = ?) SELECT m.rowid, knn.distance FROM knn JOIN memories m ON m.rowid = knn.rowid "
            f"WHERE {where} ORDER BY knn.distance LIMIT ?",
            [blob(vec), k, user_id, *params, n],
        ) as cur:
            for rank, (rowid, distance) in enumerate(await cur.fetchall(), 1):
                prev = cands.get(rowid, _Candidate(rowid))
                cands[rowid] = _Candidate(rowid, prev.bm25_rank, rank, 1.0 - float(distance))
    return await _in_connection(db, _fuse_and_fetch, cands, (wb, wv, cfg.rrf_k), limit)


_Weights = tuple[float, float, int]


async def _in_connection(db: aiosqlite.Connection, fn: Callable[..., T], *args: Any) -> T:
    """``fn(conn, *args)`` run in the connection's own thread, with its ``sqlite3`` connection, in
    turn with the other statements of ``db``: one thread hand-over for several statements.
    (Uses ``aiosqlite.Connection._execute`` and ``_conn``: aiosqlite has no public form of it.)"""
    return await db._execute(lambda: fn(db._conn, *args))  # type: ignore[no-any-return]


def _prepare(conn: sqlite3.Connection, match: str | None, where: str, params: Sequence[Any], n: int,
             index: VectorIndex | None, user_id: str, pruning: tuple[TermCounts, int] | None = None) -> list[int]:
    """(Connection thread.) Make sure ``index`` holds ``user_id``'s current vectors; the BM25 rowids
    (of ``match`` pruned by ``pruning``: the store's word counts and the threshold)."""
    if index is not None:
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if version != index.data_version:  # another connection wrote: reload lazily
            index.clear()
            index.data_version = version
        if not index.loaded(user_id):
            index.load_from(conn, user_id)
    return bm25_rowids(conn, match, where, params, n, user_id, pruning) if match else []


def _index_knn(conn: sqlite3.Connection, index: VectorIndex, vec: np.ndarray, user_id: str, where: str,
               params: Sequence[Any], n: int) -> list[tuple[int, float]]:
    """(Connection thread.) Top ``n`` (rowid, cosine) of ``user_id`` passing ``where``, from the index."""
    if not index.loaded(user_id):  # dropped since _prepare by another user's load (search.index_max_vectors)
        index.load_from(conn, user_id)
    k = n * 4
    while True:
        found = index.knn(user_id, vec, k)
        if not found:
            return []
        keep = passing(conn, [r for r, _ in found], where, params)
        hits = [(r, s) for r, s in found if r in keep]
        # filters removed too many: look further down the ranking (bounded)
        if len(hits) >= n or len(found) < k or k >= 16_384:
            return hits[:n]
        k *= 4


def _finish(conn: sqlite3.Connection, cands: dict[int, _Candidate], weights: _Weights, limit: int,
            index: VectorIndex, vec: np.ndarray, user_id: str, where: str, params: Sequence[Any],
            n: int) -> list[SearchResult]:
    """(Connection thread.) Add the KNN candidates, fuse, fetch the best ``limit`` rows."""
    for rank, (rowid, similarity) in enumerate(_index_knn(conn, index, vec, user_id, where, params, n), 1):
        prev = cands.get(rowid, _Candidate(rowid))
        cands[rowid] = _Candidate(rowid, prev.bm25_rank, rank, similarity)
    return _fuse_and_fetch(conn, cands, weights, limit)


def _fuse_and_fetch(conn: sqlite3.Connection, cands: dict[int, _Candidate], weights: _Weights,
                    limit: int) -> list[SearchResult]:
    """(Connection thread.) Weighted reciprocal rank fusion of ``cands``; the best ``limit`` as results."""
    if not cands:
        return []
    wb, wv, rrf_k = weights
    best = (wb + wv) / (rrf_k + 1) or 1.0
    scored = []
    for c in cands.values():
        s = 0.0
        if c.bm25_rank is not None:
            s += wb / (rrf_k + c.bm25_rank)
        if c.vector_rank is not None:
            s += wv / (rrf_k + c.vector_rank)
        scored.append((s / best, c))
    scored.sort(key=lambda x: (-x[0], x[1].rowid))
    top = scored[:limit]
    rowids = [c.rowid for _, c in top]
    rows = conn.execute(
        f"SELECT m.rowid, {SELECT} FROM memories m WHERE m.rowid IN ({','.join('?' * len(rowids))})", rowids
    ).fetchall()
    by_rowid = {r[0]: row_to_memory(r[1:]) for r in rows}
    return [SearchResult(by_rowid[c.rowid], round(s, 6), c.bm25_rank, c.vector_rank, c.similarity)
            for s, c in top if c.rowid in by_rowid]
