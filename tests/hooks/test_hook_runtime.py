"""The command-hook fast path, run as real processes (``python -m dexai_memory.hook_runtime``)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from dexai_memory.config import Settings, load_settings
from dexai_memory.daemon.actions import register_ipc_ops
from dexai_memory.daemon.ipc import IpcServer
from dexai_memory.embeddings import Embedder
from dexai_memory.hooks import state as hook_state
from dexai_memory.models import Memory, MemoryType
from dexai_memory.providers.native import NativeProvider

FORBIDDEN = ("anthropic", "claude_agent_sdk", "numpy", "onnxruntime", "spacy", "aiosqlite", "sqlean")


def hook(event: str, payload: dict[str, Any], home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    child = {**os.environ, "DEXAI_MEMORY_HOME": str(home), "DEXAI_MEMORY_USER": "alice", **env}
    return subprocess.run([sys.executable, "-m", "dexai_memory.hook_runtime", event], input=json.dumps(payload),
                          capture_output=True, text=True, env=child, timeout=60, check=False)


def context_of(proc: subprocess.CompletedProcess[str], event: str) -> str:
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    if not out:
        return ""
    assert out["hookSpecificOutput"]["hookEventName"] == event
    return str(out["hookSpecificOutput"]["additionalContext"])


def write_transcript(path: Path, turns: list[tuple[str, str]]) -> Path:
    with path.open("w") as fh:
        for role, text in turns:
            fh.write(json.dumps({"type": role, "message": {"role": role, "content": text}}) + "\n")
    return path


@pytest.fixture
async def home(isolated_home: Path, embedder: Embedder) -> Path:
    async with NativeProvider(isolated_home / "memory.db", embedder=embedder) as p:
        await p.add(Memory(content="The deploy password hint is PINEAPPLE-42", user_id="alice", importance=8))
        await p.add(Memory(content="Alice prefers tabs over spaces", user_id="alice", type=MemoryType.PREFERENCE,
                           importance=8))
        await p.add(Memory(content="Bob's deploy hint is MANGO-7", user_id="bob"))
    return isolated_home


def test_user_prompt_submit_bm25_fallback_injects_once(home: Path, tmp_path: Path) -> None:
    payload = {"session_id": "s1", "prompt": "what is my deploy password hint?", "cwd": str(tmp_path)}
    text = context_of(hook("user-prompt-submit", payload, home), "UserPromptSubmit")
    assert "PINEAPPLE-42" in text and "MANGO" not in text
    assert text.startswith("<dexai-memory>") and len(text) < 10_000
    # already injected in this session: not repeated
    assert context_of(hook("user-prompt-submit", payload, home), "UserPromptSubmit") == ""


def test_irrelevant_prompt_injects_nothing(home: Path, tmp_path: Path) -> None:
    payload = {"session_id": "s1", "prompt": "rename variable x to y in utils", "cwd": str(tmp_path)}
    assert context_of(hook("user-prompt-submit", payload, home), "UserPromptSubmit") == ""


def test_session_start_injects_profile(home: Path, tmp_path: Path) -> None:
    text = context_of(hook("session-start", {"session_id": "s1", "source": "startup", "cwd": str(tmp_path)}, home),
                      "SessionStart")
    assert "Persistent context:" in text and "Alice prefers tabs over spaces" in text


def test_pre_compact_then_session_start_compact(home: Path, tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "t.jsonl", [("user", "what is my deploy password hint?"),
                                                         ("assistant", "It is in your notes.")])
    pre = hook("pre-compact", {"session_id": "s2", "trigger": "manual", "transcript_path": str(transcript),
                               "cwd": str(tmp_path)}, home)
    assert pre.returncode == 0 and "Preserve:" in pre.stdout  # plain-text instructions, not JSON
    settings = load_settings(home=home)
    marker = hook_state.read_marker(settings, "s2")
    assert marker and "deploy password hint" in marker["snapshot"]
    backups = list((home / "transcripts").glob("s2-*-manual.jsonl"))
    assert len(backups) == 1 and backups[0].read_text() == transcript.read_text()
    text = context_of(hook("session-start", {"session_id": "s2", "source": "compact", "cwd": str(tmp_path)}, home),
                      "SessionStart")
    assert "PINEAPPLE-42" in text and "Session state:" in text and "Alice prefers tabs" in text
    assert hook_state.read_marker(settings, "s2") is None


def test_user_prompt_submit_reinjects_when_marker_left(home: Path, tmp_path: Path) -> None:
    settings = load_settings(home=home)
    hook_state.write_marker(settings, "s3", {"trigger": "auto", "snapshot": "Current task: ship the release",
                                     "last_prompt": "deploy password hint"})
    text = context_of(hook("user-prompt-submit", {"session_id": "s3", "prompt": "ok", "cwd": str(tmp_path)}, home),
                      "UserPromptSubmit")
    assert "Current task: ship the release" in text and "Persistent context:" in text
    assert hook_state.read_marker(settings, "s3") is None


def test_stop_enqueues_gated_turns(home: Path, tmp_path: Path) -> None:
    base = {"session_id": "s4", "cwd": str(tmp_path)}
    hook("user-prompt-submit", {**base, "prompt": "I prefer dark roast coffee, remember that", "prompt_id": "p1"},
         home)
    proc = hook("stop", {**base, "last_assistant_message": "ok"}, home)
    assert proc.returncode == 0 and json.loads(proc.stdout) == {}
    tool = hook("post-tool-use", {**base, "tool_name": "Bash", "tool_use_id": "t1",
                                  "tool_response": {"stdout": "ls: nothing"}}, home)
    assert tool.returncode == 0
    rows = sqlite3.connect(home / "queue.db").execute("SELECT turn_id, payload FROM jobs").fetchall()
    assert [r[0] for r in rows] == ["s4:user:p1"]  # "ok" and the bare ls output do not pass the gate
    assert json.loads(rows[0][1])["turn"]["content"] == "I prefer dark roast coffee, remember that"


@pytest.mark.parametrize("case", ["corrupt-db", "bad-stdin", "unknown-event"])
def test_hook_never_fails(home: Path, tmp_path: Path, case: str) -> None:
    event, stdin = "user-prompt-submit", {"session_id": "s5", "prompt": "deploy password hint", "cwd": str(tmp_path)}
    if case == "corrupt-db":
        (home / "memory.db").write_bytes(b"this is not a database" * 100)
        for suffix in ("-wal", "-shm"):
            (home / f"memory.db{suffix}").unlink(missing_ok=True)
    child = {**os.environ, "DEXAI_MEMORY_HOME": str(home)}
    if case == "unknown-event":
        event = "no-such-event"
    raw = "{not json" if case == "bad-stdin" else json.dumps(stdin)
    proc = subprocess.run([sys.executable, "-m", "dexai_memory.hook_runtime", event], input=raw, text=True,
                          capture_output=True, env=child, timeout=60, check=False)
    assert proc.returncode == 0 and json.loads(proc.stdout) == {}
    if case != "unknown-event":
        assert "failed" in (home / "hooks.log").read_text() and proc.stderr == ""


def test_memory_off_per_project_and_for_subagents(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "secret-project"
    project.mkdir()
    (home / "memory.yaml").write_text(f"hooks:\n  disabled_projects: [{project}]\n")
    payload = {"session_id": "s6", "prompt": "deploy password hint", "cwd": str(project)}
    assert context_of(hook("user-prompt-submit", payload, home), "UserPromptSubmit") == ""
    sub = {"session_id": "s7", "prompt": "deploy password hint", "cwd": str(tmp_path), "agent_id": "a1"}
    assert context_of(hook("user-prompt-submit", sub, home), "UserPromptSubmit") == ""
    (home / "memory.yaml").write_text("hooks:\n  subagents: true\n")
    assert "PINEAPPLE" in context_of(hook("user-prompt-submit", sub, home), "UserPromptSubmit")


def test_hook_process_imports_no_heavy_module(home: Path, tmp_path: Path) -> None:
    """The per-turn events stay light; only PreCompact/SessionEnd without a daemon load the
    extraction pipeline (they extract the queue inline)."""
    code = (
        "import io, json, sys\n"
        "from dexai_memory.hooks.client import run\n"
        "for ev, p in [('session-start', {'source': 'startup'}), ('user-prompt-submit', {'prompt': 'deploy hint'}),"
        " ('post-tool-use', {'tool_name': 'Bash', 'tool_response': 'Deployed to staging for Sarah tomorrow'}),"
        " ('stop', {'last_assistant_message': 'I will remember you prefer tea'}), ('post-compact', {})]:\n"
        "    run(ev, io.StringIO(json.dumps({**p, 'session_id': 'x'})), io.StringIO())\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                          env={**os.environ, "DEXAI_MEMORY_HOME": str(home)})
    assert json.loads(proc.stdout) == []


def test_the_prompt_hook_without_a_daemon_imports_only_what_it_uses(home: Path) -> None:
    """UserPromptSubmit with no daemon (keyword recall from the SQLite file): no prefetch (shlex),
    no IPC client (socket), no queue, gate or extraction; and the answer is still the recall."""
    code = (
        "import io, json, sys\n"
        "from dexai_memory.hooks.client import run\n"
        "out = io.StringIO()\n"
        "run('user-prompt-submit', io.StringIO(json.dumps({'session_id': 'x', 'prompt': 'deploy password hint'})),"
        " out)\n"
        "print(json.dumps([out.getvalue(), sorted(sys.modules)]))\n"
    )
    proc = subprocess.run([sys.executable, "-S", "-c", f"import site; site.main()\n{code}"], capture_output=True,
                          text=True, timeout=60, check=True,
                          env={**os.environ, "DEXAI_MEMORY_HOME": str(home), "DEXAI_MEMORY_USER": "alice"})
    answer, modules = json.loads(proc.stdout)
    assert "PINEAPPLE-42" in answer
    unused = {"dexai_memory.daemon.prefetch_items", "shlex", "socket", "dexai_memory.daemon.ipc", "dexai_memory.capture.gate",
              "dexai_memory.capture.queue_file", "dexai_memory.capture.admit", "dexai_memory.extraction",
              "subprocess", "asyncio", "hashlib"}
    assert unused.isdisjoint(modules), sorted(unused & set(modules))


class _DaemonStub:
    """The parts of a running daemon the hook socket ops use: settings, provider, ipc, flush."""

    def __init__(self, settings: Settings, provider: NativeProvider):
        self.settings = settings
        self.provider = provider
        self.ipc = IpcServer(settings.socket_path)
        self.flushes = 0

    async def flush(self) -> bool:
        self.flushes += 1
        return True


@pytest.fixture
async def daemon(home: Path, embedder: Embedder) -> AsyncIterator[_DaemonStub]:
    short = Path(tempfile.mkdtemp(prefix="dx"))  # Unix socket paths must stay short
    for name in ("memory.db", "memory.db-wal", "memory.db-shm"):
        if (home / name).exists():
            shutil.copy2(home / name, short / name)
    settings = load_settings(home=short)
    async with NativeProvider(settings.db_path, embedder=embedder) as provider:
        stub = _DaemonStub(settings, provider)
        register_ipc_ops(stub)
        await stub.ipc.start()
        try:
            yield stub
        finally:
            await stub.ipc.aclose()
    shutil.rmtree(short, ignore_errors=True)


async def test_hooks_use_the_daemon_when_it_answers(daemon: _DaemonStub, tmp_path: Path) -> None:
    home = daemon.settings.home
    env = {"DEXAI_MEMORY_HOME": str(home)}
    payload = {"session_id": "d1", "prompt": "what is my deploy password hint?", "cwd": str(tmp_path)}
    proc = await asyncio.to_thread(hook, "user-prompt-submit", payload, home, **env)
    assert "PINEAPPLE-42" in context_of(proc, "UserPromptSubmit")
    assert daemon.ipc.requests >= 1
    hits = [m for m in await daemon.provider.list(user_id="alice") if "PINEAPPLE" in m.content]
    assert hits[0].retrieval_count == 1  # only the daemon path records retrievals
    transcript = write_transcript(tmp_path / "t.jsonl", [("user", "deploy the app"), ("assistant", "Deploying.")])
    pre = await asyncio.to_thread(hook, "pre-compact", {"session_id": "d1", "trigger": "auto",
                                                        "transcript_path": str(transcript), "cwd": str(tmp_path)},
                                  home, **env)
    assert pre.returncode == 0 and daemon.flushes == 1
    snapshot = await daemon.provider.get("snapshot_d1", user_id="alice")
    assert snapshot.type is MemoryType.SNAPSHOT and "deploy the app" in snapshot.content
    archived = await daemon.provider.list(user_id="alice", filters=__import__(
        "dexai_memory.models", fromlist=["SearchFilters"]).SearchFilters(types=(MemoryType.TRANSCRIPT,)))
    assert archived and archived[0].metadata["path"].endswith("-auto.jsonl")


def test_reflection_hint_reaches_the_model_on_user_prompt_submit(home: Path) -> None:
    """A stated preference / correction / "remember this" adds a hint to consider `remember`
    (dexai_memory.triggers), through UserPromptSubmit's additionalContext; not repeated at once."""
    from dexai_memory.triggers import HINT_PREFIX

    said = {"session_id": "h1", "prompt": "From now on, always run make check before every push."}
    assert HINT_PREFIX in context_of(hook("user-prompt-submit", said, home), "UserPromptSubmit")
    plain = {"session_id": "h1", "prompt": "Open the parser module."}
    assert HINT_PREFIX not in context_of(hook("user-prompt-submit", plain, home), "UserPromptSubmit")
    again = {"session_id": "h1", "prompt": "Always use ruff, never flake8."}
    assert HINT_PREFIX not in context_of(hook("user-prompt-submit", again, home), "UserPromptSubmit")  # cool-down
    fixed = {"session_id": "h2", "prompt": "No, I meant the staging cluster, not production."}
    assert "correct" in context_of(hook("user-prompt-submit", fixed, home), "UserPromptSubmit").lower()


def test_our_own_memory_tool_results_are_not_captured_again(home: Path) -> None:
    for tool in ("mcp__plugin_dexai-memory_dexai-memory__recall", "mcp__dexai_memory__recall"):
        payload = {"session_id": "own", "tool_name": tool, "tool_use_id": tool,
                   "tool_response": "I live in Lisbon and my dentist is Dr Costa on Friday"}
        assert hook("post-tool-use", payload, home).returncode == 0
    queue = home / "queue.db"
    if queue.exists():
        assert sqlite3.connect(queue).execute("SELECT COUNT(*) FROM jobs").fetchone()[0] == 0
