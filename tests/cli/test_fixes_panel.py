"""``dexai panel`` with a daemon already serving the panel prints the daemon's URL and exits (it
used to block until Ctrl+C with nothing to serve). A real daemon core serving the API over a real
SQLite store, and the real CLI as a process."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

from dexai_memory.api.server import bind
from dexai_memory.config import load_settings
from dexai_memory.daemon import MemoryDaemon
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.rules import OfflineClassifier
from tests.pipeline_fakes import EchoExtractor


async def test_panel_prints_the_daemons_url_and_exits(isolated_home: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("DEXAI_MEMORY_USER", "sam")
    isolated_home.mkdir(parents=True, exist_ok=True)
    sock = bind(0)
    port = sock.getsockname()[1]
    sock.close()
    (isolated_home / "memory.yaml").write_text(f"embedding:\n  backend: none\ndaemon:\n  api_port: {port}\n")
    settings = load_settings()
    async with NativeProvider(settings.db_path, embedder=None) as provider:
        async with MemoryDaemon(settings, provider, extractor=EchoExtractor(), classifier=OfflineClassifier(),
                                serve_api=True, schedule=False) as daemon:
            await asyncio.wait_for(daemon.api_ready.wait(), 30)
            token = (isolated_home / "api-token").read_text().strip()
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "dexai_memory.cli.main", "panel", "--no-open",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, stdin=subprocess.DEVNULL)
            out, err = await asyncio.wait_for(proc.communicate(), 60)  # no signal: it exits by itself
            assert proc.returncode == 0, err
            assert out.decode().strip() == f"http://127.0.0.1:{port}/?token={token}"
            assert b"daemon serves the memory panel already" in err and b"this command exits" in err
            assert daemon.api is not None  # still served by the daemon


def test_help_says_it_exits() -> None:
    out = subprocess.run([sys.executable, "-m", "dexai_memory.cli.main", "panel", "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert "the command exits at once" in " ".join(out.split())
