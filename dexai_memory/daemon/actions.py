"""What the hook events do on the store: the L1 block, the compaction checkpoint, the
file-aware prefetch, episodes, citations and the end-of-session step.

Used by the event executor (:mod:`dexai_memory.daemon.executor`) only. Every write goes
through ``write_lock`` (the daemon's: one writer to the store at a time).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from ..capture.episodes import Episode, store_episode
from ..config import Settings
from ..errors import MemoryNotFound
from ..lifecycle.closing import mark_due_shown
from ..lifecycle.usage import record_citations, record_ignores
from ..models import Memory, MemoryType, SearchFilters, Tier, utcnow
from ..providers.base import MemoryProvider
from ..recall.block import L1Block
from ..recall.prefetch import PrefetchItem, PrefetchResult, prefetch
from ..recall.reinjection import l1_block

logger = logging.getLogger(__name__)

#: Seconds PreCompact waits for the extraction queue to drain.
FLUSH_TIMEOUT = 20.0


def snapshot_id(session_id: str | None) -> str:
    """The id of a session's working-state snapshot (one per session, updated in place)."""
    sid = "".join(c if c.isalnum() or c in "-_" else "_" for c in (session_id or "default"))[:100]
    return f"snapshot_{sid}"


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class HookActions:
    """The hooks' work on ``provider``; ``flush`` and ``schedule_consolidation`` are
    optional callables of the daemon (sync or async)."""

    def __init__(self, settings: Settings, provider: MemoryProvider, *,
                 flush: Callable[[], Awaitable[Any] | Any] | None = None,
                 schedule_consolidation: Callable[[str], Awaitable[Any] | Any] | None = None,
                 spawn: Callable[[Coroutine[Any, Any, Any], str], Any] | None = None,
                 write_lock: asyncio.Lock | None = None):
        self.settings = settings
        self.write_lock = write_lock or asyncio.Lock()
        self.provider = provider
        self._flush = flush
        self._schedule = schedule_consolidation
        self._spawn = spawn

    async def l1(self, *, user_id: str, query: str | None = None, recent: Sequence[str] = (),
                 project: str | None = None, session_id: str | None = None,
                 snapshot: str | None = None, after_compaction: bool = False) -> L1Block:
        """The full L1 block; ``snapshot`` (text) is stored first so it shows as session state.
        ``after_compaction`` fills it to the budget by priority (:mod:`dexai_memory.recall.reinjection`)."""
        if snapshot:
            await self.store_snapshot(user_id=user_id, session_id=session_id, text=snapshot, project=None)
        block = await l1_block(self.provider, user_id, self.settings, query=query, recent=recent, project=project,
                               session_id=session_id, after_compaction=after_compaction)
        if block.section("commitments"):  # due ones are shown once; marked after the answer
            self._background(self._mark_shown(block), "mark-due-shown")
        self._count_shown(user_id, [m.id for m in block.shown])
        return block

    def _count_shown(self, user_id: str, ids: Sequence[str]) -> None:
        """Count the memories of a block injected without a prompt's recall (SessionStart's, after
        compaction, the prefetch) as retrieved, after the answer: a memory shown this way is in
        use (the lifecycle's never-used rule keeps it). ``last_accessed`` is left as it is, so
        their expiry is unchanged."""
        if ids:
            self._background(self.provider.record_retrieval(ids, user_id=user_id, refresh=False), "record-shown")

    async def _mark_shown(self, block: L1Block) -> None:
        async with self.write_lock:
            await mark_due_shown(self.provider, block.section("commitments"))

    def _background(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        if self._spawn is not None:
            self._spawn(coro, name)
        else:
            asyncio.get_running_loop().create_task(coro, name=name)

    async def store_snapshot(self, *, user_id: str, session_id: str | None, text: str,
                             project: str | None = None) -> Memory:
        """Write (or refresh) the session's SNAPSHOT memory."""
        sid = snapshot_id(session_id)
        async with self.write_lock:
            try:
                await self.provider.get(sid, user_id=user_id)
                return await self.provider.update(sid, user_id=user_id, content=text)
            except MemoryNotFound:
                return await self.provider.add(Memory(id=sid, content=text, user_id=user_id, type=MemoryType.SNAPSHOT,
                                                      session_id=session_id, project=project, importance=6))

    async def archive_transcript(self, *, user_id: str, session_id: str | None, path: str, trigger: str | None,
                                 project: str | None = None) -> Memory:
        """Record a transcript backup as an L3 TRANSCRIPT memory pointing at the file."""
        size = await asyncio.to_thread(lambda: Path(path).stat().st_size if Path(path).exists() else 0)
        memory = Memory(
            content=f"Transcript of session {session_id or '?'} before {trigger or 'manual'} compaction: {path}",
            user_id=user_id, type=MemoryType.TRANSCRIPT, tier=Tier.L3, session_id=session_id, project=project,
            importance=3, metadata={"path": path, "bytes": size, "trigger": trigger,
                                    "archived_at": utcnow().isoformat()})
        async with self.write_lock:
            return await self.provider.add(memory)

    async def flush(self, wait: float = FLUSH_TIMEOUT) -> bool:
        """Drain the extraction queue (True when it emptied within ``wait`` seconds)."""
        if self._flush is None:
            return False
        try:
            result = await asyncio.wait_for(_maybe_await(self._flush()), wait)
        except TimeoutError:
            logger.warning("queue flush did not finish within %ss; the rest stays queued", wait)
            return False
        return result is not False

    async def pre_compact(self, *, user_id: str, session_id: str | None, snapshot: str | None,
                          trigger: str | None, transcript_backup: str | None,
                          project: str | None = None) -> dict[str, Any]:
        """The checkpoint: archive the transcript backup, flush the queue, store the task snapshot."""
        out: dict[str, Any] = {}
        if transcript_backup:
            out["transcript_id"] = (await self.archive_transcript(
                user_id=user_id, session_id=session_id, path=transcript_backup, trigger=trigger,
                project=project)).id
        out["flushed"] = await self.flush()
        if snapshot:
            out["snapshot_id"] = (await self.store_snapshot(user_id=user_id, session_id=session_id, text=snapshot,
                                                            project=project)).id
        return out

    async def prefetch(self, *, user_id: str, items: Sequence[PrefetchItem], project: str | None = None,
                       local: str | None = None, exclude_ids: Sequence[str] = (), max_tokens: int,
                       max_items: int = 3) -> PrefetchResult:
        """What is known about ``items`` (:func:`dexai_memory.recall.prefetch.prefetch` on the provider)."""
        result = await prefetch(self.provider, user_id, items, max_tokens=max_tokens, max_items=max_items,
                                project=project, local=local, exclude_ids=exclude_ids)
        self._count_shown(user_id, result.memory_ids)
        return result

    async def episode(self, *, user_id: str, episode: Episode, project: str | None = None) -> dict[str, Any]:
        """Store the episode, or update the one of the same stretch (:func:`store_episode`)."""
        async with self.write_lock:
            memory, created = await store_episode(self.provider, episode, user_id=user_id, project=project)
        return {"id": memory.id, "created": created}

    async def record_usage(self, *, user_id: str, session_id: str | None, reply: str,
                           injected: Sequence[str], shown: Sequence[str] = ()) -> list[str]:
        """Count citations of the ``injected`` memories ``reply`` used
        (:func:`dexai_memory.lifecycle.usage.record_citations`), and an ignore for each memory of
        ``shown`` (the recall block of the prompt ``reply`` answered) it did not use
        (:func:`~dexai_memory.lifecycle.usage.record_ignores`); returns the cited ids."""
        async with self.write_lock:
            cited = await record_citations(self.provider, user_id, reply, injected, session_id=session_id)
            await record_ignores(self.provider, user_id, reply, shown)
            return cited

    async def session_end(self, *, user_id: str, session_id: str | None) -> dict[str, Any]:
        """Flush, then schedule consolidation when the session added enough notes."""
        flushed = await self.flush()
        new_notes = 0
        if session_id:
            new_notes = await self.provider.count(user_id=user_id, filters=SearchFilters(session_id=session_id))
            new_notes -= await self.provider.count(user_id=user_id, filters=SearchFilters(
                session_id=session_id, types=(MemoryType.SNAPSHOT, MemoryType.TRANSCRIPT, MemoryType.EPISODE)))
        scheduled = False
        if new_notes >= self.settings.consolidation.min_new_notes and self._schedule is not None:
            await _maybe_await(self._schedule(user_id))
            scheduled = True
        return {"flushed": flushed, "new_notes": new_notes, "consolidation_scheduled": scheduled}
