"""The provider ABC: storage primitives and declared capabilities, nothing else.

The abstract methods are the primitives (:meth:`add`, :meth:`search`,
:meth:`get`, :meth:`update`, :meth:`delete`, :meth:`list`,
:meth:`health_check`, :meth:`record_event`, :meth:`events`); the concrete
ones are conveniences a backend may override to batch or use a native
feature (:meth:`add_many`, :meth:`count`, :meth:`record_events`,
:meth:`superseded_by`, :meth:`pin` / :meth:`promote`: one field change and its
history entry, session notes), or primitives only some backends have
(:meth:`restore`, :meth:`users`, :meth:`add_links` / :meth:`links`). What a
backend can do beyond them is declared in :attr:`MemoryProvider.capabilities`
(:class:`~.capabilities.ProviderCapabilities`), never probed.

The store decides nothing and renders nothing. What a new statement does to
memory (ADD / UPDATE / SUPERSEDE / NOOP, confidence, contradictions, the
tool-output and pinned-memory rules) is :mod:`dexai_memory.supersession`,
which takes the provider as an argument; history and as-of queries are
:mod:`.history`; context blocks are :mod:`dexai_memory.recall`.

Every method is scoped by ``user_id``: no call can return or change another
user's memory. Providers are async context managers (``async with provider:``)
or use :meth:`start` / :meth:`aclose`.
"""

from __future__ import annotations

import abc
import builtins
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Self

from ..errors import MemoryNotFound, ProviderError
from ..models import (
    HealthStatus,
    Memory,
    MemoryEvent,
    MemoryLink,
    MemoryType,
    SearchFilters,
    SearchResult,
    Tier,
    utcnow,
)
from .capabilities import ProviderCapabilities
from .contradictions import ContradictionLog
from .redacting import wrap_writes

if TYPE_CHECKING:
    from ..embeddings import Embedder

logger = logging.getLogger(__name__)

#: Fields callers may change through :meth:`MemoryProvider.update`.
UPDATABLE_FIELDS = frozenset({
    "content", "project", "type", "importance", "confidence", "mention_count", "tier",
    "source_ids", "session_id", "valid_from", "valid_until", "superseded_by", "superseded_at",
    "archived", "pinned", "retrieval_count", "citation_count", "ignore_count", "last_accessed", "metadata",
})

ProgressCallback = Callable[[int], None]


