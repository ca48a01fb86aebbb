"""``dexai memory backup`` and ``dexai memory restore-backup``: copies of the databases, and putting one back."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from dexai_memory.cli.common import Context, common_options, fail
from dexai_memory.errors import DexaiMemoryError


@click.command()
@click.option("--output", "-o", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write the backup into this (new or empty) directory instead of <home>/backups "
                   "(then no old backup is deleted).")
@click.option("--list", "list_only", is_flag=True, help="List the backups in <home>/backups, newest first.")
@common_options
def backup(output: Path | None, list_only: bool, ctx: Context) -> None:
    """Back up memory.db and queue.db now (SQLite online backup: safe while hooks and the daemon write).

    Backups go to <home>/backups/backup-<UTC time>/; the newest backup.keep
    (7) are kept. A running daemon also makes one every
    backup.interval_hours (24). Put one back with
    'dexai memory restore-backup PATH'.
    """
    from dexai_memory.backup import create_backup, list_backups

    if list_only:
        backups = list_backups(ctx.settings)
        lines = [f"{b.path}  {b.created_at:%Y-%m-%d %H:%M:%S} UTC  {b.size_bytes / 1e6:.1f} MB  {', '.join(b.files)}"
                 for b in backups] or [f"No backups in {ctx.settings.backup_dir} yet ('dexai memory backup')."]
        ctx.emit([b.to_dict() for b in backups], "\n".join(lines))
        return
    try:
        made = create_backup(ctx.settings, output)
    except DexaiMemoryError as exc:
        fail(str(exc))
    ctx.emit(made.to_dict(), f"Backed up {', '.join(made.files)} to {made.path} ({made.size_bytes / 1e6:.1f} MB)\n"
                             f"Restore it with: dexai memory restore-backup {made.path}")


@click.command(name="restore-backup")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--queue", is_flag=True, help="Restore queue.db too (by default the current queue, which may hold "
                                            "turns newer than the backup, is kept).")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@common_options
def restore_backup(path: Path, queue: bool, yes: bool, ctx: Context) -> None:
    """Put a backup back: PATH is a backup directory (see 'dexai memory backup --list') or a memory.db copy.

    Refused while a daemon runs on the data directory (stop it first). The
    current memory.db (and its -wal/-shm) is first moved aside as
    memory.db.bak-<UTC time>, so nothing is lost; the backup is checked
    before anything is moved.
    """
    from dexai_memory.backup import restore_backup as restore

    if not yes and not ctx.json and sys.stdin.isatty():
        click.confirm(f"Replace the memories in {ctx.settings.home} with {path}? (the current files are kept "
                      "aside as .bak)", abort=True)
    from dexai_memory.providers.native.damage import clear_mark

    try:
        done = restore(ctx.settings, path, queue=queue)
    except DexaiMemoryError as exc:
        fail(str(exc))
    clear_mark(ctx.settings.db_path)  # the damaged file is set aside (a mark holds for that file only)
    text = "Restored " + ", ".join(str(p) for p in done.restored)
    if done.set_aside:
        text += "\nThe previous files were kept as: " + ", ".join(str(p) for p in done.set_aside)
    ctx.emit(done.to_dict(), text)
