"""Routes that keep memory true: clear all and undo, conflicts and their resolution, consolidation.

Through the functions behind ``dexai memory clear|undo|conflicts|resolve|consolidate``:
:mod:`dexai_memory.lifecycle.clear`, :mod:`dexai_memory.lifecycle.contradictions`
and :func:`dexai_memory.consolidation.consolidate_user`.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..consolidation import consolidate_user
from ..lifecycle.clear import clear_all, count_to_clear, undo_clear
from ..lifecycle.contradictions import conflicts as list_conflicts
from ..lifecycle.contradictions import resolve as resolve_conflict
from ..models import RESOLUTIONS
from .requests import (
    BadRequest,
    StateConflict,
    body,
    flag,
    number,
    project_of,
    query_flag,
    query_int,
    state,
    text,
    user_of,
)


class CountChanged(StateConflict):
    """``POST /api/clear`` was confirmed for another count than there is now (answered 409)."""


async def clear_count(request: Request) -> JSONResponse:
    """How many memories a clear would remove (the exact count the confirmation shows).
    ---
    summary: Count what clear would remove
    responses:
      200: {description: "{count, user_id, project}"}
    """
    api = state(request)
    user, project = user_of(request), project_of(request)
    return JSONResponse({"count": await count_to_clear(api.provider, user, project), "user_id": user,
                         "project": project})


async def clear(request: Request) -> JSONResponse:
    """Remove every memory of the user (soft), as `dexai memory clear --yes`; `count` must be
    the exact count GET /api/clear gave (the confirmation). Undo with POST /api/undo within
    lifecycle.undo_minutes.
    ---
    summary: Clear all memories of a user
    requestBody:
      content:
        application/json:
          schema: {type: object, required: [count], properties: {count: {type: integer}, project: {type: string}}}
    responses:
      200: {description: "{cleared, undo_minutes}"}
      400: {description: count missing}
      409: {description: the count changed since it was shown}
    """
    api = state(request)
    data = await body(request)
    user, project = user_of(request, data), project_of(request, data)
    confirmed = number(data, "count", low=0)
    if confirmed is None:
        raise BadRequest("'count' is required: the exact number of memories to clear (GET /api/clear)")
    now = await count_to_clear(api.provider, user, project)
    if confirmed != now:
        raise CountChanged(f"there are {now} memories to clear now, not {confirmed}; confirm again")
    record = await clear_all(api.provider, api.settings.home, user, project)
    return JSONResponse({"cleared": len(record.ids), "user_id": user, "project": project,
                         "undo_minutes": api.settings.lifecycle.undo_minutes})


async def undo(request: Request) -> JSONResponse:
    """Bring back what the latest clear removed, as `dexai memory undo`.
    ---
    summary: Undo the latest clear
    responses:
      200: {description: "{restored}"}
      409: {description: nothing to undo (none, or older than lifecycle.undo_minutes)}
    """
    api = state(request)
    data = await body(request, required=False)
    record = await undo_clear(api.provider, api.settings.home, user_of(request, data), api.settings.lifecycle)
    return JSONResponse({"restored": len(record.ids)})


async def conflicts(request: Request) -> JSONResponse:
    """Contradictions between memories, newest first (open ones; all=true for every one), as
    `dexai memory conflicts`.
    ---
    summary: List contradictions
    parameters:
      - {name: all, in: query, schema: {type: boolean}}
    responses:
      200: {description: "{conflicts: [{id, memory_a, memory_b, resolution, note, auto, a, b}]}"}
    """
    api = state(request)
    rows = await list_conflicts(api.provider, user_of(request), include_resolved=query_flag(request, "all"),
                                limit=query_int(request, "limit", 100, 1, 100_000))
    return JSONResponse({"conflicts": [c.to_dict() for c in rows]})


async def resolve(request: Request) -> JSONResponse:
    """Resolve a contradiction, as `dexai memory resolve`: a_wins, b_wins, both_valid, or
    merged (note = the merged statement).
    ---
    summary: Resolve a contradiction
    requestBody:
      content:
        application/json:
          schema:
            type: object
            required: [resolution]
            properties:
              resolution: {type: string, enum: [a_wins, b_wins, both_valid, merged]}
              note: {type: string}
    responses:
      200: {description: the resolved contradiction with its memories}
      400: {description: bad resolution, merged without a note}
      404: {description: no such contradiction for this user}
    """
    api = state(request)
    data = await body(request)
    try:
        contradiction_id = int(request.path_params["id"])
    except ValueError:
        raise BadRequest("the contradiction id must be an integer") from None
    resolution = text(data, "resolution", required=True) or ""
    if resolution.strip().lower() not in RESOLUTIONS:
        raise BadRequest(f"'resolution' must be one of: {', '.join(RESOLUTIONS)}")
    done = await resolve_conflict(api.provider, contradiction_id, resolution, user_id=user_of(request, data),
                                  note=text(data, "note"))
    return JSONResponse(done.to_dict())


async def consolidate(request: Request) -> JSONResponse:
    """Retention cleanup, then merge clusters of similar old memories, as `dexai memory consolidate`.
    ---
    summary: Consolidate (dry_run shows what would change)
    requestBody:
      content:
        application/json:
          schema: {type: object, properties: {dry_run: {type: boolean}, cleanup: {type: boolean}}}
    responses:
      200: {description: "{user_id, dry_run, cleanup, consolidation, merged, superseded, archived}"}
    """
    api = state(request)
    data = await body(request, required=False)
    row = await consolidate_user(api.provider, user_of(request, data), api.settings,
                                 dry_run=flag(data, "dry_run"), cleanup_too=flag(data, "cleanup", True))
    cons = row["consolidation"]
    open_ = await list_conflicts(api.provider, row["user_id"], limit=100_000)
    return JSONResponse({**row, "merged": cons["merged"], "superseded": cons["superseded"],
                         "archived": len((row.get("cleanup") or {}).get("archived") or []),
                         "contradictions_open": len(open_)})


ROUTES = [
    Route("/api/clear", clear_count, methods=["GET"]),
    Route("/api/clear", clear, methods=["POST"]),
    Route("/api/undo", undo, methods=["POST"]),
    Route("/api/conflicts", conflicts, methods=["GET"]),
    Route("/api/contradictions/{id}/resolve", resolve, methods=["POST"]),
    Route("/api/consolidate", consolidate, methods=["POST"]),
]
