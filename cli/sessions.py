"""``dexai sessions list | show | delete``: Agent SDK sessions kept by our session store."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click

from dexai_memory.cli.common import Context, common_options, fail

if TYPE_CHECKING:
    from dexai_memory.sessions.store import SessionStore


def _store(ctx: Context) -> SessionStore:
    from dexai_memory.sessions.store import SessionStore

    return SessionStore.open(ctx.settings)


def _when(mtime_ms: int) -> str:
    return datetime.fromtimestamp(mtime_ms / 1000).strftime("%Y-%m-%d %H:%M")


def _environment(state: Mapping[str, Any], env: Mapping[str, Any]) -> str:
    """The session's system state and last known environment as ``show`` prints them ('' when unknown)."""
    parts = [f"{k.replace('_', ' ')}: {v}" for k, v in {**state, **{k: env.get(k) for k in ("version", "platform")}}.items()
             if v and k != "last_workspace"]
    snap = env.get("system_snapshot") or {}
    parts += [f"{k.replace('_', ' ')}: {v}" for k, v in snap.items() if v is not None]
    where = state.get("last_workspace") or env.get("workspace")
    if not where and not parts:
        return ""
    when = f" (as of {_when(int(env['last_update']))})" if env.get("last_update") else ""
    return f"  workspace: {where or '-'}{when}\n" + "".join(f"    {p}\n" for p in parts)


@click.group()
def sessions() -> None:
    """Agent SDK sessions mirrored into <data dir>/sessions.db by
    ClaudeAgentOptions(session_store=SessionStore.open(settings))."""


@sessions.command("list")
@click.option("--project-key", default=None, help="Only sessions of this SDK project key (default: all).")
@common_options
def list_sessions(ctx: Context, project_key: str | None) -> None:
    """Stored sessions, newest first: entries, tool calls, failures and tokens."""
    found = _store(ctx).sessions(project_key)
    lines = [f"{s.session_id}  {_when(s.mtime)}  {s.entries} entries, {s.tools.total_calls} tool calls "
             f"({s.tools.failures} failed), {s.input_tokens + s.output_tokens:,} tokens  "
             f"{(s.first_prompt or '')[:60]!r}" for s in found]
    ctx.emit([s.as_dict() for s in found], "\n".join(lines) or "no sessions stored")


@sessions.command()
@click.argument("session_id")
@click.option("--project-key", default=None, help="The SDK project key, when one id is stored under several.")
@common_options
def show(ctx: Context, session_id: str, project_key: str | None) -> None:
    """One session's statistics: tool calls by tool, failures, token usage, first prompt, its system
    state and last known environment (workspace, git branch, model, Claude Code version, load and
    disk use), and its tasks (to-do items and subagents: running ones, and finished ones for 24 hours)."""
    info = _store(ctx).info(session_id, project_key=project_key)
    if info is None:
        return fail(f"no stored session {session_id!r} (see `dexai sessions list`)")
    data = info.as_dict()
    tools = ", ".join(f"{name} {n}" for name, n in info.tools.by_tool.items()) or "none"
    text = (f"session {info.session_id} (project key {info.project_key}), last written {_when(info.mtime)}\n"
            f"  first prompt: {info.first_prompt or '-'}\n  entries: {info.entries}\n"
            f"  tool calls: {info.tools.total_calls} ({tools}), {info.tools.failures} failed\n"
            f"  tokens: {info.input_tokens:,} in, {info.output_tokens:,} out\n"
            + _environment(info.system_state, info.environment)
            + f"  tasks: {len(info.tasks) or 'none'}"
            + "".join(f"\n    [{t.status}] {t.description[:100]}" for t in info.tasks))
    ctx.emit(data, text)


@sessions.command()
@click.argument("session_id")
@click.option("--project-key", default=None, help="Only under this SDK project key (default: every one).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@common_options
def delete(ctx: Context, session_id: str, project_key: str | None, yes: bool) -> None:
    """Delete a stored session, its subagent transcripts and its statistics."""
    store = _store(ctx)
    info = store.info(session_id, project_key=project_key)
    if info is None:
        return fail(f"no stored session {session_id!r} (see `dexai sessions list`)")
    if not yes and not ctx.json:
        click.confirm(f"Delete session {session_id} ({info.entries} entries)?", abort=True)
    removed = store.remove(session_id, project_key=project_key)
    ctx.emit({"deleted": session_id, "entries": removed}, f"deleted session {session_id} ({removed} entries)")
