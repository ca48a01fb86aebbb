"""The memory tools on the daemon's socket: ``tool.call`` (the MCP server), ``remember``
(``dexai memory facts add``) and ``memory.add`` (``dexai memory add``), so every statement
written by hand is stored by the daemon, the one writer of the store, under its write lock.

``remember``: ``content, category, user_id, project?, pin?, confidence?, via?`` -> ``result``
(:meth:`RememberResult.to_dict <dexai_memory.agent_tools.tools.RememberResult.to_dict>`),
``text``, ``stored``. ``memory.add``: ``memory`` (a memory dict), ``pin?`` -> ``memory``,
``action``, ``target``, ``reason`` (:func:`~dexai_memory.lifecycle.editing.add_by_hand`).

The plugin's stdio MCP server (:mod:`dexai_memory.mcp_server`) holds no
provider of its own; it forwards every ``tools/call`` here::

    {"op": "tool.call", "name": "remember", "arguments": {...},
     "user_id": "alice", "project": null, "capture_project": "/work/app",
     "session_id": "..."}
    -> {"content": [{"type": "text", "text": "..."}], "isError": false}

The answer is the MCP ``CallToolResult`` of :meth:`MemoryTools.call
<dexai_memory.agent_tools.mcp.MemoryTools.call>` run against the daemon's
provider and settings, bound to the request's user, project and session:
the same wording and errors as the Agent SDK's in-process server. ``project``
scopes recall and forget (as the hooks' recall); ``capture_project`` is where
``remember`` stores (as the hooks' captured turns). ``remember`` and
``forget`` write under the daemon's ``write_lock``, the one writer of the
store. A bad request (no user, an unknown tool, arguments that do not match
the tool's schema) is an ``isError`` result, never a failure of the daemon.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from .mcp import MemoryTools

logger = logging.getLogger(__name__)

#: The tools that write to the store, run under the daemon's write lock.
WRITING_TOOLS = frozenset({"remember", "forget"})

Op = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def _error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _optional_str(req: dict[str, Any], key: str) -> str | None:
    value = req.get(key)
    return str(value) if value else None


def tool_ops(daemon: Any) -> dict[str, Op]:
    """The daemon's tool operations by name: ``{"tool.call": handler}``.

    ``daemon`` is a :class:`~dexai_memory.daemon.MemoryDaemon` (anything with
    ``provider``, ``settings`` and ``write_lock``); its provider is looked up
    per request, so the operations may be registered before it starts.
    """

    async def call(req: dict[str, Any]) -> dict[str, Any]:
        name, arguments, user_id = req.get("name"), req.get("arguments"), req.get("user_id")
        if not isinstance(name, str) or not name:
            return _error("Error: tool.call needs the tool's name")
        if not isinstance(user_id, str) or not user_id:
            return _error("Error: tool.call needs a user_id")
        if arguments is not None and not isinstance(arguments, dict):
            return _error(f"Error: the arguments of {name} must be an object, got {type(arguments).__name__}")
        tools = MemoryTools(daemon, user_id, project=_optional_str(req, "project"),
                            session_id=_optional_str(req, "session_id"), settings=daemon.settings,
                            capture_project=_optional_str(req, "capture_project"))
        if name in WRITING_TOOLS:
            async with daemon.write_lock:
                result = await tools.call(name, arguments)
        else:
            result = await tools.call(name, arguments)
        return {"content": result["content"], "isError": bool(result.get("is_error", False))}

    async def locked(fn: Callable[[Any, Any, dict[str, Any]], Awaitable[dict[str, Any]]],
                     req: dict[str, Any]) -> dict[str, Any]:
        async with daemon.write_lock:
            return await fn(daemon.provider, daemon.settings, req)

    async def remember_op(req: dict[str, Any]) -> dict[str, Any]:
        return await locked(remember_request, req)

    async def add_op(req: dict[str, Any]) -> dict[str, Any]:
        return await locked(add_request, req)

    return {"tool.call": call, "remember": remember_op, "memory.add": add_op}


async def remember_request(provider: Any, settings: Any, req: dict[str, Any]) -> dict[str, Any]:
    """``remember``: store a statement written by hand (:func:`~dexai_memory.agent_tools.tools.remember`)."""
    from ..models import MANUAL_CONFIDENCE
    from .tools import remember

    result = await remember(provider, str(req["content"]), str(req.get("category") or "fact"),
                            user_id=str(req["user_id"]), project=_optional_str(req, "project"),
                            pin=bool(req.get("pin")), max_pins=settings.lifecycle.max_pins,
                            confidence=float(req.get("confidence") or MANUAL_CONFIDENCE),
                            via=str(req.get("via") or "cli"), max_chars=settings.limits.max_memory_chars)
    return {"result": result.to_dict(), "text": result.to_text(), "stored": result.memory is not None}


async def add_request(provider: Any, settings: Any, req: dict[str, Any]) -> dict[str, Any]:
    """``memory.add``: store a memory written by hand (:func:`~dexai_memory.lifecycle.editing.add_by_hand`)."""
    from ..errors import InvalidMemory
    from ..lifecycle.editing import add_by_hand
    from ..limits import memory_text_error
    from ..models import Memory

    memory = Memory.from_dict(req["memory"])
    too_long = memory_text_error(memory.content, settings.limits.max_memory_chars)
    if too_long:
        raise InvalidMemory(too_long)
    done = await add_by_hand(provider, memory, top_k=settings.supersession.comparison_top_k,
                             enabled=settings.supersession.enabled, pin=bool(req.get("pin")),
                             max_pins=settings.lifecycle.max_pins)
    assert done.memory is not None  # every decision writes a memory
    return {"memory": done.memory.to_dict(), "action": done.decision.action.value,
            "target": done.decision.memory_id, "reason": done.decision.reason}
