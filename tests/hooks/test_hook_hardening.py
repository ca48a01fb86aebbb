"""Issue 11, the hook side: what a hostile test found in the command hooks (privacy, the hook
contract, scoping and files). Real hook processes (the plugin's launcher), answered by the
daemon the first of them starts, real files; each test is named for what it protects."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from dexai_memory.config import load_settings
from dexai_memory.daemon.control import stop
from dexai_memory.daemon.session_state import project_key
from dexai_memory.providers.native.driver import store_sqlite
from tests.hook_daemon import LAUNCHER, launch_sync

SECRET = "sk-ant-api03-" + "Zq7Xr2Lm9Vt4Bn8Kc1Pw6Hy3Jd5Fs0Ga" * 2
PRIVATE = "<private>my bank PIN is 4417</private>"


@pytest.fixture(autouse=True)
def autostart(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The hooks start the daemon as they do for a user; it is stopped after the test."""
    monkeypatch.setenv("DEXAI_DAEMON_AUTOSTART", "1")
    yield
    stop(load_settings(home=isolated_home), timeout=15)


def hook(event: str, payload: dict[str, Any], home: Path, user: str = "alice",
         **env: str) -> subprocess.CompletedProcess[str]:
    return launch_sync(event, payload, home, DEXAI_MEMORY_USER=user, PYTHONIOENCODING="utf-8", **env)


def transcript(path: Path, turns: list[tuple[str, str]]) -> str:
    with path.open("w", encoding="utf-8") as fh:
        for role, text in turns:
            fh.write(json.dumps({"type": role, "message": {"role": role, "content": text}}) + "\n")
    return str(path)


def every_file_text(home: Path) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in home.rglob("*") if p.is_file())


def test_secrets_and_private_text_never_reach_snapshot_marker_session_state_or_backup(
        isolated_home: Path, tmp_path: Path) -> None:
    said = f"Deploy with key {SECRET} please. {PRIVATE} Then update the changelog."
    t = transcript(tmp_path / "t.jsonl", [("user", said), ("assistant", f"Using {SECRET} now.")])
    base = {"session_id": "p1", "cwd": str(tmp_path), "transcript_path": t}
    assert hook("user-prompt-submit", {**base, "prompt": said}, isolated_home).returncode == 0
    assert hook("stop", {**base, "last_assistant_message": f"Using {SECRET} now."}, isolated_home).returncode == 0
    pre = hook("pre-compact", {**base, "trigger": "manual"}, isolated_home)
    assert pre.returncode == 0
    after = hook("session-start", {**base, "source": "compact"}, isolated_home)
    assert after.returncode == 0
    assert SECRET not in after.stdout and "4417" not in after.stdout
    assert "Current task" in after.stdout  # the snapshot is there, redacted
    stored = every_file_text(isolated_home)
    assert list((isolated_home / "transcripts").glob("*.jsonl")), "no transcript backup"
    assert SECRET not in stored and "4417" not in stored


def test_session_state_is_removed_at_session_end(isolated_home: Path, tmp_path: Path) -> None:
    base = {"session_id": "p2", "cwd": str(tmp_path)}
    hook("user-prompt-submit", {**base, "prompt": "hello there"}, isolated_home)
    assert list((isolated_home / "hooks").glob("session-p2.json"))
    hook("session-end", base, isolated_home)
    assert not list((isolated_home / "hooks").glob("session-p2.json"))


def test_stale_session_state_is_pruned_at_startup(isolated_home: Path, tmp_path: Path) -> None:
    hooks_dir = isolated_home / "hooks"
    hooks_dir.mkdir(parents=True)
    old = hooks_dir / "session-old.json"
    old.write_text("{}")
    week_ago = time.time() - 8 * 86400
    os.utime(old, (week_ago, week_ago))
    hook("session-start", {"session_id": "new", "source": "startup", "cwd": str(tmp_path)}, isolated_home)
    assert not old.exists()


def test_lone_surrogate_in_transcript_still_answers_and_reinjects(isolated_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    # half an emoji, as JSON escapes it: valid JSON, not encodable as UTF-8
    path.write_text('{"type": "user", "message": {"role": "user", "content": "I prefer pytest \\ud83d always"}}\n')
    base = {"session_id": "p3", "cwd": str(tmp_path), "transcript_path": str(path)}
    assert hook("pre-compact", {**base, "trigger": "manual"}, isolated_home).returncode == 0
    for event, extra in (("session-start", {"source": "compact"}), ("user-prompt-submit", {"prompt": "next"})):
        proc = hook(event, {**base, **extra}, isolated_home)
        assert proc.returncode == 0, proc.stderr
        json.loads(proc.stdout)  # valid output


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "not-jsonl"])
def test_transcript_path_that_is_not_a_transcript_is_never_read_or_copied(
        isolated_home: Path, tmp_path: Path, kind: str) -> None:
    if kind == "fifo":
        path = tmp_path / "t.jsonl"
        os.mkfifo(path)
    elif kind == "dev-zero":
        path = Path("/dev/zero")
    else:
        path = tmp_path / "shadow"
        path.write_text("root:$6$secret-hash:19000:0:99999:7:::\n")
    base = {"session_id": "p4", "cwd": str(tmp_path), "transcript_path": str(path)}
    t0 = time.monotonic()
    for event, extra in (("pre-compact", {"trigger": "manual"}), ("user-prompt-submit", {"prompt": "hi"})):
        proc = hook(event, {**base, **extra}, isolated_home)
        assert proc.returncode == 0
    assert time.monotonic() - t0 < 30
    assert not list((isolated_home / "transcripts").glob("*")) if (isolated_home / "transcripts").exists() else True
    assert "secret-hash" not in every_file_text(isolated_home)


