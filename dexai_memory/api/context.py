"""Routes on what the agent is shown: the persistent context by category, and
``POST /api/context/assemble`` (the design's endpoint).

Assembly is the tiered context of :func:`dexai_memory.recall.assembly.assemble_context`
within ``budget`` tokens (default ``assembly.budget_tokens``,
8,000), four tiers filled in order, each with its share, unused budget passed
down, each memory at most once and at the richest compression level that fits:

=========  ===========================================================
``tier1``  critical: open contradictions, decisions and warnings about
           ``current_file`` and ``task``, fixes of ``recent_errors``,
           standing instructions, warnings and the current goal
``tier2``  relevant: what the text of the signals recalls
``tier3``  background: project facts, preferences, insights, people,
           compressed
``tier4``  index: "Ask me about: ..." topic keys the ``recall`` tool expands
=========  ===========================================================

``activity: debugging`` widens tier 1 (see the assembly module). The answer
is ``{"context", "token_count", "tiers": {"tier1".."tier4"}}`` plus
``budget``, ``budgets`` (each tier's share before pass-down), ``activity``,
``query`` and ``memories`` (``[{id, tier, level, kind}]``). ``token_count``
never exceeds ``budget``; it is the tiers' sum plus the fence's tokens.
Signals are described in :mod:`dexai_memory.recall.focus`; a value that is not
a string or a list of strings is a 400.

``POST /api/context/predict`` (the design's predictive prefetch) answers what is
known about a file opened, errors met and a branch switched to, before the agent
asks: ``{"predicted_memories": [{id, type, content, line, item, match, confidence}],
"confidence", "items"}`` (:mod:`dexai_memory.recall.predict`).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..recall.assembly import assemble_context
from ..recall.persistent import CATEGORIES, gather_persistent, persistent_category
from ..recall.predict import predict as predict_memories
from ..recall.predict import prediction_items
from ..recall.ranking import auto_recall
from .requests import BadRequest, body, memory_json, number, project_of, state, user_of

#: The largest budget accepted.
MAX_BUDGET = 100_000


async def persistent(request: Request) -> JSONResponse:
    """The persistent context shown at every session start, by category.
    ---
    summary: The persistent context by category
    parameters:
      - {name: user_id, in: query, schema: {type: string}}
      - {name: project, in: query, schema: {type: string}}
    responses:
      200: {description: "{categories: {name: [Memory]}, more: {name: count}, text, tokens}"}
    """
    api = state(request)
    section = await gather_persistent(api.provider, user_of(request), api.settings.persistent_context,
                                      project=project_of(request))
    groups: dict[str, list[dict[str, Any]]] = {c: [] for c in CATEGORIES}
    for item in section.items:
        groups[persistent_category(item.memory) or "project_fact"].append(memory_json(item.memory))
    return JSONResponse({"categories": groups, "more": dict(section.more), "text": "\n".join(section.lines),
                         "tokens": section.tokens})


async def assemble(request: Request) -> JSONResponse:
    """Assemble the tiered context within a budget from signals (see the module docstring).
    ---
    summary: Assemble context
    requestBody:
      content:
        application/json:
          schema:
            type: object
            properties:
              budget: {type: integer, minimum: 1, maximum: 100000}
              signals: {type: object, description: "query, prompt, current_file, activity, recent_errors, ..."}
              user_id: {type: string}
              project: {type: string}
    responses:
      200: {description: "{context, token_count, tiers: {tier1, tier2, tier3, tier4}, budget, budgets, activity,
        query, memories: [{id, tier, level, kind}]}"}
      400: {description: bad budget or signals}
    """
    api = state(request)
    data = await body(request, required=False)
    budget = number(data, "budget", low=1, high=MAX_BUDGET)
    signals = data.get("signals") or {}
    if not isinstance(signals, dict):
        raise BadRequest("'signals' must be an object")
    result = await assemble_context(api.provider, user_of(request, data), api.settings, budget=budget,
                                    signals=signals, project=project_of(request, data))
    return JSONResponse(result.to_json())


async def recall(request: Request) -> JSONResponse:
    """What recall injects for a prompt: the same block as the UserPromptSubmit hook and
    ``dexai memory recall`` (:func:`dexai_memory.recall.ranking.auto_recall`).
    ---
    summary: The recall block for a prompt
    requestBody:
      content:
        application/json:
          schema:
            type: object
            required: [prompt]
            properties:
              prompt: {type: string}
              recent: {type: array, items: {type: string}, description: "the conversation's last messages"}
              exclude_ids: {type: array, items: {type: string}, description: "memories already shown"}
              max_memories: {type: integer, minimum: 1, maximum: 1000}
              max_tokens: {type: integer, minimum: 50, maximum: 100000}
              user_id: {type: string}
              project: {type: string}
    responses:
      200: {description: "{text, tokens, memory_ids, memories: [{id, content, source_ids, score}], skipped_reason,
        latency_ms}"}
      400: {description: no prompt, or a bad number}
    """
    api = state(request)
    data = await body(request)
    prompt = data.get("prompt")
    if not isinstance(prompt, str):
        raise BadRequest("'prompt' must be a string")
    lists = {}
    for key in ("recent", "exclude_ids"):
        value = data.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise BadRequest(f"'{key}' must be a list of strings")
        lists[key] = value
    result = await auto_recall(api.provider, user_of(request, data), prompt, lists["recent"], api.settings,
                               project=project_of(request, data), exclude_ids=lists["exclude_ids"],
                               max_memories=number(data, "max_memories", low=1, high=1000),
                               max_tokens=number(data, "max_tokens", low=50, high=100_000))
    return JSONResponse(result.to_reply())


def _strings(data: dict[str, Any], *keys: str) -> list[str]:
    """The strings under ``keys`` (each a string or a list of strings; 400 for anything else)."""
    out: list[str] = []
    for key in keys:
        value = data.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise BadRequest(f"'{key}' must be a string or a list of strings")
        out += [v for v in value if v.strip()]
    return out


async def predict(request: Request) -> JSONResponse:
    """Predict the memories a file opened, an error or a branch will need (see the module docstring).
    ---
    summary: Predict context
    requestBody:
      content:
        application/json:
          schema:
            type: object
            properties:
              file_opened: {type: string, description: "a path (or a list); alias: current_file"}
              recent_errors: {type: array, items: {type: string}, description: "alias: error"}
              branch: {type: string}
              cwd: {type: string, description: "paths inside it are matched relative to it"}
              limit: {type: integer, minimum: 1, maximum: 100}
              user_id: {type: string}
              project: {type: string}
    responses:
      200: {description: "{predicted_memories: [{id, type, content, line, item, match, confidence}], confidence,
        items}"}
      400: {description: no signal, or a bad value}
    """
    api = state(request)
    data = await body(request)
    branch = data.get("branch")
    if branch is not None and not isinstance(branch, str):
        raise BadRequest("'branch' must be a string")
    cwd = data.get("cwd") if isinstance(data.get("cwd"), str) else None
    items = prediction_items(files=_strings(data, "file_opened", "current_file"),
                             errors=_strings(data, "recent_errors", "error"), branch=branch, cwd=cwd)
    if not items and not any(data.get(k) for k in ("file_opened", "current_file", "recent_errors", "error",
                                                     "branch")):
        raise BadRequest("give at least one of 'file_opened', 'recent_errors' or 'branch'")
    project = project_of(request, data)
    result = await predict_memories(api.provider, user_of(request, data), items, project=project, local=project,
                                    limit=number(data, "limit", low=1, high=100) or 10)
    return JSONResponse(result.to_json())


ROUTES = [
    Route("/api/context/predict", predict, methods=["POST"]),
    Route("/api/recall", recall, methods=["POST"]),
    Route("/api/persistent", persistent, methods=["GET"]),
    Route("/api/context/assemble", assemble, methods=["POST"]),
]
