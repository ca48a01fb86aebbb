"""``dexai memory consolidate``, ``dexai memory retry`` and ``dexai daemon`` through the real entry point."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dexai_memory import __version__
from dexai_memory.capture.queue import ExtractionQueue, Job
from dexai_memory.cli.main import cli
from dexai_memory.daemon.ipc import ipc_request
from dexai_memory.errors import ExtractionError
from dexai_memory.models import Memory, MemoryType, SearchFilters, Turn, utcnow
from dexai_memory.providers.native import NativeProvider

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def config(isolated_home: Path) -> Path:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text(
        "embedding:\n  backend: none\nconsolidation:\n  cluster_similarity: 0.7\n", encoding="utf-8")
    return isolated_home


def stored(home: Path, user: str, **filters: Any) -> list[Memory]:
    async def go() -> list[Memory]:
        async with NativeProvider(home / "memory.db") as p:
            return await p.list(user_id=user, filters=SearchFilters(**filters), limit=1000)

    return asyncio.run(go())


def seed(home: Path) -> None:
    old = utcnow() - timedelta(days=30)

    async def go() -> None:
        async with NativeProvider(home / "memory.db") as p:
            for user in ("u", "w"):
                for month in ("June", "July", "August"):
                    await p.add(Memory(f"Caroline went hiking in the Rocky Mountains in {month}", user_id=user,
                                       created_at=old))
            await p.add(Memory("Went to the concert", user_id="u", type=MemoryType.EVENT,
                               created_at=utcnow() - timedelta(days=120)))
            await p.add(Memory("Wedding day", user_id="u", type=MemoryType.EVENT, pinned=True,
                               created_at=utcnow() - timedelta(days=400)))

    asyncio.run(go())


def test_consolidate_dry_run_then_for_real(config: Path) -> None:
    seed(config)
    runner = CliRunner()
    dry = runner.invoke(cli, ["memory", "consolidate", "--user", "u", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "1 cluster(s) would merge (3 memories superseded), 1 archived" in dry.output
    assert "would archive" in dry.output and "Went to the concert" in dry.output
    assert "(dry run: nothing was changed)" in dry.output
    assert len(stored(config, "u")) == 5

    real = runner.invoke(cli, ["memory", "consolidate", "--user", "u", "--json"])
    assert real.exit_code == 0, real.output
    (row,) = json.loads(real.output)["users"]
    assert row["consolidation"]["merged"] == 1 and row["consolidation"]["superseded"] == 3
    assert [a["content"] for a in row["cleanup"]["archived"]] == ["Went to the concert"]
    valid = stored(config, "u")
    assert sorted(m.content for m in valid if m.type is not MemoryType.INSIGHT) == ["Wedding day"]  # pinned kept
    (abstract,) = stored(config, "u", valid_only=True, tiers=(), types=(MemoryType.INSIGHT,))
    assert "Rocky Mountains" in abstract.content
    assert len(stored(config, "w")) == 3  # another user is untouched without --all-users

    everyone = runner.invoke(cli, ["memory", "consolidate", "--all-users", "--json"])
    assert everyone.exit_code == 0, everyone.output
    users = {r["user_id"]: r["consolidation"]["merged"] for r in json.loads(everyone.output)["users"]}
    assert users == {"u": 0, "w": 1}


async def _fail(jobs: Sequence[Job]) -> None:
    raise ExtractionError("model returned garbage")


def test_retry_replays_dead_letters(config: Path) -> None:
    q = ExtractionQueue(config / "queue.db", max_retries=0).open()
    q.enqueue(Turn(id="t1", user_id="u", content="I moved to Lisbon last year and I work at a bakery now.",
                   speaker="Sam", session_id="s"))
    asyncio.run(q.drain(_fail))
    assert len(q.dead_letters()) == 1
    q.close()
    runner = CliRunner()
    listed = runner.invoke(cli, ["memory", "retry", "--list", "--json"])
    assert listed.exit_code == 0, listed.output
    data = json.loads(listed.output)
    assert data["requeued"] == 0 and [d["turn_id"] for d in data["dead_letters"]] == ["t1"]
    assert "model returned garbage" in data["dead_letters"][0]["error"]

    replay = runner.invoke(cli, ["memory", "retry"])
    assert replay.exit_code == 0, replay.output
    assert "requeued 1, processed 1 by this process" in replay.output
    memories = stored(config, "u")
    assert memories and all(m.source_ids == ("t1",) for m in memories)
    assert any("Lisbon" in m.content for m in memories)
    assert "0 dead letter(s)" in runner.invoke(cli, ["memory", "retry"]).output


def test_daemon_command_serves_and_stops_on_sigterm(config: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "dexai_memory.cli.main", "daemon", "--json", "--no-schedule"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "DEXAI_MEMORY_HOME": str(config)})
    assert proc.stdout is not None and proc.stderr is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or []), daemon=True)
    reader.start()
    try:
        for _ in range(300):
            if lines or proc.poll() is not None:
                break
            threading.Event().wait(0.1)
        assert lines, proc.stderr.read() if proc.poll() is not None else "no ready line"
        ready = json.loads(lines[0])
        sock = Path(ready["socket"])
        assert ready["ready"] and sock.exists()
        assert {"ping", "enqueue", "flush", "health", "queue.notify"} <= set(ready["ops"])
        assert ipc_request(sock, {"op": "ping"}, 5) == {"ok": True, "pid": proc.pid, "state": "running",
                                                        "version": __version__}
        answer = ipc_request(sock, {"op": "enqueue", "turn": {"id": "d1", "user_id": "u", "speaker": "Sam",
                                                              "content": "I moved to Lisbon and I work at a bakery."}}, 5)
        assert answer is not None and answer["queued"] is True
        assert ipc_request(sock, {"op": "flush", "timeout": 10}, 15) == {"ok": True, "flushed": True, "pending": 0,
                                                                         "version": __version__}
        health = ipc_request(sock, {"op": "health"}, 5)
        assert health is not None and health["queue"]["done"] == 1 and health["state"] == "running"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(timeout=5)
        proc.stdout.close()
        proc.stderr.close()
    assert json.loads(lines[-1]) == {"stopped": True}
    assert not sock.exists()
    assert ipc_request(sock, {"op": "ping"}, 0.2) is None
    assert any("Lisbon" in m.content for m in stored(config, "u"))
