"""The agent's memory tools: ``remember``, ``forget`` and ``recall``.

- :mod:`.tools`: what the tools do, once, as plain async functions on a provider
  (or a daemon that has one), and their result objects.
- :mod:`.mcp`: the tools as MCP sees them (:class:`MemoryTools`, :data:`TOOL_SPECS`),
  the MCP server both front ends serve (:func:`build_mcp_server`) and the Agent SDK
  in-process server (:func:`memory_mcp_server`, :func:`allowed_tools`).

Wiring (Agent SDK)::

    from claude_agent_sdk import ClaudeAgentOptions
    from dexai_memory.agent_tools import memory_mcp_server, allowed_tools

    options = ClaudeAgentOptions(
        mcp_servers={"dexai_memory": memory_mcp_server(daemon, user_id="alice")},
        allowed_tools=allowed_tools(),   # mcp__dexai_memory__remember, ...
    )

Names load lazily from their module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

_WHERE: dict[str, str] = {
    "ALLOWED_TOOLS": "tools",
    "CATEGORY_TYPES": "tools",
    "Category": "tools",
    "DEFAULT_STRONG_SIMILARITY": "tools",
    "DURABLE_TYPES": "tools",
    "ForgetResult": "tools",
    "ForgetStatus": "tools",
    "MAX_CONTENT_CHARS": "tools",
    "RECALL_MAX_TOKENS": "tools",
    "RecallResult": "tools",
    "RememberResult": "tools",
    "RememberStatus": "tools",
    "SERVER_NAME": "tools",
    "TOOL_NAMES": "tools",
    "allowed_tools": "tools",
    "category_of": "tools",
    "facts_by_category": "tools",
    "forget": "tools",
    "recall": "tools",
    "remember": "tools",
    "resolve_classifier": "tools",
    "resolve_provider": "tools",
    "FORGET_DESCRIPTION": "mcp",
    "FORGET_SCHEMA": "mcp",
    "MemoryTools": "mcp",
    "RECALL_DESCRIPTION": "mcp",
    "RECALL_SCHEMA": "mcp",
    "REMEMBER_DESCRIPTION": "mcp",
    "REMEMBER_SCHEMA": "mcp",
    "TOOL_SPECS": "mcp",
    "ToolSpec": "mcp",
    "build_mcp_server": "mcp",
    "memory_mcp_server": "mcp",
}

__all__ = sorted(_WHERE)

if TYPE_CHECKING:  # pragma: no cover
    from .mcp import (
        FORGET_DESCRIPTION,
        FORGET_SCHEMA,
        RECALL_DESCRIPTION,
        RECALL_SCHEMA,
        REMEMBER_DESCRIPTION,
        REMEMBER_SCHEMA,
        TOOL_SPECS,
        MemoryTools,
        ToolSpec,
        build_mcp_server,
        memory_mcp_server,
    )
    from .tools import (
        ALLOWED_TOOLS,
        CATEGORY_TYPES,
        DEFAULT_STRONG_SIMILARITY,
        DURABLE_TYPES,
        MAX_CONTENT_CHARS,
        RECALL_MAX_TOKENS,
        SERVER_NAME,
        TOOL_NAMES,
        Category,
        ForgetResult,
        ForgetStatus,
        RecallResult,
        RememberResult,
        RememberStatus,
        allowed_tools,
        category_of,
        facts_by_category,
        forget,
        recall,
        remember,
        resolve_classifier,
        resolve_provider,
    )


__getattr__ = lazy_exports(__name__, _WHERE)
