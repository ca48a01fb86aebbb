"""``dexai memory learn-history``: learn from the Claude Code sessions already on disk
(:mod:`dexai_memory.history`)."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from dexai_memory.cli.common import (
    Context,
    common_options,
    fail,
    parse_as_of,
    progress,
    run,
    store_request,
)

BACKENDS = {"offline": "the offline rules (no model, no tokens)", "api_key": "Claude Haiku (API key)",
            "claude_code": "Claude Haiku through your Claude Code sign-in"}


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def plan_text(data: dict[str, Any]) -> str:
    """The plan as the user reads it before agreeing."""
    span = f", {data['first'][:10]} .. {data['last'][:10]}" if data["first"] and data["last"] else ""
    lines = [f"Claude Code sessions in {data['projects_dir']}: {data['sessions']} to learn "
             f"({data['prompts']} prompts, {data['bytes'] / 1e6:.1f} MB{span}); "
             f"{data['already_learned']} learned before; {data['captured_live']} captured live by the hooks; "
             f"{data['excluded']} left out (other project or date, disabled project, no prompt)."]
    for row in data["projects"][:20]:
        when = f"  {row['first']} .. {row['last']}" if row["first"] else ""
        lines.append(f"  {row['project']}: {row['sessions']} session{'s' * (row['sessions'] != 1)}, "
                     f"{row['prompts']} prompt{'s' * (row['prompts'] != 1)}{when}")
    if len(data["projects"]) > 20:
        lines.append(f"  ... and {len(data['projects']) - 20} more projects")
    for why in data["unreadable"][:5]:
        lines.append(f"  unreadable: {why}")
    cost = f"Extraction: {BACKENDS.get(data['extractor'], data['extractor'])}; about {_duration(data['estimated_seconds'])}"
    if data["extractor"] != "offline":
        left = data["budget_left_today"]
        cost += (f"; about {data['estimated_tokens']:,} model tokens"
                 + (f" (today's budget has {left:,} left, extraction.daily_token_budget; past it the offline "
                    "rules extract)" if left is not None else ""))
    lines.append(cost + ".")
    lines.append("Only your typed prompts are read (the assistant's replies as their context; tool output never); "
                 "secrets and <private> sections are removed first.")
    return "\n".join(lines)


def forget(ctx: Context, session: str) -> None:
    """``--forget SESSION``: drop every memory learned from it (undoable as a clear)."""
    from dexai_memory.capture.history_log import HistoryLog

    ids = store_request(ctx, "forget_session", session_id=session)["ids"]
    HistoryLog(ctx.settings.home, ctx.user).mark_forgotten(session)
    minutes = ctx.settings.lifecycle.undo_minutes
    ctx.emit({"forgotten": len(ids), "session": session, "user": ctx.user, "undo_minutes": minutes},
             f"Forgot {len(ids)} {'memory' if len(ids) == 1 else 'memories'} learned from session {session}. "
             f"Undo within {minutes:g} minutes with `dexai memory undo`.")


@click.command("learn-history")
@click.option("--since", default=None, callback=parse_as_of, metavar="DATE",
              help="Only sessions active since DATE (ISO 8601, e.g. 2026-10-01).")
@click.option("--dry-run", is_flag=True, help="Show what would be read and what it would cost; learn nothing.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (required without a terminal or with --json).")
@click.option("--limit", type=click.IntRange(1), default=None,
              help="Learn at most this many sessions this run (the oldest; run again for the rest).")
@click.option("--vectors", type=click.Choice(["auto", "now", "later"]), default="auto", show_default=True,
              help="As for 'dexai memory ingest': embed the new memories before returning, or leave them to "
                   "the daemon / 'dexai memory reembed --missing' (keyword search finds them at once).")
@click.option("--forget", "forget_session", metavar="SESSION", default=None,
              help="Instead: forget every memory learned from past session SESSION (undo: 'dexai memory undo').")
@click.option("--claude-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Claude Code's directory (default: $CLAUDE_CONFIG_DIR, else ~/.claude).")
@common_options
def learn_history(since: datetime | None, dry_run: bool, yes: bool, limit: int | None, vectors: str,
                  forget_session: str | None, claude_dir: Path | None, ctx: Context) -> None:
    """Learn from the Claude Code sessions already on disk (day-one memory).

    Claude Code keeps each session's transcript in ~/.claude/projects/ (30 days by
    default). This reads the ones not learned before, shows what it would read
    (projects, sessions, prompts, dates, size) and what it would cost (time; model
    tokens when a model extracts, within extraction.daily_token_budget), and only
    after you agree replays them through the same path as live sessions: your typed
    prompts (the assistant's replies only as their context, tool output never),
    redacted, gated, extracted and stored through supersession, oldest first so the
    newest statement wins, each memory dated when it was said, plus each
    session's episodes (files, commands, commits, fixes). Each session keeps its
    project (the git root of its directory, as the hooks store it); sessions the
    hooks captured live are left out. --project (a directory, its name, or
    Claude Code's folder name) and --since narrow it.

    On a terminal it asks first and shows a progress line; without one (or with
    --json) --yes is required. An interrupted run resumes where it stopped; a
    session already learned is skipped. Memories learned this way carry
    metadata source "history" and history_session; the panel lists the sessions
    and can drop one, as does --forget SESSION.

    Example: dexai memory learn-history --since 2026-10-01 --dry-run
    """
    if forget_session:
        forget(ctx, forget_session)
        return
    from dexai_memory.history.learn import plan

    found = plan(ctx.settings, ctx.user, config_dir=claude_dir, project=ctx.project, since=since,
                 live=run(_live(ctx)))
    data = found.to_dict()
    if dry_run or not found.todo:
        text = plan_text(data) + ("\nDry run: nothing was read into memory." if dry_run and found.todo else
                                  "\nNothing to learn." if not found.todo else "")
        ctx.emit({**data, "dry_run": dry_run, "learned": False}, text)
        return
    if not yes:
        if ctx.json or not sys.stdin.isatty():
            fail(f"{data['sessions']} past sessions ({data['prompts']} prompts) would be learned. "
                 "Pass --yes to confirm (or --dry-run to see them).")
        click.echo(plan_text(data), err=True)
        click.confirm(f"Learn these {data['sessions']} sessions?", abort=True, err=True)
    learned = run(_learn(ctx, found, limit, vectors))
    ctx.emit({**data, **learned, "dry_run": False, "learned": True}, _done_text(learned))


async def _live(ctx: Context) -> set[str]:
    """The sessions the hooks already captured (left out: their prompts were read live)."""
    from dexai_memory.datadir import ensure_home
    from dexai_memory.lifecycle.learned import live_sessions
    from dexai_memory.providers import make_provider

    if ctx.settings.storage.provider == "native" and not ctx.settings.db_path.exists():
        return set()  # a new install: nothing captured, and a dry run creates no store
    ensure_home(ctx.settings.home)
    async with make_provider(ctx.settings) as provider:
        return await live_sessions(provider, ctx.user)


async def _learn(ctx: Context, found: Any, limit: int | None, vectors: str) -> dict[str, Any]:
    from dexai_memory.cli.ingest import embed_waiting, resolve_vectors
    from dexai_memory.history.learn import learn
    from dexai_memory.providers import make_provider

    todo = found.todo[:limit] if limit else found.todo
    turns = sum(s.turn_count for s in todo)
    mode = resolve_vectors(vectors, turns, ctx.settings.embedding.ingest_now_max_turns)
    with progress(turns, "learning", enabled=not ctx.json) as update:
        done = await learn(ctx.settings, ctx.user, todo, progress=update)
    vector_seconds, pending = 0.0, 0
    async with make_provider(ctx.settings) as provider:
        if mode == "now":
            vector_seconds = await embed_waiting(provider, ctx)
        pending = await provider.pending_vectors()
    stored = done.report.added + done.report.superseded + done.report.updated
    return {**done.to_dict(), "memories": stored,
            "memories_per_prompt": round(stored / done.prompts, 3) if done.prompts else 0.0,
            "left": len(found.todo) - done.sessions, "vectors": mode, "vectors_pending": pending,
            "vector_seconds": round(vector_seconds, 2)}


def _done_text(d: dict[str, Any]) -> str:
    text = (f"Learned {d['sessions']} past sessions ({d['prompts']} prompts) in {d['seconds']:.1f}s: "
            f"{d['added']} memories added, {d['superseded']} superseding older ones, {d['updated']} updated, "
            f"{d['skipped']} already known; {d['episodes']} episodes, {d['snapshots']} session-end states.")
    if d["left"]:
        text += f"\n{d['left']} sessions left: run 'dexai memory learn-history' again."
    if d["vectors_pending"]:
        text += (f"\n{d['vectors_pending']} memories wait for their vectors (keyword search finds them now): a running "
                 "'dexai daemon' embeds them, or run 'dexai memory reembed --missing'")
    return text + "\nForget one session's memories with 'dexai memory learn-history --forget SESSION' (or in the panel)."
