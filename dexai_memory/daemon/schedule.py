"""The daemon's schedule (APScheduler 3.x ``AsyncIOScheduler``): consolidation every
``consolidation.interval_hours`` (intervals of a day or more start at ``preferred_hour``
local time; shorter ones just repeat), cleanup daily (or at the consolidation interval when
that is shorter), the deferred-vector fill and the backups."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from apscheduler.schedulers.asyncio import AsyncIOScheduler
    from apscheduler.triggers.base import BaseTrigger

    from ..config import ConsolidationConfig


def interval_trigger(hours: float, preferred_hour: int, *, now: datetime | None = None) -> BaseTrigger:
    """Every ``hours``; from the next ``preferred_hour``:00 (local time) when ``hours`` >= 24."""
    from apscheduler.triggers.interval import IntervalTrigger

    if hours < 24:
        return IntervalTrigger(seconds=hours * 3600)
    local = (now or datetime.now()).astimezone()
    start = local.replace(hour=preferred_hour, minute=0, second=0, microsecond=0)
    if start <= local:
        start += timedelta(days=1)
    return IntervalTrigger(seconds=hours * 3600, start_date=start)


def consolidation_trigger(cfg: ConsolidationConfig) -> BaseTrigger:
    return interval_trigger(cfg.interval_hours, cfg.preferred_hour)


def cleanup_trigger(cfg: ConsolidationConfig) -> BaseTrigger:
    return interval_trigger(min(24.0, cfg.interval_hours), cfg.preferred_hour)


def start_scheduler(daemon: Any) -> AsyncIOScheduler:
    """Start the schedule of ``daemon`` (a :class:`~dexai_memory.daemon.core.MemoryDaemon`)."""
    from apscheduler.schedulers.asyncio import AsyncIOScheduler
    from apscheduler.triggers.interval import IntervalTrigger

    cfg = daemon.settings.consolidation
    scheduler = AsyncIOScheduler(event_loop=asyncio.get_running_loop(), timezone=_local_tz())
    common: dict[str, Any] = {"max_instances": 1, "coalesce": True, "misfire_grace_time": 3600}
    if cfg.enabled:
        scheduler.add_job(daemon.run_consolidation, consolidation_trigger(cfg), id="consolidation", **common)
    scheduler.add_job(daemon.run_cleanup, cleanup_trigger(cfg), id="cleanup", **common)
    scheduler.add_job(daemon.run_vector_fill, IntervalTrigger(
        seconds=daemon.settings.daemon.vector_fill_interval_seconds), id="vectors", **common)
    if daemon.settings.backup.enabled:
        scheduler.add_job(daemon.run_backup, IntervalTrigger(hours=daemon.settings.backup.interval_hours),
                          id="backup", **common)
    scheduler.start()
    return scheduler


def _local_tz() -> Any:
    """The local timezone as a tzinfo (APScheduler 3 wants one)."""
    return datetime.now().astimezone().tzinfo
