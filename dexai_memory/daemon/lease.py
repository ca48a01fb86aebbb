"""A bulk command's turn at the store: the running daemon's write lock, lent for one batch.

``ingest``, ``import``, ``learn-history`` and ``consolidate`` write many memories from their own process (with
their own progress, and their own choice of when to embed). While a daemon runs, each of their
batches holds the daemon's write lock (``writer.lease``, :mod:`.ops`): the queue worker, the
scheduled jobs and every door's write wait for it, so the store keeps one writer at a time and
every decision of the batch (ADD / UPDATE / SUPERSEDE / NOOP) is made against a store nobody
else changes meanwhile. A batch re-reads the store first (:meth:`~dexai_memory.pipeline.Pipeline.ingest`),
so what the daemon wrote between two batches is seen by the next.

With no daemon running there is nothing to wait for; a daemon that cannot lend the lock (an
older version, the lock busy for a minute) is logged and the batch runs as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from ..config import Settings
from ..errors import DaemonError
from .control import ask_running_daemon
from .ops import LEASE_WAIT_SECONDS, MAX_LEASE_SECONDS

logger = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def write_lease(settings: Settings, *, seconds: float = MAX_LEASE_SECONDS) -> AsyncIterator[bool]:
    """Hold the write lock of the daemon of ``settings.home`` while the block runs (at most
    ``seconds``: the daemon takes it back then); yields whether a daemon lent it."""
    try:
        reply = await asyncio.to_thread(ask_running_daemon, settings, {"op": "writer.lease", "seconds": seconds},
                                        timeout=LEASE_WAIT_SECONDS + 5)
    except DaemonError as exc:
        logger.warning("the memory daemon did not lend its write lock (%s): this batch writes beside it", exc)
        reply = None
    lease = str(reply.get("lease") or "") if reply else ""
    try:
        yield bool(lease)
    finally:
        if lease:
            with contextlib.suppress(DaemonError):
                await asyncio.to_thread(ask_running_daemon, settings, {"op": "writer.release", "lease": lease},
                                        timeout=10)
