"""Bounded keyword work in a large store: BM25 over the query's rarer words.

FTS5 scores every row matching any word of the query before it can sort
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

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

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
