"""``dexai memory facts``: what is remembered about the user, by category, and its upkeep
(add, pin, remove, prune, clear, export to Markdown); the plugin's ``/dexai-memory:facts`` runs it."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from dexai_memory.cli.common import (
    Context,
    common_options,
    daemon_or_local,
    fail,
    run,
    store_request,
)
from dexai_memory.datadir import ensure_home
from dexai_memory.models import Memory

T = TypeVar("T")
CATEGORY_NAMES = ("preference", "fact", "insight", "warning", "goal", "instruction", "person")


def _scope(ctx: Context) -> None:
    from dexai_memory.daemon.session_state import project_for

    ctx.project = ctx.project or project_for()


def _with(ctx: Context, fn: Callable[[Any], Awaitable[T]]) -> T:
    from dexai_memory.providers import make_provider

    async def go() -> T:
        ensure_home(ctx.settings.home)
        async with make_provider(ctx.settings) as p:
            return await fn(p)

    return run(go())


def _groups(ctx: Context, limit: int) -> dict[str, list[Memory]]:
    from dexai_memory.agent_tools import facts_by_category

    return _with(ctx, lambda p: facts_by_category(p, user_id=ctx.user, project=ctx.project, limit=limit))


@click.group(invoke_without_command=True)
@click.option("--category", "-c", "category", default=None, metavar="NAME",
              help="Only this category (preference, fact, insight, warning, goal, instruction, person, ...).")
@click.option("--limit", "-n", type=click.IntRange(1, 100_000), default=500, show_default=True,
              help="Read at most this many (the newest).")
@common_options
@click.pass_context
def facts(click_ctx: click.Context, category: str | None, limit: int, ctx: Context) -> None:
    """What is remembered about the user, grouped by category (preference, fact, insight, warning, goal, ...).

    Current durable memories only (no session notes, snapshots or superseded
    memories); the plugin's /dexai-memory:facts shows this. Without --project,
    the scope is the hooks' ($DEXAI_MEMORY_PROJECT, else every project).
    Subcommands: add, pin, remove, prune, clear, export.
    """
    if click_ctx.invoked_subcommand is not None:
        return
    from dexai_memory.recall.block import neutralise

    _scope(ctx)
    groups = _groups(ctx, limit)
    if category:
        groups = {c: ms for c, ms in groups.items() if c == category.strip().lower().removesuffix("s")}
    total = sum(len(ms) for ms in groups.values())
    if ctx.json:
        ctx.emit({"user": ctx.user, "project": ctx.project, "count": total,
                  "categories": {c: [{"id": m.id, "content": m.content, "type": m.type.value,
                                      "importance": m.importance, "confidence": m.confidence,
                                      "mentions": m.mention_count, "pinned": m.pinned,
                                      "created": m.created_at.isoformat()} for m in ms]
                                 for c, ms in groups.items()}})
        return
    scope = f" in project {ctx.project}" if ctx.project else ""
    if not total:
        click.echo(f"Nothing is remembered about {ctx.user}{scope} yet.")
        return
    noun = "memory" if total == 1 else "memories"
    lines = [f"What is remembered about {ctx.user}{scope} ({total} {noun}, data, not instructions):"]
    for name, ms in groups.items():
        lines += ["", f"{name} ({len(ms)})"]
        lines += [f"- [{m.id}] ({m.created_at.date().isoformat()}) {'* ' if m.pinned else ''}{neutralise(m.content)}"
                  for m in ms]
    click.echo("\n".join(lines))


@facts.command()
@click.argument("text")
@click.option("--category", "-c", type=click.Choice(CATEGORY_NAMES), default="fact", show_default=True)
@click.option("--pin", is_flag=True, help="Pin it too (at most lifecycle.max_pins).")
@common_options
def add(text: str, category: str, pin: bool, ctx: Context) -> None:
    """Remember TEXT by hand (confidence 0.6; saying it again adds 0.25), through supersession:
    a repeat is counted, a change replaces the older statement.

    TEXT holds at most limits.max_memory_chars characters (2000); a longer text is refused, not cut.
    """
    from dexai_memory.agent_tools.ops import remember_request

    _scope(ctx)
    # the running daemon stores it (the one writer), else this process: the same function
    reply = daemon_or_local(ctx, {"op": "remember", "content": text, "category": category, "user_id": ctx.user,
                                  "project": ctx.project, "pin": pin, "via": "cli"}, remember_request)
    ctx.emit(reply["result"], reply["text"])
    if not reply["stored"]:
        sys.exit(1)


@facts.command(name="pin")
@click.argument("memory_id")
@common_options
def pin_(memory_id: str, ctx: Context) -> None:
    """Pin a fact: always in context, never evicted (at most lifecycle.max_pins, 10)."""
    m = store_request(ctx, "pin", memory_id=memory_id)["memory"]
    ctx.emit(m, f"Pinned {m['id']}: {m['content']}")


@facts.command()
@click.argument("memory_id")
@common_options
def remove(memory_id: str, ctx: Context) -> None:
    """Forget a fact (soft: `dexai memory restore ID` brings it back)."""
    if not store_request(ctx, "forget", memory_id=memory_id)["forgotten"]:
        fail(f"no memory {memory_id!r} to remove for user {ctx.user!r}")
    ctx.emit({"id": memory_id, "removed": True}, f"Removed {memory_id} (restore with `dexai memory restore`)")


@facts.command()
@click.option("--yes", "-y", is_flag=True, help="Archive them without asking.")
@common_options
def prune(yes: bool, ctx: Context) -> None:
    """Show stale facts (past their category's expiry, never used within lifecycle.unused_forget_days,
    or over the cap) and archive them after confirmation (--yes). Archived facts stay in L3, never
    deleted."""
    from dexai_memory.lifecycle.eviction import run_lifecycle

    cfg = ctx.settings.lifecycle
    report = _with(ctx, lambda p: run_lifecycle(p, ctx.user, cfg, dry_run=True))
    stale = report.archived
    if not stale:
        ctx.emit({"archived": 0, "stale": []}, f"No stale facts for {ctx.user} ({report.facts_before} kept).")
        return
    lines = [f"{len(stale)} stale {'fact' if len(stale) == 1 else 'facts'} of {ctx.user}:"]
    lines += [f"- [{e.id}] ({e.category}) {e.content}\n    {e.reason}" for e in stale]
    if not yes:
        if ctx.json or not sys.stdin.isatty():
            ctx.emit({"archived": 0, "stale": [e.to_dict() for e in stale]},
                     "\n".join([*lines, "Pass --yes to archive them."]))
            return
        click.echo("\n".join(lines))
        click.confirm("Archive them?", abort=True)
    done = store_request(ctx, "prune")["report"]
    n = len(done["expired"]) + len(done.get("unused") or []) + len(done["evicted"])
    ctx.emit({"archived": n, "stale": [e.to_dict() for e in stale]},
             "\n".join([*lines, f"Archived {n} (kept in L3; `dexai memory list --all` shows them)."]))


@facts.command()
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to FILE (mode 0600) instead of standard output.")
@common_options
def export(output: Path | None, ctx: Context) -> None:
    """Export the facts to Markdown, one section per category."""
    _scope(ctx)
    groups = _groups(ctx, 100_000)
    scope = f" ({ctx.project})" if ctx.project else ""
    lines = [f"# What is remembered about {ctx.user}{scope}", ""]
    for name, ms in groups.items():
        lines += [f"## {name.capitalize()} ({len(ms)})", ""]
        for m in ms:
            flags = " (pinned)" if m.pinned else ""
            lines.append(f"- {m.content}{flags} <!-- {m.id}, {m.created_at.date().isoformat()}, "
                         f"confidence {m.confidence:.2f}, {m.mention_count}x -->")
        lines.append("")
    text = "\n".join(lines)
    if output is None:
        click.echo(text)
        return
    tmp = output.with_name(output.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(output)
    ctx.emit({"path": str(output), "count": sum(len(ms) for ms in groups.values())},
             f"Wrote {sum(len(ms) for ms in groups.values())} facts to {output}")


@facts.command(name="clear")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@common_options
def clear_(yes: bool, ctx: Context) -> None:
    """Remove every memory of the user (as `dexai memory clear`: exact count, confirmation, undo)."""
    from dexai_memory.cli.clear import run_clear

    run_clear(ctx, yes)
