"""Routes the panel watches: the memory activity feed and the consolidation status.

``GET /api/activity``
    The newest events of the user's memories (added, updated, superseded, edited,
    forgotten, archived, staged...), newest first: ``{"events": [{memory_id, action,
    reason, at, content, type}]}``. Read from the ``scan`` most recently created
    memories (forgotten and superseded ones included) and their histories, so an
    event on a memory older than those is not listed.
``GET /api/consolidation``
    Whether consolidation is on, its schedule (``interval_hours``, ``preferred_hour``),
    the user's last run (its time and counts: merged, superseded, forms built, episodes
    summarised and compressed; null before the first), an estimate of the next run
    (the last one plus the interval), how many memories are old enough to consolidate,
    and how many contradictions are open.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..consolidation import consolidation_candidates, last_run
from ..lifecycle.contradictions import conflicts as list_conflicts
from ..models import SearchFilters
from .requests import query_int, state, user_of


async def activity(request: Request) -> JSONResponse:
    """The newest events of the user's memories (see the module docstring).
    ---
    summary: Memory activity feed
    parameters:
      - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 200}}
      - {name: scan, in: query, schema: {type: integer, minimum: 1, maximum: 1000}}
    responses:
      200: {description: "{events: [{memory_id, action, reason, at, content, type}]}"}
    """
    api = state(request)
    user = user_of(request)
    limit = query_int(request, "limit", 30, 1, 200)
    recent = await api.provider.list(user_id=user, filters=SearchFilters(valid_only=False, include_archived=True),
                                     limit=query_int(request, "scan", 100, 1, 1000))
    rows: list[dict[str, Any]] = []
    for memory in recent:
        for event in await api.provider.events(memory.id, user_id=user):
            rows.append({"memory_id": memory.id, "action": event.action, "reason": event.reason,
                         "at": event.at.isoformat(), "content": memory.content[:300], "type": memory.type.value})
    rows.sort(key=lambda r: r["at"], reverse=True)
    return JSONResponse({"events": rows[:limit]})


async def consolidation_status(request: Request) -> JSONResponse:
    """The consolidation status of the user (see the module docstring).
    ---
    summary: Consolidation status
    responses:
      200: {description: "{enabled, interval_hours, preferred_hour, last_run, next_run, waiting,
        contradictions_open}"}
    """
    api = state(request)
    user, cfg = user_of(request), api.settings.consolidation
    last = last_run(api.settings, user)
    next_run = None
    if cfg.enabled and last and isinstance(last.get("at"), str):
        next_run = (datetime.fromisoformat(last["at"]) + timedelta(hours=cfg.interval_hours)).isoformat()
    waiting = len(await consolidation_candidates(api.provider, user, api.settings))
    open_ = await list_conflicts(api.provider, user, limit=100_000)
    return JSONResponse({"enabled": cfg.enabled, "interval_hours": cfg.interval_hours,
                         "preferred_hour": cfg.preferred_hour, "last_run": last, "next_run": next_run,
                         "waiting": waiting, "contradictions_open": len(open_)})


ROUTES = [
    Route("/api/activity", activity, methods=["GET"]),
    Route("/api/consolidation", consolidation_status, methods=["GET"]),
]
