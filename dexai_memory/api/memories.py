"""Routes on memories: list, facts by category, search, add, get, edit, forget/restore, pin, history.

Each translates a request to the function the CLI calls: ``remember``
(:func:`dexai_memory.agent_tools.tools.remember`, through supersession, the
pin limit included), :func:`dexai_memory.lifecycle.editing.edit`,
:func:`dexai_memory.lifecycle.pins.pin`, the provider's ``delete`` /
``restore`` / ``search``, :func:`dexai_memory.providers.history.history` and
:func:`dexai_memory.lifecycle.closing.close` (``done`` / ``cancel``).
Docstrings below ``---`` are the OpenAPI operations (:mod:`.app` publishes them).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..agent_tools.classify import category_changes, guess_category
from ..agent_tools.tools import Category, RememberStatus, facts_by_category, remember
from ..errors import MemoryNotFound
from ..lifecycle.closing import close
from ..lifecycle.editing import edit
from ..lifecycle.links import links_of
from ..lifecycle.pins import pin, pinned_count
from ..models import MANUAL_CONFIDENCE, SearchFilters
from ..providers import history as timeline
from ..providers import relevance
from .requests import (
    BadRequest,
    body,
    flag,
    ids,
    memory_json,
    number,
    project_of,
    query_flag,
    query_int,
    state,
    text,
    user_of,
)


def _filters(request: Request) -> SearchFilters:
    all_ = query_flag(request, "all")
    return SearchFilters.make(project=project_of(request), types=tuple(request.query_params.getlist("type")),
                              tiers=tuple(request.query_params.getlist("tier")), valid_only=not all_,
                              include_archived=all_)


async def list_memories(request: Request) -> JSONResponse:
    """List memories, newest first.
    ---
    summary: List memories (newest first)
    parameters:
      - {name: user_id, in: query, schema: {type: string}}
      - {name: project, in: query, schema: {type: string}}
      - {name: type, in: query, schema: {type: string}, description: repeatable}
      - {name: tier, in: query, schema: {type: string, enum: [L1, L2, L3]}}
      - {name: all, in: query, schema: {type: boolean}, description: include superseded and archived}
      - {name: limit, in: query, schema: {type: integer, default: 50}}
      - {name: offset, in: query, schema: {type: integer, default: 0}}
    responses:
      200: {description: "{memories: [Memory]}"}
    """
    api = state(request)
    found = await api.provider.list(user_id=user_of(request), filters=_filters(request),
                                    limit=query_int(request, "limit", 50, 1, 100_000),
                                    offset=query_int(request, "offset", 0, 0, 10_000_000))
    return JSONResponse({"memories": [memory_json(m) for m in found]})


async def facts(request: Request) -> JSONResponse:
    """What is remembered, by category (what the panel shows; `dexai memory facts`).
    ---
    summary: Current durable memories grouped by category, with the pin count
    parameters:
      - {name: user_id, in: query, schema: {type: string}}
      - {name: project, in: query, schema: {type: string}}
    responses:
      200: {description: "{user_id, count, stored, pinned, max_pins, known_categories, categories: {name: [Memory]}}"}
    """
    from ..lifecycle.clear import count_to_clear

    api = state(request)
    user = user_of(request)
    groups = await facts_by_category(api.provider, user_id=user, project=project_of(request),
                                     limit=query_int(request, "limit", 500, 1, 100_000))
    return JSONResponse({
        "user_id": user, "count": sum(len(ms) for ms in groups.values()),
        # every memory stored (superseded, archived, session notes too): what a clear removes
        "stored": await count_to_clear(api.provider, user, project_of(request)),
        "pinned": await pinned_count(api.provider, user), "max_pins": api.settings.lifecycle.max_pins,
        "known_categories": [c.value for c in Category],
        "categories": {c: [memory_json(m) for m in ms] for c, ms in groups.items()},
    })


async def search(request: Request) -> JSONResponse:
    """Hybrid search (BM25 + vectors), as `dexai memory search`: only results related to ``q``
    (a word of it, or ``search.min_similarity``), so ``results`` may be empty.
    ---
    summary: Search memories
    parameters:
      - {name: q, in: query, required: true, schema: {type: string}}
      - {name: user_id, in: query, schema: {type: string}}
      - {name: project, in: query, schema: {type: string}}
      - {name: limit, in: query, schema: {type: integer, default: 10}}
    responses:
      200: {description: "{results: [{score, similarity, memory}]}"}
      400: {description: q missing}
    """
    api = state(request)
    q = request.query_params.get("q", "").strip()
    if not q:
        raise BadRequest("query parameter 'q' is required")
    found = await relevance.search(api.provider, q, user_id=user_of(request), filters=_filters(request),
                                   limit=query_int(request, "limit", 10, 1, 1000),
                                   floor=relevance.min_similarity(api.settings))
    return JSONResponse({"results": [{"score": r.score, "similarity": r.similarity, "memory": memory_json(r.memory)}
                                     for r in found]})


async def add(request: Request) -> JSONResponse:
    """Remember something, through supersession (`dexai memory facts add`); auto-classified
    when no category is given.
    ---
    summary: Remember a statement (hand-added, confidence 0.6)
    requestBody:
      content:
        application/json:
          schema:
            type: object
            required: [content]
            properties:
              content: {type: string}
              category: {type: string, enum: [preference, fact, insight, warning, goal, instruction, person]}
              pin: {type: boolean}
              user_id: {type: string}
              project: {type: string}
    responses:
      201: {description: "added: {status, reason, memory, previous, category_guessed}"}
      200: {description: "updated, superseded or already known"}
      400: {description: bad body, or refused (empty, too long, only secrets)}
    """
    api = state(request)
    data = await body(request)
    content = text(data, "content", required=True) or ""
    category = text(data, "category")
    guessed = not category
    result = await remember(api.provider, content, category or guess_category(content), user_id=user_of(request, data),
                            project=project_of(request, data), pin=flag(data, "pin"),
                            max_pins=api.settings.lifecycle.max_pins, confidence=MANUAL_CONFIDENCE, via="panel",
                            max_chars=api.settings.limits.max_memory_chars)
    if result.status is RememberStatus.REFUSED or result.memory is None:
        raise BadRequest(f"not stored: {result.reason}")
    out = {**result.to_dict(), "memory": memory_json(result.memory), "category_guessed": guessed}
    return JSONResponse(out, status_code=201 if result.status is RememberStatus.ADDED else 200)


async def get_memory(request: Request) -> JSONResponse:
    """One memory in full (a forgotten one too), with its links to other memories (``links``).
    ---
    summary: Get a memory
    parameters:
      - {name: id, in: path, required: true, schema: {type: string}}
      - {name: user_id, in: query, schema: {type: string}}
    responses:
      200: {description: Memory}
      404: {description: not one of this user's}
    """
    api = state(request)
    user = user_of(request)
    m = await api.provider.get(request.path_params["id"], user_id=user, include_deleted=True)
    return JSONResponse({**memory_json(m), "links": await links_of(api.provider, m.id, user_id=user)})


async def edit_memory(request: Request) -> JSONResponse:
    """Edit in place (logged in the history as EDIT), as `dexai memory edit`; a new category
    changes the memory's type as `remember` would have stored it.
    ---
    summary: Edit a memory
    requestBody:
      content:
        application/json:
          schema:
            type: object
            properties:
              content: {type: string}
              category: {type: string}
              importance: {type: integer, minimum: 1, maximum: 10}
              confidence: {type: number, minimum: 0, maximum: 1}
              user_id: {type: string}
    responses:
      200: {description: the edited Memory}
      400: {description: bad body or nothing to change}
      404: {description: no such memory for this user}
    """
    api = state(request)
    data = await body(request)
    user = user_of(request, data)
    memory_id = request.path_params["id"]
    changes: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    content = text(data, "content")
    if content is not None:
        changes["content"] = content
    for key, kind, low, high in (("importance", int, 1, 10), ("confidence", float, 0, 1)):
        value = number(data, key, kind=kind, low=low, high=high)
        if value is not None:
            changes[key] = value
    category = text(data, "category")
    if category is not None:
        more, metadata = category_changes(await api.provider.get(memory_id, user_id=user), category)
        changes.update(more)
    m = await edit(api.provider, memory_id, user_id=user, changes=changes, metadata=metadata or None)
    return JSONResponse(memory_json(m))


async def forget_memory(request: Request) -> JSONResponse:
    """Forget a memory (soft: restore brings it back), or erase it with hard=true.
    ---
    summary: Forget a memory
    parameters:
      - {name: hard, in: query, schema: {type: boolean}}
    responses:
      200: {description: "{id, forgotten: true, hard}"}
      404: {description: no such memory for this user}
    """
    api = state(request)
    memory_id, hard = request.path_params["id"], query_flag(request, "hard")
    if not await api.provider.delete(memory_id, user_id=user_of(request), hard=hard):
        raise MemoryNotFound(f"no memory {memory_id!r} to forget for this user")
    return JSONResponse({"id": memory_id, "forgotten": True, "hard": hard})


async def forget_many(request: Request) -> JSONResponse:
    """Forget several memories (soft), as the panel's bulk delete.
    ---
    summary: Forget memories by id
    requestBody:
      content:
        application/json:
          schema: {type: object, required: [ids], properties: {ids: {type: array, items: {type: string}}}}
    responses:
      200: {description: "{forgotten: [id], missing: [id]}"}
    """
    api = state(request)
    data = await body(request)
    user = user_of(request, data)
    done: list[str] = []
    missing: list[str] = []
    for memory_id in ids(data):
        (done if await api.provider.delete(memory_id, user_id=user) else missing).append(memory_id)
    return JSONResponse({"forgotten": done, "missing": missing})


async def restore_many(request: Request) -> JSONResponse:
    """Bring back softly forgotten memories (undo of a delete).
    ---
    summary: Restore memories by id
    requestBody:
      content:
        application/json:
          schema: {type: object, required: [ids], properties: {ids: {type: array, items: {type: string}}}}
    responses:
      200: {description: "{restored: [Memory], missing: [id]}"}
    """
    api = state(request)
    data = await body(request)
    user = user_of(request, data)
    restored, missing = [], []
    for memory_id in ids(data):
        try:
            m = await api.provider.get(memory_id, user_id=user, include_deleted=True)
        except MemoryNotFound:
            missing.append(memory_id)
            continue
        restored.append(memory_json(await api.provider.restore(memory_id, user_id=user) if m.deleted else m))
    return JSONResponse({"restored": restored, "missing": missing})


async def restore_memory(request: Request) -> JSONResponse:
    """Bring back a softly forgotten memory, as `dexai memory restore`.
    ---
    summary: Restore a memory
    responses:
      200: {description: the Memory}
      404: {description: no such memory for this user}
    """
    api = state(request)
    memory_id, user = request.path_params["id"], user_of(request)
    m = await api.provider.get(memory_id, user_id=user, include_deleted=True)
    return JSONResponse(memory_json(await api.provider.restore(memory_id, user_id=user) if m.deleted else m))


async def pin_memory(request: Request) -> JSONResponse:
    """Pin a memory (at most lifecycle.max_pins, 10), as `dexai memory pin`.
    ---
    summary: Pin a memory
    responses:
      200: {description: the Memory}
      404: {description: no such memory for this user}
      409: {description: the most pins already; the message says how to make room}
    """
    api = state(request)
    m = await pin(api.provider, request.path_params["id"], user_id=user_of(request),
                  max_pins=api.settings.lifecycle.max_pins)
    return JSONResponse(memory_json(m))


async def unpin_memory(request: Request) -> JSONResponse:
    """Unpin a memory, as `dexai memory unpin`.
    ---
    summary: Unpin a memory
    responses:
      200: {description: the Memory}
      404: {description: no such memory for this user}
    """
    api = state(request)
    m = await api.provider.pin(request.path_params["id"], user_id=user_of(request), pinned=False)
    return JSONResponse(memory_json(m))


async def close_memory(request: Request) -> JSONResponse:
    """Mark a commitment or goal done or cancelled, as `dexai memory done|cancel`: it leaves the
    persistent context and "Coming up" (kept in its history).
    ---
    summary: Mark a commitment or goal done (/done) or cancelled (/cancel)
    requestBody:
      content:
        application/json:
          schema: {type: object, properties: {reason: {type: string}}}
    responses:
      200: {description: the closed Memory}
      400: {description: not a commitment or goal}
      404: {description: no such memory for this user}
    """
    api = state(request)
    data = await body(request, required=False)
    status = "done" if request.url.path.endswith("/done") else "cancelled"
    m = await close(api.provider, request.path_params["id"], user_id=user_of(request, data), status=status,
                    reason=text(data, "reason") or f"marked {status} in the panel")
    return JSONResponse(memory_json(m))


async def memory_history(request: Request) -> JSONResponse:
    """The supersession chain through a memory, oldest first, with every decision and its reason.
    ---
    summary: History of a memory
    responses:
      200: {description: "{chain: [{memory, events: [{action, reason, at, related_id}]}]}"}
      404: {description: no such memory for this user}
    """
    api = state(request)
    chain = await timeline.history(api.provider, request.path_params["id"], user_id=user_of(request))
    return JSONResponse({"chain": [{"memory": memory_json(e.memory), "events": [ev.to_dict() for ev in e.events]}
                                   for e in chain]})


ROUTES = [
    Route("/api/memories", list_memories, methods=["GET"]),
    Route("/api/memories", add, methods=["POST"]),
    Route("/api/memories/forget", forget_many, methods=["POST"]),
    Route("/api/memories/restore", restore_many, methods=["POST"]),
    Route("/api/facts", facts, methods=["GET"]),
    Route("/api/search", search, methods=["GET"]),
    Route("/api/memories/{id}", get_memory, methods=["GET"]),
    Route("/api/memories/{id}", edit_memory, methods=["PATCH"]),
    Route("/api/memories/{id}", forget_memory, methods=["DELETE"]),
    Route("/api/memories/{id}/restore", restore_memory, methods=["POST"]),
    Route("/api/memories/{id}/pin", pin_memory, methods=["POST"]),
    Route("/api/memories/{id}/unpin", unpin_memory, methods=["POST"]),
    Route("/api/memories/{id}/history", memory_history, methods=["GET"]),
    Route("/api/memories/{id}/done", close_memory, methods=["POST"]),
    Route("/api/memories/{id}/cancel", close_memory, methods=["POST"]),
]
