"""``dexai memory migrate``: copy memories between providers (native, mem0, zep, postgres) with provenance."""

from __future__ import annotations

import dataclasses

import click

from dexai_memory.cli.common import Context, common_options, fail, progress, run
from dexai_memory.config import Settings
from dexai_memory.datadir import ensure_home
from dexai_memory.providers import MemoryProvider, make_provider
from dexai_memory.providers.transfer import TransferReport, transfer

PROVIDERS = ("native", "mem0", "zep", "postgres")


def provider_for(settings: Settings, name: str) -> MemoryProvider:
    """The named provider with these settings, without failover (a migration talks to the real store)."""
    changed = dataclasses.replace(settings, storage=dataclasses.replace(settings.storage, provider=name))
    return make_provider(changed, failover=False)


def describe(report: TransferReport) -> str:
    """Human-readable summary of a transfer (or a dry run)."""
    users = ", ".join(f"{u} ({n})" for u, n in report.users.items()) or "none"
    if report.dry_run:
        lines = [f"Dry run: would copy {report.total} memories from {report.source} to {report.target}.",
                 f"Users: {users}"]
        lines += [f"  {s['id']}  {s['type']:<12} {'' if s['valid'] else '(superseded) '}{s['content'][:80]}"
                  for s in report.sample]
        if report.total > len(report.sample):
            lines.append(f"  ... and {report.total - len(report.sample)} more")
        lines.append("Run again without --dry-run to copy.")
        return "\n".join(lines)
    return (f"Copied {report.copied} memories ({report.events} history events) from {report.source} to "
            f"{report.target}; {report.skipped} already there. Users: {users}")


@click.command()
@click.option("--from", "source", type=click.Choice(PROVIDERS), default=None,
              help="Provider to copy from (default: native when --to names another, else storage.provider).")
@click.option("--to", "target", type=click.Choice(PROVIDERS), required=True, help="Provider to copy to.")
@click.option("--all-users", is_flag=True, help="Copy every user's memories (default: only --user).")
@click.option("--dry-run", is_flag=True, help="Only show what would be copied.")
@common_options
def migrate(source: str, target: str, all_users: bool, dry_run: bool, ctx: Context) -> None:
    """Copy all memories of a user (or every user) from one provider to another.

    Ids, types, tiers, source turn ids, validity windows, supersession links
    and history travel with each memory; the copy's metadata records
    migrated_from / migrated_at. Memories already in the target are skipped,
    so an interrupted migration can be run again. Start with --dry-run.

    Example: dexai memory migrate --from native --to mem0 --dry-run

    To a team server and back: dexai memory migrate --to postgres --all-users
    (with $DEXAI_POSTGRES_DSN set), then dexai memory migrate --from postgres --to native.
    """
    if source is None:
        source = "native" if target != "native" else ctx.settings.storage.provider
    if source == target:
        fail("--from and --to name the same provider")
    ensure_home(ctx.settings.home)
    users = None if all_users else [ctx.user]

    async def go() -> TransferReport:
        async with provider_for(ctx.settings, source) as src:
            plan = await transfer(src, None, users=users, dry_run=True, target_name=target)
            if dry_run:
                return plan
            async with provider_for(ctx.settings, target) as dst:
                with progress(plan.total, f"{source} -> {target}", enabled=not ctx.json) as update:
                    return await transfer(src, dst, users=users, progress=update)

    report = run(go())
    ctx.emit(report.to_dict(), describe(report))
