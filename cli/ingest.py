"""``dexai memory ingest FILE.jsonl``: feed a whole conversation through the warm path."""

from __future__ import annotations

import time
from pathlib import Path

import click

from dexai_memory.cli.common import Context, common_options, progress, run
from dexai_memory.config import ensure_home
from dexai_memory.pipeline import PipelineReport, read_turns_jsonl

SUMMARY_KEYS = ("turns", "gated", "extracted", "added", "updated", "superseded", "noop")


async def ingest_file(ctx: Context, path: Path, session: str | None) -> tuple[PipelineReport, float]:
    """Read, then ingest ``path`` for ``ctx.user``; returns the report and the seconds it took."""
    from dexai_memory.extraction import make_classifier
    from dexai_memory.pipeline import Pipeline
    from dexai_memory.providers import make_provider

    turns = read_turns_jsonl(path, user_id=ctx.user, session_id=session, project=ctx.project)
    ensure_home(ctx.settings.home)
    start = time.perf_counter()
    async with make_provider(ctx.settings) as provider:
        provider.classifier = make_classifier(ctx.settings)
        pipeline = Pipeline(provider, ctx.settings)
        with progress(len(turns), "ingest", enabled=not ctx.json) as update:
            report = await pipeline.ingest(turns, user_id=ctx.user, session_id=session, project=ctx.project,
                                           progress=update)
    return report, time.perf_counter() - start


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--session", "-s", default=None, help="Session id of the conversation (default: the file's name).")
@common_options
def ingest(file: Path, session: str | None, ctx: Context) -> None:
    """Feed a conversation (JSONL, one turn a line) through gate, extraction,
    supersession and storage, and archive every raw turn in L3.

    \b
    Each line: {"id": "D1:3", "role": "user", "speaker": "Caroline",
                "content": "...", "timestamp": "2023-05-08T13:56:00"}
    (speaker and timestamp optional; other keys such as "caption" are kept).
    Ingesting the same file again adds nothing.

    Example: dexai memory ingest chat.jsonl --user caroline --session s1
    """
    session = session or file.stem
    report, seconds = run(ingest_file(ctx, file, session))
    data = {**{k: getattr(report, k) for k in SUMMARY_KEYS}, "archived": report.archived,
            "skipped": report.skipped, "commitments": report.commitments, "seconds": round(seconds, 2),
            "turns_per_s": round(report.turns / seconds, 1) if seconds > 0 else None,
            "file": str(file), "user": ctx.user, "session": session}
    text = (f"Ingested {file.name} for {ctx.user} (session {session}) in {seconds:.1f}s\n"
            + "  ".join(f"{k} {getattr(report, k)}" for k in SUMMARY_KEYS)
            + f"\n{report.archived} raw turns archived in L3; {report.skipped} notes already stored;"
              f" {report.commitments} commitments tracked")
    ctx.emit(data, text)
