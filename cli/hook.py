"""``dexai hook <event>``: the Claude Code command hooks (plugin ``hooks/hooks.json``).

Reads the hook JSON on stdin and writes the hook JSON on stdout; see
:mod:`dexai_memory.hooks.client` for what each event does. Only that
stdlib-only module is imported, so the command stays fast (a new process per
event); it always exits 0 so a memory problem never breaks the agent.
"""

from __future__ import annotations

import sys

import click

EVENT_NAMES = ("session-start", "user-prompt-submit", "pre-compact", "post-compact", "post-tool-use", "stop",
               "session-end")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("event", type=click.Choice(EVENT_NAMES))
def hook(event: str) -> None:
    """Run one Claude Code hook EVENT (hook JSON on stdin, hook JSON on stdout)."""
    from dexai_memory.hooks.client import main

    sys.exit(main([event]))
