"""Many machines, one store: two machines write to one PostgreSQL server at once, through an outage.

Each machine is its own process with its own data directory, building its
provider from its settings as the daemon does (postgres behind the failover
wrapper over its local native store). The server is stopped while both are
writing (writes go on, into each machine's native store and replay log) and
started again; each machine then replays. Every memory and its event must be
on the server exactly once: nothing accepted is lost, nothing is stored twice.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from contextlib import closing
from pathlib import Path

import pytest

from dexai_memory.providers.native.driver import store_sqlite
from tests import postgres_server

pytestmark = pytest.mark.skipif(not postgres_server.available(), reason="needs the dev extra (psycopg, pgserver)")

N = 30
MACHINES = ("laptop", "desktop")


class Machine:
    """A writer process and the count of writes it has reported."""

    def __init__(self, name: str, home: Path, dsn: str):
        home.mkdir(parents=True)
        (home / "memory.yaml").write_text(
            "storage:\n  provider: postgres\n"
            "embedding:\n  backend: none\n"  # full text only: keeps the drill fast; vectors replay like any column
            "postgres:\n  schema: drill\n  connect_timeout_seconds: 1.0\n  pool_size: 2\n")
        env = {**os.environ, "DEXAI_MEMORY_HOME": str(home), "DEXAI_POSTGRES_DSN": dsn}
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.postgres_machine", name, str(N)], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     cwd=Path(__file__).resolve().parents[2])
        self.written = 0
        self.summary: dict[str, object] | None = None
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self.changed:
                if line.startswith("wrote "):
                    self.written = int(line.split()[1]) + 1
                elif line.startswith("{"):
                    self.summary = json.loads(line)
                self.changed.notify_all()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()

    def wait_written(self, n: int, timeout: float = 60) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.written >= n or self.proc.poll() is not None, timeout)
        assert self.written >= n, self.proc.stderr.read() if self.proc.stderr else ""


def test_two_machines_write_through_an_outage_nothing_lost_nothing_twice(tmp_path: Path) -> None:
    import psycopg

    from testing.postgres import LocalPostgres

    with LocalPostgres(tmp_path / "server") as server:
        dsn = server.create_database("team")
        machines = [Machine(name, tmp_path / name, dsn) for name in MACHINES]
        try:
            for m in machines:
                m.wait_written(10)
            server.stop()  # the outage: both machines keep writing, to their native stores
            outage_from = {m: m.written for m in machines}
            for m in machines:
                m.wait_written(outage_from[m] + 8)
            server.start()
            for m in machines:
                m.proc.wait(timeout=120)
                assert m.proc.returncode == 0, m.proc.stderr.read() if m.proc.stderr else ""
                assert m.summary == {"pending": 0, "primary_up": True}
        finally:
            for m in machines:
                m.close()
        with psycopg.connect(dsn) as conn:
            rows = conn.execute("SELECT user_id, id FROM drill.memories").fetchall()
            events = conn.execute("SELECT memory_id, COUNT(*) FROM drill.memory_events WHERE action = 'ADD' "
                                  "GROUP BY memory_id").fetchall()
        for name in MACHINES:
            ids = sorted(i for u, i in rows if u == name)
            assert ids == [f"m_{name}_{i:04d}" for i in range(N)], "every accepted memory, exactly once"
        assert len(rows) == N * len(MACHINES)
        assert sorted(c for _, c in events) == [1] * (N * len(MACHINES)), "one ADD event per memory"
        # the outage really happened: each machine's native store took writes while the server was down
        for name in MACHINES:
            native = tmp_path / name / "memory.db"
            with closing(store_sqlite().connect(native)) as db:
                assert db.execute("SELECT COUNT(*) FROM memories").fetchone()[0] >= 8
