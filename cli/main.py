"""The ``dexai`` command: ``dexai memory ...``, ``dexai daemon``, ``dexai hook ...``,
``dexai mcp``, ``dexai demo``, ``dexai bench`` and ``dexai sessions``. Each lives in its own module, imported on use."""

from __future__ import annotations

import click

from dexai_memory.cli.lazy import LazyGroup

COMMANDS = {
    "memory": "dexai_memory.cli.memory:memory",
    "daemon": "dexai_memory.cli.daemon:daemon",
    "hook": "dexai_memory.cli.hook:hook",
    "mcp": "dexai_memory.cli.mcp:mcp",
    "demo": "dexai_memory.cli.demo:demo",
    "bench": "dexai_memory.cli.bench:bench",
    "sessions": "dexai_memory.cli.sessions:sessions",
    "panel": "dexai_memory.cli.panel:panel",
}


@click.group(cls=LazyGroup, lazy_commands=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dexai-memory")
def cli() -> None:
    """dexai-memory: semantic memory for Claude agents that survives compaction.

    \b
    Quick start:
      dexai demo                       watch facts survive /compact in a real Claude Code session
      dexai memory add "I prefer tea"  store a memory
      dexai memory search "drinks"     find it again
      dexai memory doctor              check config, database, sqlite-vec and embedder
      dexai panel                      see and edit what is remembered, in a browser
    """


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="dexai")


if __name__ == "__main__":
    main()
