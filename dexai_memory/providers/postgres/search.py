"""Hybrid search of the Postgres store, in one SQL round trip.

Full text (``tsvector`` of the content with a GIN index, queried with the same
content words as the native store's FTS5 query, ranked by ``ts_rank``) and
cosine KNN over pgvector (HNSW index; when the index walk leaves fewer than
``search.candidates`` rows after the user's filters, as it does for a user with
a small share of a large shared table, the exact KNN over that user's rows
instead), each taking ``search.candidates`` candidates that pass the same filters, fused by the native store's weighted
reciprocal rank fusion (:mod:`dexai_memory.providers.native.search`):
``score = (wb / (k + bm25_rank) + wv / (k + vector_rank)) / ((wb + wv) / (k + 1))``,
so a memory first in both lists scores 1. ``search.fusion`` selects rrf,
full text only or vectors only; without an embedder (or while the stored
vectors are another model's) search is full text only.

Both retrievers, the fusion and the fetch of the winning rows are one
statement: one round trip to the server per search.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...models import SearchFilters, SearchResult
from .schema import SELECT, row_to_memory, ts_query, vector_literal, where_clause

if TYPE_CHECKING:
    import numpy as np

    from ...config import SearchConfig


def search_sql(cfg: SearchConfig, query: str, vector: np.ndarray | None, *, user_id: str,
               filters: SearchFilters | None, limit: int) -> tuple[str, list[Any]] | None:
    """The statement and parameters of one hybrid search (None when there is nothing to search with)."""
    f = filters or SearchFilters()
    where, wparams = where_clause(user_id, f, for_search=True)
    n = max(cfg.candidates, limit)
    tsq = ts_query(query) if cfg.fusion in ("rrf", "bm25") or vector is None else None
    use_vec = vector is not None and cfg.fusion in ("rrf", "vector")
    if tsq is None and not use_vec:
        return None
    wb = cfg.bm25_weight if tsq is not None else 0.0
    wv = cfg.vector_weight if use_vec else 0.0
    best = (wb + wv) / (cfg.rrf_k + 1) or 1.0
    parts: list[str] = []
    params: list[Any] = []
    if tsq is not None:
        parts.append(
            "bm AS (SELECT id, row_number() OVER (ORDER BY rank DESC, id) AS r FROM ("
            "SELECT m.id, ts_rank(m.fts, q.q, 1) AS rank FROM memories m, to_tsquery('english', %s) AS q(q) "
            f"WHERE m.fts @@ q.q AND {where} ORDER BY rank DESC, m.id LIMIT %s) AS b)")
        params += [tsq, *wparams, n]
    else:
        parts.append("bm AS (SELECT NULL::text AS id, NULL::bigint AS r WHERE FALSE)")
    if use_vec:
        # vh: the HNSW walk (or the planner's exact plan for a user with few rows); HNSW filters by user
        # after the walk, so a user holding a small share of a large table can get fewer than n rows.
        # ve: then, and only then, the exact KNN over that user's rows ("+ 0" keeps the index out).
        lit = vector_literal(vector)
        knn = ("SELECT m.id, m.embedding <=> %s::vector AS dist FROM memories m "
               f"WHERE m.embedding IS NOT NULL AND {where} ")
        parts.append(f"vh AS MATERIALIZED ({knn}ORDER BY m.embedding <=> %s::vector LIMIT %s)")
        parts.append(f"ve AS MATERIALIZED ({knn}AND (SELECT COUNT(*) FROM vh) < %s "
                     "ORDER BY (m.embedding <=> %s::vector) + 0 LIMIT %s)")
        parts.append("vec AS (SELECT id, 1 - dist AS sim, row_number() OVER (ORDER BY dist, id) AS r FROM ("
                     "SELECT * FROM ve UNION ALL SELECT * FROM vh WHERE NOT EXISTS (SELECT 1 FROM ve)) AS v)")
        params += [lit, *wparams, lit, n, lit, *wparams, n, lit, n]
    else:
        parts.append("vec AS (SELECT NULL::text AS id, NULL::float8 AS sim, NULL::bigint AS r WHERE FALSE)")
    sql = (
        "WITH " + ", ".join(parts) + ", fused AS ("
        "SELECT COALESCE(bm.id, vec.id) AS id, bm.r AS bm_rank, vec.r AS vec_rank, vec.sim AS sim, "
        "(COALESCE(%s / (%s + bm.r), 0) + COALESCE(%s / (%s + vec.r), 0)) / %s AS score "
        "FROM bm FULL OUTER JOIN vec ON bm.id = vec.id) "
        f"SELECT f.score, f.bm_rank, f.vec_rank, f.sim, {SELECT} FROM fused f JOIN memories m ON m.id = f.id "
        "ORDER BY f.score DESC, m.id LIMIT %s"
    )
    params += [wb, cfg.rrf_k, wv, cfg.rrf_k, best, limit]
    return sql, params


def results(rows: list[tuple[Any, ...]]) -> list[SearchResult]:
    """Search results from the rows of :func:`search_sql`."""
    return [SearchResult(row_to_memory(r[4:]), round(min(1.0, float(r[0])), 6),
                         int(r[1]) if r[1] is not None else None, int(r[2]) if r[2] is not None else None,
                         float(r[3]) if r[3] is not None else None)
            for r in rows]
