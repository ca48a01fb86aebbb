"""What recall reads memories from, and how a command hook runs recall without an event loop.

Recall gathers its candidates once (:mod:`.ranking`, :mod:`.block`,
:mod:`.reinjection`), from any :class:`RecallSource`: a
:class:`~dexai_memory.providers.base.MemoryProvider` in the daemon, the SDK and
the CLI, or, in a command hook with no daemon, the read-only
:class:`~dexai_memory.providers.native.reader.SqliteReader`. The reader's
coroutines never wait (stdlib ``sqlite3`` answers at once), so
:func:`run_now` runs the same recall coroutines to their end in the hook's
thread, without importing :mod:`asyncio` (tens of milliseconds per hook).

Stdlib-only (models): the command hook imports it on its fast path.
"""

from __future__ import annotations

import builtins
from collections.abc import Coroutine
from typing import Any, Protocol, TypeVar

from ..models import Memory, SearchFilters, SearchResult

T = TypeVar("T")


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


def run_now(coro: Coroutine[Any, Any, T]) -> T:
    """The result of ``coro``, run to its end in this thread, without an event loop.

    Only for coroutines that never wait: every ``await`` in them reaches only
    coroutines that return at once (a :class:`RecallSource` like the hook's
    ``SqliteReader``). Exceptions propagate; a coroutine that does wait (real
    I/O) is closed and RuntimeError is raised.
    """
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError(f"{coro!r} waited for I/O: run it in an event loop")
