"""The memory daemon: lifecycle, warm path, schedule, health, and the Unix-socket protocol."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from dexai_memory import __version__
from dexai_memory.config import Settings, load_settings
from dexai_memory.daemon import DaemonState, MemoryDaemon
from dexai_memory.daemon.ipc import IpcServer, ipc_request
from dexai_memory.daemon.schedule import interval_trigger
from dexai_memory.errors import DaemonError, DexaiMemoryError
from dexai_memory.models import Memory, MemoryType, Turn, utcnow
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.rules import OfflineClassifier
from tests.pipeline_fakes import EchoExtractor, JoinSummarizer


@pytest.fixture
def settings(isolated_home: Path) -> Settings:
    s = load_settings()
    return dataclasses.replace(s, extraction=dataclasses.replace(s.extraction, batch_size=2,
                                                                flush_interval_seconds=30.0))


@pytest.fixture
async def provider(tmp_path: Path) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(tmp_path / "memory.db", embedder=None) as p:
        yield p


def daemon_for(settings: Settings, provider: NativeProvider, **kw: Any) -> MemoryDaemon:
    kw.setdefault("extractor", EchoExtractor())
    return MemoryDaemon(settings, provider, classifier=OfflineClassifier(), summarizer=JoinSummarizer(), **kw)


def turn(tid: str, content: str, user: str = "u") -> Turn:
    return Turn(id=tid, user_id=user, content=content, session_id="s")


async def test_start_stop_and_double_start(settings: Settings, provider: NativeProvider) -> None:
    d = daemon_for(settings, provider)
    assert d.state is DaemonState.CREATED
    await d.start()
    assert d.state is DaemonState.RUNNING and d.provider is provider and d.queue.running
    with pytest.raises(DaemonError, match="running"):
        await d.start()
    waiter = asyncio.create_task(d.wait_until_stopped())
    await d.stop()
    await asyncio.wait_for(waiter, 5)
    assert d.state is DaemonState.STOPPED and not d.queue.running
    await d.stop()  # idempotent
    with pytest.raises(DaemonError, match="stopped"):
        await d.start()
    with pytest.raises(DaemonError):
        d.submit_turn(turn("x", "I live in Oslo"))
    assert (await provider.health_check()).healthy  # a given provider is not closed


async def test_submit_turn_gates_queues_and_stores(settings: Settings, provider: NativeProvider) -> None:
    extractor = EchoExtractor()
    async with daemon_for(settings, provider, extractor=extractor) as d:
        verdict = d.submit_turn(turn("t1", "I moved to Lisbon last week and I work at a bakery"))
        assert verdict.passed and verdict.score >= settings.extraction.gate_threshold
        assert d.submit_turn(turn("t2", "ok thanks")).passed is False
        assert await d.flush(timeout=5) is True
        health = d.health()
    assert extractor.calls and [i for ids, _ in extractor.calls for i in ids] == ["t1"]
    (m,) = await provider.list(user_id="u")
    assert "Lisbon" in m.content and m.source_ids == ("t1",)
    assert health["queue"]["done"] == 1 and health["pipeline"]["added"] == 1 and health["state"] == "running"


async def test_shutdown_leaves_unfinished_work_on_disk(settings: Settings, provider: NativeProvider) -> None:
    slow = EchoExtractor(delay=30)
    d = daemon_for(settings, provider, extractor=slow)
    await d.start()
    for i in range(3):
        d.submit_turn(turn(f"k{i}", f"I adopted a dog named Rex{i} in Boston"))
    await asyncio.sleep(0.1)  # the first batch is being extracted (slowly)
    await d.stop(flush_timeout=0.1)
    assert d.state is DaemonState.STOPPED
    assert await provider.list(user_id="u") == []
    # a new daemon finishes the job: nothing lost
    async with daemon_for(settings, provider) as d2:
        assert await d2.flush(timeout=5) is True
    assert sorted(s for m in await provider.list(user_id="u") for s in m.source_ids) == ["k0", "k1", "k2"]


async def test_schedule_fires_consolidation_and_cleanup(settings: Settings, provider: NativeProvider) -> None:
    cfg = dataclasses.replace(settings.consolidation, interval_hours=0.0002, min_age_days=1, cluster_similarity=0.7,
                              min_cluster_size=3)
    fast = dataclasses.replace(settings, consolidation=cfg)
    old = utcnow() - timedelta(days=30)
    for month in ("June", "July", "August"):
        await provider.add(Memory(f"Caroline went hiking in the Rocky Mountains in {month}", user_id="u",
                                  created_at=old))
    async with daemon_for(fast, provider) as d:
        assert set(d.next_runs()) == {"consolidation", "cleanup", "vectors", "backup"}
        for _ in range(100):
            if d.runs["consolidation"] >= 1:
                break
            await asyncio.sleep(0.1)
        assert d.runs["consolidation"] >= 1 and d.runs["cleanup"] >= 1
        first = d.last_reports["consolidation"]["u"]
    assert first["merged"] == 1 and first["superseded"] == 3
    (abstract,) = await provider.list(user_id="u")
    assert abstract.content.startswith("Summary:") and abstract.metadata["consolidated_from_count"] == 3


def test_interval_trigger_starts_at_preferred_hour() -> None:
    trig = interval_trigger(24, 3)
    start = trig.start_date  # type: ignore[attr-defined]
    assert (start.hour, start.minute) == (3, 0)
    assert trig.interval == timedelta(hours=24)  # type: ignore[attr-defined]
    assert interval_trigger(0.5, 3).interval == timedelta(minutes=30)  # type: ignore[attr-defined]


async def test_schedule_consolidation_on_demand(settings: Settings, provider: NativeProvider) -> None:
    async with daemon_for(settings, provider) as d:
        assert d.schedule_consolidation("u") is True
        for _ in range(50):
            if d.runs["consolidation"]:
                break
            await asyncio.sleep(0.05)
        assert d.last_reports["consolidation"] == {"u": {"user_id": "u", "dry_run": False, "candidates": 0,
                                                         "method": "word-overlap", "merged": 0, "superseded": 0,
                                                         "clusters": [], "forms_built": 0,
                                                         "episodes_summarised": 0, "episodes_compressed": 0,
                                                         "links_found": 0, "contradictions_found": 0,
                                                         "routines": 0}}


async def test_the_scheduled_consolidation_links_memories_and_scans_for_contradictions(
        settings: Settings, provider: NativeProvider) -> None:
    """The daemon's scheduled job runs the link discovery and the contradiction scan: the links are
    stored, the contradiction the write path kept (a pinned memory) is recorded open."""
    from dexai_memory.lifecycle.contradictions import conflicts
    from dexai_memory.lifecycle.links import links_of

    fast = dataclasses.replace(settings, consolidation=dataclasses.replace(settings.consolidation,
                                                                           interval_hours=0.0002))
    lisbon = await provider.add(Memory("Sam lives in Lisbon", user_id="u", pinned=True))
    porto = await provider.add(Memory("Sam lives in Porto", user_id="u"))
    decision = await provider.add(Memory("We decided to go with Kafka for the event bus", user_id="u"))
    reason = await provider.add(Memory("Kafka was picked for the event bus because RabbitMQ dropped messages "
                                       "under load", user_id="u"))
    async with daemon_for(fast, provider) as d:
        for _ in range(100):
            if d.runs["consolidation"] >= 1:
                break
            await asyncio.sleep(0.1)
        report = d.last_reports["consolidation"]["u"]
    assert report["contradictions_found"] == 1 and report["links_found"] == 2  # reason, Kafka
    [open_one] = await conflicts(provider, "u")
    assert (open_one.contradiction.memory_a, open_one.contradiction.memory_b) == (lisbon.id, porto.id)
    assert [(k["kind"], k["other_id"]) for k in await links_of(provider, decision.id, user_id="u")] == [
        ("reason", reason.id), ("entity", reason.id)]


# --------------------------------------------------------------------------- socket
async def request(path: Path, payload: dict[str, Any]) -> dict[str, Any] | None:
    return await asyncio.to_thread(ipc_request, path, payload, 5.0)


async def test_ipc_round_trip(settings: Settings, provider: NativeProvider) -> None:
    async with daemon_for(settings, provider, serve_socket=True) as d:
        path = settings.socket_path
        assert path.exists() and (path.stat().st_mode & 0o777) == 0o600
        pong = await request(path, {"op": "ping"})
        assert pong is not None and pong["ok"] is True and pong["state"] == "running"

        answer = await request(path, {"op": "enqueue", "turn": {"id": "s1", "user_id": "u", "session_id": "x",
                                                                "content": "I prefer green tea in the morning"}})
        assert answer == {"ok": True, "gated": True, "score": answer and answer["score"], "queued": True,
                          "version": __version__}
        filler = await request(path, {"op": "enqueue", "turn": {"id": "s2", "user_id": "u", "content": "ok"}})
        assert filler is not None and filler["queued"] is False
        flushed = await request(path, {"op": "flush", "timeout": 5})
        assert flushed == {"ok": True, "flushed": True, "pending": 0, "version": __version__}
        health = await request(path, {"op": "health"})
        assert health is not None and health["ok"] and health["queue"]["done"] == 1

        bad = await request(path, {"op": "nope"})
        assert bad is not None and bad["ok"] is False and "unknown op" in bad["error"]
        missing = await request(path, {"op": "enqueue"})
        assert missing is not None and missing["ok"] is False

        async def echo(req: dict[str, Any]) -> dict[str, Any]:
            if req.get("fail"):
                raise DexaiMemoryError("no such thing")
            return {"echo": req["text"]}

        d.ipc.register("test.echo", echo)
        assert await request(path, {"op": "test.echo", "text": "hi"}) == {"ok": True, "echo": "hi",
                                                                            "version": __version__}
        assert await request(path, {"op": "test.echo", "fail": True}) == {"ok": False, "error": "no such thing"}
        assert await request(path, {"op": "test.echo"}) == {"ok": False, "error": "bad request for test.echo: "
                                                                                "KeyError: 'text'"}
    assert not path.exists()
    assert ipc_request(path, {"op": "ping"}, 0.2) is None  # stopped: callers fall back
    (m,) = await provider.list(user_id="u")
    assert m.content == "I prefer green tea in the morning"


async def test_ipc_garbage_and_several_requests_per_connection(tmp_path: Path) -> None:
    server = IpcServer(tmp_path / "s.sock")

    async def ping(req: dict[str, Any]) -> dict[str, Any]:
        return {"n": req.get("n")}

    server.register("ping", ping)
    await server.start()
    try:
        def talk() -> list[bytes]:
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(5)
                s.connect(str(tmp_path / "s.sock"))
                s.sendall(b'not json\n{"op": "ping", "n": 1}\n[1]\n')
                data = b""
                while data.count(b"\n") < 3:
                    data += s.recv(4096)
            return data.splitlines()

        lines = await asyncio.to_thread(talk)
        assert b'"ok": false' in lines[0] and b"not JSON" in lines[0]
        assert lines[1] == b'{"n": 1, "ok": true, "version": "' + __version__.encode() + b'"}'
        assert b"string 'op'" in lines[2]
    finally:
        await server.aclose()


def test_no_daemon_means_none(tmp_path: Path) -> None:
    assert ipc_request(tmp_path / "absent.sock", {"op": "ping"}, 0.1) is None
    stale = tmp_path / "stale.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(stale))  # bound but nobody listening: a crashed daemon's leftover
    s.close()
    assert ipc_request(stale, {"op": "ping"}, 0.1) is None


async def test_stale_socket_replaced_live_one_refused(tmp_path: Path) -> None:
    path = tmp_path / "d.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()
    first = IpcServer(path)

    async def ping(req: dict[str, Any]) -> dict[str, Any]:
        return {"pid": 1}

    first.register("ping", ping)
    await first.start()  # replaced the stale file
    try:
        with pytest.raises(DexaiMemoryError, match="already running"):
            await IpcServer(path).start()
    finally:
        await first.aclose()


async def test_cleanup_applies_the_fact_lifecycle(settings: Settings, provider: NativeProvider) -> None:
    """The daemon's cleanup job expires stale facts, archives the never-used ones and keeps each
    user under the cap (issue 14)."""
    now = utcnow()
    await provider.add_many([Memory(f"Routine note number {i} about the build", user_id="u",
                                    created_at=now - timedelta(days=1 + i / 10)) for i in range(125)])
    stale = await provider.add(Memory("The old CI host is ci-7.internal", user_id="u",
                                      created_at=now - timedelta(days=61)))
    # a colleague (identity: kept 365 days without a reference) never injected, recalled nor cited
    unused = await provider.add(Memory("Dana from the infra team", user_id="u", type=MemoryType.RELATIONSHIP,
                                       created_at=now - timedelta(days=100)))
    async with daemon_for(settings, provider) as d:
        reports = await d.run_cleanup("u")
    life = reports["u"]["lifecycle"]
    assert [e["id"] for e in life["expired"]] == [stale.id]
    assert [e["id"] for e in life["unused"]] == [unused.id]
    assert life["facts_before"] == 127 and len(life["evicted"]) == 5 and life["facts_after"] == 120
    assert (await provider.get(stale.id, user_id="u")).archived
    assert (await provider.get(unused.id, user_id="u")).tier.value == "L3"


# --------------------------------------------------------------------------- the hook doors
def _curl(settings: Settings, event: str, body: bytes, *, query: str = "", **env: str) -> tuple[int, str]:
    """One hook event as the plugin's launcher sends it: ``curl --unix-socket`` (HTTP on the socket)."""
    import subprocess

    headers = [arg for name, value in env.items() for arg in ("-H", f"X-Dexai-Env-{name}: {value}")]
    proc = subprocess.run(["curl", "-sS", "--max-time", "20", "--unix-socket", str(settings.socket_path),
                           "-H", "Content-Type: application/json", "-H", "Expect:", *headers, "--data-binary", "@-",
                           f"http://dexai-memory/hook/{event}{query}"], input=body, capture_output=True,
                          timeout=30, check=False)
    return proc.returncode, proc.stdout.decode()


