"""``dexai memory conflicts`` and ``dexai memory resolve``: review contradictions
(:mod:`dexai_memory.lifecycle.contradictions`)."""

from __future__ import annotations

from typing import Any

import click

from dexai_memory.cli.common import Context, common_options, run, store_request
from dexai_memory.datadir import ensure_home
from dexai_memory.models import RESOLUTIONS


def _side(label: str, m: dict[str, Any] | None) -> str:
    if m is None:
        return f"    {label}: (erased)"
    state = "current" if m["current"] else "replaced"
    return f"    {label}: {m['id']} ({state}, confidence {m['confidence']:.2f}) {m['content']}"


def _render(row: dict[str, Any]) -> list[str]:
    state = "open" if row["resolution"] is None else (f"{row['resolution']}" + (" (auto)" if row["auto"] else ""))
    lines = [f"#{row['id']}  {row['detected_at'][:16]}  {state}" + (f"  note: {row['note']}" if row["note"] else ""),
             _side("a", row["a"]), _side("b", row["b"])]
    if row.get("reason"):
        lines.append(f"    why: {row['reason']}")
    if row.get("merged"):
        lines.append(_side("merged", row["merged"]))
    return lines


@click.command()
@click.option("--all", "all_", is_flag=True, help="Include resolved ones (automatic and by hand).")
@click.option("--limit", "-n", type=click.IntRange(1, 100_000), default=100, show_default=True)
@common_options
def conflicts(all_: bool, limit: int, ctx: Context) -> None:
    """Contradictions between memories, newest first: open ones (both memories still current,
    supersession was not confident enough to decide), or with --all every one recorded.
    Resolve one with `dexai memory resolve ID a_wins|b_wins|both_valid|merged [--note TEXT]`."""
    from dexai_memory.lifecycle.contradictions import conflicts as list_conflicts
    from dexai_memory.providers import make_provider

    async def go() -> list[dict[str, Any]]:
        ensure_home(ctx.settings.home)
        async with make_provider(ctx.settings) as p:
            return [c.to_dict() for c in await list_conflicts(p, ctx.user, include_resolved=all_, limit=limit)]

    rows = run(go())
    if ctx.json:
        ctx.emit(rows)
        return
    if not rows:
        click.echo("No open contradictions." if not all_ else "No contradictions recorded.")
        return
    lines: list[str] = []
    for row in rows:
        lines += _render(row)
    click.echo("\n".join(lines))


@click.command()
@click.argument("contradiction_id", type=int)
@click.argument("resolution", type=click.Choice(RESOLUTIONS))
@click.option("--note", default=None, help="Why; for merged, the merged statement (required).")
@common_options
def resolve(contradiction_id: int, resolution: str, note: str | None, ctx: Context) -> None:
    """Resolve a contradiction: a_wins (the older memory is current again), b_wins (the newer
    replaces it), both_valid (both current), merged (a new memory with --note replaces both)."""
    row = store_request(ctx, "resolve", contradiction_id=contradiction_id, resolution=resolution,
                        note=note)["conflict"]
    ctx.emit(row, "\n".join([f"Resolved #{contradiction_id}: {resolution}", *_render(row)[1:]]))
