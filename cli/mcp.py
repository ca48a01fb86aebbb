"""``dexai mcp``: the memory tools as an MCP server over stdio (the plugin's ``.mcp.json``).

Serves ``remember``, ``recall`` and ``forget`` - the same tools, schemas and
wording as the Agent SDK's in-process server - to Claude Code or any MCP
client, as a thin client of the daemon; see :mod:`dexai_memory.mcp_server`.
"""

from __future__ import annotations

import sys

import click


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
def mcp() -> None:
    """Serve the memory tools (remember, recall, forget) over MCP on stdin/stdout.

    \b
    Claude Code starts it from the plugin's .mcp.json; to add it by hand:
      claude mcp add dexai-memory -- dexai mcp
    The data directory is $DEXAI_MEMORY_HOME (or ~/.local/share/dexai-memory);
    the user is $DEXAI_MEMORY_USER (or $USER) and the project scope
    $DEXAI_MEMORY_PROJECT (unset: all of the user's memories), as for the hooks.
    Tool calls are run by the memory daemon (started when none answers, unless
    daemon.autostart is off); this process opens no store of its own.
    """
    from dexai_memory.mcp_server import main

    sys.exit(main())
