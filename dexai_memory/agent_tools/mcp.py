"""The memory tools as MCP sees them: names, descriptions, input schemas, replies.

:class:`MemoryTools` binds the tool functions of :mod:`.tools` to a user,
project and session and answers MCP tool calls (:meth:`MemoryTools.call`:
argument checks, reply wording, errors as tool errors). :func:`build_mcp_server`
wraps it in one MCP server that both front ends serve:
:func:`memory_mcp_server` hands it to an Agent SDK agent in process, and
:mod:`dexai_memory.mcp_server` (``dexai mcp``) serves it over stdio to Claude
Code. ``mcp`` and ``claude_agent_sdk`` are imported only inside those factories.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config import Settings, load_settings
from ..errors import DexaiMemoryError
from ..providers.base import MemoryProvider
from .tools import (
    SERVER_NAME,
    TOOL_NAMES,
    Category,
    ForgetResult,
    RecallResult,
    RememberResult,
    forget,
    recall,
    remember,
)

logger = logging.getLogger(__name__)


REMEMBER_DESCRIPTION = (
    "Store an important fact in persistent memory. Use it when you learn something worth remembering "
    "long-term: a user preference (\"I prefer X\", \"always do Y\", \"never do Z\"), a key project fact, an "
    "insight, a mistake to avoid (warning), or a changed goal. Persistent memories survive context "
    "compaction and future sessions. One concise, specific statement per call; newer statements replace "
    "older ones they contradict. Don't over-use it. When the user finished or dropped a commitment or goal, "
    "call it with status done or cancelled."
)
FORGET_DESCRIPTION = (
    "Forget a stored memory (soft delete). Pass memory_id (from recall) to forget that memory, or a query: "
    "it is forgotten only if exactly one memory clearly matches, otherwise the candidates are listed."
)
RECALL_DESCRIPTION = (
    "Search persistent memory. Returns matching memories with their ids, categories and dates, best first."
)

REMEMBER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "content": {"type": "string", "description": "The fact to remember (specific and actionable)"},
        "category": {
            "type": "string",
            "enum": [c.value for c in Category],
            "description": "preference (user likes/dislikes), fact (project or personal info), insight "
                           "(realization), warning (mistake to avoid), goal (current objective), instruction "
                           "(a standing rule: \"always run the linter\"), person (someone and their role)",
        },
        "status": {
            "type": "string", "enum": ["done", "cancelled"],
            "description": "Close a commitment or goal instead of storing anything: the one memory_id names, "
                           "else the open one content describes (\"send the report to Priya\")",
        },
        "memory_id": {"type": "string", "description": "With status: the commitment or goal to close"},
        "pin": {"type": "boolean", "description": "Pin it (always in context; at most 10 pins)"},
    },
    "required": ["content", "category"],
}
FORGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "memory_id": {"type": "string", "description": "Id of the memory to forget (from recall)"},
        "query": {"type": "string", "description": "Words describing the memory to forget"},
    },
}
RECALL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to look for"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "At most this many (default 5)"},
    },
    "required": ["query"],
}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool as the model sees it: name, description and JSON Schema of its arguments."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


#: The three tools, in :data:`TOOL_NAMES` order; both MCP servers list exactly these.
TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec("remember", REMEMBER_DESCRIPTION, REMEMBER_SCHEMA),
    ToolSpec("forget", FORGET_DESCRIPTION, FORGET_SCHEMA),
    ToolSpec("recall", RECALL_DESCRIPTION, RECALL_SCHEMA),
)


def _tool_result(text: str, data: Mapping[str, Any] | None = None, *, is_error: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if data is not None:
        out["content"].append({"type": "text", "text": json.dumps(data, ensure_ascii=False)})
    if is_error:
        out["is_error"] = True
    return out


def _invalid_arguments(spec: ToolSpec, arguments: Mapping[str, Any]) -> str | None:
    """Why ``arguments`` do not match ``spec``'s schema (None when they do)."""
    import jsonschema

    try:
        jsonschema.validate(instance=dict(arguments), schema=dict(spec.input_schema))
    except jsonschema.ValidationError as exc:
        return exc.message
    return None


