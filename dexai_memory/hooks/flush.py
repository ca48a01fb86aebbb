"""Extraction without a daemon: the queue drained inside the hook process.

Correctness never depends on the daemon. When PreCompact (or SessionEnd with
autostart off) finds no daemon answering, the hook extracts the queued turns
itself, with the offline extractor, inside ``hooks.inline_flush_seconds``, so
what was said before ``/compact`` is stored before the summary replaces it.

To fit the budget it loads no embedding model: supersession candidates come
from keyword (BM25) search and new memories are stored with their vectors
deferred (``vectors_pending``), filled later by the daemon's ``vectors`` job
or ``dexai memory reembed --missing``; until then they are found by keyword.
Whatever does not fit stays queued (never dropped) and is logged.

Only one consumer may process the queue at a time (the queue's lock): when
a daemon holds it (it is starting), the hook waits for the daemon to answer
and asks it to do the work instead.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..config import Settings
from ..errors import DexaiMemoryError, QueueError
from ..providers.base import MemoryProvider

logger = logging.getLogger(__name__)

#: Seconds between attempts to become the queue's consumer while another one holds it.
CLAIM_POLL_SECONDS = 0.1


def keyword_settings(settings: Settings) -> Settings:
    """``settings`` with keyword-only search (no query embedding: no model to load)."""
    return dataclasses.replace(settings, search=dataclasses.replace(settings.search, fusion="bm25"))


async def drain_queue(settings: Settings, provider: MemoryProvider, budget: float, *,
                      yield_to_daemon: bool = False) -> dict[str, Any]:
    """Process the queued turns with the offline extractor on ``provider`` for up to ``budget``
    seconds. Returns ``processed``, ``pending`` (left queued), ``flushed`` (nothing left due)
    and ``busy`` (another consumer holds the queue: nothing was done). While another consumer
    holds the queue it is waited for, unless ``yield_to_daemon`` and a daemon now runs."""
    from ..capture.queue import ExtractionQueue
    from ..daemon_control import lock_held
    from ..extraction.factory import make_classifier
    from ..extraction.offline import OfflineExtractor
    from ..pipeline import Pipeline

    queue = ExtractionQueue.from_settings(settings)
    try:
        if budget <= 0:
            queue.open()
            return {"processed": 0, "pending": queue.pending_count(), "flushed": False, "busy": False}
        deadline = time.monotonic() + budget
        while True:  # another hook's (or a background) drain holds the queue for a moment at most
            try:
                queue.claim()
                break
            except QueueError:
                if time.monotonic() + CLAIM_POLL_SECONDS >= deadline or (yield_to_daemon and lock_held(settings)):
                    return {"processed": 0, "pending": queue.pending_count(), "flushed": False, "busy": True}
                await asyncio.sleep(CLAIM_POLL_SECONDS)
        budget = deadline - time.monotonic()
        classifier = make_classifier(dataclasses.replace(
            settings, extraction=dataclasses.replace(settings.extraction, extractor="offline")))
        pipeline = Pipeline(provider, settings, extractor=OfflineExtractor(), classifier=classifier)
        pipeline.journal = queue.save_notes
        processed = 0
        try:
            async with provider.deferred_vectors():
                processed = await asyncio.wait_for(queue.drain(pipeline.handle), max(0.1, budget))
        except TimeoutError:
            logger.warning("inline extraction stopped after %.1fs; the rest stays queued", budget)
        pending = queue.pending_count(due_only=True)
        return {"processed": processed, "pending": queue.pending_count(), "flushed": pending == 0, "busy": False}
    finally:
        queue.close()


async def _with_provider(settings: Settings, budget: float,
                         work: Callable[[MemoryProvider, float], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    from ..providers import make_provider

    t0 = time.monotonic()
    provider = make_provider(keyword_settings(settings))
    await provider.start()
    try:
        return await work(provider, budget - (time.monotonic() - t0))
    finally:
        await provider.aclose()


def _run(factory: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    """Run a coroutine to the end from synchronous code (in a helper thread when this thread
    already runs an event loop, e.g. a hook called from async code)."""
    async def main() -> dict[str, Any]:
        return await factory()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="dexai-inline") as pool:
        return pool.submit(asyncio.run, main()).result()


def flush(settings: Settings, budget: float | None = None) -> dict[str, Any]:
    """Drain the queue in this process (see :func:`drain_queue`); never raises for our errors."""
    wait = settings.hooks.inline_flush_seconds if budget is None else budget
    if wait <= 0:
        return {"processed": 0, "flushed": False, "skipped": "hooks.inline_flush_seconds is 0"}
    t0 = time.monotonic()
    try:
        out = _run(lambda: _with_provider(settings, wait, lambda p, left: drain_queue(settings, p, left,
                                                                                      yield_to_daemon=True)))
    except DexaiMemoryError as exc:
        logger.error("inline extraction failed: %s (the turns stay queued)", exc)
        return {"processed": 0, "flushed": False, "error": str(exc)}
    out["seconds"] = round(time.monotonic() - t0, 3)
    return out


def pre_compact(settings: Settings, request: dict[str, Any], budget: float | None = None) -> dict[str, Any]:
    """PreCompact without a daemon: drain the queue, archive the transcript backup and store
    the task snapshot (:meth:`~dexai_memory.hooks.actions.HookActions.pre_compact`) in this process."""
    from .actions import HookActions

    wait = settings.hooks.inline_flush_seconds if budget is None else budget
    t0 = time.monotonic()
    box: dict[str, Any] = {}
    if wait <= 0:
        wait = -5.0  # no extraction; the snapshot and the transcript are still recorded

    async def work(provider: MemoryProvider, left: float) -> dict[str, Any]:
        async def drain() -> bool:
            box.update(await drain_queue(settings, provider, left, yield_to_daemon=True))
            return bool(box.get("flushed"))

        act = HookActions(settings, provider, flush=drain)
        return await act.pre_compact(**request)

    try:
        out = _run(lambda: _with_provider(settings, wait + 5.0, work))
    except DexaiMemoryError as exc:
        logger.error("inline pre-compact failed: %s (the turns stay queued)", exc)
        return {"flushed": False, "error": str(exc), **box}
    out.update({k: v for k, v in box.items() if k != "flushed"})
    out["seconds"] = round(time.monotonic() - t0, 3)
    return out


def store_episode(settings: Settings, episode: dict[str, Any], *, user_id: str, project: str | None) -> dict[str, Any]:
    """Store an episode (:class:`~dexai_memory.capture.episodes.Episode` as a dict) in this process,
    with its vector deferred (no model loaded). Returns ``id`` and ``created``."""
    from ..capture.episodes import Episode
    from .actions import HookActions

    async def work(provider: MemoryProvider, left: float) -> dict[str, Any]:
        async with provider.deferred_vectors():
            return await HookActions(settings, provider).episode(user_id=user_id, episode=Episode.from_dict(episode),
                                                                 project=project)

    return _run(lambda: _with_provider(settings, 10.0, work))