def test_without_a_session_id_one_users_task_never_reaches_another(isolated_home: Path, tmp_path: Path) -> None:
    t = transcript(tmp_path / "t.jsonl", [("user", "Refactor the Zanzibar billing module"), ("assistant", "OK")])
    assert hook("pre-compact", {"trigger": "manual", "cwd": str(tmp_path), "transcript_path": t},
                isolated_home, user="alice").returncode == 0
    bob = hook("user-prompt-submit", {"prompt": "what now?", "cwd": str(tmp_path)}, isolated_home, user="bob")
    assert bob.returncode == 0 and "Zanzibar" not in bob.stdout
    alice = hook("user-prompt-submit", {"prompt": "what now?", "cwd": str(tmp_path)}, isolated_home, user="alice")
    assert "Zanzibar" in alice.stdout


def test_project_key_is_the_same_on_capture_and_recall_and_tells_same_named_dirs_apart(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = tmp_path / "client-a" / "app", tmp_path / "client-b" / "app"
    for d in (a, b):
        (d / "src").mkdir(parents=True)
        (d / ".git").mkdir()
    monkeypatch.delenv("DEXAI_MEMORY_PROJECT", raising=False)
    assert project_key({"cwd": str(a / "src")}) == str(a)
    assert project_key({"cwd": str(a)}) != project_key({"cwd": str(b)})
    monkeypatch.setenv("DEXAI_MEMORY_PROJECT", "shop")
    assert project_key({"cwd": str(a)}) == "shop"


def test_memories_captured_with_a_project_set_come_back_in_that_project(
        isolated_home: Path, tmp_path: Path) -> None:
    env_project = {"DEXAI_MEMORY_PROJECT": "shop"}
    base = {"session_id": "p5", "cwd": str(tmp_path)}
    said = "I prefer pytest over unittest for the shop services."

    def run(event: str, payload: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        return hook(event, payload, isolated_home, **env_project)

    run("user-prompt-submit", {**base, "prompt": said, "prompt_id": "x"})
    run("stop", {**base, "last_assistant_message": "Noted."})
    run("pre-compact", {**base, "trigger": "manual"})
    out = run("session-start", {"session_id": "p6", "source": "startup", "cwd": str(tmp_path)})
    assert "pytest" in out.stdout


def test_hook_files_are_private_to_the_user(isolated_home: Path, tmp_path: Path) -> None:
    t = transcript(tmp_path / "t.jsonl", [("user", "I prefer pytest"), ("assistant", "OK")])
    base = {"session_id": "p7", "cwd": str(tmp_path), "transcript_path": t}
    hook("user-prompt-submit", {**base, "prompt": "I prefer pytest"}, isolated_home)
    hook("pre-compact", {**base, "trigger": "manual"}, isolated_home)
    for path in (isolated_home / "hooks").glob("*.json"):
        assert path.stat().st_mode & 0o077 == 0, path
    for path in (isolated_home / "transcripts").glob("*"):
        assert path.stat().st_mode & 0o077 == 0, path
    settings = load_settings(home=isolated_home)
    assert settings.home.stat().st_mode & 0o077 == 0


def test_invalid_utf8_and_nul_bytes_are_cleaned_at_the_entry(isolated_home: Path, tmp_path: Path) -> None:
    import sqlite3

    env = {**os.environ, "DEXAI_MEMORY_HOME": str(isolated_home), "DEXAI_MEMORY_USER": "alice",
           "DEXAI_HOOK_PYTHON": sys.executable}
    base = {"session_id": "u1", "cwd": str(tmp_path)}
    prompt = json.dumps({**base, "prompt": "I live in Lisbon\u0000 and my dentist is Dr Costa XYZ",
                         "prompt_id": "p1"}).encode().replace(b"XYZ", b"\xff\xfe")
    for event, data in (("user-prompt-submit", prompt),
                        ("stop", json.dumps({**base, "last_assistant_message": "ok"}).encode())):
        proc = subprocess.run([str(LAUNCHER), event], input=data, capture_output=True, env=env, timeout=60,
                              check=False)
        assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr
    rows = sqlite3.connect(isolated_home / "queue.db").execute("SELECT payload FROM jobs").fetchall()
    assert rows and all("\x00" not in r[0] and "\\u0000" not in r[0] for r in rows)
    assert hook("pre-compact", {**base, "trigger": "manual"}, isolated_home).returncode == 0
    with closing(store_sqlite().connect(isolated_home / "memory.db")) as db:
        contents = [r[0] for r in db.execute("SELECT content FROM memories")]
        dead = sqlite3.connect(isolated_home / "queue.db").execute("SELECT COUNT(*) FROM dead_letters").fetchone()
    assert any("Lisbon" in c for c in contents) and not any("\x00" in c for c in contents)
    assert dead[0] == 0
