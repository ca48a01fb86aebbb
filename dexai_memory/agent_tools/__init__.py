"""The agent's memory tools: ``remember``, ``forget`` and ``recall``.

- :mod:`.tools`: what the tools do, once, as plain async functions on a provider
  (or a daemon that has one), and their result objects.
- :mod:`.specs`: the tools as the model sees them (:data:`TOOL_SPECS`: names,
  descriptions, input schemas), standard library only, so the stdio MCP server
  lists them without loading anything else.
- :mod:`.mcp`: the tools as MCP answers them (:class:`MemoryTools`), the Agent SDK
  in-process server (:func:`memory_mcp_server`, :func:`build_mcp_server`,
  :func:`allowed_tools`).
- :mod:`.ops`: the daemon's ``tool.call`` socket operation, which the plugin's stdio
  MCP server (:mod:`dexai_memory.mcp_server`) forwards every tool call to.

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
    "FORGET_DESCRIPTION": "specs",
    "FORGET_SCHEMA": "specs",
    "MemoryTools": "mcp",
    "RECALL_DESCRIPTION": "specs",
    "RECALL_SCHEMA": "specs",
    "REMEMBER_DESCRIPTION": "specs",
    "REMEMBER_SCHEMA": "specs",
    "TOOL_SPECS": "specs",
    "ToolSpec": "specs",
    "build_mcp_server": "mcp",
    "memory_mcp_server": "mcp",
    "recall_text": "mcp",
    "CATEGORIES": "specs",
    "spec_for": "specs",
    "tool_ops": "ops",
}

__all__ = sorted(_WHERE)

if TYPE_CHECKING:  # pragma: no cover
    from .mcp import MemoryTools, build_mcp_server, memory_mcp_server, recall_text
    from .ops import tool_ops
    from .specs import (
        CATEGORIES,
        FORGET_DESCRIPTION,
        FORGET_SCHEMA,
        RECALL_DESCRIPTION,
        RECALL_SCHEMA,
        REMEMBER_DESCRIPTION,
        REMEMBER_SCHEMA,
        TOOL_SPECS,
        ToolSpec,
        spec_for,
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
