"""``dexai memory ingest FILE.jsonl``: feed a whole conversation through the warm path."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import click

from dexai_memory.capture.turns_file import read_turns_file
from dexai_memory.cli.common import Context, common_options, progress, run
from dexai_memory.datadir import ensure_home
from dexai_memory.pipeline import PipelineReport
from dexai_memory.providers.base import MemoryProvider

SUMMARY_KEYS = ("turns", "gated", "extracted", "added", "updated", "superseded", "noop")


@dataclasses.dataclass
class IngestRun:
    """What ``ingest`` did: the pipeline's report, the time, and the vector work."""

    report: PipelineReport
    seconds: float
    #: "now" or "later" (``--vectors auto`` resolved).
    vectors: str
    #: Memories of the store still waiting for a vector after the run.
    vectors_pending: int
    #: Seconds spent filling vectors after the pipeline (``--vectors now`` on a big file).
    vector_seconds: float = 0.0
    #: One ``"<file> line N: why"`` per line of the file skipped (a turn with empty content).
    skipped_lines: list[str] = dataclasses.field(default_factory=list)
    #: The sessions of the turns ingested, in file order.
    sessions: list[str] = dataclasses.field(default_factory=list)


def resolve_vectors(choice: str, turns: int, max_turns: int) -> str:
    """``--vectors auto``: "now" for at most ``max_turns`` turns (``embedding.ingest_now_max_turns``), else "later"."""
    if choice != "auto":
        return choice
    return "now" if turns <= max_turns else "later"


async def embed_waiting(provider: MemoryProvider, ctx: Context) -> float:
    """Embed every memory waiting for a vector, on every core, with a progress bar; returns the seconds.

    ``ingest`` and ``import`` store first (one transaction per batch, BM25 at
    once) and call this for ``--vectors now``: large batches embed faster
    than the per-chunk embedding of the warm path.
    """
    from dexai_memory.embeddings import bulk_embedder

    start = time.perf_counter()
    waiting = await provider.pending_vectors()
    if waiting:
        with progress(waiting, "embedding", enabled=not ctx.json) as update:
            await provider.fill_vectors(progress=update, embedder=bulk_embedder(ctx.settings.embedding))
    return time.perf_counter() - start


async def ingest_file(ctx: Context, path: Path, session: str | None, vectors: str = "auto") -> IngestRun:
    """Read, then ingest ``path`` for ``ctx.user`` (see :class:`IngestRun`)."""
    from dexai_memory.daemon.lease import write_lease
    from dexai_memory.extraction.factory import make_classifier
    from dexai_memory.pipeline import Pipeline
    from dexai_memory.providers import make_provider

    read = read_turns_file(path, user_id=ctx.user, session_id=session, project=ctx.project)
    turns = read.turns
    for why in read.skipped:
        click.echo(f"Warning: {why}: skipped", err=True)
    ensure_home(ctx.settings.home)
    mode = resolve_vectors(vectors, len(turns), ctx.settings.embedding.ingest_now_max_turns)
    start = time.perf_counter()
    async with make_provider(ctx.settings) as provider:
        pipeline = Pipeline(provider, ctx.settings, classifier=make_classifier(ctx.settings))
        # a running daemon lends its write lock while the turns are decided and stored
        with progress(len(turns), "ingest", enabled=not ctx.json) as update:
            async with write_lease(ctx.settings):
                # each turn keeps its own session (its line's session_id, else ``session``)
                report = await pipeline.ingest(turns, user_id=ctx.user, session_id=None, project=ctx.project,
                                               progress=update, vectors="later")
        vector_seconds = await embed_waiting(provider, ctx) if mode == "now" else 0.0
        pending = await provider.pending_vectors()
    sessions = list(dict.fromkeys(t.session_id for t in turns if t.session_id))
    return IngestRun(report, time.perf_counter() - start, mode, pending, vector_seconds, read.skipped, sessions)


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--session", "-s", default=None,
              help="Session id of the lines that carry none (default: the file's name).")
@click.option("--vectors", type=click.Choice(["auto", "now", "later"]), default="auto", show_default=True,
              help="now: embed every new memory before returning; later: store them without vectors "
                   "(found by BM25 at once; the daemon or 'dexai memory reembed --missing' embeds them); "
                   "auto: now for files of at most embedding.ingest_now_max_turns turns (1000), else later.")
@common_options
def ingest(file: Path, session: str | None, vectors: str, ctx: Context) -> None:
    """Feed a conversation (JSONL, one turn a line) through gate, extraction,
    supersession and storage, and archive every raw turn in L3.

    \b
    Each line: {"id": "D1:3", "role": "user", "speaker": "Caroline",
                "content": "...", "timestamp": "2023-05-08T13:56:00",
                "session_id": "D1", "session_date": "2023-05-08"}
    (speaker, timestamp, session_id and session_date optional; other keys
    such as "caption" are kept). A line's session_id puts its turn in that
    session (else --session), so one file holds a whole history of sessions;
    session_date dates a turn that has no timestamp. A turn with empty
    content is skipped with a warning naming its line (counted in the
    summary). Ingesting the same file again adds nothing.

    On a terminal a progress line shows the turns, then the vectors; on a
    pipe, or with --json, only the summary is printed.

    The embedder (MiniLM on the CPU, ~100 texts/s a core) costs far more than
    the rest of the pipeline, so big files defer vectors by default (see
    --vectors): the memories are searchable by keyword at once and gain
    semantic search when their vectors are filled.

    Example: dexai memory ingest chat.jsonl --user caroline --session s1
    """
    session = session or file.stem
    done = run(ingest_file(ctx, file, session, vectors))
    report, seconds = done.report, done.seconds
    data = {**{k: getattr(report, k) for k in SUMMARY_KEYS}, "archived": report.archived,
            "skipped": report.skipped, "commitments": report.commitments, "seconds": round(seconds, 2),
            "turns_per_s": round(report.turns / seconds, 1) if seconds > 0 else None,
            "vectors": done.vectors, "vectors_pending": done.vectors_pending,
            "vector_seconds": round(done.vector_seconds, 2),
            "file": str(file), "user": ctx.user, "session": session, "sessions": len(done.sessions),
            "skipped_lines": len(done.skipped_lines)}
    where = f"session {session}" if done.sessions in ([], [session]) else f"{len(done.sessions)} sessions"
    text = (f"Ingested {file.name} for {ctx.user} ({where}) in {seconds:.1f}s\n"
            + "  ".join(f"{k} {getattr(report, k)}" for k in SUMMARY_KEYS)
            + f"\n{report.archived} raw turns archived in L3; {report.skipped} notes already stored;"
              f" {report.commitments} commitments tracked")
    if done.skipped_lines:
        text += f"\n{len(done.skipped_lines)} lines skipped (empty content): " + "; ".join(
            why.split(": ")[0] for why in done.skipped_lines[:10]) + ("; ..." if len(done.skipped_lines) > 10 else "")
    if done.vectors_pending:
        text += (f"\n{done.vectors_pending} memories wait for their vectors (keyword search finds them now): "
                 "a running 'dexai daemon' embeds them in the background, or run 'dexai memory reembed --missing'")
    ctx.emit(data, text)
