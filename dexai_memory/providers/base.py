"""The provider ABC: everything the rest of dexai-memory needs from a memory store.

Only storage primitives are abstract (:meth:`add`, :meth:`search`, :meth:`get`,
:meth:`update`, :meth:`delete`, :meth:`list`, :meth:`health_check`,
:meth:`record_event`, :meth:`events`). The lifecycle operations of the
provider interface (supersede, apply a decision, promote, consolidate, session
notes, pin, restore) are concrete methods built on them, so every backend gets
the same semantics; a backend may override one to use a native capability
(for example Zep's temporal invalidation). History and as-of queries are
functions over these primitives (:mod:`.history`).

The store decides nothing and renders nothing: supersession decisions come
from :mod:`dexai_memory.supersession.decide`, context blocks from
:mod:`dexai_memory.recall`.

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

from ..errors import InvalidMemory, MemoryNotFound, ProviderError
from ..models import (
    Contradiction,
    HealthStatus,
    Memory,
    MemoryEvent,
    MemoryType,
    SearchFilters,
    SearchResult,
    Tier,
    UpdateAction,
    UpdateDecision,
    boosted,
    is_tool_origin,
    utcnow,
)
from .contradictions import ContradictionLog

if TYPE_CHECKING:
    from ..embeddings import Embedder

logger = logging.getLogger(__name__)
#: Least confidence of a contradicting note for supersession to resolve the contradiction on its own.
AUTO_RESOLVE_CONFIDENCE = 0.6

#: Fields callers may change through :meth:`MemoryProvider.update`.
UPDATABLE_FIELDS = frozenset({
    "content", "project", "type", "importance", "confidence", "mention_count", "tier",
    "source_ids", "session_id", "valid_from", "valid_until", "superseded_by", "superseded_at",
    "archived", "pinned", "retrieval_count", "citation_count", "last_accessed", "metadata",
})

ProgressCallback = Callable[[int], None]


class MemoryProvider(abc.ABC):
    """Async interface of a memory store. See the module docstring."""

    #: Short backend name ("native", "mem0", "zep", "memory").
    name: str = "base"
    #: Contract points this backend honours exactly; the contract suite skips the others.
    capabilities: frozenset[str] = frozenset({"as_of", "history", "hard_delete", "vector_search"})
    #: Where contradictions are recorded (None: this backend keeps none). See :meth:`apply_decision`.
    contradiction_log: ContradictionLog | None = None
    #: The embedder this store's vectors come from (None: none, or not ours).
    embedder: Embedder | None = None

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
        """Undo a soft delete. Raises :class:`ProviderError` where the backend cannot."""
        raise ProviderError(f"the {self.name} provider cannot restore forgotten memories")

    async def record_retrieval(self, memory_ids: Sequence[str], *, user_id: str) -> None:
        """Count that these memories were retrieved (injected into context) now."""
        now = utcnow()
        for memory_id in memory_ids:
            try:
                memory = await self.get(memory_id, user_id=user_id)
            except MemoryNotFound:
                continue
            await self.update(memory_id, user_id=user_id, retrieval_count=memory.retrieval_count + 1,
                              last_accessed=now)

    # ------------------------------------------------------------------ supersession
    async def supersede(self, old_id: str, new_content: str | Memory, *, user_id: str,
                        reason: str = "updated") -> Memory:
        """Mark ``old_id`` superseded and store its replacement; returns the new memory.

        The old memory is kept (valid_until, superseded_by and superseded_at set;
        moved to L3 when archived) so history and as-of queries still see it.
        """
        old = await self.get(old_id, user_id=user_id)
        if not old.is_valid:
            raise InvalidMemory(f"memory {old_id} is not current (already superseded or archived)")
        now = utcnow()
        if isinstance(new_content, Memory):
            if new_content.user_id != user_id:
                raise InvalidMemory("the replacement belongs to another user")
            new = new_content.replace(valid_from=new_content.valid_from or now)
        else:
            new = Memory(content=new_content, user_id=user_id, project=old.project, type=old.type,
                         importance=old.importance, confidence=old.confidence, tier=old.tier,
                         source_ids=old.source_ids, session_id=old.session_id, pinned=old.pinned,
                         created_at=now, valid_from=now)
        new = await self.add(new)
        await self.update(old_id, user_id=user_id, superseded_by=new.id, superseded_at=now, valid_until=now,
                          tier=Tier.L3)
        await self.record_event(MemoryEvent(old_id, "SUPERSEDED", reason, now, related_id=new.id), user_id=user_id)
        await self.record_event(MemoryEvent(new.id, "SUPERSEDES", reason, now, related_id=old_id), user_id=user_id)
        return new

    async def apply_decision(self, decision: UpdateDecision, note: Memory, *,
                             current: Memory | None = None) -> Memory | None:
        """Carry out one classification for ``note``; returns the memory written, or None.

        ``current`` is the memory the decision names, as the caller has just read it
        (saves reading it again); otherwise it is read here.

        ADD stores ``note``; UPDATE merges it into the existing memory (content,
        provenance, mention count, confidence + 0.15); SUPERSEDE replaces the existing memory with
        ``note``; NOOP counts one more mention and raises confidence by
        :data:`~dexai_memory.models.CONFIDENCE_BOOST` (0.15).
        Where the backend keeps contradictions (:attr:`contradiction_log`), a
        SUPERSEDE is recorded as one (a = the old memory, b = the note,
        resolved b_wins automatically), unless the note's confidence is below
        :data:`AUTO_RESOLVE_CONFIDENCE`: then both stay current and the
        contradiction is left open for review (``dexai memory conflicts``). Each
        action is logged with its reason.

        Deciding is not the store's job: callers decide with
        :func:`dexai_memory.supersession.decide.decide` and carry the decision
        out with :func:`dexai_memory.supersession.decide.apply`, which guards
        the meaning of the memory once more before calling this method.
        Storage invariants hold here whatever the decision: a pinned memory
        is never overwritten (the note is added instead).

        A note from tool output (``metadata["origin"] == "tool"``) never
        rewrites or replaces a memory that did not come from a tool: it is
        added next to it. A user's note (``origin == "user"``) that repeats or
        refines a tool's memory marks it ``confirmed_by_user`` (it may then
        enter the profile).
        """
        uid = note.user_id
        now = utcnow()
        old = None
        if decision.action is not UpdateAction.ADD and decision.memory_id is not None:
            old = current if current is not None and current.id == decision.memory_id else \
                await self.get(decision.memory_id, user_id=uid)
            if (decision.action in (UpdateAction.UPDATE, UpdateAction.SUPERSEDE) and is_tool_origin(note)
                    and not is_tool_origin(old)):
                decision = UpdateDecision(UpdateAction.ADD, None, f"tool output never rewrites or replaces memory "
                                          f"{old.id}, which did not come from a tool; stored as new instead of "
                                          f"{decision.action.value} ({decision.reason})")
        if decision.action is UpdateAction.ADD or decision.memory_id is None or old is None:
            stored = await self.add(note)
            await self.record_event(MemoryEvent(stored.id, "ADD", decision.reason, now), user_id=uid)
            return stored
        if old.pinned and decision.action in (UpdateAction.UPDATE, UpdateAction.SUPERSEDE):
            reason = (f"memory {old.id} is pinned and changes only by explicit user action; stored as new instead "
                      f"of {decision.action.value} ({decision.reason})")
            logger.info("not overwriting pinned memory %s: %s", old.id, reason)
            stored = await self.add(note)
            await self.record_event(MemoryEvent(stored.id, "ADD", reason, now), user_id=uid)
            return stored
        sources = tuple(dict.fromkeys(old.source_ids + note.source_ids))
        confirmed: dict[str, Any] = {}
        if is_tool_origin(old) and (note.metadata or {}).get("origin") == "user":
            # the user said it again: the tool's memory may now enter the profile
            confirmed = {"metadata": {**old.metadata, "confirmed_by_user": True}}
        if decision.action is UpdateAction.NOOP:
            updated = await self.update(old.id, user_id=uid, mention_count=old.mention_count + 1,
                                        confidence=boosted(old.confidence), source_ids=sources,
                                        importance=max(old.importance, note.importance), **confirmed)
            await self.record_event(MemoryEvent(old.id, "NOOP", decision.reason, now,
                                                details={"duplicate": note.content}), user_id=uid)
            return updated
        if decision.action is UpdateAction.UPDATE:
            content = decision.merged_content or note.content
            updated = await self.update(old.id, user_id=uid, content=content, source_ids=sources,
                                        mention_count=old.mention_count + 1, confidence=boosted(old.confidence),
                                        importance=max(old.importance, note.importance), **confirmed)
            await self.record_event(MemoryEvent(old.id, "UPDATE", decision.reason, now,
                                                details={"before": old.content, "after": content}), user_id=uid)
            return updated
        replacement = note.replace(source_ids=sources)
        if decision.merged_content:
            replacement = replacement.replace(content=decision.merged_content)
        log = self.contradiction_log
        if log is not None and note.confidence < AUTO_RESOLVE_CONFIDENCE:
            # not sure enough to replace what is known: both stay current, the contradiction stays open
            stored = await self.add(replacement)
            reason = (f"contradicts {old.id} but its confidence {note.confidence:.2f} is below "
                      f"{AUTO_RESOLVE_CONFIDENCE}: both kept, contradiction left open ({decision.reason})")
            await self.record_event(MemoryEvent(stored.id, "ADD", reason, now, related_id=old.id), user_id=uid)
            await log.add(Contradiction(uid, old.id, stored.id, reason=decision.reason, detected_at=now))
            return stored
        new = await self.supersede(old.id, replacement, user_id=uid, reason=decision.reason)
        if log is not None:
            await log.add(Contradiction(uid, old.id, new.id, reason=decision.reason, detected_at=now,
                                        resolution="b_wins", resolved_at=now, auto=True,
                                        note="the newer statement replaced the older one"))
        return new

    # ------------------------------------------------------------------ tiers
    async def promote(self, memory_id: str, target_tier: str | Tier, *, user_id: str) -> Memory:
        """Move a memory to another tier (L1 pinned context, L2 search, L3 archive)."""
        tier = Tier.parse(target_tier)
        memory = await self.update(memory_id, user_id=user_id, tier=tier)
        await self.record_event(MemoryEvent(memory_id, "PROMOTE", f"moved to {tier.value}", utcnow()),
                                user_id=user_id)
        return memory

    async def consolidate(self, memory_ids: Sequence[str], summary: str, *, user_id: str,
                          type: MemoryType = MemoryType.INSIGHT, reason: str = "consolidated") -> Memory:
        """Merge memories into one L3 abstract that keeps every source id.

        The originals are marked superseded by the abstract (never deleted).
        Returns the abstract.
        """
        if not memory_ids:
            raise InvalidMemory("consolidate needs at least one memory id")
        originals = [await self.get(mid, user_id=user_id) for mid in memory_ids]
        now = utcnow()
        sources = tuple(dict.fromkeys(s for m in originals for s in (m.source_ids or (m.id,))))
        abstract = await self.add(Memory(
            content=summary, user_id=user_id, project=originals[0].project, type=type,
            importance=max(m.importance for m in originals),
            confidence=max(m.confidence for m in originals), tier=Tier.L3, source_ids=sources,
            mention_count=sum(m.mention_count for m in originals), created_at=now, valid_from=now,
            metadata={"consolidated_from": [m.id for m in originals],
                      "consolidated_from_count": len(originals), "consolidated_at": now.isoformat()},
        ))
        for m in originals:
            await self.update(m.id, user_id=user_id, superseded_by=abstract.id, superseded_at=now, valid_until=now,
                              tier=Tier.L3)
            await self.record_event(MemoryEvent(m.id, "CONSOLIDATED", reason, now, related_id=abstract.id),
                                    user_id=user_id)
        await self.record_event(MemoryEvent(abstract.id, "CONSOLIDATES", reason, now,
                                            details={"from": [m.id for m in originals]}), user_id=user_id)
        return abstract

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
