"""Hybrid search of the native store.

BM25 over the FTS5 index (porter stemming, stop words removed from queries:
:func:`~dexai_memory.providers.native.schema.fts_query`) and cosine KNN over
the vectors (the in-memory :class:`~dexai_memory.providers.native.vectors.VectorIndex`,
or the ``vec0`` table partitioned by user), fused by weighted reciprocal rank
fusion (``search.fusion``; BM25-only and vector-only are selectable, and an
embedder-less configuration is BM25-only).

The BM25 side ranks the FTS5 table alone, then filters (:func:`bm25_rowids`, in the
connection's own thread). In a large store it keeps its work bounded by asking BM25 for
the query's rarer words only. FTS5 scores every row matching any word of the query before it can sort
them: a word in 5-10 % of a million memories ("birthday", "project") makes a
search rank 50-110k rows, ~80 ms on this project's 2-core machine, however few
of them can reach the top. Above ``search.bm25_prune_threshold`` rows, the
words matching more than :data:`COMMON_SHARE` of the store are left out of the
BM25 query when a rarer one remains (the rarest word is always kept). Those
words carry the least weight in BM25 (their IDF is lowest); what is lost is
their share of the score of memories that also hold a rarer word, and the
memories holding only common words. At or below the threshold (the default
is ten times the LoCoMo and 10k-100k benchmark stores) the query is unchanged
and results are exact. How many rows each word matches is counted once
(``MATCH`` of the word alone) and kept by :class:`TermCounts` until the store
grows by a quarter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ...models import SearchFilters, SearchResult
from .schema import SELECT, bm25_query, fts_query, row_to_memory, where_clause
from .vectors import blob

if TYPE_CHECKING:
    import sqlite3

    import aiosqlite

    from ...config import SearchConfig
    from ...embeddings import Embedder
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

    With ``terms`` (the store's :class:`~dexai_memory.providers.native.search.TermCounts`),
    a store above ``search.bm25_prune_threshold`` rows leaves the query's
    common words out of BM25 (:func:`~dexai_memory.providers.native.search.prune`).
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


# --------------------------------------------------------------------------- the BM25 side

#: A word matching more than this share of the store's rows is left out above the threshold.
COMMON_SHARE = 0.02


class TermCounts:
    """Rows matched per FTS5 query word, for one store (see the module docstring)."""

    def __init__(self, max_words: int = 4096):
        self.max_words = max_words
        self._counts: dict[str, int] = {}
        self._rows = 0

    def rows(self, conn: sqlite3.Connection) -> int:
        """The store's size in rows, estimated by the largest rowid (one index probe); drops the
        counts kept when the store has grown by more than a quarter since."""
        rows = int(conn.execute("SELECT max(rowid) FROM memories").fetchone()[0] or 0)
        if rows > self._rows * 1.25 or rows < self._rows:
            self._counts.clear()
            self._rows = rows
        return rows

    def count(self, conn: sqlite3.Connection, phrase: str) -> int:
        """How many rows match the FTS5 ``phrase`` (a quoted word)."""
        found = self._counts.get(phrase)
        if found is None:
            found = int(conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?",
                                     (phrase,)).fetchone()[0])
            if len(self._counts) >= self.max_words:
                self._counts.clear()
            self._counts[phrase] = found
        return found


def prune(conn: sqlite3.Connection, match: str, counts: TermCounts, threshold: int, wanted: int) -> str:
    """``match`` (an OR of quoted words, :func:`~dexai_memory.providers.native.schema.fts_query`)
    without its common words when the store has more than ``threshold`` rows (0: never), as long
    as the words kept match at least ``wanted`` rows; else ``match`` unchanged."""
    phrases = match.split(" OR ")
    if threshold <= 0 or len(phrases) < 2:
        return match
    rows = counts.rows(conn)
    if rows <= threshold:
        return match
    matched = {p: counts.count(conn, p) for p in phrases}
    kept = [p for p in phrases if matched[p] <= COMMON_SHARE * rows] or [min(phrases, key=matched.__getitem__)]
    if len(kept) == len(phrases) or max(matched[p] for p in kept) < wanted:
        return match
    return " OR ".join(kept)


def bm25_rowids(conn: sqlite3.Connection, match: str, where: str, params: Sequence[Any], n: int,
                 user_id: str, pruning: tuple[TermCounts, int] | None = None) -> list[int]:
    """(Connection thread.) The rowids of the best ``n`` BM25 hits passing ``where``, best first.

    Ranks the FTS5 table alone, then checks ``where`` on the best few hits:
    joining every match with ``memories`` before sorting cost twice as much
    at 100k memories (a common word matches thousands of rows). The same
    rows as :func:`~dexai_memory.providers.native.schema.bm25_query`, in the
    same order; when the filter drops some, it looks further down.

    In a store of several users, FTS5 is ranked within the rowid ranges of
    ``user_id``'s memories (:func:`user_rowids`, at most four) when the user
    owns most of them (same rows: the others are filtered out anyway): in a
    store of 100 users x 10k, ranking every user's matches cost 80-300 ms
    where the user's range costs 5 ms. When the filter still drops most hits (the
    user's memories are spread among others', or a project filter), it joins
    and filters before sorting, which costs in proportion to every match of
    the store. Outside a user's range, a large store's query is pruned
    (``pruning``: :func:`~dexai_memory.providers.native.search.prune`); a
    range is at most 200k rows (:data:`_RANGE_SCAN`), ranked whole.
    """
    k = max(n * 4, 64)
    ranges = user_rowids(conn, user_id)
    if ranges is None and pruning is not None:
        match = prune(conn, match, pruning[0], pruning[1], n)
    while True:
        ranked = _ranked(conn, match, ranges, k)
        if not ranked:
            return []
        keep = passing(conn, ranked, where, params)
        hits = [r for r in ranked if r in keep]
        if len(hits) >= n or len(ranked) < k:
            return hits[:n]
        if 2 * len(hits) < len(ranked) or k >= 16_384:
            # a selective filter (a store of many users, a project): join and filter before sorting
            return [r[0] for r in conn.execute(*bm25_query("m.rowid", match, where, params, n))]
        k *= 4


def _ranked(conn: sqlite3.Connection, match: str, ranges: list[tuple[int, int]] | None, k: int) -> list[int]:
    """The best ``k`` FTS5 hits of ``match`` (within ``ranges`` of rowids if given), best first."""
    sql = "SELECT rowid, bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH ?"
    if ranges is None:
        return [r[0] for r in conn.execute(sql + " ORDER BY bm25(memories_fts) LIMIT ?", (match, k))]
    scored: list[tuple[float, int]] = []
    for lo, hi in ranges:  # BM25 scores are the same in each query (IDF over the whole table): merged
        scored += [(r[1], r[0]) for r in conn.execute(
            sql + " AND rowid BETWEEN ? AND ? ORDER BY bm25(memories_fts) LIMIT ?", (match, lo, hi, k))]
    scored.sort()
    return [rowid for _, rowid in scored[:k]]


#: :func:`user_rowids` reads at most this many index entries (a larger user is no small part of the store).
_RANGE_SCAN = 100_000
#: ... and splits them into at most this many runs (each one an FTS5 query: ~5 ms at 1M rows).
_MAX_RUNS = 4


def user_rowids(conn: sqlite3.Connection, user_id: str) -> list[tuple[int, int]] | None:
    """(Connection thread.) Up to :data:`_MAX_RUNS` rowid ranges holding all of ``user_id``'s memories,
    when others have memories too (two index probes), the user at most :data:`_RANGE_SCAN` and at
    least half of the rows in the ranges (split at the widest gaps between the user's rowids);
    else None (ranking the whole FTS5 table costs the same)."""
    first = conn.execute("SELECT user_id FROM memories INDEXED BY ix_memories_user ORDER BY user_id LIMIT 1").fetchone()
    last = conn.execute("SELECT user_id FROM memories INDEXED BY ix_memories_user ORDER BY user_id DESC LIMIT 1"
                        ).fetchone()
    if first is None or first[0] == last[0]:
        return None
    rowids = sorted(r[0] for r in conn.execute(
        "SELECT rowid FROM memories INDEXED BY ix_memories_user WHERE user_id = ? LIMIT ?", (user_id, _RANGE_SCAN)))
    if not rowids or len(rowids) >= _RANGE_SCAN:
        return None
    gaps = sorted(range(1, len(rowids)), key=lambda i: rowids[i] - rowids[i - 1], reverse=True)[:_MAX_RUNS - 1]
    cuts = [0, *sorted(i for i in gaps if rowids[i] - rowids[i - 1] > 1), len(rowids)]
    ranges = [(rowids[a], rowids[b - 1]) for a, b in zip(cuts, cuts[1:], strict=False)]
    if 2 * len(rowids) < sum(hi - lo + 1 for lo, hi in ranges):
        return None
    return ranges


def passing(conn: sqlite3.Connection, rowids: Sequence[int], where: str, params: Sequence[Any]) -> set[int]:
    """(Connection thread.) Those of ``rowids`` whose memory passes ``where``.

    ``NOT INDEXED``: by rowid, never through the user index, which SQLite otherwise picks and
    which reads every memory of the user (19 ms at 100k memories instead of 0.3 ms).
    """
    return {r[0] for r in conn.execute(
        f"SELECT m.rowid FROM memories m NOT INDEXED WHERE m.rowid IN ({','.join('?' * len(rowids))}) AND {where}",
        [*rowids, *params])}
