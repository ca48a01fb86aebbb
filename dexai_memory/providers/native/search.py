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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...models import SearchFilters, SearchResult
from .schema import SELECT, bm25_query, fts_query, row_to_memory, where_clause
from .vectors import blob

if TYPE_CHECKING:
    import aiosqlite

    from ...config import SearchConfig
    from ...embeddings import Embedder
    from .vectors import VectorIndex, Vectors


@dataclass(frozen=True, slots=True)
class _Candidate:
    rowid: int
    bm25_rank: int | None = None
    vector_rank: int | None = None
    similarity: float | None = None


async def hybrid_search(db: aiosqlite.Connection, vectors: Vectors, embedder: Embedder | None, cfg: SearchConfig,
                        query: str, *, user_id: str, filters: SearchFilters | None = None,
                        limit: int = 10) -> list[SearchResult]:
    """The best ``limit`` memories of ``user_id`` for ``query`` (see the module docstring), best first."""
    if not query or not query.strip() or limit <= 0:
        return []
    f = filters or SearchFilters()
    where, params = where_clause(user_id, f, for_search=True)
    n = max(cfg.candidates, limit)
    cands: dict[int, _Candidate] = {}
    use_bm25 = cfg.fusion in ("rrf", "bm25") or not vectors.ready
    use_vec = cfg.fusion in ("rrf", "vector") and vectors.ready and embedder is not None
    vec_task: asyncio.Future[np.ndarray] | None = None
    if use_vec:
        assert embedder is not None
        # embed the query while the FTS query runs (onnxruntime and SQLite both release the GIL)
        vec_task = asyncio.ensure_future(embedder.aembed(query))
    try:
        if use_bm25:
            q = fts_query(query)
            if q:
                rows = await db.execute_fetchall(*bm25_query("m.rowid", q, where, params, n))
                for rank, (rowid,) in enumerate(rows, 1):
                    cands[rowid] = _Candidate(rowid, bm25_rank=rank)
    except BaseException:
        if vec_task is not None:
            vec_task.cancel()
        raise
    if vec_task is not None and vectors.index is not None:
        vec = await vec_task
        for rank, (rowid, similarity) in enumerate(await _index_knn(db, vectors.index, vec, user_id, where,
                                                                    params, n), 1):
            prev = cands.get(rowid, _Candidate(rowid))
            cands[rowid] = _Candidate(rowid, prev.bm25_rank, rank, similarity)
    elif vec_task is not None:
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
    rows = await db.execute_fetchall(
        f"SELECT m.rowid, {SELECT} FROM memories m WHERE m.rowid IN ({','.join('?' * len(rowids))})", rowids
    )
    by_rowid = {r[0]: row_to_memory(r[1:]) for r in rows}
    return [SearchResult(by_rowid[c.rowid], round(s, 6), c.bm25_rank, c.vector_rank, c.similarity)
            for s, c in top if c.rowid in by_rowid]


async def _index_knn(db: aiosqlite.Connection, index: VectorIndex, vec: np.ndarray, user_id: str, where: str,
                     params: Sequence[Any], n: int) -> list[tuple[int, float]]:
    """Top ``n`` (rowid, cosine) of ``user_id`` passing ``where``, from the in-memory index."""
    version = list(await db.execute_fetchall("PRAGMA data_version"))[0][0]
    if version != index.data_version:  # another connection wrote: reload lazily
        index.clear()
        index.data_version = version
    if not index.loaded(user_id):
        async with db.execute("SELECT rowid, embedding FROM memories_vec WHERE user_id = ?", (user_id,)) as cur:
            index.load(user_id, [(r[0], r[1]) for r in await cur.fetchall()])
    hits: list[tuple[int, float]] = []
    k = n * 4
    while True:
        found = await asyncio.to_thread(index.knn, user_id, vec, k) if len(index) > 20_000 else \
            index.knn(user_id, vec, k)
        if not found:
            return []
        ids = [r for r, _ in found]
        keep = {r[0] for r in await db.execute_fetchall(
            f"SELECT m.rowid FROM memories m WHERE m.rowid IN ({','.join('?' * len(ids))}) AND {where}",
            [*ids, *params],
        )}
        hits = [(r, s) for r, s in found if r in keep]
        # filters removed too many: look further down the ranking (bounded)
        if len(hits) >= n or len(found) < k or k >= 16_384:
            return hits[:n]
        k *= 4
