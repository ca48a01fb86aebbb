"""``dexai memory ...``: store, search, edit and export memories."""

from __future__ import annotations

import click

from dexai_memory.cli.lazy import LazyGroup

#: Subcommands that live in their own modules.
LAZY = {
    "ingest": "dexai_memory.cli.ingest:ingest",
    "consolidate": "dexai_memory.cli.lifecycle:consolidate",
    "retry": "dexai_memory.cli.lifecycle:retry",
    "recall": "dexai_memory.cli.recall:recall",
    "migrate": "dexai_memory.cli.migrate:migrate",
}


@click.group(cls=LazyGroup, lazy_commands=LAZY)
def memory() -> None:
    """Store, search, edit, export and maintain memories.

    Every command takes --user, --project, --home, --config and --json.
    """
