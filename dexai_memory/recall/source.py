"""What recall reads memories from: the two reads of a
:class:`~dexai_memory.providers.base.MemoryProvider` recall makes (:mod:`.ranking`,
:mod:`.block`, :mod:`.reinjection`, :mod:`.prefetch`), so recall needs no more of a store
than that.
"""

from __future__ import annotations

import builtins
from typing import Protocol

from ..models import Memory, SearchFilters, SearchResult


class RecallSource(Protocol):
    """The two reads recall makes, with :class:`~dexai_memory.providers.base.MemoryProvider`'s signatures."""

    async def list(self, *, user_id: str, filters: SearchFilters | None = None,
                   limit: int = 100) -> builtins.list[Memory]:
        """Memories of ``user_id`` passing ``filters``, newest first."""
        ...

    async def search(self, query: str, *, user_id: str, filters: SearchFilters | None = None,
                     limit: int = 10) -> builtins.list[SearchResult]:
        """The best ``limit`` memories for ``query``, best first."""
        ...
