"""``dexai memory clear`` and ``dexai memory undo``: remove every memory of a user, and bring
them back within ``lifecycle.undo_minutes`` (:mod:`dexai_memory.lifecycle.clear`)."""

from __future__ import annotations

import sys

import click

from dexai_memory.cli.common import Context, common_options, fail, run, store_request
from dexai_memory.datadir import ensure_home


@click.command()
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@common_options
def clear(yes: bool, ctx: Context) -> None:
    """Remove every memory of --user (of --project only, when given), after saying exactly how many.

    Asks for confirmation unless --yes (in --json mode, or without a terminal,
    --yes is required). `dexai memory undo` brings them back within
    lifecycle.undo_minutes (60); after that the daemon's cleanup erases them.
    """
    run_clear(ctx, yes)


def run_clear(ctx: Context, yes: bool) -> None:
    """``clear`` (and ``facts clear``): count, confirm, clear, say how to undo."""
    from dexai_memory.lifecycle.clear import count_to_clear
    from dexai_memory.providers import make_provider

    async def count() -> int:
        ensure_home(ctx.settings.home)
        async with make_provider(ctx.settings) as p:
            return await count_to_clear(p, ctx.user, ctx.project)

    n = run(count())
    scope = f" in project {ctx.project}" if ctx.project else ""
    if n == 0:
        ctx.emit({"cleared": 0, "user": ctx.user, "project": ctx.project}, f"Nothing to clear for {ctx.user}{scope}.")
        return
    question = f"This will remove all {n} {'memory' if n == 1 else 'memories'} of {ctx.user}{scope}. Continue?"
    if not yes:
        if ctx.json or not sys.stdin.isatty():
            fail(f"{question.removesuffix(' Continue?')} Pass --yes to confirm.")
        click.confirm(question, abort=True)

    done = len(store_request(ctx, "clear", project=ctx.project)["ids"])
    minutes = ctx.settings.lifecycle.undo_minutes
    ctx.emit({"cleared": done, "user": ctx.user, "project": ctx.project, "undo_minutes": minutes},
             f"Cleared {done} {'memory' if done == 1 else 'memories'} of {ctx.user}{scope}. "
             f"Undo within {minutes:g} minutes with `dexai memory undo`.")


@click.command()
@common_options
def undo(ctx: Context) -> None:
    """Bring back what the latest `dexai memory clear` of --user removed (within lifecycle.undo_minutes)."""
    n = len(store_request(ctx, "undo")["ids"])
    ctx.emit({"restored": n, "user": ctx.user}, f"Restored {n} {'memory' if n == 1 else 'memories'} of {ctx.user}.")
