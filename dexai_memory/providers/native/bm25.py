"""The BM25 side of a search of the native store: FTS5 ranked alone, then filtered.

Used by the provider's hybrid search (:mod:`.search`). Every function runs with a
``sqlite3`` (or ``sqlean``) connection, in the connection's own thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .keywords import prune
from .schema import bm25_query

if TYPE_CHECKING:
    import sqlite3

    from .keywords import TermCounts


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
    (``pruning``: :func:`~dexai_memory.providers.native.keywords.prune`); a
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
