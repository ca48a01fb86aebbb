"""The Postgres ``memories`` table as SQL: columns, row decoding, WHERE and list queries, team scope.

The filters mean exactly what they mean in the native store
(:func:`dexai_memory.providers.native.schema.where_clause`): user, project,
types (transcripts and snapshots left out of search unless asked for), tiers,
session, validity (current only / archive / as-of a moment), creation time,
pinned and minimum importance; deleted memories are never returned.

**Team scope.** A memory's ``metadata["scope"]`` is ``user-private`` (the
default) or ``project-shared``; it is copied into the ``scope`` column. A
reader sees its own memories plus the ``project-shared`` memories of its
projects: the project it asks about (``filters.project``), or, when it names
none, every project it is a member of (``project_members``: a user becomes a
member by storing a memory in the project). Writes stay owner-only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import InvalidMemory
from ...models import Memory, SearchFilters
from ...text.words import search_terms
from ..native.schema import SEARCH_EXCLUDED_TYPES

#: The default scope: only the owner sees the memory.
USER_PRIVATE = "user-private"
#: Visible to every member of the memory's project.
PROJECT_SHARED = "project-shared"
SCOPES = (USER_PRIVATE, PROJECT_SHARED)

#: The columns of ``memories`` read back into a :class:`Memory`, in the order of :func:`row_to_memory`.
COLUMNS = (
    "id", "user_id", "project", "content", "type", "importance", "confidence", "mention_count", "tier",
    "source_ids", "session_id", "created_at", "updated_at", "valid_from", "valid_until", "superseded_by",
    "superseded_at", "archived", "pinned", "deleted", "retrieval_count", "citation_count", "last_accessed",
    "metadata", "ignore_count",
)
#: :data:`COLUMNS` on the alias ``m``.
SELECT = ", ".join(f"m.{c}" for c in COLUMNS)
#: Columns written on insert: :data:`COLUMNS` plus the scope.
INSERT_COLUMNS = (*COLUMNS, "scope")


def scope_of(memory: Memory) -> str:
    """The scope a memory asks for in ``metadata["scope"]`` (InvalidMemory for an unknown one)."""
    scope = str((memory.metadata or {}).get("scope") or USER_PRIVATE)
    if scope not in SCOPES:
        raise InvalidMemory(f"unknown scope {scope!r} (expected {' or '.join(SCOPES)})")
    if scope == PROJECT_SHARED and not memory.project:
        raise InvalidMemory("a project-shared memory needs a project")
    return scope


def memory_params(m: Memory) -> tuple[Any, ...]:
    """The values of :data:`INSERT_COLUMNS` for ``m``."""
    from psycopg.types.json import Jsonb

    return (
        m.id, m.user_id, m.project, m.content, m.type.value, m.importance, m.confidence, m.mention_count,
        m.tier.value, Jsonb(list(m.source_ids)), m.session_id, m.created_at, m.updated_at, m.valid_from,
        m.valid_until, m.superseded_by, m.superseded_at, m.archived, m.pinned, m.deleted, m.retrieval_count,
        m.citation_count, m.last_accessed, Jsonb(_json_safe(m.metadata)), m.ignore_count, scope_of(m),
    )


def _json_safe(value: Any) -> Any:
    """Metadata as JSON-ready data (datetimes as ISO strings, like the native store's ``default=str``)."""
    import json

    return json.loads(json.dumps(dict(value), default=str))


def row_to_memory(row: Sequence[Any]) -> Memory:
    """A :class:`Memory` from a row of :data:`SELECT`."""
    data = dict(zip(COLUMNS, row, strict=True))
    data["source_ids"] = tuple(data["source_ids"] or ())
    data["metadata"] = dict(data["metadata"] or {})
    return Memory(**data)


def visible(user_id: str, project: str | None) -> tuple[str, list[Any]]:
    """Rows ``user_id`` may read: its own, and project-shared ones of its projects (see the module docstring)."""
    if project is not None:
        return "(m.user_id = %s OR (m.scope = 'project-shared' AND m.project = %s))", [user_id, project]
    return ("(m.user_id = %s OR (m.scope = 'project-shared' AND m.project IN "
            "(SELECT pm.project FROM project_members pm WHERE pm.user_id = %s)))"), [user_id, user_id]


def where_clause(user_id: str, f: SearchFilters, *, for_search: bool = False) -> tuple[str, list[Any]]:
    """SQL condition (alias ``m``, ``%s`` parameters) for ``f``, always scoped to what ``user_id`` may read."""
    owner, params = visible(user_id, f.project)
    clauses = [owner, "NOT m.deleted"]
    if f.project is not None:
        clauses.append("m.project = %s")
        params.append(f.project)
    if f.types:
        clauses.append("m.type = ANY(%s)")
        params.append([t.value for t in f.types])
    elif for_search:
        clauses.append("NOT (m.type = ANY(%s))")
        params.append(list(SEARCH_EXCLUDED_TYPES))
    if f.tiers:
        clauses.append("m.tier = ANY(%s)")
        params.append([t.value for t in f.tiers])
    if f.session_id is not None:
        clauses.append("m.session_id = %s")
        params.append(f.session_id)
    if f.as_of is not None:
        clauses.append("m.valid_from <= %s AND (m.valid_until IS NULL OR m.valid_until > %s)")
        params.extend([f.as_of, f.as_of])
    else:
        if f.valid_only:
            clauses.append("m.superseded_by IS NULL AND m.valid_until IS NULL")
        if not f.include_archived:
            clauses.append("NOT m.archived")
    if f.created_after is not None:
        clauses.append("m.created_at >= %s")
        params.append(f.created_after)
    if f.created_before is not None:
        clauses.append("m.created_at < %s")
        params.append(f.created_before)
    if f.pinned is not None:
        clauses.append("m.pinned = %s")
        params.append(f.pinned)
    if f.min_importance is not None:
        clauses.append("m.importance >= %s")
        params.append(f.min_importance)
    return " AND ".join(clauses), params


def list_query(user_id: str, f: SearchFilters, *, limit: int, offset: int = 0) -> tuple[str, list[Any]]:
    """Rows of :data:`SELECT` passing ``f``, newest first (``limit`` <= 0: all of them)."""
    where, params = where_clause(user_id, f)
    sql = f"SELECT {SELECT} FROM memories m WHERE {where} ORDER BY m.created_at DESC, m.id DESC"
    if limit > 0:
        sql += " LIMIT %s OFFSET %s"
        params += [limit, offset]
    return sql, params


def ts_query(text: str, max_terms: int = 32) -> str | None:
    """A ``to_tsquery`` OR-query of the content words of ``text`` (None if it has none).

    The same words as the native store's FTS5 query (stop words dropped); the
    server stems them with the ``english`` configuration, as it stems the content.
    """
    terms = search_terms(text, max_terms, joiners="")
    if not terms:
        return None
    return " | ".join(terms)


def vector_literal(vector: Any) -> str:
    """A vector as pgvector's text input (``[0.1,0.2,...]``)."""
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"
