"""Imported memories through supersession: new statements decided oldest first, the past kept as it was.

``dexai memory import`` hands :func:`import_memories` the memories of a file
that the store does not hold yet (their ids are not stored), with the history
events the file carries for them. They are split in two:

* **the past** (superseded, expired or archived entries) and **records**
  (transcripts, snapshots, episodes: :data:`RECORDS`): stored as they are, with
  their links and history;
* **current statements**: each decided by the one decision path
  (:func:`~.store.decide_statement`, then :func:`~.apply.apply`), oldest first by
  when it was said (``valid_from``, else ``created_at``; file order on a tie), so
  that of two statements about the same thing the newest is current and the
  older one is in its history, whatever order the file lists them in.

A statement the file carries history for (an export's entry: it has
``events``) is compared with the store's memories and with the file's
statements without history, never with the file's other entries that have
history: the store they were exported from already decided between those.
So an export imported into an empty store comes back exactly (ids, history,
validity times), and importing a store's own export into it changes nothing
(every id is already stored; the caller skips them).

What each decision writes here: ADD stores the statement as it is (an entry
with history keeps its own events, one without gets an ADD event with the
reason); SUPERSEDE replaces the stored memory from when the statement was said
(or stores the statement as the past when it was said before that memory);
UPDATE merges it into the stored memory; NOOP writes nothing (already known:
importing the same file again changes nothing). A past entry of the file whose
``superseded_by`` names a statement merged into a stored memory (UPDATE, NOOP)
points at that memory instead.

All or nothing: the caller checks every entry before calling; when a write
fails here, what this import wrote is undone (:class:`Undo`: the memories it
added are removed, the memories it changed are put back with an
``IMPORT_UNDONE`` event after the ones the import recorded, the contradictions
it left open are closed) and the error is raised again.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from ..errors import DexaiMemoryError
from ..models import Memory, MemoryEvent, MemoryType, SearchFilters, UpdateAction, utcnow
from . import contradictions
from .apply import apply
from .candidates import CandidateIndex
from .classifier import UpdateClassifier
from .rules import OfflineClassifier
from .store import DEFAULT_TOP_K, decide_statement

if TYPE_CHECKING:
    from ..providers.base import MemoryProvider

logger = logging.getLogger(__name__)

#: Statements from which the offline rules find candidates by word overlap (:class:`~.candidates.CandidateIndex`,
#: as bulk ingest does) rather than one search per statement.
INDEX_FROM = 200

#: The fields of a stored memory a decision may change, put back by :class:`Undo`.
_RESTORED = ("content", "importance", "confidence", "mention_count", "tier", "source_ids", "valid_until",
             "superseded_by", "superseded_at", "metadata")


@dataclass
class Imported:
    """What :func:`import_memories` did."""

    #: Ids of the file's memories stored under their own id.
    stored: list[str] = field(default_factory=list)
    #: Statements that replaced a stored memory: (the statement's id, the memory it replaced).
    superseded: list[tuple[str, str]] = field(default_factory=list)
    #: Statements merged into a stored memory or already known: (the statement's id, that memory's id).
    merged: list[tuple[str, str]] = field(default_factory=list)
    #: Statements kept beside a stored memory they may contradict (recorded open for review).
    open_conflicts: list[tuple[str, str]] = field(default_factory=list)


def said(memory: Memory) -> datetime:
    """When ``memory`` was said: its ``valid_from``, else its ``created_at``."""
    return memory.valid_from or memory.created_at


#: Types that are records, not statements: a transcript, a session's snapshot or episode is stored
#: as it is (the pipeline writes them without supersession too).
RECORDS = frozenset({MemoryType.TRANSCRIPT, MemoryType.SNAPSHOT, MemoryType.EPISODE})


def is_statement(memory: Memory) -> bool:
    """Whether an imported entry is a current statement (decided) rather than the past or a record
    (:data:`RECORDS`), which are stored as they are."""
    return memory.is_valid and memory.type not in RECORDS


@dataclass
class Undo:
    """What an import wrote, so a failure can take it back (see the module docstring)."""

    provider: MemoryProvider
    started: datetime = field(default_factory=utcnow)
    added: list[Memory] = field(default_factory=list)
    before: dict[str, Memory] = field(default_factory=dict)

    def touched(self, memory: Memory | None) -> None:
        """Remember ``memory`` as it was before a decision changes it (the first time only)."""
        if memory is not None and memory.id not in self.before:
            self.before[memory.id] = memory

    async def run(self) -> None:
        """Undo every write recorded; errors while undoing are logged, not raised (the first error wins)."""
        added = {m.id for m in self.added}
        for m in reversed(self.added):
            with contextlib.suppress(DexaiMemoryError):
                await self.provider.delete(m.id, user_id=m.user_id, hard=True)
        for mid, old in self.before.items():
            if mid in added:
                continue
            try:
                await self.provider.update(mid, user_id=old.user_id, **{k: getattr(old, k) for k in _RESTORED})
                await self.provider.record_event(MemoryEvent(mid, "IMPORT_UNDONE", "a failed import was undone: "
                                                             "the memory is as it was before it", utcnow()),
                                                 user_id=old.user_id)
            except DexaiMemoryError:
                logger.exception("could not put memory %s back after a failed import", mid)
        log = self.provider.contradiction_log
        if log is None:
            return
        for user in {m.user_id for m in self.added}:
            for c in await log.list(user_id=user, open_only=True, limit=1000):
                if c.id is not None and (c.memory_a in added or c.memory_b in added) and c.detected_at >= self.started:
                    await log.resolve(c.id, user_id=user, resolution="a_wins", note="the import was undone",
                                      at=utcnow())


async def import_memories(provider: MemoryProvider, memories: Sequence[Memory],
                          events: Mapping[str, Sequence[MemoryEvent]], *, classifier: UpdateClassifier | None = None,
                          top_k: int = DEFAULT_TOP_K, enabled: bool = True,
                          store_batch: Callable[[list[Memory]], Awaitable[object]] | None = None,
                          progress: Callable[[int], None] | None = None, index_from: int = INDEX_FROM) -> Imported:
    """Store ``memories`` (none of whose ids is stored yet) and their ``events`` (by memory id) as the
    module docstring says; returns what was done.

    ``classifier`` None: the offline rules (as ``dexai memory add``); ``enabled`` False
    (``supersession.enabled``) stores everything as it is. ``store_batch(memories)`` (awaitable)
    stores many memories in one transaction when nothing needs deciding (the caller's batch
    writer; default ``provider.add_many``). From ``index_from`` statements on, the offline rules
    find their candidates in a word index of the users' current memories, kept up to date as the
    import writes (:class:`~.candidates.CandidateIndex`, as bulk ingest does). Raises what the
    provider raises, after undoing.
    """
    done = Imported()
    statements = sorted((m for m in memories if is_statement(m)), key=said)  # sorted() is stable: file order on ties
    past = [m for m in memories if not is_statement(m)]  # and records
    with_history = {m.id for m in memories if events.get(m.id)}
    if not enabled or await _nothing_to_compare(provider, statements, with_history):
        await _batch(provider, list(memories), store_batch)
        done.stored = [m.id for m in memories]
        await _record(provider, memories, events)
        if progress:
            progress(len(memories))
        return done
    undo = Undo(provider)
    absorbed: dict[str, str] = {}
    index = None
    if len(statements) >= index_from and (classifier is None or isinstance(classifier, OfflineClassifier)):
        index = CandidateIndex()
        for user in dict.fromkeys(m.user_id for m in statements):
            for m in await provider.list(user_id=user, filters=SearchFilters(valid_only=True), limit=0):
                index.add(m)
    try:
        for note in statements:
            await _one(provider, note, events, with_history, absorbed, undo, done, classifier=classifier, top_k=top_k,
                       index=index)
            if progress:
                progress(1)
        relinked = [m.replace(superseded_by=absorbed.get(m.superseded_by, m.superseded_by)) if m.superseded_by
                    else m for m in past]
        for m in relinked:
            await provider.add(m)
            undo.added.append(m)
            done.stored.append(m.id)
        await _record(provider, relinked, events)
        if progress:
            progress(len(past))
    except BaseException:
        await undo.run()
        raise
    return done


async def _one(provider: MemoryProvider, note: Memory, events: Mapping[str, Sequence[MemoryEvent]],
               with_history: set[str], absorbed: dict[str, str], undo: Undo, done: Imported, *,
               classifier: UpdateClassifier | None, top_k: int, index: CandidateIndex | None) -> None:
    """Decide and write one current statement of the import (``index``: kept up to date)."""
    own = note.id in with_history
    decided = await decide_statement(provider, note, classifier=classifier, top_k=top_k, index=index,
                                     exclude=with_history - {note.id} if own else frozenset())
    decision = decided.decision
    if decision.action is UpdateAction.NOOP and decided.target is not None:
        absorbed[note.id] = decided.target.id  # already known: nothing written
        done.merged.append((note.id, decided.target.id))
        return
    if decision.action is UpdateAction.ADD and not isinstance(decision, contradictions.Unsure):
        await provider.add(note)
        undo.added.append(note)
        done.stored.append(note.id)
        if index is not None:
            index.add(note)
        if own:
            await provider.record_events(list(events[note.id]), user_id=note.user_id)
        else:
            await provider.record_event(MemoryEvent(note.id, "ADD", f"imported: {decision.reason}", utcnow()),
                                        user_id=note.user_id)
        return
    undo.touched(decided.target)
    written = await apply(provider, decision, note)
    if written is None or written.id != note.id:
        if written is not None:
            absorbed[note.id] = written.id
            done.merged.append((note.id, written.id))
            if index is not None:
                index.add(written)  # merged: its new text
        return
    undo.added.append(note)
    done.stored.append(note.id)
    if own:
        await provider.record_events(list(events[note.id]), user_id=note.user_id)
    target = decided.target.id if decided.target is not None else decision.memory_id
    if target is None:
        if index is not None:
            index.add(written)
        return
    current = await provider.get(target, user_id=note.user_id, include_deleted=True)
    mine = await provider.get(note.id, user_id=note.user_id)
    if index is not None:
        index.add(current)  # a superseded memory leaves the index
        index.add(mine)
    if current.superseded_by == note.id:
        done.superseded.append((note.id, target))
    elif mine.is_valid and current.is_valid:
        done.open_conflicts.append((note.id, target))


async def _nothing_to_compare(provider: MemoryProvider, statements: Sequence[Memory], with_history: set[str]) -> bool:
    """Whether no statement has anything to be compared with: each carries history (so the file's
    other statements are not candidates) and the store holds no current memory of its user."""
    if any(m.id not in with_history for m in statements):
        return False
    for user in {m.user_id for m in statements}:
        if await provider.count(user_id=user, filters=SearchFilters(valid_only=True)):
            return False
    return True


async def _batch(provider: MemoryProvider, memories: list[Memory],
                 store_batch: Callable[[list[Memory]], Awaitable[object]] | None) -> None:
    """Store ``memories`` as they are, in one go."""
    if store_batch is None:
        await provider.add_many(memories)
    else:
        await store_batch(memories)


async def _record(provider: MemoryProvider, memories: Sequence[Memory],
                  events: Mapping[str, Sequence[MemoryEvent]]) -> None:
    """The file's history events of ``memories``."""
    for m in memories:
        if events.get(m.id):
            await provider.record_events(list(events[m.id]), user_id=m.user_id)
