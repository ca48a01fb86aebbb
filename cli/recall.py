"""``dexai memory recall``: show the memory block recall would inject for a query.

One JSON line per query with ``--json``::

    {"query", "text", "tokens", "memories": [{"id", "content", "source_ids", "score"}], "latency_ms"}

``text`` is exactly the block that would be injected; ``memories`` are exactly
the memories in it. Budget mode by default (as many memories as fit
``--max-tokens``, default ``auto_recall.max_tokens``); ``--max-memories 5``
reproduces what auto-recall injects on a cold-start prompt.
A ``--queries`` file has one ``{"query": "..."}`` object per line; other keys
(``id``, ...) are echoed back on that query's output line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from dexai_memory.cli.common import Context, common_options, fail, progress, run


def _read_queries(path: Path) -> list[dict[str, Any]]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            fail(f"{path}:{n}: not JSON ({exc})")
        if not isinstance(item, dict) or not isinstance(item.get("query"), str):
            fail(f'{path}:{n}: expected an object like {{"query": "..."}}')
        out.append(item)
    return out


@click.command()
@click.option("--query", "-q", "query", default=None, help="The query (a user prompt).")
@click.option("--queries", "queries_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help='A JSONL file of {"query": "..."} lines.')
@click.option("--max-memories", type=click.IntRange(1, 1000), default=None,
              help="Cap the number of memories (default: as many as fit the token budget).")
@click.option("--max-tokens", type=click.IntRange(50, 100_000), default=None,
              help="Token budget of the block (default: auto_recall.max_tokens).")
@common_options
def recall(ctx: Context, query: str | None, queries_path: Path | None, max_memories: int | None,
           max_tokens: int | None) -> None:
    """Show the memory block recall injects for --query TEXT or every line of --queries FILE."""
    if (query is None) == (queries_path is None):
        fail("give exactly one of --query TEXT or --queries FILE.jsonl")
    items = [{"query": query}] if query is not None else _read_queries(queries_path)  # type: ignore[arg-type]
    run(_recall(ctx, items, max_memories, max_tokens))


async def _recall(ctx: Context, items: list[dict[str, Any]], max_memories: int | None,
                  max_tokens: int | None) -> None:
    from dexai_memory.providers import make_provider
    from dexai_memory.recall.ranking import recall_block

    async with make_provider(ctx.settings) as provider:
        embedder = getattr(provider, "embedder", None)
        if embedder is not None:  # load the model first so latency_ms is the recall's own
            await embedder.aembed("warm up")
        with progress(len(items), "recall", enabled=len(items) > 1 and not ctx.json) as update:
            for item in items:
                result = await recall_block(provider, ctx.user, item["query"], ctx.settings, project=ctx.project,
                                            max_memories=max_memories, max_tokens=max_tokens)
                extra = {k: v for k, v in item.items() if k != "query"}
                data = result.to_json(item["query"], **extra)
                if ctx.json:
                    click.echo(json.dumps(data, ensure_ascii=False, default=str))
                else:
                    click.echo(f"# {item['query']}  ({result.tokens} tokens, {len(result.memories)} memories, "
                               f"{result.latency_ms:.1f} ms)")
                    click.echo(result.text or f"(nothing to inject: {result.skipped_reason})")
                    click.echo()
                update(1)
