"""``dexai memory consolidate`` and ``dexai memory retry``: the cold path on demand."""

from __future__ import annotations

import contextlib
from typing import Any

import click

from dexai_memory.cli.common import Context, common_options, progress, run, store_request
from dexai_memory.datadir import ensure_home


def _clip(text: str, width: int = 90) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


async def _consolidate(ctx: Context, *, dry_run: bool, all_users: bool, cleanup_too: bool) -> list[dict[str, Any]]:
    from dexai_memory.consolidation import consolidate_user, known_users
    from dexai_memory.daemon.lease import write_lease
    from dexai_memory.extraction.factory import make_form_writer, make_summarizer
    from dexai_memory.providers import make_provider

    ensure_home(ctx.settings.home)
    summarizer = None if dry_run else make_summarizer(ctx.settings)
    form_writer = None if dry_run else make_form_writer(ctx.settings)
    out = []
    try:
        async with make_provider(ctx.settings) as provider:
            users = await known_users(provider) if all_users else [ctx.user]
            with progress(len(users), "consolidate", enabled=not ctx.json) as update:
                for user in users:
                    # a running daemon lends its write lock for each user's run (nothing to lend for a dry run)
                    async with write_lease(ctx.settings) if not dry_run else contextlib.nullcontext(False):
                        out.append(await consolidate_user(provider, user, ctx.settings, dry_run=dry_run,
                                                          cleanup_too=cleanup_too, summarizer=summarizer,
                                                          form_writer=form_writer))
                    update(1)
    finally:
        if form_writer is not None:
            await form_writer.aclose()
    return out


def _render(rows: list[dict[str, Any]], dry_run: bool) -> str:
    lines = []
    verb = "would merge" if dry_run else "merged"
    for row in rows:
        cons, clean = row["consolidation"], row.get("cleanup") or {"archived": []}
        lines.append(f"User {row['user_id']}: {cons['merged']} cluster(s) {verb} ({cons['superseded']} memories "
                     f"superseded), {len(clean['archived'])} archived "
                     f"[{cons['candidates']} candidates, {cons['method']} similarity]"
                     + (f", {cons['routines']} routine(s) {'to store' if dry_run else 'stored'}"
                        if cons.get("routines") else ""))
        found = "would find" if dry_run else "found"
        lines.append(f"  {found} {cons['links_found']} new link(s) between memories, "
                     f"{cons['contradictions_found']} new contradiction(s) (open: dexai memory conflicts)")
        for c in cons["clusters"]:
            target = f" into {c['abstract_id']}" if c["abstract_id"] else ""
            lines.append(f"  {verb} {len(c['member_ids'])}{target} (min similarity {c['min_similarity']:.2f})")
            if c["summary"]:
                lines.append(f"    = {_clip(c['summary'])}")
            for mid, content in zip(c["member_ids"], c["contents"], strict=True):
                lines.append(f"    - {mid}  {_clip(content, 80)}")
        for a in clean["archived"]:
            lines.append(f"  {'would archive' if dry_run else 'archived'} {a['id']} ({a['type']}, "
                         f"{a['age_days']:.0f} days old): {_clip(a['content'], 70)}")
    if dry_run:
        lines.append("(dry run: nothing was changed)")
    return "\n".join(lines)


@click.command()
@click.option("--dry-run", is_flag=True, help="Show what would be merged and archived; change nothing.")
@click.option("--all-users", is_flag=True, help="Every user in the store instead of --user.")
@click.option("--no-cleanup", is_flag=True, help="Skip the retention cleanup (archiving by age).")
@common_options
def consolidate(dry_run: bool, all_users: bool, no_cleanup: bool, ctx: Context) -> None:
    """Archive memories past their retention, then merge clusters of similar
    old L2 memories into L3 abstracts (the originals are superseded, never deleted),
    record contradictions among current memories (open, for `dexai memory conflicts`)
    and link related memories (same entity or file, an error and its fix, a decision
    and its reason: recall follows the links).

    Runs for --user (default: $DEXAI_MEMORY_USER or $USER), or for every user
    with --all-users. The daemon runs the same on its schedule.
    """
    rows = run(_consolidate(ctx, dry_run=dry_run, all_users=all_users, cleanup_too=not no_cleanup))
    ctx.emit({"dry_run": dry_run, "users": rows}, _render(rows, dry_run))