class MemoryProvider(abc.ABC):
    """Async interface of a memory store. See the module docstring."""

    #: Short backend name ("native", "mem0", "zep", "memory").
    name: str = "base"
    #: Contract points this backend honours exactly; the contract suite skips the others.
    capabilities: ProviderCapabilities = ProviderCapabilities()
    #: Where contradictions are recorded (None: this backend keeps none); written by
    #: :mod:`dexai_memory.supersession.contradictions`.
    contradiction_log: ContradictionLog | None = None
    #: The embedder this store's vectors come from (None: none, or not ours).
    embedder: Embedder | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every backend's writes are redacted (:mod:`.redacting`): text enters any store only
        through :func:`~dexai_memory.text.redaction.redact`, whatever door it came through."""
        super().__init_subclass__(**kwargs)
        wrap_writes(cls)

    async def start(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Open connections / load resources. Idempotent."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Release resources. Idempotent."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ primitives
    @abc.abstractmethod
    async def add(self, memory: Memory) -> Memory:
        """Store ``memory`` (its id must be new). Returns the stored memory.

        Raises :class:`InvalidMemory` if the id already exists.
        """

    @abc.abstractmethod
    async def search(self, query: str, *, user_id: str, filters: SearchFilters | None = None,
                     limit: int = 10) -> builtins.list[SearchResult]:
        """Memories of ``user_id`` relevant to ``query``, best first, score in [0, 1].

        Default filters keep valid memories of tiers L1/L2 only; pass
        ``SearchFilters(tiers=(Tier.L3,))`` for the archive. An empty query
        returns [].
        """

    @abc.abstractmethod
    async def get(self, memory_id: str, *, user_id: str, include_deleted: bool = False) -> Memory:
        """The memory ``memory_id`` of ``user_id``. Raises :class:`MemoryNotFound`."""

    @abc.abstractmethod
    async def update(self, memory_id: str, *, user_id: str, **changes: Any) -> Memory:
        """Change fields (see ``UPDATABLE_FIELDS``) and return the updated memory.

        Raises :class:`MemoryNotFound`, or :class:`InvalidMemory` for an unknown
        field or a bad value.
        """

    @abc.abstractmethod
    async def delete(self, memory_id: str, *, user_id: str, hard: bool = False) -> bool:
        """Forget a memory: soft (hidden, recoverable) or hard (erased with its vectors
        and history). Returns False if there was nothing to delete."""

    @abc.abstractmethod
    async def list(self, *, user_id: str, filters: SearchFilters | None = None, limit: int = 100,
                   offset: int = 0) -> builtins.list[Memory]:
        """Memories of ``user_id`` matching ``filters``, newest first."""

    @abc.abstractmethod
    async def health_check(self) -> HealthStatus:
        """Whether the backend works, with details (counts, versions) and problems."""

    @abc.abstractmethod
    async def record_event(self, event: MemoryEvent, *, user_id: str) -> None:
        """Append an entry to a memory's history log."""

    @abc.abstractmethod
    async def events(self, memory_id: str, *, user_id: str) -> builtins.list[MemoryEvent]:
        """The history log of one memory, oldest first."""

    # ------------------------------------------------------------------ concrete helpers
    async def add_many(self, memories: Iterable[Memory], *,
                       progress: ProgressCallback | None = None) -> builtins.list[Memory]:
        """Store many memories; backends override this to batch. Calls ``progress(n)``."""
        out = []
        for memory in memories:
            out.append(await self.add(memory))
            if progress:
                progress(1)
        return out

    @contextlib.asynccontextmanager
    async def deferred_vectors(self) -> AsyncIterator[None]:
        """A block in which writes may skip embedding, to be caught up by :meth:`fill_vectors`.

        Bulk ingest uses it so thousands of turns are stored in seconds; the
        native provider overrides it. By default writes embed as usual.
        """
        yield

    async def pending_vectors(self) -> int:
        """How many memories wait for a vector (0 for backends that always embed on write)."""
        return 0

    async def fill_vectors(self, *, progress: ProgressCallback | None = None, batch: int = 256,
                           limit: int | None = None, embedder: Embedder | None = None) -> int:
        """Embed the memories stored without a vector; returns how many (0 by default).

        ``embedder``: the same model set up for bulk work (every core), when the provider can use it."""
        return 0

    async def record_events(self, events: Sequence[MemoryEvent], *, user_id: str) -> None:
        """Append many history entries; backends override this to batch."""
        for event in events:
            await self.record_event(event, user_id=user_id)

    async def count(self, *, user_id: str, filters: SearchFilters | None = None) -> int:
        """How many memories match (backends override with a cheap count)."""
        total, offset = 0, 0
        while True:
            page = await self.list(user_id=user_id, filters=filters, limit=1000, offset=offset)
            total += len(page)
            offset += len(page)
            if len(page) < 1000:
                return total

    async def pin(self, memory_id: str, *, user_id: str, pinned: bool = True) -> Memory:
        """Pin (or unpin) a memory: pinned memories are always in the profile and never archived."""
        memory = await self.update(memory_id, user_id=user_id, pinned=pinned)
        await self.record_event(MemoryEvent(memory_id, "PIN" if pinned else "UNPIN", "by request", utcnow()),
                                user_id=user_id)
        return memory

    async def restore(self, memory_id: str, *, user_id: str) -> Memory:
        """Undo a soft delete (``capabilities.restore``). Raises :class:`ProviderError` where the backend cannot."""
        raise ProviderError(f"the {self.name} provider cannot restore forgotten memories")

    async def users(self) -> builtins.list[str]:
        """Every user id the store holds memories for (``capabilities.list_users``).

        Raises :class:`ProviderError` where the backend cannot list them."""
        raise ProviderError(f"the {self.name} provider cannot list its users")

    async def add_links(self, links: Sequence[MemoryLink]) -> int:
        """Store links between memories (``capabilities.links``); a link already stored (the same
        user, a, b and kind) is left as it is. Returns how many were new.

        Raises :class:`ProviderError` where the backend keeps no links."""
        raise ProviderError(f"the {self.name} provider keeps no links between memories")

    async def links(self, memory_ids: Sequence[str], *, user_id: str) -> builtins.list[MemoryLink]:
        """Every link of ``user_id`` with one of ``memory_ids`` at either end, oldest first ([] where
        the backend keeps none: recall then follows no links)."""
        return []

    async def record_retrieval(self, memory_ids: Sequence[str], *, user_id: str, refresh: bool = True,
                               ignored: bool = False) -> None:
        """Count that these memories were retrieved (injected into context) now; ``refresh``: and
        set ``last_accessed`` (a reference, which the lifecycle's expiry counts from). ``ignored``:
        count instead that they were in a prompt's recall block and the reply did not use them
        (``ignore_count``; no reference: ``last_accessed`` is left as it is)."""
        now = utcnow()
        for memory_id in memory_ids:
            try:
                memory = await self.get(memory_id, user_id=user_id)
            except MemoryNotFound:
                continue
            if ignored:
                await self.update(memory_id, user_id=user_id, ignore_count=memory.ignore_count + 1)
            else:
                await self.update(memory_id, user_id=user_id, retrieval_count=memory.retrieval_count + 1,
                                  **({"last_accessed": now} if refresh else {}))

    # ------------------------------------------------------------------ tiers
    async def promote(self, memory_id: str, target_tier: str | Tier, *, user_id: str) -> Memory:
        """Move a memory to another tier (L1 pinned context, L2 search, L3 archive)."""
        tier = Tier.parse(target_tier)
        memory = await self.update(memory_id, user_id=user_id, tier=tier)
        await self.record_event(MemoryEvent(memory_id, "PROMOTE", f"moved to {tier.value}", utcnow()),
                                user_id=user_id)
        return memory

    # ------------------------------------------------------------------ session notes
    async def add_session_note(self, content: str, *, user_id: str, session_id: str, importance: int = 5,
                               metadata: dict[str, Any] | None = None, source_ids: Sequence[str] = (),
                               project: str | None = None) -> Memory:
        """Store a session-scoped note (type SESSION_NOTE) for later consolidation."""
        return await self.add(Memory(content=content, user_id=user_id, session_id=session_id, project=project,
                                     type=MemoryType.SESSION_NOTE, importance=importance,
                                     metadata=metadata or {}, source_ids=tuple(source_ids)))

    async def get_session_notes(self, session_id: str, *, user_id: str) -> builtins.list[Memory]:
        """All session notes of ``session_id``, newest first."""
        return await self.list(user_id=user_id, filters=SearchFilters(session_id=session_id,
                                                                       types=(MemoryType.SESSION_NOTE,)),
                               limit=10_000)

    # ------------------------------------------------------------------ time
    async def superseded_by(self, memory_id: str, *, user_id: str) -> builtins.list[Memory]:
        """Memories whose ``superseded_by`` is ``memory_id``, superseded and archived ones included
        (the step :func:`~dexai_memory.providers.history.history` walks back by; backends may override)."""
        out: builtins.list[Memory] = []
        offset = 0
        while True:
            page = await self.list(user_id=user_id, filters=SearchFilters(valid_only=False, include_archived=True),
                                   limit=1000, offset=offset)
            out.extend(m for m in page if m.superseded_by == memory_id)
            offset += len(page)
            if len(page) < 1000:
                return out
