"""What the hooks do, against a provider: recall, the L1 block, the compaction
checkpoint and the end-of-session step.

Shared by the in-process Agent SDK hooks (:mod:`dexai_memory.hooks.sdk`) and the
daemon's socket operations that command hooks call (:func:`register_ipc_ops`),
so both paths inject the same blocks. Transport-free: no claude_agent_sdk here.

Socket operations (request ``{"op": ..., ...}`` -> reply dict):

``hook.recall``      ``user_id, prompt, recent, project, exclude_ids`` -> ``text, tokens, memory_ids, skipped_reason``
``hook.l1_block``    ``user_id, query, recent, project, session_id, snapshot, after_compaction`` -> ``text, tokens, memory_ids``
``hook.pre_compact`` ``user_id, session_id, snapshot, trigger, transcript_backup, project`` -> ``flushed, snapshot_id``
``hook.turn_end``    ``user_id, session_id, reply, injected`` -> ``cited`` (wakes the queue worker; counts the
                     citations of the injected memories the reply used)
``hook.session_end`` ``user_id, session_id`` -> ``flushed, new_notes, consolidation_scheduled``
``hook.prefetch``    ``user_id, items, project, local, exclude_ids, max_tokens, max_items`` -> ``text, tokens, memory_ids``
                     (the file-aware prefetch, :mod:`dexai_memory.recall.prefetch`)
``hook.episode``     ``user_id, episode, project`` -> ``id, created`` (:mod:`dexai_memory.capture.episodes`)
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
from ..errors import DexaiMemoryError, MemoryNotFound
from ..lifecycle.closing import mark_due_shown
from ..lifecycle.usage import record_citations
from ..models import Memory, MemoryType, SearchFilters, Tier, utcnow
from ..providers.base import MemoryProvider
from ..recall.block import L1Block
from ..recall.prefetch import PrefetchItem, PrefetchResult, prefetch
from ..recall.ranking import RecallResult, auto_recall
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
                 spawn: Callable[[Coroutine[Any, Any, Any], str], Any] | None = None):
        self.settings = settings
        self.provider = provider
        self._flush = flush
        self._schedule = schedule_consolidation
        self._spawn = spawn

    async def recall(self, *, user_id: str, prompt: str, recent: Sequence[str] = (), project: str | None = None,
                     exclude_ids: Sequence[str] = ()) -> RecallResult:
        """Auto-recall for a prompt (see :func:`dexai_memory.recall.ranking.auto_recall`), counting the
        injected memories as retrieved; with ``spawn`` (the daemon's background tasks) that write is made
        after the answer, not while the user waits."""
        result = await auto_recall(self.provider, user_id, prompt, recent, self.settings, project=project,
                                   exclude_ids=exclude_ids, record_retrieval=self._spawn is None)
        if self._spawn is not None and result.memories:
            self._spawn(self.provider.record_retrieval(result.memory_ids, user_id=user_id), "record-retrieval")
        return result

    async def l1(self, *, user_id: str, query: str | None = None, recent: Sequence[str] = (),
                 project: str | None = None, session_id: str | None = None,
                 snapshot: str | None = None, after_compaction: bool = False) -> L1Block:
        """The full L1 block; ``snapshot`` (text) is stored first so it shows as session state.
        ``after_compaction`` fills it to the budget by priority (:mod:`dexai_memory.recall.reinjection`)."""
        if snapshot:
            await self.store_snapshot(user_id=user_id, session_id=session_id, text=snapshot, project=None)
        block = await l1_block(self.provider, user_id, self.settings, query=query, recent=recent, project=project,
                               session_id=session_id, after_compaction=after_compaction)
        await mark_due_shown(self.provider, block.section("commitments"))  # due ones are shown once
        return block

    async def store_snapshot(self, *, user_id: str, session_id: str | None, text: str,
                             project: str | None = None) -> Memory:
        """Write (or refresh) the session's SNAPSHOT memory."""
        sid = snapshot_id(session_id)
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
        return await self.provider.add(Memory(
            content=f"Transcript of session {session_id or '?'} before {trigger or 'manual'} compaction: {path}",
            user_id=user_id, type=MemoryType.TRANSCRIPT, tier=Tier.L3, session_id=session_id, project=project,
            importance=3, metadata={"path": path, "bytes": size, "trigger": trigger,
                                    "archived_at": utcnow().isoformat()}))

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
        return await prefetch(self.provider, user_id, items, max_tokens=max_tokens, max_items=max_items,
                              project=project, local=local, exclude_ids=exclude_ids)

    async def episode(self, *, user_id: str, episode: Episode, project: str | None = None) -> dict[str, Any]:
        """Store the episode, or update the one of the same stretch (:func:`store_episode`)."""
        memory, created = await store_episode(self.provider, episode, user_id=user_id, project=project)
        return {"id": memory.id, "created": created}

    async def record_usage(self, *, user_id: str, session_id: str | None, reply: str,
                           injected: Sequence[str]) -> list[str]:
        """Count citations of the ``injected`` memories ``reply`` used
        (:func:`dexai_memory.lifecycle.usage.record_citations`); returns their ids."""
        return await record_citations(self.provider, user_id, reply, injected, session_id=session_id)

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


def actions_for_daemon(daemon: Any) -> HookActions:
    """:class:`HookActions` on a running ``MemoryDaemon`` (its provider, settings and flush)."""
    return HookActions(daemon.settings, daemon.provider, flush=getattr(daemon, "flush", None),
                       schedule_consolidation=getattr(daemon, "schedule_consolidation", None),
                       spawn=getattr(daemon, "spawn", None))


def register_ipc_ops(daemon: Any, actions: HookActions | None = None) -> None:
    """Register the ``hook.*`` socket operations on ``daemon.ipc`` (see the module docstring).

    Call it before the daemon starts serving; the provider is looked up per request,
    so the daemon may still be without one at registration time.
    """

    class _Lazy:
        def __getattr__(self, name: str) -> Any:
            return getattr(actions or actions_for_daemon(daemon), name)

    act: Any = _Lazy()

    def ids(block: L1Block | RecallResult) -> list[str]:
        if isinstance(block, RecallResult):
            return block.memory_ids
        return [m.id for m in block.memories]

    async def op_recall(req: dict[str, Any]) -> dict[str, Any]:
        r = await act.recall(user_id=str(req["user_id"]), prompt=str(req.get("prompt") or ""),
                             recent=list(req.get("recent") or []), project=req.get("project"),
                             exclude_ids=list(req.get("exclude_ids") or []))
        return {"text": r.text, "tokens": r.tokens, "memory_ids": ids(r), "skipped_reason": r.skipped_reason,
                "latency_ms": r.latency_ms}

    async def op_l1(req: dict[str, Any]) -> dict[str, Any]:
        b = await act.l1(user_id=str(req["user_id"]), query=req.get("query"), recent=list(req.get("recent") or []),
                         project=req.get("project"), session_id=req.get("session_id"), snapshot=req.get("snapshot"),
                         after_compaction=bool(req.get("after_compaction")))
        return {"text": b.text, "tokens": b.tokens, "memory_ids": ids(b)}

    async def op_pre_compact(req: dict[str, Any]) -> dict[str, Any]:
        return await act.pre_compact(user_id=str(req["user_id"]), session_id=req.get("session_id"),
                                     snapshot=req.get("snapshot"), trigger=req.get("trigger"),
                                     transcript_backup=req.get("transcript_backup"), project=req.get("project"))

    async def op_turn_end(req: dict[str, Any]) -> dict[str, Any]:
        notify = getattr(getattr(daemon, "queue", None), "notify", None)
        if callable(notify):
            notify()
        cited: list[str] = []
        if req.get("reply") and req.get("injected"):
            cited = await act.record_usage(user_id=str(req["user_id"]), session_id=req.get("session_id"),
                                           reply=str(req["reply"]), injected=[str(i) for i in req["injected"]])
        return {"cited": cited}

    async def op_session_end(req: dict[str, Any]) -> dict[str, Any]:
        return await act.session_end(user_id=str(req["user_id"]), session_id=req.get("session_id"))

    async def op_prefetch(req: dict[str, Any]) -> dict[str, Any]:
        from .prefetch import items_from_json

        r = await act.prefetch(user_id=str(req["user_id"]), items=items_from_json(req.get("items")),
                               project=req.get("project"), local=req.get("local"),
                               exclude_ids=[str(i) for i in req.get("exclude_ids") or []],
                               max_tokens=int(req.get("max_tokens") or 0), max_items=int(req.get("max_items") or 3))
        return {"text": r.text, "tokens": r.tokens, "memory_ids": list(r.memory_ids)}

    async def op_episode(req: dict[str, Any]) -> dict[str, Any]:
        return await act.episode(user_id=str(req["user_id"]), episode=Episode.from_dict(req["episode"]),
                                 project=req.get("project"))

    for op, handler in (("hook.recall", op_recall), ("hook.l1_block", op_l1), ("hook.pre_compact", op_pre_compact),
                        ("hook.turn_end", op_turn_end), ("hook.session_end", op_session_end),
                        ("hook.prefetch", op_prefetch), ("hook.episode", op_episode)):
        daemon.ipc.register(op, _guard(op, handler))


def _guard(op: str, handler: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
           ) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
    async def wrapped(req: dict[str, Any]) -> dict[str, Any]:
        try:
            return await handler(req)
        except (DexaiMemoryError, KeyError, ValueError, OSError) as exc:
            logger.warning("socket op %s failed: %s", op, exc)
            return {"ok": False, "error": str(exc)}

    return wrapped