async def _retry(ctx: Context, ids: tuple[int, ...], list_only: bool) -> dict[str, Any]:
    from dexai_memory.capture.queue import ExtractionQueue
    from dexai_memory.daemon.ipc import ipc_request

    settings = ctx.settings
    queue = ExtractionQueue.from_settings(settings).open()
    try:
        letters = [d.to_dict() for d in queue.dead_letters()]
        result: dict[str, Any] = {"dead_letters": letters, "requeued": 0, "processed": 0, "still_failing": 0,
                                  "handled_by": None}
        if list_only or (not letters and not queue.pending_count()):
            return result
        result["requeued"] = queue.retry_dead_letters(list(ids) if ids else None) if letters else 0
        reply = ipc_request(settings.socket_path, {"op": "flush", "timeout": 30}, 35)
        if reply is not None and reply.get("ok"):
            result["handled_by"] = "daemon"
            result["processed"] = result["requeued"] - len(queue.dead_letters()) - int(reply.get("pending") or 0)
            return result
        # no daemon: process them here
        from dexai_memory.extraction.factory import make_classifier
        from dexai_memory.pipeline import Pipeline
        from dexai_memory.providers import make_provider

        ensure_home(settings.home)
        async with make_provider(settings) as provider:
            pipeline = Pipeline(provider, settings, classifier=make_classifier(settings))
            pipeline.journal = queue.save_notes
            result["processed"] = await queue.drain(pipeline.handle)
        result["handled_by"] = "this process"
        result["still_failing"] = len(queue.dead_letters()) + queue.pending_count()
        return result
    finally:
        queue.close()


@click.command()
@click.option("--list", "list_only", is_flag=True, help="Only list the dead letters.")
@click.option("--id", "ids", multiple=True, type=int, help="Replay only this dead letter (repeatable).")
@common_options
def retry(list_only: bool, ids: tuple[int, ...], ctx: Context) -> None:
    """Replay failed extractions (dead letters of the queue, every user's), and
    extract turns still waiting in the queue.

    A running daemon ('dexai daemon') processes them; without one they are
    processed here. Jobs that fail again go back to the queue's retry cycle.
    """
    result = run(_retry(ctx, ids, list_only))
    lines = [f"{len(result['dead_letters'])} dead letter(s)"]
    for d in result["dead_letters"]:
        lines.append(f"  #{d['id']} {d['user_id']} turn {d['turn_id']} ({d['attempts']} attempts): {_clip(d['error'], 70)}"
                     f"\n      {_clip(d['content'], 80)}")
    if result["requeued"] or result["processed"]:
        lines.append(f"requeued {result['requeued']}, processed {result['processed']} by {result['handled_by']}"
                     + (f", {result['still_failing']} still failing (kept)" if result["still_failing"] else ""))
    ctx.emit(result, "\n".join(lines))


@click.command()
@click.option("--dry-run", is_flag=True, help="Show what would be archived; change nothing.")
@common_options
def prune(dry_run: bool, ctx: Context) -> None:
    """Apply the fact lifecycle to --user now: archive durable facts not referenced within their
    category's expiry (project 60 days, preference 180, identity 365), those never injected,
    recalled nor cited within lifecycle.unused_forget_days (90) of being stored (not those
    written by hand), then, above lifecycle.prune_from (120), those with the highest eviction
    score (age x category weight / confidence) until under lifecycle.max_facts (150). Pinned
    ones are kept; nothing is deleted (archived to L3). The daemon runs the same in its daily
    cleanup.
    """
    report = store_request(ctx, "prune", dry_run=dry_run)["report"]
    verb = "would archive" if dry_run else "archived"
    unused = report.get("unused") or []
    lines = [f"User {ctx.user}: {report['facts_before']} durable facts, {len(report['expired'])} expired, "
             f"{len(unused)} unused and {len(report['evicted'])} evicted ({verb}), {report['facts_after']} left"]
    for e in [*report["expired"], *unused, *report["evicted"]]:
        lines.append(f"  {verb} {e['id']} ({e['category']}): {_clip(e['content'], 70)}\n      {e['reason']}")
    if dry_run:
        lines.append("(dry run: nothing was changed)")
    ctx.emit(report, "\n".join(lines))
