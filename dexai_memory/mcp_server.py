"""The memory tools over stdio: the Claude Code plugin's MCP server (``dexai mcp``).

Run as ``dexai mcp`` or ``python -m dexai_memory.mcp_server``; the plugin's
``.mcp.json`` starts it through ``hooks/dexai-hook mcp``. It serves
:func:`dexai_memory.agent_tools.build_mcp_server`, the same server (tool names,
descriptions, input schemas, reply wording) the Agent SDK runs in process, so
Claude Code sees ``remember``, ``recall`` and ``forget`` as
``mcp__plugin_dexai-memory_dexai-memory__<tool>``.

* **Fast start.** ``initialize`` and ``tools/list`` touch no database: the
  settings (:func:`~dexai_memory.config.load_settings`, so
  ``$DEXAI_MEMORY_HOME`` and ``<home>/memory.yaml`` apply) are read and the
  configured provider is opened on the first tool call, then kept open.
* **Same scope as the hooks.** The user is
  :func:`dexai_memory.hooks.client.user_id_for` (``$DEXAI_MEMORY_USER``, else
  the login name) and the project :func:`~dexai_memory.hooks.client.project_for`
  (``$DEXAI_MEMORY_PROJECT``, else all of the user's memories); the session is
  ``$CLAUDE_CODE_SESSION_ID`` when Claude Code sets it.
* **Never crashes.** A bad argument, a broken configuration or a database that
  cannot be opened is an MCP tool error the model reads (``isError: true``,
  ``Error: ...``); the next call tries again.
* **Clean exit.** When Claude Code closes stdin (or sends SIGTERM) the
  provider is closed before the process exits.

Logging goes to stderr (Claude Code keeps an MCP server's stderr in its
debug log), never to stdout, which carries the protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from typing import Any

from .agent_tools import MemoryTools, build_mcp_server
from .datadir import ensure_home
from .providers import MemoryProvider, make_provider

logger = logging.getLogger("dexai_memory.mcp_server")  # not __name__: "__main__" under -m

#: Name of the server in the plugin's ``.mcp.json`` (and its MCP ``serverInfo``).
PLUGIN_SERVER_NAME = "dexai-memory"
#: Environment variable Claude Code sets to the current session id.
SESSION_ENV = "CLAUDE_CODE_SESSION_ID"


class LazyMemoryTools(MemoryTools):
    """:class:`~dexai_memory.agent_tools.MemoryTools` that open the configured provider on first use.

    The settings are loaded and the provider started on the first tool call
    (concurrent first calls share one opening); a failure is raised to
    :meth:`~dexai_memory.agent_tools.MemoryTools.call`, which turns it into a tool
    error, and the next call tries again. :meth:`aclose` closes the provider.
    """

    def __init__(self, user_id: str, *, project: str | None = None, session_id: str | None = None) -> None:
        super().__init__(None, user_id, project=project, session_id=session_id)
        self._provider: MemoryProvider | None = None
        self._opening = asyncio.Lock()

    async def provider(self) -> MemoryProvider:
        """The started provider ``storage.provider`` selects (opened on the first call)."""
        async with self._opening:
            if self._provider is None:
                settings = self.settings
                ensure_home(settings.home)
                provider = make_provider(settings)
                await provider.start()
                logger.info("opened %s provider in %s for user %s", settings.storage.provider, settings.home,
                            self.user_id)
                self._provider = provider
            return self._provider

    async def aclose(self) -> None:
        """Close the provider if one was opened. Idempotent."""
        provider, self._provider = self._provider, None
        if provider is not None:
            await provider.aclose()
            logger.info("closed the provider")


def tools_from_env() -> LazyMemoryTools:
    """The tools for this process: user, project and session exactly as the command hooks see them."""
    from .daemon.session_state import project_for, user_id_for

    payload: dict[str, Any] = {"cwd": os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd(),
                               "session_id": os.environ.get(SESSION_ENV)}
    return LazyMemoryTools(user_id_for(), project=project_for(),
                           session_id=payload["session_id"] or None)


async def serve(tools: MemoryTools | None = None, *, name: str = PLUGIN_SERVER_NAME) -> None:
    """Serve ``tools`` (default :func:`tools_from_env`) over stdin/stdout until stdin closes.

    The provider of :class:`LazyMemoryTools` is closed on the way out, also
    when the serving task is cancelled.
    """
    from mcp.server.stdio import stdio_server

    tools = tools if tools is not None else tools_from_env()
    server = build_mcp_server(tools, name)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        if isinstance(tools, LazyMemoryTools):
            await tools.aclose()


async def _terminate(tools: LazyMemoryTools) -> None:
    """SIGTERM / SIGINT: close the provider, then exit at once.

    The transport reads stdin in a worker thread that cannot be interrupted,
    so waiting for the serving task to unwind would wait for the next line of
    input; the provider is closed first, so nothing is lost.
    """
    logger.info("terminating")
    try:
        await tools.aclose()
    finally:
        os._exit(0)


async def _main() -> None:
    tools = tools_from_env()
    loop = asyncio.get_running_loop()
    pending: set[asyncio.Task[None]] = set()

    def on_signal() -> None:
        task = loop.create_task(_terminate(tools))
        pending.add(task)

    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not on Windows / off the main thread
            loop.add_signal_handler(signum, on_signal)
    await serve(tools)


def main() -> int:
    """Entry point of ``dexai mcp`` and ``python -m dexai_memory.mcp_server``; returns the exit code."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    asyncio.run(_main())
    return 0


if __name__ == "__main__":
    sys.exit(main())
