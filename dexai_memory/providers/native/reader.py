"""A read-only reader of the native store with the stdlib ``sqlite3``: the command
hook's store when no daemon answers (with ``sqlean`` in a process that has loaded
it, see :mod:`~dexai_memory.providers.native.driver`).

A command hook is a new process per event and must stay fast, so it cannot load
aiosqlite, sqlean, numpy or the embedder. :class:`SqliteReader` reads the same
file through the same :mod:`~dexai_memory.providers.native.schema` helpers as
:class:`~dexai_memory.providers.native.provider.NativeProvider` (one WHERE
clause, one full-text query, one row decoder) and the same BM25 side
(:mod:`~dexai_memory.providers.native.bm25`), with BM25 only (no vectors).

Its :meth:`~SqliteReader.list` and :meth:`~SqliteReader.search` have the
provider's signatures and are coroutines that never wait, so the recall code
(:mod:`dexai_memory.recall`) gathers from it exactly as from the provider, driven
without an event loop by :func:`dexai_memory.recall.source.run_now`.
"""

from __future__ import annotations

import builtins
from pathlib import Path
from types import TracebackType
from typing import Any

from ...models import Memory, SearchFilters, SearchResult
from .bm25 import bm25_rowids
from .driver import store_sqlite
from .schema import SELECT, fts_query, list_query, row_to_memory, where_clause

#: The score of the BM25 hit of rank ``r`` is ``(K + 1) / (K + r)`` (1.0 for the best), like the
#: provider's reciprocal-rank fusion with BM25 alone.
BM25_RANK_K = 60


class SqliteReader:
    """Read-only queries on the native store (FTS5, no vectors); a missing file or one
    without the ``memories`` table reads as empty. Opens the file on the first query."""

    def __init__(self, path: Path, timeout: float = 0.5):
        self.path = path
        self.timeout = timeout
        self._conn: Any = None  # a sqlite3 (or sqlean) Connection
        self._opened = False

    def _connection(self) -> Any:
        if not self._opened:
            self._opened = True
            if self.path.is_file():
                conn = store_sqlite(light=True).connect(str(self.path), timeout=self.timeout)
                conn.execute("PRAGMA query_only = ON")
                if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memories'").fetchone():
                    self._conn = conn
                else:
                    conn.close()
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> SqliteReader:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    async def list(self, *, user_id: str, filters: SearchFilters | None = None, limit: int = 100,
                   offset: int = 0) -> builtins.list[Memory]:
        """Memories passing ``filters``, newest first (as :meth:`NativeProvider.list`)."""
        conn = self._connection()
        if conn is None:
            return []
        sql, params = list_query(user_id, filters or SearchFilters(), limit=limit, offset=offset)
        return [row_to_memory(r) for r in conn.execute(sql, params).fetchall()]

    async def search(self, query: str, *, user_id: str, filters: SearchFilters | None = None,
                     limit: int = 10) -> builtins.list[SearchResult]:
        """BM25 hits as :class:`SearchResult`, best first (score: see :data:`BM25_RANK_K`)."""
        conn = self._connection()
        match = fts_query(query)
        if conn is None or match is None or limit <= 0:
            return []
        where, params = where_clause(user_id, filters or SearchFilters(), for_search=True)
        rowids = bm25_rowids(conn, match, where, params, limit, user_id)  # the provider's BM25 side
        if not rowids:
            return []
        rows = {r[0]: r[1:] for r in conn.execute(
            f"SELECT m.rowid, {SELECT} FROM memories m WHERE m.rowid IN ({','.join('?' * len(rowids))})", rowids)}
        return [SearchResult(row_to_memory(rows[rowid]), (BM25_RANK_K + 1.0) / (BM25_RANK_K + rank), bm25_rank=rank)
                for rank, rowid in enumerate(rowids, 1) if rowid in rows]
