"""``dexai panel``: the memory panel and the local API, on 127.0.0.1, until interrupted."""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
import webbrowser
from typing import Any

import click

from dexai_memory.cli.common import Context, common_options, fail, os_error_message
from dexai_memory.datadir import ensure_home
from dexai_memory.errors import DexaiMemoryError


@click.command()
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port on 127.0.0.1 (0 = any free port).")
@click.option("--no-open", is_flag=True, help="Do not open a browser.")
@common_options
def panel(port: int, no_open: bool, ctx: Context) -> None:
    """Serve the memory panel and the local API on 127.0.0.1 until interrupted (Ctrl+C).

    The first line printed is the panel's URL with the API token
    (http://127.0.0.1:PORT/?token=...); a browser opens on it unless
    --no-open. The API lives under /api/ (schema: /api/openapi.json) and
    answers 401 without 'Authorization: Bearer <token>'; the token is kept in
    <home>/api-token (mode 0600). --user is the default user of every request,
    --project its default project (none: every project).

    When a daemon (`dexai daemon`) already serves the API (daemon.api_port)
    for the same user ($DEXAI_MEMORY_USER or $USER) and no --project, its URL
    is printed and opened instead, and the command exits at once (exit 0):
    the daemon keeps serving it. With no daemon running (and no --project),
    this command is the memory daemon until it stops: the hooks, the MCP
    server and the CLI use it meanwhile, so the store keeps one writer; Ctrl+C
    stops both (the next hook starts a daemon again).
    """
    from dexai_memory.api.app import build_app
    from dexai_memory.api.auth import load_token
    from dexai_memory.api.server import bind, panel_url, running_port, serve

    ensure_home(ctx.settings.home)
    try:
        token = load_token(ctx.settings.home)
    except DexaiMemoryError as exc:
        fail(str(exc))
    served = None if ctx.project else running_port(ctx.settings.home, token, ctx.user)
    if served is not None:
        _open_daemons(panel_url(served, token), no_open)
        return
    try:
        sock = bind(port)
    except OSError as exc:
        fail(f"cannot listen on 127.0.0.1:{port}: {os_error_message(exc)} (try --port 0)")
    url = panel_url(sock.getsockname()[1], token)
    if not ctx.project and _serve_as_daemon(ctx, sock, url, no_open):
        return
    click.echo(f"Serving the memory panel of {ctx.user} (Ctrl+C stops it).", err=True)
    try:
        click.echo(url)
        sys.stdout.flush()
        if not no_open:
            webbrowser.open(url)
        asyncio.run(serve(build_app(ctx.settings, ctx.user, token, project=ctx.project), sock))
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()


def _serve_as_daemon(ctx: Context, sock: socket.socket, url: str, no_open: bool) -> bool:
    """No daemon running: run one in this process that serves the panel on ``sock``
    (:func:`dexai_memory.daemon.serve.serve`); False when a daemon runs (or started meanwhile),
    so the panel serves beside it."""
    from dexai_memory.daemon.control import lock_held
    from dexai_memory.daemon.serve import serve as serve_daemon
    from dexai_memory.errors import DaemonRunning

    if lock_held(ctx.settings):
        return False
    announced = False

    def ready(report: dict[str, Any]) -> None:
        nonlocal announced
        click.echo(f"Serving the memory panel of {ctx.user} from the memory daemon in this process "
                   f"(pid {report['pid']}; the hooks and the CLI use it too). Ctrl+C stops both.", err=True)
        click.echo(url)
        sys.stdout.flush()
        announced = True
        if not no_open:
            webbrowser.open(url)

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(serve_daemon(ctx.settings, on_ready=ready, panel=(sock, ctx.user)))
    except DaemonRunning:
        if announced:
            raise
        return False  # a hook started one between the look and the lock
    except DexaiMemoryError as exc:
        if announced:
            fail(str(exc))
        # another process works on this store (its queue is taken): the panel serves beside it
        click.echo(f"Warning: no memory daemon could start here ({exc}); the panel serves on its own.", err=True)
        return False
    return True


def _open_daemons(url: str, no_open: bool) -> None:
    """The daemon serves the panel: print its URL, open it, and return (nothing to serve here)."""
    click.echo("The running daemon serves the memory panel already: its URL follows (this command exits; "
               "the panel stays up while the daemon runs).", err=True)
    click.echo(url)
    sys.stdout.flush()
    if not no_open:
        webbrowser.open(url)
