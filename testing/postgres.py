"""A real, throw-away PostgreSQL server with pgvector on 127.0.0.1, for tests and benchmarks.

The binaries come from the ``pgserver`` wheel (PostgreSQL 16 with the
``vector`` extension, installed by ``pip install -e '.[dev]'``; no system
package needed). :class:`LocalPostgres` runs ``initdb`` into a temporary
directory and ``pg_ctl start`` on a free TCP port of 127.0.0.1, trusting local
connections only; :meth:`LocalPostgres.stop` / :meth:`LocalPostgres.start`
simulate an outage (the port and the data survive a restart), and
:meth:`LocalPostgres.create_database` hands every test a fresh database.

PostgreSQL refuses to run as root: when the tests run as root (CI containers)
the server runs as an unprivileged ``pgserver`` system user (created with
``useradd`` the first time, as the ``pgserver`` package itself does).

Example::

    with LocalPostgres() as server:
        dsn = server.create_database("t1")
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Self

#: The unprivileged account the server runs as when the caller is root.
SERVER_ACCOUNT = "pgserver"
#: Durability off: a test server's data is thrown away, and fsync is what makes initdb slow.
#: (Commits still reach the OS before they are acknowledged, so a stopped server loses nothing.)
FAST_SETTINGS = ("fsync=off", "full_page_writes=off", "max_connections=200")


def bin_dir() -> Path:
    """The directory of ``initdb`` / ``pg_ctl`` / ``postgres`` (the pgserver wheel's)."""
    # located, not imported: importing pgserver warns about XDG_RUNTIME_DIR at import time
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the 'pgserver' package is missing: pip install -e '.[dev]'")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _readable(path: Path) -> None:
    """Let other accounts traverse to ``path`` and read (and run) what is below it."""
    for parent in path.parents:
        parent.chmod(parent.stat().st_mode | 0o055)
    for dirpath, _dirs, files in os.walk(path):
        Path(dirpath).chmod(Path(dirpath).stat().st_mode | 0o055)
        for name in files:
            f = Path(dirpath) / name
            f.chmod(f.stat().st_mode | 0o044 | (0o011 if f.stat().st_mode & 0o100 else 0))


def free_port() -> int:
    """A TCP port of 127.0.0.1 nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalPostgres:
    """A PostgreSQL server in a temporary directory (see the module docstring)."""

    def __init__(self, root: Path | None = None, *, port: int | None = None):
        self._own_root = root is None
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="dexai-pg-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = port or free_port()
        self.bin = bin_dir()
        self._account: str | None = None
        self.running = False

    # ------------------------------------------------------------------ process
    def _prepare_account(self) -> None:
        if os.geteuid() != 0:
            return
        import pwd

        try:
            entry = pwd.getpwnam(SERVER_ACCOUNT)
        except KeyError:
            subprocess.run(["useradd", "--system", "--no-create-home", SERVER_ACCOUNT], check=True,
                           capture_output=True)
            entry = pwd.getpwnam(SERVER_ACCOUNT)
        self._account = SERVER_ACCOUNT
        _readable(self.bin.parent)
        for parent in self.root.parents:
            parent.chmod(parent.stat().st_mode | 0o011)
        os.chown(self.root, entry.pw_uid, entry.pw_gid)

    def _run(self, *args: str, timeout: float = 60) -> None:
        cmd = [str(self.bin / args[0]), *args[1:]]
        try:
            subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=timeout, user=self._account)
        except subprocess.CalledProcessError as exc:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(cmd)} failed: {exc.stderr}\n{log[-2000:]}") from exc

    def init(self) -> None:
        """``initdb`` (once)."""
        if (self.data / "PG_VERSION").exists():
            return
        self._prepare_account()
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--encoding=UTF8",
                  "--no-sync", "--locale=C")

    def start(self) -> None:
        """Start the server (after :meth:`init`) on ``127.0.0.1:port``; waits until it accepts connections."""
        if self.running:
            return
        self.init()
        options = " ".join([f"-h 127.0.0.1 -p {self.port} -k {self.root}",
                            *(f"-c {s}" for s in FAST_SETTINGS)])
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-o", options, "start")
        self.running = True

    def stop(self) -> None:
        """Stop the server at once (``-m immediate``: like a crash or a pulled cable; data survives)."""
        if not self.running:
            return
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        self.running = False

    def close(self) -> None:
        """Stop the server and delete its directory."""
        with contextlib.suppress(RuntimeError):
            if self.running:
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        self.running = False
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ databases
    def dsn(self, database: str = "postgres") -> str:
        """A libpq connection string to ``database`` on this server."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str | None = None) -> str:
        """Create a fresh database (a random name by default); returns its DSN."""
        import psycopg

        name = name or "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)
