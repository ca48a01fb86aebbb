"""A fixed port another process holds is reported, not hidden: ``dexai daemon status`` and
``dexai daemon start`` say (WARNING) that the daemon serves no panel/API on ``daemon.api_port``,
and status says so before any daemon runs. Real daemon processes, real sockets, real SQLite."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexai_memory.api.server import bind


def dexai(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dexai_memory.cli.main", "daemon", *args], capture_output=True,
                          text=True, env=os.environ.copy(), timeout=120, check=False)


@pytest.fixture
def taken(isolated_home: Path) -> Iterator[int]:
    """A port held by another listener, set as daemon.api_port; the daemon is stopped afterwards."""
    holder = bind(0)
    port: int = holder.getsockname()[1]
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text(f"embedding:\n  backend: none\ndaemon:\n  api_port: {port}\n"
                                               "  http_port: 0\n")
    try:
        yield port
    finally:
        dexai("stop")
        holder.close()


def test_status_and_start_say_the_port_is_held(taken: int) -> None:
    before = dexai("status")
    assert before.returncode == 0
    assert (f"WARNING: port {taken} (daemon.api_port) is held by another process: a daemon started now could "
            "not serve the memory panel and the local API") in before.stdout
    started = dexai("start")
    assert started.returncode == 0, started.stderr
    assert "dexai daemon started" in started.stdout
    assert f"WARNING: port {taken} (daemon.api_port) is held by another process: the daemon does not serve " \
           "the memory panel and the local API" in started.stdout
    status = dexai("status", "--json")
    data = json.loads(status.stdout)
    assert data["running"] is True and len(data["problems"]) == 1 and f"port {taken}" in data["problems"][0]
    assert "WARNING: port" in dexai("status").stdout


def test_no_warning_when_the_daemon_serves_its_port(isolated_home: Path) -> None:
    with socket.socket() as probe:  # a free port for the daemon
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text(f"embedding:\n  backend: none\ndaemon:\n  api_port: {port}\n"
                                               "  http_port: 0\n")
    try:
        assert "WARNING" not in dexai("status").stdout
        started = dexai("start")
        assert started.returncode == 0 and "WARNING" not in started.stdout, started.stdout
        data = json.loads(dexai("status", "--json").stdout)
        assert data["running"] is True and data["problems"] == []
        assert json.loads((isolated_home / "api.json").read_text())["port"] == port
    finally:
        dexai("stop")


def test_help_says_so() -> None:
    assert "a port another process holds is a WARNING line" in " ".join(dexai("status", "--help").stdout.split())
