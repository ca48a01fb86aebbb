"""Routes on what the agent is shown: the persistent context by category, and
``POST /api/context/assemble`` (seed 002's endpoint).

Assembly, until the tiered assembly exists (issue 18), is the L1 block the
hooks inject at session start (:func:`dexai_memory.recall.reinjection.l1_block`),
reported by seed 002's tiers as honestly as it maps:

=========  ===========================================================
``tier1``  critical: the persistent context, the profile (pinned and
           always-on memories) and commitments coming up
``tier2``  relevant: memories the signals' text recalls
``tier3``  background: the session state (latest snapshot)
``tier4``  index: 0, not built yet
=========  ===========================================================

Each tier counts the tokens of its memory lines; ``token_count`` is the
whole block (fence and section titles included). ``budget`` caps the block;
the persistent context is never cut (issue 14), so a budget smaller than it
yields the persistent context alone. The text of ``signals`` (``query``,
``prompt``, ``current_file``, ``activity``, ``recent_errors``, any string or
list of strings) is the recall query.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..recall.persistent import CATEGORIES, gather_persistent, persistent_category
from ..recall.reinjection import l1_block
from ..tokens import count_tokens
from .requests import BadRequest, body, memory_json, number, project_of, state, user_of

#: Block section -> seed 002 tier.
TIER_OF = {"persistent": "tier1", "profile": "tier1", "commitments": "tier1", "relevant": "tier2",
           "session": "tier3"}
#: The largest budget accepted.
MAX_BUDGET = 100_000


def signals_query(signals: dict[str, Any]) -> str:
    """The recall query from ``signals``: their string values (and strings in lists), in order."""
    parts: list[str] = []
    for key, value in signals.items():
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, list):
            parts.extend(v for v in value if isinstance(v, str))
        elif value is not None and not isinstance(value, int | float | bool):
            raise BadRequest(f"signal '{key}' must be a string or a list of strings")
    return " ".join(p.strip() for p in parts if p.strip())


async def persistent(request: Request) -> JSONResponse:
    """The persistent context shown at every session start, by category (issue 14).
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
    """Assemble the context block within a budget from signals (see the module docstring).
    ---
    summary: Assemble context (seed 002)
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
      200: {description: "{context, token_count, tiers: {tier1, tier2, tier3, tier4}}"}
      400: {description: bad budget or signals}
    """
    api = state(request)
    data = await body(request, required=False)
    budget = number(data, "budget", low=1, high=MAX_BUDGET)
    signals = data.get("signals") or {}
    if not isinstance(signals, dict):
        raise BadRequest("'signals' must be an object")
    user, project = user_of(request, data), project_of(request, data)
    query = signals_query(signals) or None
    block = await l1_block(api.provider, user, api.settings, query=query, project=project, max_tokens=budget)
    if budget is not None and block.tokens > budget:
        head = sum(count_tokens(i.line) for i in block.items if i.section == "persistent")
        block = await l1_block(api.provider, user, api.settings, query=query, project=project,
                               max_tokens=max(1, budget - head))
    tiers = {"tier1": 0, "tier2": 0, "tier3": 0, "tier4": 0}
    for item in block.items:
        tiers[TIER_OF.get(item.section, "tier1")] += count_tokens(item.line)
    return JSONResponse({"context": block.text, "token_count": block.tokens, "tiers": tiers, "budget": budget,
                         "query": query})


ROUTES = [
    Route("/api/persistent", persistent, methods=["GET"]),
    Route("/api/context/assemble", assemble, methods=["POST"]),
]