@pytest.mark.skipif(__import__("shutil").which("curl") is None, reason="needs curl")
async def test_curl_on_the_socket_gets_the_same_answer_as_hook_event(settings: Settings,
                                                                     provider: NativeProvider,
                                                                     tmp_path: Path) -> None:
    from dexai_memory.daemon.event import HookEvent

    await provider.add(Memory(content="The deploy password hint is PINEAPPLE-42", user_id="alice", importance=8))
    async with daemon_for(settings, provider, serve_socket=True):
        # the same prompt in two sessions (a session does not inject a memory twice)
        prompt = "what is my deploy password hint?"
        event = HookEvent.make("user-prompt-submit", {"session_id": "j1", "prompt": prompt},
                               env={"DEXAI_MEMORY_USER": "alice"})
        lines = await request(settings.socket_path, {"op": "hook.event", **event.to_json()})
        assert lines is not None and lines["ok"]
        code, body = await asyncio.to_thread(_curl, settings, "user-prompt-submit",
                                             json.dumps({"session_id": "h1", "prompt": prompt}).encode(),
                                             DEXAI_MEMORY_USER="alice")
        assert code == 0 and json.loads(body) == lines["answer"]
        assert "PINEAPPLE-42" in lines["answer"]["hookSpecificOutput"]["additionalContext"]
        # the identity headers decide whose memories: bob has none
        code, body = await asyncio.to_thread(_curl, settings, "user-prompt-submit",
                                             json.dumps({"session_id": "h2", "prompt": prompt}).encode(),
                                             DEXAI_MEMORY_USER="bob")
        assert code == 0 and json.loads(body) == {}
        # a malformed body, an unknown event: a valid no-op, and the daemon keeps serving
        for name, data in (("user-prompt-submit", b"{not json"), ("user-prompt-submit", b"[1, 2]"),
                           ("no-such-event", b"{}")):
            code, body = await asyncio.to_thread(_curl, settings, name, data, DEXAI_MEMORY_USER="alice")
            assert code == 0 and json.loads(body) == {}, (name, body)
        # PreCompact answers plain text: the compaction instructions
        transcript = tmp_path / "t.jsonl"
        transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "ship it"}}) + "\n")
        code, body = await asyncio.to_thread(_curl, settings, "pre-compact", json.dumps(
            {"session_id": "h3", "trigger": "manual", "transcript_path": str(transcript)}).encode(),
            DEXAI_MEMORY_USER="alice")
        assert code == 0 and "Preserve" in body and not body.lstrip().startswith("{")
        # ?async=1 marks the event as a background one (an async Stop): answered all the same
        code, body = await asyncio.to_thread(_curl, settings, "stop", json.dumps(
            {"session_id": "h1", "last_assistant_message": "It is PINEAPPLE-42."}).encode(), query="?async=1",
            DEXAI_MEMORY_USER="alice")
        assert code == 0 and json.loads(body) == {}
        pong = await request(settings.socket_path, {"op": "ping"})
        assert pong is not None and pong["state"] == "running"


