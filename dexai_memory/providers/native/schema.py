"""The ``memories`` table as SQL: its columns, row decoding, and the WHERE, list and
full-text queries, used by the native provider (:mod:`.search`, :mod:`.bm25`, the provider).

Stdlib and foundation modules only (models).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ...models import Memory, MemoryType, SearchFilters, Tier
from ...text.words import search_terms

#: The first 16 bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"
#: Types left out of search unless asked for: raw transcripts and snapshots have their own readers;
#: episodes are asked for by type (prefetch, explicit recall), see MemoryType.EPISODE.
SEARCH_EXCLUDED_TYPES = (MemoryType.TRANSCRIPT.value, MemoryType.SNAPSHOT.value, MemoryType.EPISODE.value)

#: The columns of ``memories``, in the order :func:`row_to_memory` and :func:`memory_params` use.
COLUMNS = (
    "id", "user_id", "project", "content", "type", "importance", "confidence", "mention_count", "tier",
    "source_ids", "session_id", "created_at", "updated_at", "valid_from", "valid_until", "superseded_by",
    "superseded_at", "archived", "pinned", "deleted", "retrieval_count", "citation_count", "last_accessed",
    "metadata", "ignore_count",
)
#: :data:`COLUMNS` on the alias ``m``, for ``SELECT {SELECT} FROM memories m``.
SELECT = ", ".join(f"m.{c}" for c in COLUMNS)


def ts(value: datetime | None) -> str | None:
    """A datetime as a fixed-width UTC string that sorts like time."""
    if value is None:
        return None
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def fts_query(text: str, max_terms: int = 32) -> str | None:
    """An FTS5 OR-query of the content words of ``text`` (None if it has none): its
    :func:`~dexai_memory.text.words.search_terms`, each quoted (``snake_case`` is the FTS5 phrase
    "snake case"; the index's ``unicode61`` tokenizer splits it as it split the content)."""
    terms = search_terms(text, max_terms)
    if not terms:
        return None
    return " OR ".join(f'"{t}"' for t in terms)


def row_to_memory(row: Sequence[Any]) -> Memory:
    """A :class:`Memory` from a row of :data:`SELECT`: a row in the form this store writes is
    taken as it is (:func:`_as_written`: ~4x faster than validating it again; a search reads up to
    a hundred rows per prompt, the session's block several hundred), anything else is validated
    by :class:`Memory` (which raises :class:`~dexai_memory.errors.InvalidMemory` for a damaged row)."""
    data = dict(zip(COLUMNS, row, strict=True))
    data["source_ids"] = tuple(json.loads(data["source_ids"] or "[]"))
    data["metadata"] = json.loads(data["metadata"] or "{}")
    for flag in ("archived", "pinned", "deleted"):
        data[flag] = bool(data[flag])
    return _as_written(data) or Memory(**data)


_TYPES = {t.value: t for t in MemoryType}
_TIERS = {t.value: t for t in Tier}
_DATES = ("created_at", "updated_at", "valid_from", "valid_until", "superseded_at", "last_accessed")


def _as_written(data: dict[str, Any]) -> Memory | None:
    """The memory of ``data`` (a decoded row) when every value is in the form :func:`memory_params`
    writes (a known type and tier name, trimmed content, a whole importance from 1 to 10, a
    confidence from 0 to 1, UTC times as :func:`ts` writes them, string source ids): what
    :class:`Memory` would make of it, without checking it again. None otherwise."""
    try:
        data["type"], data["tier"] = _TYPES[data["type"]], _TIERS[data["tier"]]
        content, user_id, importance = data["content"], data["user_id"], data["importance"]
        if not (type(content) is str and content and content == content.strip() and type(user_id) is str
                and user_id and type(importance) is int and 1 <= importance <= 10):
            return None
        data["confidence"] = confidence = float(data["confidence"])
        if not 0.0 <= confidence <= 1.0 or not all(type(i) is str for i in data["source_ids"]) \
                or type(data["metadata"]) is not dict:
            return None
        for name in _DATES:
            value = data[name]
            if value is not None:
                if type(value) is not str or not value.endswith("Z"):
                    return None
                data[name] = datetime.fromisoformat(value).replace(tzinfo=UTC)
    except (KeyError, TypeError, ValueError):
        return None
    if data["created_at"] is None:
        return None
    if data["valid_from"] is None:
        data["valid_from"] = data["created_at"]
    memory = object.__new__(Memory)
    for name, value in data.items():
        object.__setattr__(memory, name, value)
    return memory


def memory_params(m: Memory) -> tuple[Any, ...]:
    """The values of :data:`COLUMNS` for ``m`` (the parameters of an INSERT)."""
    return (
        m.id, m.user_id, m.project, m.content, m.type.value, m.importance, m.confidence, m.mention_count,
        m.tier.value, json.dumps(list(m.source_ids)), m.session_id, ts(m.created_at), ts(m.updated_at),
        ts(m.valid_from), ts(m.valid_until), m.superseded_by, ts(m.superseded_at), int(m.archived),
        int(m.pinned), int(m.deleted), m.retrieval_count, m.citation_count, ts(m.last_accessed),
        json.dumps(dict(m.metadata), default=str), m.ignore_count,
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


def list_query(user_id: str, f: SearchFilters, *, limit: int, offset: int = 0) -> tuple[str, list[Any]]:
    """The rows of :data:`SELECT` passing ``f``, newest first (``limit`` <= 0: all of them)."""
    where, params = where_clause(user_id, f)
    sql = f"SELECT {SELECT} FROM memories m WHERE {where} ORDER BY m.created_at DESC, m.rowid DESC"
    if limit > 0:
        sql += " LIMIT ? OFFSET ?"
        params += [limit, offset]
    return sql, params


def bm25_query(columns: str, match: str, where: str, params: Sequence[Any], limit: int) -> tuple[str, list[Any]]:
    """``columns`` (on alias ``m``) of the rows matching the FTS5 query ``match`` (see
    :func:`fts_query`) and ``where``, best BM25 first, at most ``limit``."""
    sql = (f"SELECT {columns} FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
           f"WHERE memories_fts MATCH ? AND {where} ORDER BY bm25(memories_fts) LIMIT ?")
    return sql, [match, *params, limit]
