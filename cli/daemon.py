"""``dexai daemon``: the memory daemon, in the foreground or managed.

``dexai daemon`` (or ``dexai daemon run``) runs it in the foreground;
``dexai daemon start | stop | status`` manage a detached one. The plugin's
hooks start one themselves when none answers (``daemon.autostart``), so most
users never run these: they are for checking on it, for stopping it, and for
people who run it under systemd or launchd (set ``daemon.autostart: false``).

One daemon per data directory: it holds ``<home>/daemon.lock`` while it runs
and writes ``<home>/daemon.pid``; a second one exits at once (or, started with
``--lock-wait``, waits for the first to go). The hooks talk to it over
``<home>/daemon.sock``. SIGTERM or SIGINT stops it cleanly (socket closed,
queue drained for a few seconds, the rest kept on disk). A daemon started by
``dexai daemon start`` or by the hooks exits after ``daemon.idle_exit_minutes``
without hook traffic and with an empty queue; its output goes to
``<home>/daemon.log``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from dexai_memory.cli.common import Context, common_options, fail, run
from dexai_memory.datadir import ensure_home


async def serve(ctx: Context, *, schedule: bool, flush_timeout: float, idle_exit_minutes: float,
                lock_wait: float) -> None:
    from dexai_memory.daemon.serve import serve as serve_daemon
    from dexai_memory.errors import DaemonRunning

    def ready(report: dict[str, Any]) -> None:
        ctx.emit(report, f"dexai daemon running (pid {report['pid']}), socket {report['socket']}; "
                         "Ctrl-C or SIGTERM to stop")

    try:
        await serve_daemon(ctx.settings, schedule=schedule, flush_timeout=flush_timeout,
                           idle_exit_minutes=idle_exit_minutes, lock_wait=lock_wait, on_ready=ready)
    except DaemonRunning as exc:
        if exc.waited:  # started by a hook or `daemon start`: another one won the race
            ctx.emit({"ready": False, "reason": str(exc)}, str(exc))
            return
        fail(str(exc))
    ctx.emit({"stopped": True}, "dexai daemon stopped")


def run_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options of a foreground run (``dexai daemon`` and ``dexai daemon run``)."""
    options = [
        click.option("--no-schedule", is_flag=True, help="Do not run consolidation/cleanup on the schedule."),
        click.option("--flush-timeout", type=float, default=5.0, show_default=True,
                     help="Seconds to keep processing queued turns on shutdown (the rest stays queued)."),
        click.option("--log-level", type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
                     default="INFO", show_default=True),
        click.option("--idle-exit-minutes", type=float, default=0.0, show_default=True,
                     help="Exit after this many minutes without hook traffic and with an empty queue (0 = never)."),
        click.option("--lock-wait", type=float, default=0.0, show_default=True,
                     help="Seconds to wait for another daemon of this data directory to exit; when it does "
                          "not, exit 0 quietly (without it, a second daemon is an error)."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _foreground(ctx: Context, no_schedule: bool, flush_timeout: float, log_level: str, idle_exit_minutes: float,
                lock_wait: float) -> None:
    logging.basicConfig(level=getattr(logging, log_level.upper()),
                        format="%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    run(serve(ctx, schedule=not no_schedule, flush_timeout=flush_timeout, idle_exit_minutes=idle_exit_minutes,
              lock_wait=lock_wait))


@click.group(invoke_without_command=True)
@run_options
@common_options
@click.pass_context
def daemon(click_ctx: click.Context, no_schedule: bool, flush_timeout: float, log_level: str,
           idle_exit_minutes: float, lock_wait: float, ctx: Context) -> None:
    """The memory daemon: queue worker, schedule, and the socket the hooks use.

    \b
    dexai daemon            run it in the foreground (Ctrl-C or SIGTERM to stop)
    dexai daemon status     is one running? its pid, version, queue and log
    dexai daemon start      start one detached (what the hooks do when none answers)
    dexai daemon stop       stop the running one

    Without a daemon the hooks still work (turns are queued on disk, recall
    falls back to keyword search, PreCompact extracts inline) and start one
    unless daemon.autostart is false.
    """
    if click_ctx.invoked_subcommand is None:
        _foreground(ctx, no_schedule, flush_timeout, log_level, idle_exit_minutes, lock_wait)


@daemon.command("run")
@run_options
@common_options
def run_cmd(no_schedule: bool, flush_timeout: float, log_level: str, idle_exit_minutes: float, lock_wait: float,
            ctx: Context) -> None:
    """Run the daemon in the foreground (the same as plain `dexai daemon`)."""
    _foreground(ctx, no_schedule, flush_timeout, log_level, idle_exit_minutes, lock_wait)


@daemon.command()
@click.option("--wait", type=float, default=30.0, show_default=True,
              help="Seconds to wait for it to answer on its socket.")
@common_options
def start(wait: float, ctx: Context) -> None:
    """Start a detached daemon (it exits after daemon.idle_exit_minutes without hook traffic).

    Says (WARNING lines) when a port it should serve (daemon.api_port, daemon.http_port) is held
    by another process: the daemon then runs without it.
    """
    from dexai_memory.daemon.control import (
        lock_held,
        log_path,
        port_problems,
        spawn,
        status,
        wait_until_answering,
    )

    settings = ctx.settings
    ensure_home(settings.home)
    if lock_held(settings):
        st = status(settings)
        problems = port_problems(settings, st)
        ctx.emit({"started": False, **st.to_dict(), "problems": problems},
                 _with_problems(f"a daemon is already running (pid {st.pid})", problems))
        return
    pid = spawn(settings, reason="dexai daemon start")
    if pid is None:
        fail(f"could not start the daemon; see {log_path(settings)}")
    if not wait_until_answering(settings, wait):
        fail(f"the daemon (pid {pid}) did not answer within {wait:.0f}s; see {log_path(settings)}")
    st = status(settings)
    problems = port_problems(settings, st)
    ctx.emit({"started": True, **st.to_dict(), "problems": problems},
             _with_problems(f"dexai daemon started (pid {st.pid}); log {st.log}", problems))


def _with_problems(text: str, problems: list[str]) -> str:
    """``text`` and one ``WARNING:`` line per port problem (:func:`~dexai_memory.daemon.control.port_problems`)."""
    return "\n".join([text, *(f"WARNING: {p}" for p in problems)])


@daemon.command()
@click.option("--timeout", type=float, default=15.0, show_default=True, help="Seconds to wait for it to exit.")
@common_options
def stop(timeout: float, ctx: Context) -> None:
    """Stop the daemon of this data directory (queued turns stay on disk)."""
    from dexai_memory.daemon.control import read_pid
    from dexai_memory.daemon.control import stop as stop_daemon

    pid = read_pid(ctx.settings)
    if not stop_daemon(ctx.settings, timeout):
        fail(f"the daemon (pid {pid or '?'}) did not stop within {timeout:.0f}s")
    ctx.emit({"stopped": True, "pid": pid}, "dexai daemon stopped" if pid else "no daemon was running")


@daemon.command()
@common_options
def status(ctx: Context) -> None:
    """Whether a daemon runs for this data directory: pid, version, queue, idle exit, log.

    Also checks the daemon's fixed ports (daemon.api_port for the panel and the API,
    daemon.http_port while the http hooks are installed): a port another process holds is
    a WARNING line (and in "problems" with --json); the daemon then runs without it.
    """
    from dexai_memory.daemon.control import port_problems
    from dexai_memory.daemon.control import status as daemon_status

    st = daemon_status(ctx.settings)
    problems = port_problems(ctx.settings, st)
    data = {**st.to_dict(), "problems": problems}
    if not st.running:
        text = (f"no daemon running for {ctx.settings.home}; hooks start one when needed"
                if st.autostart else f"no daemon running for {ctx.settings.home} (daemon.autostart is off)")
    else:
        health = st.health or {}
        queue = health.get("queue") or {}
        text = (f"daemon running (pid {st.pid}, version {st.version or '?'}, {health.get('state', 'starting')}); "
                f"queue: {queue.get('pending', '?')} pending, {queue.get('dead', 0)} dead; "
                f"idle exit after {st.idle_exit_minutes:g} min; log {st.log}")
    ctx.emit(data, _with_problems(text, problems))


@daemon.command("http-token")
@common_options
def http_token(ctx: Context) -> None:
    """Print the token of the daemon's HTTP hooks (made on first use, 0600 in the data directory).

    `dexai daemon http-hooks --install` puts it, with the http hooks, into ~/.claude/settings.json.
    """
    from dexai_memory.daemon.http_hooks import hook_token

    ensure_home(ctx.settings.home)
    token = hook_token(ctx.settings.home)
    ctx.emit({"token": token, "port": ctx.settings.daemon.http_port}, token)


@daemon.command("http-hooks")
@click.option("--install", is_flag=True,
              help="Write them into the Claude Code user settings (~/.claude/settings.json, or --settings-file).")
@click.option("--uninstall", is_flag=True,
              help="Remove them (and their token) from that settings file; the daemon closes the port.")
@click.option("--settings-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The Claude Code settings file to write (default: ~/.claude/settings.json).")
@common_options
def http_hooks(ctx: Context, install: bool, uninstall: bool, settings_file: Path | None) -> None:
    """Turn on the daemon's HTTP hooks (opt-in): prompts and finished turns answered with no process start.

    Prints the Claude Code settings (the http hooks for UserPromptSubmit, PostToolUse and Stop, and the
    token in `env`); --install merges them into ~/.claude/settings.json, keeping everything else, and
    records that file in the data directory: the daemon listens on 127.0.0.1:<daemon.http_port> only
    while that file (with no record: ~/.claude/settings.json) holds the hooks, from its next start. The plugin itself sends nothing over HTTP: on
    a machine shared with other users, only turn this on if no one else can bind that port. With the
    daemon down, the plugin's command hooks answer as before. --uninstall removes them again.
    """
    from dexai_memory.daemon import http_hooks as hh

    if install and uninstall:
        fail("--install or --uninstall, not both")
    target = settings_file or Path.home() / ".claude" / "settings.json"
    ensure_home(ctx.settings.home)
    if uninstall:
        try:
            removed = hh.uninstall(ctx.settings.home, target)
        except (OSError, ValueError) as exc:
            fail(f"could not write {target}: {exc}")
        ctx.emit({"uninstalled": str(target), "removed": removed},
                 f"HTTP hooks removed from {target} ({removed} hook groups); a running daemon closes the "
                 "port when it next starts (`dexai daemon stop`)")
        return
    port = ctx.settings.daemon.http_port
    if not port:
        fail("daemon.http_port is 0: the daemon serves no HTTP hooks; set a port first")
    token = hh.hook_token(ctx.settings.home)
    if not install:
        ctx.emit(hh.http_hook_settings(port, token))
        return
    try:
        hh.install(ctx.settings.home, target, port)
    except (OSError, ValueError) as exc:
        fail(f"could not write {target}: {exc}")
    ctx.emit({"installed": str(target), "port": port},
             f"HTTP hooks on 127.0.0.1:{port} written to {target}; a running daemon opens the port when it "
             "next starts (`dexai daemon stop`; the next hook starts it), then restart Claude Code sessions")
