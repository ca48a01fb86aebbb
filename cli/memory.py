"""``dexai memory ...``: store, search, edit and export memories."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, TypeVar

import click

from dexai_memory.cli.common import (
    AS_OF_HELP,
    Context,
    common_options,
    daemon_or_local,
    fail,
    parse_as_of,
    progress,
    run,
    store_request,
)
from dexai_memory.cli.lazy import LazyGroup
from dexai_memory.datadir import ensure_home
from dexai_memory.errors import DexaiMemoryError, InvalidMemory
from dexai_memory.models import MANUAL_CONFIDENCE, Memory, MemoryType, SearchFilters, Tier
from dexai_memory.providers import MemoryProvider, make_provider, relevance
from dexai_memory.providers import history as timeline

#: Subcommands that live in their own modules.
LAZY = {
    "ingest": "dexai_memory.cli.ingest:ingest",
    "learn-history": "dexai_memory.cli.history:learn_history",
    "consolidate": "dexai_memory.cli.lifecycle:consolidate",
    "retry": "dexai_memory.cli.lifecycle:retry",
    "recall": "dexai_memory.cli.recall:recall",
    "assemble": "dexai_memory.cli.assemble:assemble",
    "migrate": "dexai_memory.cli.migrate:migrate",
    "share": "dexai_memory.cli.share:share",
    "backup": "dexai_memory.cli.backup:backup",
    "restore-backup": "dexai_memory.cli.backup:restore_backup",
    "export": "dexai_memory.cli.export_import:export",
    "import": "dexai_memory.cli.export_import:import_",
    "prune": "dexai_memory.cli.lifecycle:prune",
    "clear": "dexai_memory.cli.clear:clear",
    "undo": "dexai_memory.cli.clear:undo",
    "done": "dexai_memory.cli.close:done",
    "cancel": "dexai_memory.cli.close:cancel",
    "conflicts": "dexai_memory.cli.conflicts:conflicts",
    "facts": "dexai_memory.cli.facts:facts",
    "resolve": "dexai_memory.cli.conflicts:resolve",
}


@click.group(cls=LazyGroup, lazy_commands=LAZY)
def memory() -> None:
    """Store, search, edit, export and maintain memories.

    Every command takes --user, --project, --home, --config and --json.
    """


# --------------------------------------------------------------------------- helpers
T = TypeVar("T")
TYPE_NAMES = [t.value for t in MemoryType]


@asynccontextmanager
async def open_provider(ctx: Context) -> AsyncIterator[MemoryProvider]:
    """The configured provider for this command, started and closed around the block."""
    ensure_home(ctx.settings.home)
    async with make_provider(ctx.settings) as provider:
        yield provider


def with_provider(ctx: Context, fn: Callable[[MemoryProvider], Awaitable[T]]) -> T:
    """Run ``fn(provider)`` on a started provider; our errors exit cleanly."""

    async def go() -> T:
        async with open_provider(ctx) as provider:
            return await fn(provider)

    return run(go())


def short(memory: Memory, width: int = 100) -> str:
    """One line for a memory: id, type, flags and content."""
    flags = "".join(["*" if memory.pinned else "", "~" if not memory.is_valid else ""])
    text = memory.content if len(memory.content) <= width else memory.content[: width - 1] + "…"
    return f"{memory.id}  {memory.type.value:<12} {memory.tier.value} {flags:<2} {text}"


def render(memory: Memory) -> str:
    """A memory in full, one field a line."""
    d = memory.to_dict()
    lines = [f"{k:>16}: {json.dumps(v, ensure_ascii=False) if isinstance(v, list | dict) else v}"
             for k, v in d.items() if v not in (None, [], {}, False) or k in ("pinned", "archived")]
    return "\n".join(lines)


def check_length(ctx: Context, text: str) -> None:
    """Exit with the message every door gives when ``text`` is longer than ``limits.max_memory_chars``."""
    from dexai_memory.limits import memory_text_error

    too_long = memory_text_error(text, ctx.settings.limits.max_memory_chars)
    if too_long:
        fail(too_long)


def filters_from(ctx: Context, types: tuple[str, ...] = (), tiers: tuple[str, ...] = (), *, all_: bool = False,
                 session: str | None = None) -> SearchFilters:
    """Search filters from common CLI options (raises InvalidMemory for a bad type/tier name)."""
    return SearchFilters.make(project=ctx.project, types=types, tiers=tiers, session_id=session,
                              valid_only=not all_, include_archived=all_)


type_option = click.option("--type", "-t", "types", multiple=True, metavar="TYPE",
                           help=f"Filter by type (repeatable): {', '.join(TYPE_NAMES)}.")
tier_option = click.option("--tier", "tiers", multiple=True, type=click.Choice(["L1", "L2", "L3"], case_sensitive=False),
                           help="Filter by tier (repeatable).")


# --------------------------------------------------------------------------- add / get / edit
@memory.command()
@click.argument("content")
@click.option("--type", "-t", "type_", default="FACT", show_default=True, metavar="TYPE",
              help=f"Memory type: {', '.join(TYPE_NAMES)}.")
@click.option("--importance", "-i", type=click.IntRange(1, 10), default=5, show_default=True, help="1-10.")
@click.option("--confidence", type=click.FloatRange(0, 1), default=MANUAL_CONFIDENCE, show_default=True,
              help="0-1 (added by hand: 0.6; each repetition adds 0.25).")
@click.option("--pin", is_flag=True, help="Pin it: always in the profile, never archived (at most lifecycle.max_pins).")
@click.option("--source", "sources", multiple=True, help="Provenance: id of the turn it came from (repeatable).")
@click.option("--session", default=None, help="Session id.")
@click.option("--tier", type=click.Choice(["L1", "L2", "L3"], case_sensitive=False), default="L2", show_default=True)
@common_options
def add(content: str, type_: str, importance: int, confidence: float, pin: bool, sources: tuple[str, ...],
        session: str | None, tier: str, ctx: Context) -> None:
    """Store a memory, through supersession like every other statement: a repeat is counted,
    a change replaces the older statement (kept in its history).

    CONTENT holds at most limits.max_memory_chars characters (2000); a longer
    text is refused, not cut.

    Example: dexai memory add "Prefers pytest over unittest" --type preference -i 7
    """
    from dexai_memory.agent_tools.ops import add_request
    from dexai_memory.text.redaction import redact

    check_length(ctx, content)
    try:
        # redacted here too (the store redacts every write): supersession and the answer see what is kept
        m = Memory(content=redact(content), user_id=ctx.user, project=ctx.project, type=MemoryType.parse(type_),
                   importance=importance, confidence=confidence, source_ids=sources,
                   session_id=session, tier=Tier.parse(tier))
    except InvalidMemory as exc:
        fail(str(exc))
        return
    # the running daemon stores it (the one writer), else this process: the same function
    reply = daemon_or_local(ctx, {"op": "memory.add", "memory": m.to_dict(), "pin": pin}, add_request)
    stored = Memory.from_dict(reply["memory"])
    action = reply["action"] if reply.get("target") else "ADD"
    text = {"ADD": f"Added {stored.id}: {stored.content}",
            "SUPERSEDE": f"Added {stored.id}: {stored.content} (supersedes {reply['target']})",
            "UPDATE": f"Updated {stored.id}: {stored.content}",
            "NOOP": f"Already known as {stored.id}: {stored.content}"}[action]
    ctx.emit(stored.to_dict(), f"{text} ({reply['reason']})" if action != "ADD" else text)



@memory.command()
@click.argument("memory_id")
@common_options
def get(memory_id: str, ctx: Context) -> None:
    """Show one memory in full, with its links to other memories (found by `consolidate`)."""
    from dexai_memory.lifecycle.links import links_of

    async def read(p: MemoryProvider) -> tuple[Memory, list[dict[str, Any]]]:
        m = await p.get(memory_id, user_id=ctx.user, include_deleted=True)
        return m, await links_of(p, memory_id, user_id=ctx.user)

    m, links = with_provider(ctx, read)
    text = render(m)
    if links:
        lines = [f"{'links':>16}:"]
        for k in links:
            other = k["other"]
            said = f"{other['content']}" + ("" if other["current"] else " (not current)") if other else "(erased)"
            lines.append(f"{'':>18}{k['kind']} {'->' if k['direction'] == 'to' else '<-'} {k['other_id']} "
                         f"({k['reason']}): {said}")
        text += "\n" + "\n".join(lines)
    ctx.emit({**m.to_dict(), "links": links}, text)


@memory.command()
@click.argument("memory_id")
@click.option("--content", "-c", default=None, help="New text (at most limits.max_memory_chars characters).")
@click.option("--type", "-t", "type_", default=None, metavar="TYPE", help="New type.")
@click.option("--importance", "-i", type=click.IntRange(1, 10), default=None, help="New importance 1-10.")
@click.option("--confidence", type=click.FloatRange(0, 1), default=None, help="New confidence 0-1.")
@click.option("--tier", type=click.Choice(["L1", "L2", "L3"], case_sensitive=False), default=None, help="Move tier.")
@click.option("--set", "meta", multiple=True, metavar="KEY=VALUE", help="Set a metadata key (repeatable).")
@common_options
def edit(memory_id: str, content: str | None, type_: str | None, importance: int | None, confidence: float | None,
         tier: str | None, meta: tuple[str, ...], ctx: Context) -> None:
    """Change a memory in place (the change is logged in its history).

    To record that something changed over time instead (keeping the old
    statement for `history` and `--as-of`), use `dexai memory supersede`.
    """
    changes: dict[str, Any] = {}
    if content is not None:
        check_length(ctx, content)
        changes["content"] = content
    if type_ is not None:
        changes["type"] = type_
    if importance is not None:
        changes["importance"] = importance
    if confidence is not None:
        changes["confidence"] = confidence
    if tier is not None:
        changes["tier"] = tier
    if not changes and not meta:
        fail("nothing to change: give --content, --type, --importance, --confidence, --tier or --set")

    from dexai_memory.lifecycle.editing import parse_settings

    m = store_request(ctx, "edit", memory_id=memory_id, changes=changes,
                      metadata=parse_settings(meta) if meta else None)["memory"]
    ctx.emit(m, f"Updated {m['id']}: {m['content']}")


@memory.command()
@click.argument("memory_id")
@common_options
def pin(memory_id: str, ctx: Context) -> None:
    """Pin a memory: always in the injected profile, never archived (at most lifecycle.max_pins, 10)."""
    m = store_request(ctx, "pin", memory_id=memory_id)["memory"]
    ctx.emit(m, f"Pinned {m['id']}: {m['content']}")


@memory.command()
@click.argument("memory_id")
@common_options
def unpin(memory_id: str, ctx: Context) -> None:
    """Unpin a memory."""
    m = store_request(ctx, "unpin", memory_id=memory_id)["memory"]
    ctx.emit(m, f"Unpinned {m['id']}: {m['content']}")


@memory.command()
@click.argument("memory_id")
@click.option("--hard", is_flag=True, help="Erase it for good (row, vectors and history). Default: soft delete.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation of --hard.")
@common_options
def forget(memory_id: str, hard: bool, yes: bool, ctx: Context) -> None:
    """Forget a memory: hidden from search and context (soft, recoverable with
    `dexai memory restore`), or erased with --hard.

    --hard asks for confirmation unless --yes (in --json mode, or without a
    terminal, --yes is required), as `dexai memory clear` does.
    """
    if hard and not yes:
        question = f"Erase {memory_id} for good (no restore, no undo)?"
        if ctx.json or not sys.stdin.isatty():
            fail(f"{question.removesuffix('?')} needs confirmation: pass --yes.")
        click.confirm(question, abort=True)
    done = store_request(ctx, "forget", memory_id=memory_id, hard=hard)["forgotten"]
    if not done:
        fail(f"no memory {memory_id!r} to forget for user {ctx.user!r}")
    ctx.emit({"id": memory_id, "forgotten": True, "hard": hard},
             f"{'Erased' if hard else 'Forgot'} {memory_id}" + ("" if hard else " (restore with `dexai memory restore`)"))


@memory.command()
@click.argument("memory_id")
@common_options
def restore(memory_id: str, ctx: Context) -> None:
    """Bring back a softly forgotten memory."""
    m = store_request(ctx, "restore", memory_id=memory_id)["memory"]
    ctx.emit(m, f"Restored {m['id']}: {m['content']}")


@memory.command()
@click.argument("memory_id")
@click.argument("content")
@click.option("--reason", default="changed by hand", show_default=True, help="Why (kept in the history).")
@common_options
def supersede(memory_id: str, content: str, reason: str, ctx: Context) -> None:
    """Replace a memory with a new statement, keeping the old one in its history.

    CONTENT holds at most limits.max_memory_chars characters (2000).

    Example: dexai memory supersede m_123 "Sam now lives in Lisbon" --reason moved
    """
    check_length(ctx, content)
    new = store_request(ctx, "supersede", memory_id=memory_id, content=content, reason=reason)["memory"]
    ctx.emit(new, f"{memory_id} superseded by {new['id']}: {new['content']}")


# --------------------------------------------------------------------------- search / list / history
@memory.command()
@click.argument("query")
@click.option("--limit", "-n", type=click.IntRange(1, 1000), default=10, show_default=True)
@type_option
@tier_option
@click.option("--all", "all_", is_flag=True, help="Include superseded and archived memories.")
@click.option("--as-of", "as_of", default=None, metavar="ISO-DATE|now", callback=parse_as_of, help=AS_OF_HELP)
@common_options
def search(query: str, limit: int, types: tuple[str, ...], tiers: tuple[str, ...], all_: bool,
           as_of: datetime | None, ctx: Context) -> None:
    """Hybrid search (BM25 + vectors) over your memories, best first.

    Only memories related to the query are shown (a word of it, or a close meaning:
    search.min_similarity), so a query nothing matches finds nothing.
    """
    floor = relevance.min_similarity(ctx.settings)

    async def go(p: MemoryProvider) -> list[dict[str, Any]]:
        f = filters_from(ctx, types, tiers, all_=all_)
        if as_of is not None:
            mems = await timeline.as_of(p, as_of, user_id=ctx.user, query=query, filters=f, limit=limit, floor=floor)
            return [{"score": None, "memory": m} for m in mems]
        return [{"score": r.score, "similarity": r.similarity, "memory": r.memory}
                for r in await relevance.search(p, query, user_id=ctx.user, filters=f, limit=limit, floor=floor)]

    rows = with_provider(ctx, go)
    if ctx.json:
        ctx.emit([{**{k: v for k, v in r.items() if k != "memory"}, **r["memory"].to_dict()} for r in rows])
        return
    if not rows:
        click.echo("No memories found.")
    for r in rows:
        score = f"{r['score']:.2f} " if r["score"] is not None else ""
        click.echo(f"{score}{short(r['memory'])}")


@memory.command(name="list")
@click.option("--limit", "-n", type=click.IntRange(1, 100_000), default=50, show_default=True)
@click.option("--offset", type=click.IntRange(0), default=0)
@type_option
@tier_option
@click.option("--session", default=None, help="Only this session's memories.")
@click.option("--all", "all_", is_flag=True, help="Include superseded and archived memories.")
@click.option("--as-of", "as_of", default=None, metavar="ISO-DATE|now", callback=parse_as_of, help=AS_OF_HELP)
@common_options
def list_(limit: int, offset: int, types: tuple[str, ...], tiers: tuple[str, ...], session: str | None, all_: bool,
          as_of: datetime | None, ctx: Context) -> None:
    """List memories, newest first (`*` pinned, `~` no longer current)."""

    async def go(p: MemoryProvider) -> list[Memory]:
        f = filters_from(ctx, types, tiers, all_=all_, session=session)
        if as_of is not None:
            return await timeline.as_of(p, as_of, user_id=ctx.user, filters=f, limit=limit)
        return await p.list(user_id=ctx.user, filters=f, limit=limit, offset=offset)

    mems = with_provider(ctx, go)
    if ctx.json:
        ctx.emit([m.to_dict() for m in mems])
        return
    if not mems:
        click.echo("No memories.")
    for m in mems:
        click.echo(short(m))


@memory.command()
@click.argument("memory_id")
@common_options
def history(memory_id: str, ctx: Context) -> None:
    """The supersession chain of a memory with every decision and its reason."""
    chain = with_provider(ctx, lambda p: timeline.history(p, memory_id, user_id=ctx.user))
    if ctx.json:
        ctx.emit([{"memory": e.memory.to_dict(), "events": [ev.to_dict() for ev in e.events]} for e in chain])
        return
    for entry in chain:
        m = entry.memory
        until = m.valid_until.strftime("%Y-%m-%d %H:%M") if m.valid_until else "now"
        start = (m.valid_from or m.created_at).strftime("%Y-%m-%d %H:%M")
        click.echo(f"{m.id}  [{start} -> {until}]  {m.content}")
        for ev in entry.events:
            rel = f" -> {ev.related_id}" if ev.related_id else ""
            click.echo(f"    {ev.at.strftime('%Y-%m-%d %H:%M:%S')}  {ev.action}{rel}: {ev.reason}"
                       + (f"\n        was: {ev.details['before']}" if (ev.details or {}).get("before") else ""))


# --------------------------------------------------------------------------- stats / doctor / reembed
@memory.command()
@common_options
def stats(ctx: Context) -> None:
    """Counts by type and tier, validity, the database size, and the model tokens used today and this month."""

    async def go(p: MemoryProvider) -> dict[str, Any]:
        out: dict[str, Any] = {"user": ctx.user, "provider": p.name}
        any_f = SearchFilters(project=ctx.project, valid_only=False, include_archived=True)
        out["total"] = await p.count(user_id=ctx.user, filters=any_f)
        out["valid"] = await p.count(user_id=ctx.user, filters=SearchFilters(project=ctx.project))
        out["pinned"] = await p.count(user_id=ctx.user, filters=SearchFilters(project=ctx.project, pinned=True))
        out["by_type"] = {t.value: n for t in MemoryType
                          if (n := await p.count(user_id=ctx.user, filters=SearchFilters(project=ctx.project,
                                                                                          types=(t,))))}
        out["by_tier"] = {t.value: n for t in Tier
                          if (n := await p.count(user_id=ctx.user, filters=SearchFilters(project=ctx.project,
                                                                                          tiers=(t,))))}
        health = await p.health_check()
        out["database"] = dict(health.details)
        return out

    from dexai_memory.extraction.factory import budget

    data = with_provider(ctx, go)
    data["model_tokens"] = budget(ctx.settings).status()
    lines = [f"User {data['user']} ({data['provider']}): {data['valid']} current of {data['total']} memories,"
             f" {data['pinned']} pinned"]
    lines += [f"  {k:<13} {v}" for k, v in data["by_type"].items()]
    lines.append("  tiers: " + ", ".join(f"{k} {v}" for k, v in data["by_tier"].items()))
    if "size_bytes" in data["database"]:
        lines.append(f"  database: {data['database'].get('path')} ({data['database']['size_bytes'] / 1e6:.1f} MB)")
    if data["database"].get("vectors_pending"):
        lines.append(f"  {data['database']['vectors_pending']} memories wait for vectors "
                     "('dexai memory reembed --missing', or a running daemon)")
    tokens = data["model_tokens"]
    limit = f" of {tokens['daily_budget']:,}" if tokens["daily_budget"] else ""
    lines.append(f"  model tokens: today {tokens['today']['total_tokens']:,}{limit}, "
                 f"this month {tokens['month']['total_tokens']:,}")
    ctx.emit(data, "\n".join(lines))


@memory.command()
@common_options
def doctor(ctx: Context) -> None:
    """Check config, database, sqlite-vec, embedder and queue; say what to fix."""
    from dexai_memory.cli.doctor import run_checks

    checks = run(run_checks(ctx.settings))
    if ctx.json:
        ctx.emit({"ok": all(c.ok for c in checks), "checks": [c.__dict__ for c in checks]})
    else:
        for c in checks:
            click.echo(f"{'ok  ' if c.ok else 'FAIL'}  {c.name}: {c.detail}")
            if not c.ok and c.fix:
                click.echo(f"      fix: {c.fix}")
    if not all(c.ok for c in checks):
        sys.exit(1)


@memory.command()
@click.option("--missing", is_flag=True,
              help="Only embed memories stored without a vector (after 'ingest --vectors later').")
@common_options
def reembed(missing: bool, ctx: Context) -> None:
    """Re-embed every memory with the configured embedder (after changing models).

    With --missing, embed only the memories waiting for a vector (a big
    ingest defers them); the others keep theirs.
    """

    async def go(p: MemoryProvider) -> int:
        from dexai_memory.providers.native import NativeProvider

        if not isinstance(p, NativeProvider):
            raise DexaiMemoryError(f"reembed applies to the native provider, not {p.name}")
        from dexai_memory.embeddings import bulk_embedder

        if missing:
            if p.embedder is None:
                raise DexaiMemoryError("embedding.backend is 'none': there is nothing to embed with")
            with progress(await p.pending_vectors(), "embedding", enabled=not ctx.json) as update:
                return await p.fill_vectors(progress=update, embedder=bulk_embedder(ctx.settings.embedding))
        with progress(None, "re-embedding", enabled=not ctx.json) as update:
            return await p.reembed(progress=update, embedder=bulk_embedder(ctx.settings.embedding))

    n = with_provider(ctx, go)
    ctx.emit({"reembedded": n, "missing_only": missing},
             f"Embedded {n} memories waiting for vectors" if missing else f"Re-embedded {n} memories")
