"""Routes of what was learned from past Claude Code sessions (``dexai memory learn-history``).

``GET /api/history/sessions``
    The sessions learned for the user, newest first: ``{"sessions": [{session_id, project,
    cwd, prompts, first_at, last_at, learned_at, forgotten_at, memories}]}`` (``memories``:
    how many memories learned from it are still kept, current or past), from the record
    :class:`~dexai_memory.capture.history_log.HistoryLog` and the store.
``DELETE /api/history/sessions/{id}``
    Forget every memory learned from that session at once (soft, as one clear:
    ``POST /api/undo`` brings them back within ``lifecycle.undo_minutes``):
    ``{"forgotten": n, "undo_minutes": m}``; 404 for a session never learned.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..capture.history_log import HistoryLog
from ..errors import MemoryNotFound
from ..lifecycle.learned import forget_session, session_memories
from .requests import body, query_int, state, user_of


async def sessions(request: Request) -> JSONResponse:
    """The past sessions learned for the user (see the module docstring).
    ---
    summary: Past Claude Code sessions learned
    parameters:
      - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 10000}}
    responses:
      200: {description: "{sessions: [{session_id, project, cwd, prompts, first_at, last_at, learned_at, forgotten_at, memories}]}"}
    """
    api = state(request)
    user = user_of(request)
    logged = await asyncio.to_thread(HistoryLog(api.settings.home, user).sessions)
    rows: list[dict[str, Any]] = []
    newest = sorted(logged.items(), key=lambda kv: str(kv[1].get("last_at") or ""), reverse=True)
    for sid, entry in newest[:query_int(request, "limit", 500, 1, 10_000)]:
        kept = await session_memories(api.provider, user, sid)
        rows.append({"session_id": sid, **{k: entry.get(k) for k in (
            "project", "cwd", "prompts", "first_at", "last_at", "learned_at")},
            # an undo (POST /api/undo) brings the memories back: then it is not forgotten
            "forgotten_at": None if kept else entry.get("forgotten_at"), "memories": len(kept)})
    return JSONResponse({"sessions": rows, "total": len(logged)})


async def forget(request: Request) -> JSONResponse:
    """Forget every memory learned from one past session (undo: POST /api/undo).
    ---
    summary: Forget what a past session taught
    responses:
      200: {description: "{forgotten, undo_minutes}"}
      404: {description: no such session learned}
    """
    api = state(request)
    data = await body(request, required=False)
    user, sid = user_of(request, data), request.path_params["id"]
    log = HistoryLog(api.settings.home, user)
    if sid not in await asyncio.to_thread(log.sessions):
        raise MemoryNotFound(f"no past session {sid!r} was learned for {user}")
    record = await forget_session(api.provider, api.settings.home, user, sid)
    await asyncio.to_thread(log.mark_forgotten, sid)
    return JSONResponse({"forgotten": len(record.ids), "session_id": sid,
                         "undo_minutes": api.settings.lifecycle.undo_minutes})


ROUTES = [
    Route("/api/history/sessions", sessions, methods=["GET"]),
    Route("/api/history/sessions/{id}", forget, methods=["DELETE"]),
]
