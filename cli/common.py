"""Options and helpers shared by the CLI commands.

Every command takes ``--user``, ``--project``, ``--home``, ``--config`` and
``--json`` through :func:`common_options`; :func:`run` turns our own errors
into a clean message and exit code 1, and :func:`common_options` does the
same for file-system errors (a missing directory, a permission denied, a full
disk: the environment, not a bug). Anything else is a bug and keeps its
traceback. Commands run with umask 0077: every file they create is 0600.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from dexai_memory.config import Settings, load_settings
from dexai_memory.datadir import private_umask
from dexai_memory.errors import DexaiMemoryError, InvalidMemory

T = TypeVar("T")
DEFAULT_USER_ENV = "DEXAI_MEMORY_USER"


def default_user() -> str:
    """``$DEXAI_MEMORY_USER``, else the login name, else 'default'."""
    return os.environ.get(DEFAULT_USER_ENV) or os.environ.get("USER") or "default"


@dataclass
class Context:
    """What every command gets: settings, scope and output mode."""

    settings: Settings
    user: str
    project: str | None
    json: bool

    def emit(self, data: Any, text: str | None = None) -> None:
        """Print ``data`` as JSON in ``--json`` mode, else ``text`` (or a plain rendering)."""
        if self.json:
            click.echo(json.dumps(data, ensure_ascii=False, default=str))
        elif text is not None:
            click.echo(text)
        else:
            click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def common_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add --user/--project/--home/--config/--json and pass a :class:`Context` as ``ctx``."""

    @click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
    @click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
                  help="A memory.yaml that overrides the defaults and <home>/memory.yaml.")
    @click.option("--home", type=click.Path(file_okay=False, path_type=Path), envvar="DEXAI_MEMORY_HOME",
                  help="Data directory (default: $DEXAI_MEMORY_HOME or ~/.local/share/dexai-memory).")
    @click.option("--project", "-p", default=None, help="Project scope (default: none = all projects).")
    @click.option("--user", "-u", default=None, help=f"User id (default: ${DEFAULT_USER_ENV} or $USER).")
    @functools.wraps(fn)
    def wrapper(*args: Any, user: str | None, project: str | None, home: Path | None, config_path: Path | None,
                as_json: bool, **kwargs: Any) -> Any:
        private_umask()
        try:
            settings = load_settings(config_path, home=home)
        except DexaiMemoryError as exc:
            fail(str(exc))
        ctx = Context(settings=settings, user=user or default_user(), project=project, json=as_json)
        try:
            return fn(*args, ctx=ctx, **kwargs)
        except BrokenPipeError:
            raise
        except OSError as exc:
            fail(os_error_message(exc))

    return wrapper


def os_error_message(exc: OSError) -> str:
    """``cannot use /path: Permission denied`` for a file-system error (its path and reason)."""
    reason = exc.strerror or str(exc)
    if exc.filename is None:
        return reason
    where = str(exc.filename) + (f" -> {exc.filename2}" if exc.filename2 else "")
    return f"cannot use {where}: {reason}"


#: The help of every ``--as-of`` option (list, search, recall).
AS_OF_HELP = ("What was valid at that time: an ISO 8601 date/time (e.g. 2024-05-01 or 2024-05-01T09:30:00Z; "
              "no zone = UTC), or 'now'.")


def parse_as_of(_ctx: click.Context, _param: click.Parameter, value: str | None) -> datetime | None:
    """Click callback of ``--as-of``: an ISO 8601 date/time or ``now`` (this moment, UTC), or a usage
    error (an empty value too)."""
    if value is None:
        return None
    from dexai_memory.models import as_utc, utcnow

    if not value.strip():
        raise click.BadParameter("needs an ISO 8601 date/time such as 2024-05-01 or 2024-05-01T09:30:00Z, "
                                 "or 'now', got an empty value")
    if value.strip().lower() == "now":
        return utcnow()
    try:
        return as_utc(value.strip())
    except InvalidMemory as exc:
        raise click.BadParameter(str(exc)) from None


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``Error: message`` on stderr and exit with ``code``."""
    click.echo(f"Error: {message}", err=True)
    sys.exit(code)


def run(coro: Awaitable[T]) -> T:
    """Run a coroutine; our own errors become a clean message and exit code 1, and so does a
    damaged database met past the checks at open (a read of a bad page of a big store)."""
    try:
        return asyncio.run(coro)  # type: ignore[arg-type]
    except DexaiMemoryError as exc:
        fail(str(exc))
    except Exception as exc:
        from dexai_memory.providers.native.damage import RESTORE_HINT, is_corruption

        if type(exc).__name__ != "DatabaseError" or not is_corruption(exc):  # sqlite3's or sqlean's
            raise
        fail(f"a database is damaged ({str(exc)[:200]}); {RESTORE_HINT}")


def daemon_or_local(ctx: Context, request: dict[str, Any],
                    local: Callable[[Any, Any, dict[str, Any]], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    """The running daemon's answer to ``request`` (it is the one writer of the store); with no
    daemon running, ``local(provider, settings, request)`` (the same function the daemon runs for
    that request) on the store in this process. Our errors exit cleanly."""
    from dexai_memory.daemon.control import ask_running_daemon
    from dexai_memory.datadir import ensure_home
    from dexai_memory.providers import make_provider

    try:
        reply = ask_running_daemon(ctx.settings, request)
    except DexaiMemoryError as exc:
        fail(str(exc))
    if reply is not None:
        return reply

    async def go() -> dict[str, Any]:
        ensure_home(ctx.settings.home)
        async with make_provider(ctx.settings) as provider:
            return await local(provider, ctx.settings, request)

    return run(go())


def store_request(ctx: Context, name: str, **arguments: Any) -> dict[str, Any]:
    """A change to the store by hand, ``name`` of :mod:`dexai_memory.lifecycle.requests`: the
    running daemon makes it (the one writer of the store, under its write lock); with none running,
    this process makes it the same way. Our errors exit cleanly."""
    from dexai_memory.lifecycle.requests import run_request

    return daemon_or_local(ctx, {"op": "store.run", "name": name, "user_id": ctx.user, **arguments}, run_request)


@contextmanager
def progress(total: int | None, desc: str, *, enabled: bool = True) -> Iterator[Callable[[int], None]]:
    """A tqdm progress line on stderr (hidden with --json or when stderr is not a terminal); yields
    ``update(n)``. A terminal that reports no width (0 columns: some containers, editors' shells)
    is taken as 80x24: tqdm would draw nothing there."""
    from tqdm import tqdm

    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except (OSError, ValueError):  # not a terminal (tqdm stays hidden), or no file number
        size = os.terminal_size((0, 0))
    bar = tqdm(total=total, desc=desc, unit="item", disable=not enabled or None, file=sys.stderr, leave=False,
               ncols=size.columns or 80, nrows=size.lines or 24)
    try:
        yield bar.update
    finally:
        bar.close()
