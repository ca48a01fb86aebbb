"""``dexai memory done ID`` and ``dexai memory cancel ID``: close a commitment or goal
(:func:`dexai_memory.lifecycle.closing.close`)."""

from __future__ import annotations

import click

from dexai_memory.cli.common import Context, common_options, store_request


def _close(ctx: Context, memory_id: str, status: str, reason: str | None) -> None:
    m = store_request(ctx, "close", memory_id=memory_id, status=status, reason=reason)["memory"]
    ctx.emit(m, f"Marked {m['id']} {status}: {m['content']}")


@click.command()
@click.argument("memory_id")
@click.option("--reason", default=None, help="Why (kept in the history).")
@common_options
def done(memory_id: str, reason: str | None, ctx: Context) -> None:
    """Mark a commitment or goal done: it leaves "Coming up" and the persistent context
    (kept in its history; `dexai memory list --type COMMITMENT` lists the open ones)."""
    _close(ctx, memory_id, "done", reason)


@click.command()
@click.argument("memory_id")
@click.option("--reason", default=None, help="Why (kept in the history).")
@common_options
def cancel(memory_id: str, reason: str | None, ctx: Context) -> None:
    """Mark a commitment or goal cancelled: it leaves "Coming up" and the persistent context."""
    _close(ctx, memory_id, "cancelled", reason)
