"""``dexai memory assemble``: the tiered context for some signals, within a budget.

``--signal key=value`` may repeat; a key given twice becomes a list (two
``--signal recent_errors=...``). With ``--json`` the answer is the same object
as ``POST /api/context/assemble``: ``{"context", "token_count", "tiers",
"budget", "budgets", "activity", "query", "memories"}``.
"""

from __future__ import annotations

from typing import Any

import click

from dexai_memory.cli.common import Context, common_options, fail, run


def parse_signals(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``("current_file=a.py", "recent_errors=x", "recent_errors=y")`` ->
    ``{"current_file": "a.py", "recent_errors": ["x", "y"]}``."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            fail(f"--signal takes key=value, got {pair!r}")
        if key in out:
            previous = out[key]
            out[key] = [*previous, value] if isinstance(previous, list) else [previous, value]
        else:
            out[key] = value
    return out


@click.command()
@click.option("--budget", "-b", type=click.IntRange(1, 100_000), default=None,
              help="Token budget (default: assembly.budget_tokens, 8000).")
@click.option("--signal", "-s", "signals", multiple=True, metavar="KEY=VALUE",
              help="A signal: query, prompt, current_file, task, activity (debugging, coding, planning), "
                   "recent_errors, ... Repeat for more; a repeated key becomes a list.")
@common_options
def assemble(ctx: Context, budget: int | None, signals: tuple[str, ...]) -> None:
    """Show the tiered context (critical, relevant, background, index) assembled for the signals."""
    run(_assemble(ctx, budget, parse_signals(signals)))


async def _assemble(ctx: Context, budget: int | None, signals: dict[str, Any]) -> None:
    from dexai_memory.providers import make_provider
    from dexai_memory.recall.assembly import assemble_context

    async with make_provider(ctx.settings) as provider:
        result = await assemble_context(provider, ctx.user, ctx.settings, budget=budget, signals=signals,
                                        project=ctx.project)
    tiers = ", ".join(f"{k} {v}" for k, v in result.tiers.items())
    text = (f"# {result.token_count} of {result.budget} tokens ({tiers}); activity {result.activity}\n"
            f"{result.context or '(nothing to show)'}")
    ctx.emit(result.to_json(), text)
