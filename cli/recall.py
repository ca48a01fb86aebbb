"""``dexai memory recall``: show the memory block recall injects for a query.

One JSON line per query with ``--json``::

    {"query", "text", "tokens", "memories": [{"id", "content", "source_ids", "score"}], "latency_ms"}

``text`` is exactly the block the UserPromptSubmit hook injects for that prompt as the
first prompt of a session (the running daemon answers both; with none running, the same
recall runs in this process);
``memories`` are exactly the memories in it. ``--as-of`` recalls among what was valid at
that time (as ``list`` and ``search --as-of``; the output keeps the same shape). ``--max-memories`` / ``--max-tokens``
override ``auto_recall.max_memories`` / ``auto_recall.max_tokens`` for this command.
A ``--queries`` file has one ``{"query": "..."}`` object per line; other keys
(``id``, ...) are echoed back on that query's output line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from dexai_memory.cli.common import (
    AS_OF_HELP,
    Context,
    common_options,
    daemon_or_local,
    fail,
    parse_as_of,
    progress,
)


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
              help="Cap the number of memories (default: auto_recall.max_memories).")
@click.option("--max-tokens", type=click.IntRange(50, 100_000), default=None,
              help="Token budget of the block (default: auto_recall.max_tokens).")
@click.option("--as-of", "as_of", default=None, metavar="ISO-DATE|now", callback=parse_as_of, help=AS_OF_HELP)
@common_options
def recall(ctx: Context, query: str | None, queries_path: Path | None, max_memories: int | None,
           max_tokens: int | None, as_of: datetime | None) -> None:
    """Show the memory block recall injects for --query TEXT or every line of --queries FILE.

    The running daemon answers, exactly as it answers the UserPromptSubmit hook for the first
    prompt of a session; with none running, the same recall runs in this process.

    With --as-of, recall looks among what was valid at that time (superseded and archived
    memories included when they were current then), as `list --as-of` and `search --as-of` do.
    """
    from dexai_memory.recall.ranking import recall_request

    if (query is None) == (queries_path is None):
        fail("give exactly one of --query TEXT or --queries FILE.jsonl")
    items = [{"query": query}] if query is not None else _read_queries(queries_path)  # type: ignore[arg-type]
    requests = [{"op": "recall", "user_id": ctx.user, "prompt": item["query"], "project": ctx.project,
                 "max_memories": max_memories, "max_tokens": max_tokens} for item in items]
    if as_of is not None:
        requests = [{**r, "as_of": as_of.isoformat()} for r in requests]
    # one at a time, each printed as it comes
    replies: Iterator[dict[str, Any]] = (daemon_or_local(ctx, r, recall_request) for r in requests)
    with progress(len(items), "recall", enabled=len(items) > 1 and not ctx.json) as update:
        for item, reply in zip(items, replies, strict=True):
            extra = {k: v for k, v in item.items() if k != "query"}
            data: dict[str, Any] = {**extra, "query": item["query"], "text": reply.get("text") or "",
                    "tokens": reply.get("tokens") or 0, "memories": reply.get("memories") or [],
                    "latency_ms": reply.get("latency_ms") or 0.0}
            if ctx.json:
                click.echo(json.dumps(data, ensure_ascii=False, default=str))
            else:
                click.echo(f"# {item['query']}  ({data['tokens']} tokens, {len(data['memories'])} memories, "
                           f"{data['latency_ms']:.1f} ms)")
                click.echo(data["text"] or f"(nothing to inject: {reply.get('skipped_reason')})")
                click.echo()
            update(1)

