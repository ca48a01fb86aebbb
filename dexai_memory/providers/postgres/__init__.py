"""The Postgres provider: PostgreSQL with pgvector, one store for many machines and a team.

- :mod:`.provider`: :class:`PostgresProvider`, the :class:`~dexai_memory.providers.base.MemoryProvider`
  on PostgreSQL (psycopg 3 async, a connection pool).
- :mod:`.migrations`: the schema, as numbered migrations.
- :mod:`.schema`: columns, row decoding, WHERE / list queries, team scope.
- :mod:`.vectors`: the ``embedding`` column (pgvector, HNSW) and its model.
- :mod:`.search`: hybrid search (full text and vectors, reciprocal rank fusion) in one SQL round trip.

Needs the ``postgres`` extra (``pip install 'dexai-memory[postgres]'``);
``PostgresProvider`` loads lazily, so importing this package never needs psycopg.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...lazy import lazy_exports

__all__ = ["PostgresProvider"]

if TYPE_CHECKING:  # pragma: no cover
    from .provider import PostgresProvider


__getattr__ = lazy_exports(__name__, {"PostgresProvider": "provider"})
