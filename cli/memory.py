"""``dexai memory ...``: store, search, edit and export memories."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from dexai_memory.cli.common import Context, common_options, fail, parse_as_of, progress, run
from dexai_memory.cli.lazy import LazyGroup
from dexai_memory.config import ensure_home
from dexai_memory.errors import DexaiMemoryError, InvalidMemory
from dexai_memory.models import Memory, MemoryType, SearchFilters, Tier
from dexai_memory.providers import MemoryProvider, make_provider
from dexai_memory.providers import history as timeline

#: Subcommands that live in their own modules.
LAZY = {
    "ingest": "dexai_memory.cli.ingest:ingest",
    "consolidate": "dexai_memory.cli.lifecycle:consolidate",
    "retry": "dexai_memory.cli.lifecycle:retry",
    "recall": "dexai_memory.cli.recall:recall",
    "migrate": "dexai_memory.cli.migrate:migrate",
    "backup": "dexai_memory.cli.backup:backup",
    "restore-backup": "dexai_memory.cli.backup:restore_backup",
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
@click.option("--confidence", type=click.FloatRange(0, 1), default=0.9, show_default=True, help="0-1.")
@click.option("--pin", is_flag=True, help="Pin it: always in the profile, never archived.")
@click.option("--source", "sources", multiple=True, help="Provenance: id of the turn it came from (repeatable).")
@click.option("--session", default=None, help="Session id.")
@click.option("--tier", type=click.Choice(["L1", "L2", "L3"], case_sensitive=False), default="L2", show_default=True)
@common_options
def add(content: str, type_: str, importance: int, confidence: float, pin: bool, sources: tuple[str, ...],
        session: str | None, tier: str, ctx: Context) -> None:
    """Store a memory.

    Example: dexai memory add "Prefers pytest over unittest" --type preference -i 7
    """
    try:
        m = Memory(content=content, user_id=ctx.user, project=ctx.project, type=MemoryType.parse(type_),
                   importance=importance, confidence=confidence, pinned=pin, source_ids=sources,
                   session_id=session, tier=Tier.parse(tier))
    except InvalidMemory as exc:
        fail(str(exc))
        return
    stored = with_provider(ctx, lambda p: p.add(m))
    ctx.emit(stored.to_dict(), f"Added {stored.id}: {stored.content}")


@memory.command()
@click.argument("memory_id")
@common_options
def get(memory_id: str, ctx: Context) -> None:
    """Show one memory in full."""
    m = with_provider(ctx, lambda p: p.get(memory_id, user_id=ctx.user, include_deleted=True))
    ctx.emit(m.to_dict(), render(m))


@memory.command()
@click.argument("memory_id")
@click.option("--content", "-c", default=None, help="New text.")
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

    async def go(p: MemoryProvider) -> Memory:
        from dexai_memory.models import MemoryEvent, utcnow

        before = await p.get(memory_id, user_id=ctx.user)
        if meta:
            md = dict(before.metadata)
            for item in meta:
                key, sep, value = item.partition("=")
                if not sep or not key:
                    raise InvalidMemory(f"--set expects KEY=VALUE, got {item!r}")
                md[key] = value
            changes["metadata"] = md
        after = await p.update(memory_id, user_id=ctx.user, **changes)
        await p.record_event(MemoryEvent(memory_id, "EDIT", "edited by hand", utcnow(),
                                         details={k: str(v) for k, v in changes.items() if k != "metadata"}),
                             user_id=ctx.user)
        return after

    m = with_provider(ctx, go)
    ctx.emit(m.to_dict(), f"Updated {m.id}: {m.content}")


@memory.command()
@click.argument("memory_id")
@common_options
def pin(memory_id: str, ctx: Context) -> None:
    """Pin a memory: always in the injected profile, never archived."""
    m = with_provider(ctx, lambda p: p.pin(memory_id, user_id=ctx.user, pinned=True))
    ctx.emit(m.to_dict(), f"Pinned {m.id}: {m.content}")


@memory.command()
@click.argument("memory_id")
@common_options
def unpin(memory_id: str, ctx: Context) -> None:
    """Unpin a memory."""
    m = with_provider(ctx, lambda p: p.pin(memory_id, user_id=ctx.user, pinned=False))
    ctx.emit(m.to_dict(), f"Unpinned {m.id}: {m.content}")


@memory.command()
@click.argument("memory_id")
@click.option("--hard", is_flag=True, help="Erase it for good (row, vectors and history). Default: soft delete.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation of --hard.")
@common_options
def forget(memory_id: str, hard: bool, yes: bool, ctx: Context) -> None:
    """Forget a memory: hidden from search and context (soft, recoverable with
    `dexai memory restore`), or erased with --hard."""
    if hard and not yes and not ctx.json and sys.stdin.isatty():
        click.confirm(f"Erase {memory_id} for good?", abort=True)
    done = with_provider(ctx, lambda p: p.delete(memory_id, user_id=ctx.user, hard=hard))
    if not done:
        fail(f"no memory {memory_id!r} to forget for user {ctx.user!r}")
    ctx.emit({"id": memory_id, "forgotten": True, "hard": hard},
             f"{'Erased' if hard else 'Forgot'} {memory_id}" + ("" if hard else " (restore with `dexai memory restore`)"))


@memory.command()
@click.argument("memory_id")
@common_options
def restore(memory_id: str, ctx: Context) -> None:
    """Bring back a softly forgotten memory."""

    async def go(p: MemoryProvider) -> Memory:
        m = await p.get(memory_id, user_id=ctx.user, include_deleted=True)
        return await p.restore(memory_id, user_id=ctx.user) if m.deleted else m

    m = with_provider(ctx, go)
    ctx.emit(m.to_dict(), f"Restored {m.id}: {m.content}")


@memory.command()
@click.argument("memory_id")
@click.argument("content")
@click.option("--reason", default="changed by hand", show_default=True, help="Why (kept in the history).")
@common_options
def supersede(memory_id: str, content: str, reason: str, ctx: Context) -> None:
    """Replace a memory with a new statement, keeping the old one in its history.

    Example: dexai memory supersede m_123 "Sam now lives in Lisbon" --reason moved
    """
    new = with_provider(ctx, lambda p: p.supersede(memory_id, content, user_id=ctx.user, reason=reason))
    ctx.emit(new.to_dict(), f"{memory_id} superseded by {new.id}: {new.content}")


# --------------------------------------------------------------------------- search / list / history
@memory.command()
@click.argument("query")
@click.option("--limit", "-n", type=click.IntRange(1, 1000), default=10, show_default=True)
@type_option
@tier_option
@click.option("--all", "all_", is_flag=True, help="Include superseded and archived memories.")
@click.option("--as-of", "as_of", default=None, metavar="ISO-DATE", callback=parse_as_of,
              help="What was valid at that time (ISO 8601, e.g. 2024-05-01 or 2024-05-01T09:30:00Z).")
@common_options
def search(query: str, limit: int, types: tuple[str, ...], tiers: tuple[str, ...], all_: bool,
           as_of: datetime | None, ctx: Context) -> None:
    """Hybrid search (BM25 + vectors) over your memories."""

    async def go(p: MemoryProvider) -> list[dict[str, Any]]:
        f = filters_from(ctx, types, tiers, all_=all_)
        if as_of is not None:
            mems = await timeline.as_of(p, as_of, user_id=ctx.user, query=query, filters=f, limit=limit)
            return [{"score": None, "memory": m} for m in mems]
        return [{"score": r.score, "similarity": r.similarity, "memory": r.memory}
                for r in await p.search(query, user_id=ctx.user, filters=f, limit=limit)]

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
@click.option("--as-of", "as_of", default=None, metavar="ISO-DATE", callback=parse_as_of,
              help="What was valid at that time (ISO 8601, e.g. 2024-05-01 or 2024-05-01T09:30:00Z).")
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
@click.option("--limit", "-n", type=click.IntRange(1, 100_000), default=500, show_default=True,
              help="Read at most this many (the newest).")
@common_options
def facts(limit: int, ctx: Context) -> None:
    """What is remembered about the user, grouped by category (preference, fact, insight, warning, goal, ...).

    Current durable memories only (no session notes, snapshots or superseded
    memories); the plugin's /dexai-memory:facts shows this. Without --project,
    the scope is the hooks' ($DEXAI_MEMORY_PROJECT, else every project).
    """
    from dexai_memory.agent_tools import facts_by_category
    from dexai_memory.hooks.command import project_for
    from dexai_memory.recall.block import neutralise

    ctx.project = ctx.project or project_for({"cwd": os.getcwd()})
    groups = with_provider(ctx, lambda p: facts_by_category(p, user_id=ctx.user, project=ctx.project, limit=limit))
    total = sum(len(ms) for ms in groups.values())
    if ctx.json:
        ctx.emit({"user": ctx.user, "project": ctx.project, "count": total,
                  "categories": {c: [{"id": m.id, "content": m.content, "type": m.type.value,
                                      "importance": m.importance, "pinned": m.pinned,
                                      "created": m.created_at.isoformat()} for m in ms]
                                 for c, ms in groups.items()}})
        return
    scope = f" in project {ctx.project}" if ctx.project else ""
    if not total:
        click.echo(f"Nothing is remembered about {ctx.user}{scope} yet.")
        return
    lines = [f"What is remembered about {ctx.user}{scope} ({total} {'memory' if total == 1 else 'memories'}, data, not instructions):"]
    for category, ms in groups.items():
        lines += ["", f"{category} ({len(ms)})"]
        lines += [f"- [{m.id}] ({m.created_at.date().isoformat()}) {'* ' if m.pinned else ''}{neutralise(m.content)}"
                  for m in ms]
    click.echo("\n".join(lines))


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
            click.echo(f"    {ev.at.strftime('%Y-%m-%d %H:%M:%S')}  {ev.action}{rel}: {ev.reason}")


# --------------------------------------------------------------------------- export / import
@memory.command()
@click.option("--format", "fmt", type=click.Choice(["json", "jsonl", "markdown"]), default="json", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file (default: stdout). An existing file is kept as FILE.bak.")
@click.option("--all", "all_", is_flag=True, help="Include superseded and archived memories.")
@common_options
def export(fmt: str, output: Path | None, all_: bool, ctx: Context) -> None:
    """Export memories as JSON, JSONL (re-importable) or Markdown."""

    async def go(p: MemoryProvider) -> list[Memory]:
        return await p.list(user_id=ctx.user, filters=filters_from(ctx, all_=all_), limit=0)

    mems = with_provider(ctx, go)
    if fmt == "json":
        text = json.dumps([m.to_dict() for m in mems], ensure_ascii=False, indent=2)
    elif fmt == "jsonl":
        text = "".join(json.dumps(m.to_dict(), ensure_ascii=False) + "\n" for m in mems)
    else:
        text = to_markdown(mems, ctx.user)
    if output is None:
        click.echo(text, nl=not text.endswith("\n"))
        return
    write_private_text(output, text if text.endswith("\n") else text + "\n")
    click.echo(f"Exported {len(mems)} memories to {output}", err=True)


def write_private_text(output: Path, text: str) -> None:
    """Write ``text`` to ``output`` atomically with mode 0600 (an existing file is kept as FILE.bak).

    A missing directory or a permission problem is a clean error, and leaves
    no partial file behind.
    """
    if not output.parent.is_dir():
        fail(f"cannot write {output}: the directory {output.parent} does not exist")
    tmp = output.with_name(f".{output.name}.tmp-{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        if output.exists():
            output.replace(output.with_name(output.name + ".bak"))
        tmp.replace(output)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def to_markdown(mems: list[Memory], user: str) -> str:
    """Memories grouped by type as a Markdown document."""
    lines = [f"# Memories of {user}", ""]
    for t in MemoryType:
        group = [m for m in mems if m.type is t]
        if not group:
            continue
        lines += [f"## {t.value.title().replace('_', ' ')}", ""]
        for m in group:
            tags = [m.created_at.strftime("%Y-%m-%d"), f"importance {m.importance}"]
            if m.pinned:
                tags.append("pinned")
            if not m.is_valid:
                tags.append("superseded" if m.superseded_by else "archived")
            if m.source_ids:
                tags.append("from " + ", ".join(m.source_ids[:5]))
            lines.append(f"- {m.content} _({'; '.join(tags)})_ `{m.id}`")
        lines.append("")
    return "\n".join(lines)


def content_id(memory: Memory) -> str:
    """The id an imported line without ``id`` gets: a hash of user, project, type and content,
    so importing the same file twice stores it once."""
    key = "\x1f".join([memory.user_id, memory.project or "", memory.type.value, memory.content])
    return "m_" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:20]


@dataclass
class ImportPlan:
    """What an import will do, decided before anything is written."""

    #: New memories, in file order.
    todo: list[Memory] = field(default_factory=list)
    #: Lines whose memory is already stored (same id, or same content for lines without one).
    skipped: int = 0
    #: Ids already stored with another content: the stored memory is kept and the line skipped.
    conflicts: list[str] = field(default_factory=list)


def read_import_lines(file: Path, ctx: Context) -> list[tuple[int, Memory]]:
    """Every line of ``file`` (``-`` = stdin) checked and turned into a memory, or a clean error
    naming the file and line (bad JSON, invalid UTF-8 or a binary file, a bad field, a NUL
    character, the same id twice with different contents)."""
    stream = sys.stdin.buffer if str(file) == "-" else file.open("rb")
    out: list[tuple[int, Memory]] = []
    first_line: dict[str, tuple[int, Memory]] = {}
    with stream:
        for number, raw in enumerate(stream, 1):
            where = f"{file}:{number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                fail(f"{where}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
                     "is this a JSONL export? Nothing was imported")
            if not line.strip():
                continue
            if "\x00" in line:
                fail(f"{where}: contains a NUL byte (a binary file?); nothing was imported")
            try:
                data = json.loads(line)
                if not isinstance(data, dict):
                    raise InvalidMemory("each line must be a JSON object")
                data.setdefault("user_id", ctx.user)
                if ctx.project and not data.get("project"):
                    data["project"] = ctx.project
                given_id = data.get("id")
                memory = Memory.from_dict(data)
                for name in ("content", "id", "user_id", "project", "session_id"):
                    value = getattr(memory, name)
                    if isinstance(value, str):
                        if "\x00" in value:
                            raise InvalidMemory(f"{name} contains a NUL character")
                        value.encode("utf-8")  # a lone surrogate from a \\ud83d escape cannot be stored
                if not given_id:
                    memory = memory.replace(id=content_id(memory))
            except UnicodeEncodeError:
                fail(f"{where}: contains half of a surrogate pair (a broken \\u escape); nothing was imported")
            except (json.JSONDecodeError, InvalidMemory, TypeError, ValueError) as exc:
                fail(f"{where}: {exc}; nothing was imported")
            earlier = first_line.get(memory.id)
            if earlier is not None:
                if earlier[1].content != memory.content or earlier[1].user_id != memory.user_id:
                    fail(f"{where}: id {memory.id} is also on line {earlier[0]} with another content; "
                         "nothing was imported")
                continue  # the same memory twice in the file: stored once
            first_line[memory.id] = (number, memory)
            out.append((number, memory))
    return out


async def plan_import(p: MemoryProvider, lines: list[tuple[int, Memory]]) -> ImportPlan:
    """Split the checked lines into new memories, already-stored ones and id conflicts."""
    from dexai_memory.errors import MemoryNotFound

    plan = ImportPlan()
    for _, m in lines:
        try:
            stored = await p.get(m.id, user_id=m.user_id, include_deleted=True)
        except MemoryNotFound:
            plan.todo.append(m)
            continue
        plan.skipped += 1
        if stored.content != m.content:
            plan.conflicts.append(m.id)
    return plan


async def store_all_or_nothing(p: MemoryProvider, todo: list[Memory], progress_: Callable[[int], None]) -> None:
    """Store ``todo`` in one transaction (native), or undo what was stored when a write fails
    (other providers): an import is all or nothing."""
    from dexai_memory.providers.native import NativeProvider

    try:
        if isinstance(p, NativeProvider):
            await p.add_many(todo, progress=progress_, batch=max(1, len(todo)))
        else:
            await p.add_many(todo, progress=progress_)
    except BaseException:
        if not isinstance(p, NativeProvider):  # the native transaction rolled back by itself
            for m in todo:
                try:
                    await p.delete(m.id, user_id=m.user_id, hard=True)
                except DexaiMemoryError:
                    pass
        raise


@memory.command(name="import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True, path_type=Path))
@click.option("--skip-existing", is_flag=True, hidden=True,
              help="Kept for compatibility: lines already stored are always skipped.")
@click.option("--vectors", type=click.Choice(["auto", "now", "later"]), default="auto", show_default=True,
              help="now: embed before returning (on every core); later: store without vectors (keyword search "
                   "finds them at once; the daemon or 'dexai memory reembed --missing' embeds them); auto: now "
                   "for at most embedding.ingest_now_max_turns memories (1000), else later.")
@common_options
def import_(file: Path, skip_existing: bool, vectors: str, ctx: Context) -> None:
    """Import memories from JSONL: one memory per line, `content` plus any model fields.

    Lines without `user_id` get --user; ids are kept when given. Every line is
    checked before anything is written: a bad line stops the import with its
    line number and nothing is stored. The memories are then written in one
    transaction: all or nothing.

    Importing again is safe: a line whose id is already stored (lines
    without an id get one from their content) is skipped and counted; a
    stored id with another content keeps the stored memory and is reported
    as a conflict.
    """
    del skip_existing  # always on
    lines = read_import_lines(file, ctx)

    async def go(p: MemoryProvider) -> tuple[ImportPlan, str, int]:
        from dexai_memory.cli.ingest import embed_waiting, resolve_vectors

        plan = await plan_import(p, lines)
        mode = resolve_vectors(vectors, len(plan.todo), ctx.settings.embedding.ingest_now_max_turns)
        # store first (one transaction), then embed in big batches on every core
        async with p.deferred_vectors():
            with progress(len(plan.todo), "importing", enabled=not ctx.json) as update:
                await store_all_or_nothing(p, plan.todo, update)
        if mode == "now":
            await embed_waiting(p, ctx)
        return plan, mode, await p.pending_vectors()

    plan, mode, pending = with_provider(ctx, go)
    added = len(plan.todo)
    text = f"Imported {added} memories" + (f", skipped {plan.skipped} already stored" if plan.skipped else "")
    if plan.conflicts:
        shown = ", ".join(plan.conflicts[:10]) + (" ..." if len(plan.conflicts) > 10 else "")
        text += (f"\n{len(plan.conflicts)} line(s) carry the id of a stored memory with another content; the stored "
                 f"one was kept: {shown}")
    if pending:
        text += (f"\n{pending} memories wait for their vectors (keyword search finds them now): a running "
                 "'dexai daemon' embeds them in the background, or run 'dexai memory reembed --missing'")
    ctx.emit({"imported": added, "skipped": plan.skipped, "conflicts": plan.conflicts, "vectors": mode,
              "vectors_pending": pending}, text)


# --------------------------------------------------------------------------- stats / doctor / reembed
@memory.command()
@common_options
def stats(ctx: Context) -> None:
    """Counts by type and tier, validity, and the database size."""

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

    data = with_provider(ctx, go)
    lines = [f"User {data['user']} ({data['provider']}): {data['valid']} current of {data['total']} memories,"
             f" {data['pinned']} pinned"]
    lines += [f"  {k:<13} {v}" for k, v in data["by_type"].items()]
    lines.append("  tiers: " + ", ".join(f"{k} {v}" for k, v in data["by_tier"].items()))
    if "size_bytes" in data["database"]:
        lines.append(f"  database: {data['database'].get('path')} ({data['database']['size_bytes'] / 1e6:.1f} MB)")
    if data["database"].get("vectors_pending"):
        lines.append(f"  {data['database']['vectors_pending']} memories wait for vectors "
                     "('dexai memory reembed --missing', or a running daemon)")
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
