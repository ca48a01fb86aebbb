"""``dexai memory export`` and ``dexai memory import``: memories out to JSON, JSONL or Markdown,
and back in from JSON or JSONL (checked entry by entry first, then written all or nothing).

An export holds every memory that is not deleted (superseded and archived ones
too: the history of what changed is part of the memories; ``--current`` keeps
only the current ones), each with all its fields and, in JSON and JSONL, its
history events (``events``). Importing it into an empty store gives back the
same memories: ids, content, type, importance, confidence, timestamps, the
validity window, supersession links and their history, pins, project and
session. Importing into a store that holds memories already decides each new
current statement against them (:mod:`dexai_memory.supersession.imports`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from dexai_memory.cli.common import Context, common_options, fail, progress
from dexai_memory.cli.memory import with_provider
from dexai_memory.errors import DexaiMemoryError, InvalidMemory
from dexai_memory.models import Memory, MemoryEvent, MemoryType, SearchFilters
from dexai_memory.providers import MemoryProvider
from dexai_memory.providers.redacting import redact_memory
from dexai_memory.supersession.imports import Imported


@click.command()
@click.option("--format", "fmt", type=click.Choice(["json", "jsonl", "markdown"]), default="json", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file (default: stdout). An existing file is kept as FILE.bak.")
@click.option("--current", is_flag=True, help="Only current memories (not superseded or archived ones).")
@click.option("--all", "all_", is_flag=True, hidden=True, help="Kept for compatibility: the default now.")
@common_options
def export(fmt: str, output: Path | None, current: bool, all_: bool, ctx: Context) -> None:
    """Export memories as JSON (default) or JSONL, both re-importable with their history, or Markdown.

    Superseded and archived memories are included (with --current, not).
    """
    del all_  # everything is the default

    async def go(p: MemoryProvider) -> tuple[list[Memory], dict[str, list[MemoryEvent]]]:
        f = SearchFilters.make(project=ctx.project, valid_only=current, include_archived=not current)
        mems = await p.list(user_id=ctx.user, filters=f, limit=0)
        mems.sort(key=lambda m: (m.created_at, m.id))  # oldest first: a chain reads in order
        events = {m.id: await p.events(m.id, user_id=m.user_id) for m in mems} if fmt != "markdown" else {}
        return mems, events

    mems, events = with_provider(ctx, go)
    if fmt == "json":
        text = json.dumps([exported(m, events[m.id]) for m in mems], ensure_ascii=False, indent=2)
    elif fmt == "jsonl":
        text = "".join(json.dumps(exported(m, events[m.id]), ensure_ascii=False) + "\n" for m in mems)
    else:
        text = to_markdown(mems, ctx.user)
    if output is None:
        click.echo(text, nl=not text.endswith("\n"))
        return
    write_private_text(output, text if text.endswith("\n") else text + "\n")
    click.echo(f"Exported {len(mems)} memories to {output}", err=True)


def exported(memory: Memory, events: list[MemoryEvent]) -> dict[str, Any]:
    """A memory as an export entry: its fields plus its history events (without the repeated id)."""
    out = memory.to_dict()
    out["events"] = [{k: v for k, v in e.to_dict().items() if k != "memory_id"} for e in events]
    return out


def _events(memory_id: str, raw: Any) -> list[MemoryEvent]:
    """The ``events`` of an import entry, checked (raises InvalidMemory)."""
    if not isinstance(raw, list):
        raise InvalidMemory("events must be a list")
    out = []
    for e in raw:
        if not isinstance(e, dict) or not isinstance(e.get("action"), str) or not e.get("at"):
            raise InvalidMemory("each event needs an action and a time ('at')")
        details = e.get("details") or {}
        if not isinstance(details, dict):
            raise InvalidMemory("an event's details must be an object")
        out.append(MemoryEvent(memory_id, e["action"], str(e.get("reason") or ""),
                               datetime.fromisoformat(str(e["at"])), e.get("related_id"), details))
    return out


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
    #: The history events of the file's memories, by memory id.
    events: dict[str, list[MemoryEvent]] = field(default_factory=dict)


def _entries(file: Path) -> Iterator[tuple[str, str]]:
    """(where, JSON text) of each entry of ``file`` (``-`` = stdin): the items of a JSON array (the
    default export) or the lines of JSONL; a clean error for text that is not UTF-8 or holds a NUL."""
    stream = sys.stdin.buffer if str(file) == "-" else file.open("rb")
    with stream:
        data = stream.read()
    if data.lstrip()[:1] == b"[":
        try:
            items = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            fail(f"{file}: not UTF-8 text (byte 0x{data[exc.start]:02x}); nothing was imported")
        except json.JSONDecodeError as exc:
            fail(f"{file}: {exc}; nothing was imported")
        for number, item in enumerate(items, 1):
            yield f"{file}: entry {number}", json.dumps(item, ensure_ascii=False)
        return
    for number, raw in enumerate(data.splitlines(keepends=True), 1):
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
        yield where, line


def read_import_lines(file: Path, ctx: Context,
                      events: dict[str, list[MemoryEvent]] | None = None) -> list[tuple[str, Memory]]:
    """Every entry of ``file`` (``-`` = stdin; a JSON array or JSONL) checked and turned into a memory,
    or a clean error naming the file and line or entry (bad JSON, invalid UTF-8 or a binary file, a
    bad field, a NUL character, the same id twice with different contents). The entries' history
    events go to ``events`` (by memory id)."""
    out: list[tuple[str, Memory]] = []
    first_line: dict[str, tuple[str, Memory]] = {}
    for where, line in _entries(file):
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                raise InvalidMemory("each line must be a JSON object")
            raw_events = data.pop("events", [])
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
            memory = redact_memory(memory)  # as the store keeps it (already redacted text: as is)
            if not given_id:
                memory = memory.replace(id=content_id(memory))
            checked = _events(memory.id, raw_events)
        except UnicodeEncodeError:
            fail(f"{where}: contains half of a surrogate pair (a broken \\u escape); nothing was imported")
        except (json.JSONDecodeError, InvalidMemory, TypeError, ValueError) as exc:
            fail(f"{where}: {exc}; nothing was imported")
        earlier = first_line.get(memory.id)
        if earlier is not None:
            if earlier[1].content != memory.content or earlier[1].user_id != memory.user_id:
                fail(f"{where}: id {memory.id} is also on {earlier[0]} with another content; "
                     "nothing was imported")
            continue  # the same memory twice in the file: stored once
        first_line[memory.id] = (where, memory)
        out.append((where, memory))
        if events is not None and checked:
            events[memory.id] = checked
    return out


async def plan_import(p: MemoryProvider, lines: list[tuple[str, Memory]]) -> ImportPlan:
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


@click.command(name="import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True, path_type=Path))
@click.option("--skip-existing", is_flag=True, hidden=True,
              help="Kept for compatibility: lines already stored are always skipped.")
@click.option("--vectors", type=click.Choice(["auto", "now", "later"]), default="auto", show_default=True,
              help="now: embed before returning (on every core); later: store without vectors (keyword search "
                   "finds them at once; the daemon or 'dexai memory reembed --missing' embeds them); auto: now "
                   "for at most embedding.ingest_now_max_turns memories (1000), else later.")
@common_options
def import_(file: Path, skip_existing: bool, vectors: str, ctx: Context) -> None:
    """Import memories from an export: a JSON array (the default export) or JSONL, one memory
    per entry, `content` plus any model fields and its history `events`.

    Entries without `user_id` get --user; ids are kept when given. Every entry is
    checked before anything is written: a bad one stops the import with its
    line (or entry) number and nothing is stored; a write that fails undoes the
    import: all or nothing.

    New current statements go through supersession like `dexai memory add`,
    oldest first by when they were said (valid_from, else created_at): one that
    changes a stored fact replaces it (the old one stays in its history), a
    repeat is not stored twice, an unsure one is kept beside it for review
    ('dexai memory conflicts'). Entries of an export (with their history) are not
    compared among themselves, so an export imported into an empty store comes
    back exactly. Superseded and archived entries are stored as they are.

    Importing again is safe: a line whose id is already stored (lines
    without an id get one from their content) is skipped and counted; a
    stored id with another content keeps the stored memory and is reported
    as a conflict.
    """
    del skip_existing  # always on
    events: dict[str, list[MemoryEvent]] = {}
    lines = read_import_lines(file, ctx, events)

    async def go(p: MemoryProvider) -> tuple[ImportPlan, Imported, str, int]:
        from dexai_memory.cli.ingest import embed_waiting, resolve_vectors
        from dexai_memory.daemon.lease import write_lease

        # a running daemon lends its write lock: the plan and every decision see a store nobody
        # else changes meanwhile (dexai_memory.daemon.lease)
        async with write_lease(ctx.settings):
            plan = await plan_import(p, lines)
            done = await _store_planned(p, plan)
        mode = resolve_vectors(vectors, len(plan.todo), ctx.settings.embedding.ingest_now_max_turns)
        if mode == "now":
            await embed_waiting(p, ctx)
        return plan, done, mode, await p.pending_vectors()

    async def _store_planned(p: MemoryProvider, plan: ImportPlan) -> Imported:
        from dexai_memory.supersession.imports import import_memories

        # store first, then embed in big batches on every core; new current statements go through
        # supersession oldest first, the rest in one transaction
        async with p.deferred_vectors():
            with progress(len(plan.todo), "importing", enabled=not ctx.json) as update:
                return await import_memories(
                    p, plan.todo, events, top_k=ctx.settings.supersession.comparison_top_k,
                    enabled=ctx.settings.supersession.enabled, progress=update,
                    store_batch=lambda todo: store_all_or_nothing(p, todo, lambda _n: None))

    plan, done, mode, pending = with_provider(ctx, go)
    added = len(done.stored)
    text = f"Imported {added} memories" + (f", skipped {plan.skipped} already stored" if plan.skipped else "")
    if done.superseded:
        text += f"\n{len(done.superseded)} replaced an older stored statement (kept in its history)"
    if done.merged:
        text += f"\n{len(done.merged)} were already known or merged into a stored memory"
    if done.open_conflicts:
        text += (f"\n{len(done.open_conflicts)} may contradict a stored memory: both kept, see "
                 "'dexai memory conflicts'")
    if plan.conflicts:
        shown = ", ".join(plan.conflicts[:10]) + (" ..." if len(plan.conflicts) > 10 else "")
        text += (f"\n{len(plan.conflicts)} line(s) carry the id of a stored memory with another content; the stored "
                 f"one was kept: {shown}")
    if pending:
        text += (f"\n{pending} memories wait for their vectors (keyword search finds them now): a running "
                 "'dexai daemon' embeds them in the background, or run 'dexai memory reembed --missing'")
    out: dict[str, Any] = {"imported": added, "skipped": plan.skipped, "conflicts": plan.conflicts, "vectors": mode,
                           "vectors_pending": pending}
    # what supersession did with new statements, present only when it did something
    for key, pairs, names in (("superseded", done.superseded, ("id", "replaced")),
                              ("merged", done.merged, ("id", "into")),
                              ("open_contradictions", done.open_conflicts, ("id", "with"))):
        if pairs:
            out[key] = [dict(zip(names, pair, strict=True)) for pair in pairs]
    ctx.emit(out, text)
