"""``dexai daemon``: run the memory daemon in the foreground.

For hosts whose hooks are separate processes (Claude Code command hooks): the
hooks talk to it over ``<home>/daemon.sock`` and fall back to working
without it when it is not running. SIGTERM or SIGINT stops it cleanly
(socket closed, queue drained for a few seconds, the rest kept on disk).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal

import click

from dexai_memory.cli.common import Context, common_options, run
from dexai_memory.config import ensure_home


async def serve(ctx: Context, *, schedule: bool, flush_timeout: float) -> None:
    from dexai_memory.daemon import MemoryDaemon

    ensure_home(ctx.settings.home)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    daemon = MemoryDaemon(ctx.settings, serve_socket=True, schedule=schedule)
    await daemon.start()
    try:
        from dexai_memory.hook_ops import register_ipc_ops

        register_ipc_ops(daemon)  # hook.recall, hook.l1_block, ... for command hooks
        ready = {"ready": True, "pid": os.getpid(), "socket": str(ctx.settings.socket_path),
                 "home": str(ctx.settings.home), "ops": sorted(daemon.ipc.handlers),
                 "scheduled": daemon.next_runs()}
        ctx.emit(ready, f"dexai daemon running (pid {ready['pid']}), socket {ready['socket']}; "
                        "Ctrl-C or SIGTERM to stop")
        await stop.wait()
    finally:
        await daemon.stop(flush_timeout=flush_timeout)
    ctx.emit({"stopped": True}, "dexai daemon stopped")


@click.command()
@click.option("--no-schedule", is_flag=True, help="Do not run consolidation/cleanup on the schedule.")
@click.option("--flush-timeout", type=float, default=5.0, show_default=True,
              help="Seconds to keep processing queued turns on shutdown (the rest stays queued).")
@click.option("--log-level", type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
              default="INFO", show_default=True)
@common_options
def daemon(no_schedule: bool, flush_timeout: float, log_level: str, ctx: Context) -> None:
    """Run the memory daemon in the foreground (queue worker, schedule, socket).

    Command hooks reach it on <home>/daemon.sock; without it they still work
    (turns are queued on disk, recall falls back to keyword search) and the
    queued turns are processed when it next runs. Stop with SIGTERM or Ctrl-C.
    """
    logging.basicConfig(level=getattr(logging, log_level.upper()),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    run(serve(ctx, schedule=not no_schedule, flush_timeout=flush_timeout))
