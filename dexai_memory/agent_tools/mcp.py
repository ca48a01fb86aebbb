"""The memory tools as MCP answers them: argument checks, replies, errors.

:class:`MemoryTools` binds the tool functions of :mod:`.tools` to a user,
project and session and answers MCP tool calls (:meth:`MemoryTools.call`:
argument checks against :data:`~.specs.TOOL_SPECS`, reply wording, errors as
tool errors). It runs in two places: the daemon's ``tool.call`` socket
operation (:mod:`.ops`), which the plugin's stdio MCP server
(:mod:`dexai_memory.mcp_server`, ``dexai mcp``) forwards every call to, and
:func:`build_mcp_server`, the in-process server an Agent SDK agent gets from
:func:`memory_mcp_server`. ``mcp`` and ``claude_agent_sdk`` are imported only
inside those factories.

The ``recall`` tool answers with the block the UserPromptSubmit hook would
inject for the same query (:func:`dexai_memory.recall.ranking.auto_recall`:
fenced, role tags neutralised), then one line with the memories' ids. Every
answer is one text block rendered by :mod:`dexai_memory.recall.render`; no raw
JSON and no ``structuredContent`` (a client that shows it to the model would
show stored text outside the fence). Programs that want the fields call
:class:`MemoryTools`' methods (typed results, ``to_dict()``) or the HTTP API.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from ..config import Settings, load_settings
from ..errors import DexaiMemoryError
from ..lazy import needs_extra
from ..providers.base import MemoryProvider
from ..recall import ranking
from ..recall.render import neutralise
from .specs import (
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
    NOTHING_FOUND,
    SERVER_NAME,
    TOOL_NAMES,
    Category,
    ForgetResult,
    RecallResult,
    RememberResult,
    forget,
    recall,
    remember,
    resolve_provider,
)

__all__ = [
    "FORGET_DESCRIPTION", "FORGET_SCHEMA", "RECALL_DESCRIPTION", "RECALL_SCHEMA", "REMEMBER_DESCRIPTION",
    "REMEMBER_SCHEMA", "TOOL_SPECS", "MemoryTools", "ToolSpec", "build_mcp_server", "memory_mcp_server",
    "recall_text",
]

logger = logging.getLogger(__name__)


def recall_text(query: str, result: ranking.RecallResult) -> str:
    """The ``recall`` tool's answer: the hook's block for ``query``, then the ids of its memories
    (so ``forget`` can name one); a plain sentence when nothing is relevant."""
    if not result.text:
        return NOTHING_FOUND
    return f"{result.text}\n\nMemory ids (for forget): {', '.join(result.memory_ids)}"


def _tool_result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    """One text block, the only thing a tool answers with: the model reads every block of a result
    (and Claude Code shows it ``structuredContent`` instead of the text when there is one), so a
    second block of raw JSON, or structured content, would bring stored text back outside the fence.
    An error's text is neutralised too (it may echo an argument or a stored value)."""
    out: dict[str, Any] = {"content": [{"type": "text", "text": neutralise(text) if is_error else text}]}
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

    :meth:`call` is the single entry point of every MCP front end (the
    daemon's ``tool.call`` operation behind ``dexai mcp``, and the Agent SDK's
    in-process server): it checks the arguments against the tool's schema and
    runs :meth:`handle_remember` / :meth:`handle_forget` / :meth:`handle_recall`,
    which take the MCP ``arguments`` dict and return the MCP result dict
    (one text block: what happened, then the memories neutralised inside the
    fence of :mod:`dexai_memory.recall.render`; ``recall``: :func:`recall_text`). Bad arguments and errors become
    ``is_error`` results the model can read; nothing raises out of :meth:`call`.

    ``project`` scopes recall and forget (None: all of the user's memories);
    ``remember`` stores under ``capture_project`` when given (the hooks' project
    key of the session's directory), else under ``project``. ``settings``
    default to :func:`~dexai_memory.config.load_settings`, loaded on first use.
    Subclasses open the provider lazily by overriding :meth:`provider`.
    """

    def __init__(self, source: MemoryProvider | Any, user_id: str, *, project: str | None = None,
                 session_id: str | None = None, settings: Settings | None = None,
                 capture_project: str | None = None) -> None:
        self.source = source
        self.user_id = user_id
        self.project = project
        self.session_id = session_id
        self.capture_project = capture_project
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
                              project=self.capture_project or self.project, session_id=self.session_id, top_k=self.top_k,
                              status=status, memory_id=memory_id, pin=pin,
                              max_pins=self.settings.lifecycle.max_pins,
                              max_chars=self.settings.limits.max_memory_chars)

    async def forget(self, memory_id: str | None = None, query: str | None = None) -> ForgetResult:
        """:func:`forget` for the bound user and project."""
        return await forget(await self.provider(), user_id=self.user_id, memory_id=memory_id, query=query,
                            project=self.project)

    async def recall(self, query: str, limit: int = 5) -> RecallResult:
        """:func:`recall` for the bound user and project."""
        return await recall(await self.provider(), query, user_id=self.user_id, limit=limit,
                            project=self.project, settings=self.settings)

    async def auto_recall(self, query: str) -> ranking.RecallResult:
        """What the UserPromptSubmit hook would inject for ``query`` as a fresh prompt (no recent
        conversation, nothing injected yet), for the bound user and project. With
        ``auto_recall.enabled: false`` (no injection per prompt) the explicit tool still answers,
        with the same ranking and budget."""
        settings = self.settings
        if not settings.auto_recall.enabled:
            settings = dataclasses.replace(settings, auto_recall=dataclasses.replace(settings.auto_recall,
                                                                                     enabled=True))
        return await ranking.auto_recall(resolve_provider(await self.provider()), self.user_id, query, [], settings,
                                         project=self.project)

    async def handle_remember(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The ``remember`` tool: MCP arguments in, MCP result dict out."""
        try:
            result = await self.remember(str(args.get("content") or ""), str(args.get("category") or ""),
                                         status=args.get("status") or None, memory_id=args.get("memory_id") or None,
                                         pin=bool(args.get("pin")))
        except DexaiMemoryError as exc:
            logger.warning("remember tool failed: %s", exc)
            return _tool_result(f"Error: {exc}", is_error=True)
        return _tool_result(result.to_text())

    async def handle_forget(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The ``forget`` tool: MCP arguments in, MCP result dict out."""
        try:
            result = await self.forget(memory_id=args.get("memory_id"), query=args.get("query"))
        except DexaiMemoryError as exc:
            logger.warning("forget tool failed: %s", exc)
            return _tool_result(f"Error: {exc}", is_error=True)
        return _tool_result(result.to_text())

    async def handle_recall(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The ``recall`` tool: MCP arguments in, MCP result dict out."""
        try:
            query = str(args.get("query") or "")
            result = await self.auto_recall(query)
        except DexaiMemoryError as exc:
            logger.warning("recall tool failed: %s", exc)
            return _tool_result(f"Error: {exc}", is_error=True)
        return _tool_result(recall_text(query, result))

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Run tool ``name`` with ``arguments``; always an MCP result dict, never an exception.

        An unknown tool or arguments that do not match the schema give an
        ``Input validation error``; an unexpected failure (a bug, a broken
        database) is logged with its traceback and reported to the model as
        ``Error: <tool> failed: ...``.
        """
        spec = spec_for(name)
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

    :func:`memory_mcp_server` hands it to the Agent SDK in process. (The plugin's
    stdio server, :mod:`dexai_memory.mcp_server`, lists the same specs without
    the SDK and forwards calls to the daemon, which runs :meth:`MemoryTools.call`.)
    """
    with needs_extra("sdk", "the in-process memory tools (build_mcp_server)"):
        from mcp.server.lowlevel import Server
        from mcp.types import CallToolResult, ListToolsResult, Tool

    from ..version import __version__

    wire = [Tool.model_validate(s.to_wire()) for s in TOOL_SPECS]

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
    :func:`build_mcp_server`: the same tools, schemas and replies as ``dexai mcp``.
    """
    with needs_extra("sdk", "the Agent SDK's memory tools (memory_mcp_server)"):
        from claude_agent_sdk import McpSdkServerConfig

    tools = MemoryTools(provider_or_daemon, user_id, project=project, session_id=session_id, settings=settings)
    return McpSdkServerConfig(type="sdk", name=name, instance=build_mcp_server(tools, name))
