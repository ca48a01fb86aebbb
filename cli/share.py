"""``dexai memory share``: make a memory visible to the team of its project (postgres store), or private again."""

from __future__ import annotations

import click

from dexai_memory.cli.common import Context, common_options, run
from dexai_memory.datadir import ensure_home
from dexai_memory.models import Memory, MemoryEvent, utcnow
from dexai_memory.providers import make_provider

PROJECT_SHARED = "project-shared"
USER_PRIVATE = "user-private"


@click.command()
@click.argument("memory_id")
@click.option("--private", is_flag=True, help="Make it user-private again (the default scope).")
@common_options
def share(memory_id: str, private: bool, ctx: Context) -> None:
    """Share one of your memories with everyone working in its project, or (--private) stop sharing it.

    A project-shared memory is found by every user of the same postgres store
    who works in that project (team decisions, conventions); user-private
    memories (the default) are seen by their owner only. The scope is kept in
    the memory's metadata ("scope"), so it travels with export, import and
    migrate; only the postgres provider shares (a native store has one user).
    The memory needs a project: one without gets --project (or the current one).

    Example: dexai memory share m_0123456789abcdef0123
    """
    ensure_home(ctx.settings.home)
    scope = USER_PRIVATE if private else PROJECT_SHARED

    async def go() -> Memory:
        async with make_provider(ctx.settings) as provider:
            memory = await provider.get(memory_id, user_id=ctx.user)
            changes: dict[str, object] = {"metadata": {**memory.metadata, "scope": scope}}
            if scope == PROJECT_SHARED and not memory.project and ctx.project:
                changes["project"] = ctx.project
            updated = await provider.update(memory_id, user_id=ctx.user, **changes)
            await provider.record_event(MemoryEvent(memory_id, "SHARE" if scope == PROJECT_SHARED else "UNSHARE",
                                                    f"scope set to {scope} by request", utcnow()), user_id=ctx.user)
            return updated

    m = run(go())
    note = "" if ctx.settings.storage.provider == "postgres" else " (shared once the memories live on a postgres store)"
    ctx.emit(m.to_dict(), f"{m.id} is now {scope}" + (f" in project {m.project}" if m.project else "") + note)
