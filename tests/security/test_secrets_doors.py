"""Every secret shape through every door, then every byte of every file of the data directory
and every output searched for it.

The doors, each on its own data directory with the whole shape table
(:mod:`tests.security.secrets_table`) written through it: the hook events through the real
daemon executor (UserPromptSubmit and Stop, a tool's output, a failing command's prefetch with
its state file and "Known about ..." header, SessionStart), ``dexai memory add``, ``dexai memory
facts add``, MCP ``remember`` (:class:`~dexai_memory.agent_tools.mcp.MemoryTools`), the panel's
``POST /api/memories``, ``dexai memory ingest``, ``dexai memory import`` and the Agent SDK session
store. Afterwards: every file under the data directory (``memory.db``, ``queue.db``,
``sessions.db`` with their WAL files, ``hooks/*.json``, transcripts, a backup), the outputs the
door gave and the log records.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dexai_memory.cli.main import cli
from dexai_memory.config import load_settings
from dexai_memory.models import Memory
from dexai_memory.providers.native import NativeProvider

from .secrets_table import SHAPES

USER = "alice"
FIX = "The nightly export dies with ConnectionResetError when the VPN is down: reconnect the VPN and rerun it"


@pytest.fixture(autouse=True)
def no_embedder(isolated_home: Path, caplog: pytest.LogCaptureFixture) -> None:
    """BM25 search only (fast), and every log record kept to be searched."""
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\n", encoding="utf-8")
    caplog.set_level(logging.DEBUG, logger="dexai_memory")


def _found(secret: str, haystack: str) -> bool:
    """Whether ``secret`` is in ``haystack`` (lower-cased: the FTS index lower-cases); a short or
    all-digit value only as a whole word, and digits not as the fraction of a timestamp."""
    needle = secret.lower()
    start = haystack.find(needle)
    while start >= 0:
        end = start + len(needle)
        before = haystack[start - 1] if start else " "
        after = haystack[end] if end < len(haystack) else " "
        if len(needle) >= 12 and not needle.isdigit() or not (before.isalnum() or after.isalnum()) and not (
                needle.isdigit() and before == "."):
            return True
        start = haystack.find(needle, start + 1)
    return False


def leaks(home: Path, outputs: Iterable[str], caplog: pytest.LogCaptureFixture) -> dict[str, list[str]]:
    """shape id -> where one of its secrets was found (files by name, "output", "log")."""
    places = {str(p.relative_to(home)): p.read_bytes().decode("latin-1").lower()
              for p in sorted(home.rglob("*")) if p.is_file()}
    places["output"] = "\n".join(outputs).lower()
    places["log"] = "\n".join(r.getMessage() for r in caplog.records).lower()
    found: dict[str, list[str]] = {}
    for sid, _, secrets in SHAPES:
        where = [name for name, text in places.items() if any(_found(s, text) for s in secrets)]
        if where:
            found[sid] = where
    return found


def assert_no_leaks(door: str, home: Path, outputs: Iterable[str], caplog: pytest.LogCaptureFixture) -> None:
    found = leaks(home, outputs, caplog)
    assert home.joinpath("memory.db").exists() or door == "sdk-session-store"
    assert not found, f"LEAKED {door} {len(found)}/{len(SHAPES)}: {json.dumps(found)}"


def backup(home: Path) -> str:
    result = CliRunner().invoke(cli, ["memory", "backup", "--user", USER])
    return result.output


# --------------------------------------------------------------------------- the doors


async def test_hook_events_through_the_daemon(isolated_home: Path, caplog: pytest.LogCaptureFixture) -> None:
    from tests.hook_daemon import context_of, handle, running_daemon

    outputs: list[str] = []
    settings = load_settings(home=isolated_home)
    async with NativeProvider(isolated_home / "memory.db", embedder=None) as store:
        await store.add(Memory(content=FIX, user_id=USER, importance=7))
        async with running_daemon(settings, store) as d:
            for i, (sid, text, _) in enumerate(SHAPES):
                session = f"s{i}"
                answer = await handle(d, "user-prompt-submit", {"session_id": session, "prompt_id": f"p{i}",
                                                                "prompt": f"Please remember this for the deploy: {text}"})
                outputs.append(json.dumps(answer))
                # a tool's output, and a failing command whose output holds the secret (the prefetch)
                outputs.append(json.dumps(await handle(d, "post-tool-use", {
                    "session_id": session, "tool_name": "Bash", "tool_use_id": f"t{i}", "cwd": "/w",
                    "tool_input": {"command": f"cat notes-{sid}.txt"}, "tool_response": {"stdout": text,
                                                                                        "exitCode": 0}})))
                failed = await handle(d, "post-tool-use", {  # a session of its own: nothing recalled yet
                    "session_id": f"f{i}", "tool_name": "Bash", "tool_use_id": f"f{i}", "cwd": "/w",
                    "hook_event_name": "PostToolUseFailure", "tool_input": {"command": "python export.py"},
                    "error": f"Traceback (most recent call last):\nConnectionResetError: {text}"})
                outputs.append(context_of(failed, "PostToolUseFailure"))
                outputs.append(json.dumps(await handle(d, "stop", {
                    "session_id": session, "last_assistant_message": f"Noted: {text}"})))
            assert any("Known about" in o for o in outputs)  # the prefetch header was shown
            await d.flush(120)
            start = await handle(d, "session-start", {"session_id": "next", "source": "startup"})
            outputs.append(json.dumps(start))
            assert await store.count(user_id=USER) > 1  # the turns were stored
    outputs.append(backup(isolated_home))
    assert_no_leaks("hook", isolated_home, outputs, caplog)


def test_memory_add_cli(isolated_home: Path, caplog: pytest.LogCaptureFixture) -> None:
    runner = CliRunner()
    outputs = [runner.invoke(cli, ["memory", "add", "--user", USER, "--", text]).output for _, text, _ in SHAPES]
    outputs.append(runner.invoke(cli, ["memory", "list", "--user", USER, "--json", "--limit", "1000"]).output)
    outputs.append(backup(isolated_home))
    assert_no_leaks("memory-add", isolated_home, outputs, caplog)


def test_facts_add_cli(isolated_home: Path, caplog: pytest.LogCaptureFixture) -> None:
    runner = CliRunner()
    outputs = [runner.invoke(cli, ["memory", "facts", "add", "--user", USER, "--", text]).output
               for _, text, _ in SHAPES]
    outputs.append(backup(isolated_home))
    assert_no_leaks("facts-add", isolated_home, outputs, caplog)


async def test_mcp_remember(isolated_home: Path, caplog: pytest.LogCaptureFixture) -> None:
    from dexai_memory.agent_tools.mcp import MemoryTools

    outputs: list[str] = []
    async with NativeProvider(isolated_home / "memory.db", embedder=None) as store:
        tools = MemoryTools(store, USER, settings=load_settings(home=isolated_home))
        for _, text, _ in SHAPES:
            outputs.append(json.dumps(await tools.call("remember", {"content": text, "category": "fact"})))
        outputs.append(json.dumps(await tools.call("recall", {"query": "password key token"})))
    assert_no_leaks("mcp-remember", isolated_home, outputs, caplog)


def test_panel_post(isolated_home: Path, caplog: pytest.LogCaptureFixture) -> None:
    from starlette.testclient import TestClient

    from dexai_memory.api.app import build_app

    token = "test-token-0123456789"
    auth = {"Authorization": f"Bearer {token}"}
    outputs: list[str] = []
    with TestClient(build_app(load_settings(), USER, token), base_url="http://127.0.0.1") as client:
        for _, text, _ in SHAPES:
            outputs.append(client.post("/api/memories", json={"content": text}, headers=auth).text)
        outputs.append(client.get("/api/memories?limit=500", headers=auth).text)
    assert_no_leaks("panel", isolated_home, outputs, caplog)


def test_ingest_cli(isolated_home: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rows = [{"id": f"T{i}", "role": "user", "speaker": "Sam", "content": f"For the record, {text}",
             "timestamp": f"2024-05-08T13:{i % 60:02d}:00", "caption": text} for i, (_, text, _) in enumerate(SHAPES)]
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = CliRunner().invoke(cli, ["memory", "ingest", str(path), "--user", USER])
    assert result.exit_code == 0, result.output
    path.unlink()  # the input file is the user's own, not ours
    assert_no_leaks("ingest", isolated_home, [result.output, backup(isolated_home)], caplog)


def test_import_cli(isolated_home: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rows = [{"content": text, "type": "FACT", "metadata": {"note": text},
             "events": [{"action": "ADD", "reason": f"imported: {text}", "at": "2024-05-08T13:00:00+00:00",
                         "details": {"before": text}}]} for _, text, _ in SHAPES]
    path = tmp_path / "export.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(cli, ["memory", "import", str(path), "--user", USER])
    assert result.exit_code == 0, result.output
    again = runner.invoke(cli, ["memory", "import", str(path), "--user", USER])  # the same file: all known
    path.unlink()
    assert_no_leaks("import", isolated_home, [result.output, again.output, backup(isolated_home)], caplog)


async def test_sdk_session_store(isolated_home: Path, caplog: pytest.LogCaptureFixture) -> None:
    from dexai_memory.sessions.store import SessionStore

    store = SessionStore.open(load_settings(home=isolated_home))
    key = {"project_key": "-w-shop", "session_id": "sdk-1"}
    entries: list[dict[str, Any]] = []
    for i, (_, text, _) in enumerate(SHAPES):
        entries += [
            {"type": "user", "uuid": f"u{i}", "message": {"role": "user", "content": text}},
            {"type": "assistant", "uuid": f"a{i}", "message": {"role": "assistant", "id": f"msg{i}", "content": [
                {"type": "text", "text": f"Running it with {text}"},
                {"type": "tool_use", "id": f"tu{i}", "name": "Bash", "input": {"command": text}},
                {"type": "tool_use", "id": f"todo{i}", "name": "TodoWrite",
                 "input": {"todos": [{"content": text, "status": "pending", "activeForm": text}]}}]}},
            {"type": "user", "uuid": f"r{i}", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"tu{i}", "is_error": True, "content": text}]}},
        ]
    await store.append(key, entries)
    loaded = await store.load(key)
    info = store.info("sdk-1")
    outputs = [json.dumps(loaded), repr(info), json.dumps(await store.list_session_summaries("-w-shop"))]
    assert loaded is not None and len(loaded) == len(entries)
    assert_no_leaks("sdk-session-store", isolated_home, outputs, caplog)


@pytest.mark.parametrize("backend", ["native", "memory"])
async def test_every_write_primitive_of_a_backend_redacts(backend: str, isolated_home: Path,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    """The store's own guarantee, whatever calls it: add, add_many, update (content and metadata),
    session notes and history entries (reason and details)."""
    from datetime import UTC, datetime

    from dexai_memory.models import MemoryEvent
    from dexai_memory.providers.memory import InMemoryProvider

    texts = [text for _, text, _ in SHAPES]
    store = NativeProvider(isolated_home / "memory.db", embedder=None) if backend == "native" else InMemoryProvider()
    outputs: list[str] = []
    async with store:
        first = await store.add(Memory(content=f"Note: {texts[0]}", user_id=USER, metadata={"raw": texts}))
        many = await store.add_many([Memory(content=f"Note: {t}", user_id=USER) for t in texts])
        for m, t in zip(many, reversed(texts), strict=True):
            await store.update(m.id, user_id=USER, content=f"Changed: {t}", metadata={"why": t})
        await store.add_session_note(f"Session: {texts[1]}", user_id=USER, session_id="s")
        at = datetime(2024, 1, 1, tzinfo=UTC)
        await store.record_event(MemoryEvent(first.id, "EDIT", texts[2], at, details={"after": texts[3]}), user_id=USER)
        await store.record_events([MemoryEvent(first.id, "UPDATE", t, at, details={"before": t}) for t in texts],
                                  user_id=USER)
        listed = await store.list(user_id=USER, limit=1000)
        outputs += [json.dumps([m.to_dict() for m in listed]),
                    json.dumps([e.to_dict() for e in await store.events(first.id, user_id=USER)])]
        assert len(listed) == len(texts) + 2
    found = leaks(isolated_home, outputs, caplog)
    assert not found, f"LEAKED {backend} {len(found)}/{len(SHAPES)}: {json.dumps(found)}"