class MemoryTools:
    """The three tools bound to one provider (or daemon), user, project and session.

    :meth:`call` is the single entry point of both MCP front ends (the Agent
    SDK's in-process server and ``dexai mcp`` over stdio): it checks the
    arguments against the tool's schema and runs :meth:`handle_remember` /
    :meth:`handle_forget` / :meth:`handle_recall`, which take the MCP
    ``arguments`` dict and return the MCP result dict (a readable text block,
    then the same outcome as JSON). Bad arguments and errors become
    ``is_error`` results the model can read; nothing raises out of :meth:`call`.

    ``settings`` default to :func:`~dexai_memory.config.load_settings`, loaded
    on first use. Subclasses open the provider lazily by overriding
    :meth:`provider`.
    """

    def __init__(self, source: MemoryProvider | Any, user_id: str, *, project: str | None = None,
                 session_id: str | None = None, settings: Settings | None = None) -> None:
        self.source = source
        self.user_id = user_id
        self.project = project
        self.session_id = session_id
        self._settings = settings

    @property
    def settings(self) -> Settings:
        """The settings the tools run with (loaded on first use when none were given)."""
        if self._settings is None:
            self._settings = load_settings()
        return self._settings

    @property
    def top_k(self) -> int:
        """How many similar memories ``remember`` compares a new statement with."""
        return self.settings.supersession.comparison_top_k

    async def provider(self) -> MemoryProvider | Any:
        """The provider (or daemon holding one) the tools run against: ``source``."""
        return self.source

    async def remember(self, content: str, category: str | Category, *, status: str | None = None,
                       memory_id: str | None = None, pin: bool = False) -> RememberResult:
        """:func:`remember` for the bound user, project and session."""
        return await remember(await self.provider(), content, category, user_id=self.user_id,
                              project=self.project, session_id=self.session_id, top_k=self.top_k,
                              status=status, memory_id=memory_id, pin=pin,
                              max_pins=self.settings.lifecycle.max_pins)

    async def forget(self, memory_id: str | None = None, query: str | None = None) -> ForgetResult:
        """:func:`forget` for the bound user and project."""
        return await forget(await self.provider(), user_id=self.user_id, memory_id=memory_id, query=query,
                            project=self.project)

    async def recall(self, query: str, limit: int = 5) -> RecallResult:
        """:func:`recall` for the bound user and project."""
        return await recall(await self.provider(), query, user_id=self.user_id, limit=limit,
                            project=self.project, settings=self.settings)

    async def handle_remember(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The ``remember`` tool: MCP arguments in, MCP result dict out."""
        try:
            result = await self.remember(str(args.get("content") or ""), str(args.get("category") or ""),
                                         status=args.get("status") or None, memory_id=args.get("memory_id") or None,
                                         pin=bool(args.get("pin")))
        except DexaiMemoryError as exc:
            logger.warning("remember tool failed: %s", exc)
            return _tool_result(f"Error: {exc}", is_error=True)
        return _tool_result(result.to_text(), result.to_dict())

    async def handle_forget(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The ``forget`` tool: MCP arguments in, MCP result dict out."""
        try:
            result = await self.forget(memory_id=args.get("memory_id"), query=args.get("query"))
        except DexaiMemoryError as exc:
            logger.warning("forget tool failed: %s", exc)
            return _tool_result(f"Error: {exc}", is_error=True)
        return _tool_result(result.to_text(), result.to_dict())

    async def handle_recall(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The ``recall`` tool: MCP arguments in, MCP result dict out."""
        try:
            result = await self.recall(str(args.get("query") or ""), int(args.get("limit") or 5))
        except DexaiMemoryError as exc:
            logger.warning("recall tool failed: %s", exc)
            return _tool_result(f"Error: {exc}", is_error=True)
        return _tool_result(result.to_text(), result.to_dict())

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Run tool ``name`` with ``arguments``; always an MCP result dict, never an exception.

        An unknown tool or arguments that do not match the schema give an
        ``Input validation error``; an unexpected failure (a bug, a broken
        database) is logged with its traceback and reported to the model as
        ``Error: <tool> failed: ...``.
        """
        spec = next((s for s in TOOL_SPECS if s.name == name), None)
        if spec is None:
            return _tool_result(f"Error: unknown tool {name!r} (expected one of: {', '.join(TOOL_NAMES)})",
                                is_error=True)
        args = dict(arguments or {})
        problem = _invalid_arguments(spec, args)
        if problem is not None:
            return _tool_result(f"Input validation error: {problem}", is_error=True)
        handler = {"remember": self.handle_remember, "forget": self.handle_forget,
                   "recall": self.handle_recall}[name]
        try:
            return await handler(args)
        except Exception as exc:  # a tool call never takes its server down
            logger.exception("%s tool crashed", name)
            return _tool_result(f"Error: {name} failed: {type(exc).__name__}: {exc}", is_error=True)


def build_mcp_server(tools: MemoryTools, name: str = SERVER_NAME, *, version: str | None = None) -> Any:
    """A lowlevel ``mcp.server.Server`` (mcp >= 2) listing :data:`TOOL_SPECS` and running :meth:`MemoryTools.call`.

    The one server behind both front ends: :func:`memory_mcp_server` hands it
    to the Agent SDK in process; :mod:`dexai_memory.mcp_server` serves it over
    stdio (``dexai mcp``).
    """
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolResult, ListToolsResult, Tool

    from ..version import __version__

    wire = [Tool.model_validate({"name": s.name, "description": s.description, "inputSchema": dict(s.input_schema)})
            for s in TOOL_SPECS]

    async def on_list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(tools=wire)

    async def on_call_tool(ctx: Any, params: Any) -> CallToolResult:
        result = await tools.call(params.name, params.arguments)
        return CallToolResult.model_validate({"content": result["content"],
                                              "isError": bool(result.get("is_error", False))})

    server: Any = Server(name, version=version or __version__, on_list_tools=on_list_tools,
                         on_call_tool=on_call_tool)
    return server


def memory_mcp_server(provider_or_daemon: MemoryProvider | Any, user_id: str, project: str | None = None,
                      session_id: str | None = None, *, settings: Settings | None = None,
                      name: str = SERVER_NAME) -> Any:
    """An in-process MCP server (``McpSdkServerConfig``) with remember / forget / recall.

    Put it in ``ClaudeAgentOptions(mcp_servers={name: server})`` under the same
    ``name`` and allow :func:`allowed_tools` ``(name)``. The provider must be
    started (``async with provider``) while the agent runs. The server is
    :func:`build_mcp_server`, the same one ``dexai mcp`` serves over stdio.
    """
    from claude_agent_sdk import McpSdkServerConfig

    tools = MemoryTools(provider_or_daemon, user_id, project=project, session_id=session_id, settings=settings)
    return McpSdkServerConfig(type="sdk", name=name, instance=build_mcp_server(tools, name))