async def test_queued_hook_events_are_replayed_at_start_in_order(settings: Settings, provider: NativeProvider,
                                                                tmp_path: Path) -> None:
    """Events no daemon answered in time: replayed oldest first before the socket serves; a
    replayed prompt is recorded for its Stop without a recall (nobody reads the answer); every
    row is dropped after."""
    from dexai_memory.capture.queue_file import queue_path, queued_events, save_event
    from dexai_memory.daemon.event import HookEvent
    from dexai_memory.daemon.session_state import load_session, pending_prompts

    hint = await provider.add(Memory(content="The deploy password hint is PINEAPPLE-42", user_id="alice",
                                     importance=8))
    env = {"DEXAI_MEMORY_USER": "alice"}
    settings.home.mkdir(parents=True, exist_ok=True)
    path = queue_path(settings.home)
    for name, payload in (
            ("user-prompt-submit", {"session_id": "r1", "prompt": "I rotate the deploy password hint PINEAPPLE-42 "
                                    "every Friday", "prompt_id": "p1"}),
            ("stop", {"session_id": "r1", "last_assistant_message": "Noted: rotation every Friday."}),
            ("user-prompt-submit", {"session_id": "r1", "prompt": "And the staging key lives in Vault",
                                    "prompt_id": "p2"})):
        save_event(path, HookEvent.make(name, payload, env=env).to_json())
    save_event(path, {"event": "no-such-event", "payload": {}})  # unreadable: dropped, not replayed
    async with daemon_for(settings, provider, serve_socket=True) as d:
        assert d.runs["replayed-events"] == 3
        assert queued_events(path) == []
        state = load_session(settings, "r1")
        # the Stop was replayed after the first prompt (it queued it) and before the second (still pending)
        assert [p["prompt_id"] for p in pending_prompts(state)] == ["p2"]
        assert state.get("injected") in (None, [])  # recorded without a recall
        assert await d.flush(5)
    contents = [m.content for m in await provider.list(user_id="alice")]
    assert any("every Friday" in c for c in contents) and not any("staging key" in c for c in contents)
    assert (await provider.get(hint.id, user_id="alice")).retrieval_count == 0
