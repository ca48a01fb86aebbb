"""The daemon serves the same API and panel (``daemon.api_port``), over its own provider, and
``dexai panel`` opens that one instead of starting a second server."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import signal
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from dexai_memory.api.server import bind
from dexai_memory.config import load_settings
from dexai_memory.daemon import MemoryDaemon
from dexai_memory.models import Memory
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.rules import OfflineClassifier
from tests.pipeline_fakes import EchoExtractor, JoinSummarizer


def free_port() -> int:
    sock = bind(0)
    port: int = sock.getsockname()[1]
    sock.close()
    return port


def get(url: str, token: str | None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


async def test_the_daemon_serves_the_api_and_dexai_panel_opens_it(isolated_home: Path, tmp_path: Path,
                                                                   monkeypatch: Any) -> None:
    monkeypatch.setenv("DEXAI_MEMORY_USER", "sam")
    isolated_home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    (isolated_home / "memory.yaml").write_text(f"embedding:\n  backend: none\ndaemon:\n  api_port: {port}\n")
    settings = load_settings()
    settings = dataclasses.replace(settings, extraction=dataclasses.replace(settings.extraction, batch_size=2))
    async with NativeProvider(settings.db_path, embedder=None) as provider:
        await provider.add(Memory(content="Sam lives in Lisbon", user_id="sam"))
        daemon = MemoryDaemon(settings, provider, extractor=EchoExtractor(), classifier=OfflineClassifier(),
                              summarizer=JoinSummarizer(), serve_api=True, schedule=False)
        async with daemon:
            await asyncio.wait_for(daemon.api_ready.wait(), 30)
            assert daemon.api is not None and daemon.api.port == port
            token = (isolated_home / "api-token").read_text().strip()
            base = f"http://127.0.0.1:{port}"
            status, body = await asyncio.to_thread(get, f"{base}/api/facts", None)
            assert status == 401 and "token" in body["error"]
            status, body = await asyncio.to_thread(get, f"{base}/api/facts", token)
            assert status == 200 and body["user_id"] == "sam" and body["count"] == 1
            assert json.loads((isolated_home / "api.json").read_text())["port"] == port

            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "dexai_memory.cli.main", "panel", "--no-open", "--port", "0",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            assert proc.stdout is not None
            line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode().strip()
            _, err = await asyncio.wait_for(proc.communicate(), 30)  # it exits by itself
            assert line == f"{base}/?token={token}", err
            assert b"daemon serves" in err and proc.returncode == 0
            # another user's panel is not the daemon's: it gets its own server
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "dexai_memory.cli.main", "panel", "--no-open", "--port", "0", "--user", "bob",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            assert proc.stdout is not None
            line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode().strip()
            proc.send_signal(signal.SIGINT)
            _, err = await asyncio.wait_for(proc.communicate(), 30)
            assert line.startswith("http://127.0.0.1:") and not line.startswith(base + "/"), err
            assert b"memory panel of bob" in err and proc.returncode == 0
        assert daemon.api is None and not (isolated_home / "api.json").exists()
        assert await provider.count(user_id="sam") == 1  # the daemon's provider, still open


async def test_a_taken_port_does_not_stop_the_daemon(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    taken = bind(0)
    try:
        port = taken.getsockname()[1]
        (isolated_home / "memory.yaml").write_text(f"embedding:\n  backend: none\ndaemon:\n  api_port: {port}\n")
        settings = load_settings()
        async with NativeProvider(settings.db_path, embedder=None) as provider:
            async with MemoryDaemon(settings, provider, extractor=EchoExtractor(), classifier=OfflineClassifier(),
                                    serve_api=True, schedule=False) as daemon:
                await asyncio.wait_for(daemon.api_ready.wait(), 30)
                assert daemon.running and daemon.api is None
    finally:
        taken.close()
