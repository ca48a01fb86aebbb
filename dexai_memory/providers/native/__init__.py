"""The native provider: one SQLite file per data directory.

- :mod:`.provider`: :class:`NativeProvider`, the :class:`~dexai_memory.providers.base.MemoryProvider` on SQLite.
- :mod:`.database`: the file and its one connection (opening, write lock, busy retries).
- :mod:`.migrations`: the schema, as numbered migrations.
- :mod:`.schema`: the ``memories`` table as SQL (columns, row decoding, WHERE / list / FTS queries).
- :mod:`.search`: hybrid search (BM25 and vectors, reciprocal rank fusion).
- :mod:`.vectors`: the vectors (``vec0``, deferred vectors, the in-memory index).

``NativeProvider`` loads lazily: naming the package does not import the provider's
dependencies (aiosqlite, sqlean, numpy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...lazy import lazy_exports

__all__ = ["NativeProvider"]

if TYPE_CHECKING:  # pragma: no cover
    from .provider import NativeProvider


__getattr__ = lazy_exports(__name__, {"NativeProvider": "provider"})
