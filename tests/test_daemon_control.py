"""The daemon's lifecycle as the hooks own it: one per data directory (lock + pid file), started
detached when none answers, stopped, replaced on a version change, exiting when idle; and the
events a hook could not hand to a daemon, queued and replayed. Real processes, real files."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from dexai_memory import __version__
from dexai_memory.capture.queue import ExtractionQueue
from dexai_memory.config import Settings, load_settings
from dexai_memory.daemon import control as daemon_control
from dexai_memory.daemon.control import (
    DaemonLock,
    ensure_daemon,
    lock_held,
    read_pid,
    spawn,
    status,
    stop,
    wait_until_answering,
)
from dexai_memory.daemon.ipc import ipc_request
from dexai_memory.daemon.session_state import load_session, pending_prompts, read_marker
from dexai_memory.hooks.client import run as run_hook
from tests.hook_daemon import queued_events


@pytest.fixture
def settings(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    monkeypatch.setenv("DEXAI_MEMORY_USER", "sam")
    s = load_settings(home=isolated_home)
    s.home.mkdir(parents=True, exist_ok=True)
    yield s
    stop(s, timeout=15)


def dexai(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dexai_memory.cli.main", *args], capture_output=True, text=True,
                          timeout=120, check=False, env={**os.environ, "DEXAI_MEMORY_HOME": str(home)})


def hook(event: str, payload: dict[str, object]) -> str:
    out = io.StringIO()
    assert run_hook(event, io.StringIO(json.dumps(payload)), out) == 0
    return out.getvalue()


def test_lock_is_exclusive_and_released_with_the_pid_file(settings: Settings) -> None:
    first, second = DaemonLock(settings), DaemonLock(settings)
    assert first.acquire() and read_pid(settings) == os.getpid()
    assert lock_held(settings)
    assert not second.acquire(wait=0.3)
    first.release()
    assert not lock_held(settings) and read_pid(settings) is None
    assert second.acquire()
    second.release()


def test_daemon_start_status_stop_through_the_cli(settings: Settings) -> None:
    home = settings.home
    assert "no daemon running" in dexai("daemon", "status", home=home).stdout
    started = dexai("daemon", "start", "--json", home=home)
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    assert info["started"] and info["answering"] and info["version"] == __version__
    pid = info["pid"]
    assert read_pid(settings) == pid and lock_held(settings)
    again = json.loads(dexai("daemon", "start", "--json", home=home).stdout)
    assert again["started"] is False and again["pid"] == pid  # one daemon per data directory
    st = json.loads(dexai("daemon", "status", "--json", home=home).stdout)
    assert st["running"] and st["health"]["state"] == "running"
    assert (home / "daemon.log").stat().st_mode & 0o777 == 0o600
    stopped = dexai("daemon", "stop", home=home)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert not lock_held(settings) and not settings.socket_path.exists()


def test_a_second_foreground_daemon_is_refused_with_a_clear_error(settings: Settings) -> None:
    lock = DaemonLock(settings)
    assert lock.acquire()
    try:
        proc = dexai("daemon", home=settings.home)
        assert proc.returncode == 1 and "already running" in proc.stderr and "Traceback" not in proc.stderr
    finally:
        lock.release()


def test_autostart_off_starts_nothing(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEXAI_DAEMON_AUTOSTART", "0")
    assert ensure_daemon(settings, reason="test") is False
    (settings.home / "memory.yaml").write_text("daemon:\n  autostart: false\n")
    monkeypatch.delenv("DEXAI_DAEMON_AUTOSTART")
    assert ensure_daemon(load_settings(home=settings.home), reason="test") is False
    assert not lock_held(settings)


def test_a_hook_starts_the_daemon_when_none_answers_and_is_answered_by_it(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEXAI_DAEMON_AUTOSTART", "1")
    t0 = time.monotonic()
    assert json.loads(hook("session-start", {"session_id": "s1", "source": "startup"})) == {}
    assert time.monotonic() - t0 < settings.hooks.cold_start_wait_seconds + 5
    assert wait_until_answering(settings, 0.5)  # it waited for the daemon it started
    assert queued_events(settings.home) == []  # answered by it, not queued
    pid = read_pid(settings)
    # a crash leaves a stale socket and pid file: the next hook starts a new daemon
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while lock_held(settings) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert settings.socket_path.exists()  # stale
    (settings.home / "daemon.spawn").unlink()  # past the start grace period
    hook("user-prompt-submit", {"session_id": "s1", "prompt": "hello there"})
    assert wait_until_answering(settings, 0.5)
    assert read_pid(settings) not in (None, pid)
    assert queued_events(settings.home) == []


def test_concurrent_starts_end_with_one_daemon(settings: Settings) -> None:
    pids = [spawn(settings, reason=f"race {i}") for i in range(3)]
    assert all(pids)
    assert wait_until_answering(settings, 30)
    deadline = time.monotonic() + 30
    procs = [p for p in pids if p is not None]
    while time.monotonic() < deadline:
        alive = [p for p in procs if _alive(p)]
        if len(alive) == 1:
            break
        time.sleep(0.2)
    assert [p for p in procs if _alive(p)] == [read_pid(settings)]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False


def test_a_daemon_of_another_version_is_replaced(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEXAI_DAEMON_AUTOSTART", "1")
    old = spawn(settings, reason="old")
    assert old and wait_until_answering(settings, 30)
    monkeypatch.setattr(daemon_control, "__version__", "0.0.0-other")
    reply = ipc_request(settings.socket_path, {"op": "ping"}, 2)
    assert reply is not None and daemon_control.replace_if_stale(settings, reply)
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline and read_pid(settings) in (None, old):
        time.sleep(0.2)
    assert read_pid(settings) not in (None, old)
    deadline = time.monotonic() + 15  # the old one released its lock: it is on its way out
    while time.monotonic() < deadline and _alive(old):
        time.sleep(0.1)
    assert not _alive(old)


def test_an_idle_daemon_exits_when_the_queue_is_empty(settings: Settings) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "dexai_memory.cli.main", "daemon", "run", "--home",
                             str(settings.home), "--idle-exit-minutes", "0.03", "--no-schedule"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "no hook traffic" in err and "stopped" in out
    assert not lock_held(settings)


def test_status_reports_a_running_daemon(settings: Settings) -> None:
    assert not status(settings).running
    assert spawn(settings, reason="test") and wait_until_answering(settings, 30)
    st = status(settings)
    assert st.running and st.answering and st.pid == read_pid(settings) and st.version == __version__


def test_precompact_with_no_daemon_answering_starts_one_and_the_checkpoint_happens(
        settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The turn's events came while no daemon could start (autostart off): they wait in queue.db.
    PreCompact (autostart on) starts the daemon and waits for it: it replays the turn, the
    checkpoint extracts it, and the block after the compaction carries it."""
    transcript = tmp_path / "t.jsonl"
    said = "My name is Sam and I prefer pytest over unittest."
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": said}}) + "\n")
    base = {"session_id": "s1", "cwd": str(tmp_path), "transcript_path": str(transcript)}
    assert json.loads(hook("user-prompt-submit", {**base, "prompt": said, "prompt_id": "p1"})) == {}
    assert json.loads(hook("stop", {**base, "last_assistant_message": "Noted."})) == {}
    assert [e["event"] for e in queued_events(settings.home)] == ["user-prompt-submit", "stop"]
    monkeypatch.setenv("DEXAI_DAEMON_AUTOSTART", "1")
    instructions = hook("pre-compact", {**base, "trigger": "manual"})
    assert "Preserve" in instructions and lock_held(settings)
    assert queued_events(settings.home) == []  # replayed at the daemon's start, then dropped
    with ExtractionQueue.from_settings(settings) as queue:
        assert queue.pending_count() == 0 and queue.stats().dead == 0
    after = json.loads(hook("session-start", {**base, "source": "compact"}))
    text = after["hookSpecificOutput"]["additionalContext"]
    assert "Sam" in text and "pytest" in text


def test_with_no_daemon_and_autostart_off_events_wait_and_are_replayed_in_order(
        settings: Settings, tmp_path: Path) -> None:
    """Nothing said is lost: the events are kept in queue.db, the hook answers a no-op at once,
    and the daemon that starts later replays them oldest first (the prompt before its Stop),
    recording the prompt without recalling for it."""
    base = {"session_id": "s2", "cwd": str(tmp_path)}
    t0 = time.monotonic()
    assert json.loads(hook("user-prompt-submit", {**base, "prompt": "I live in Lisbon and my dentist is Dr Costa",
                                                  "prompt_id": "p1"})) == {}
    hook("stop", {**base, "last_assistant_message": "ok"})
    assert "Preserve" in hook("pre-compact", {**base, "trigger": "auto"})  # the instructions all the same
    assert time.monotonic() - t0 < 5 and not lock_held(settings)
    assert [e["event"] for e in queued_events(settings.home)] == ["user-prompt-submit", "stop", "pre-compact"]
    assert spawn(settings, reason="test") and wait_until_answering(settings, 30)
    assert queued_events(settings.home) == []
    with ExtractionQueue.from_settings(settings) as queue:
        assert queue.stats().dead == 0
    import sqlite3

    with sqlite3.connect(settings.home / "queue.db") as db:
        turns = [r[0] for r in db.execute("SELECT turn_id FROM jobs")]
    assert turns == ["s2:user:p1"]  # the Stop found the prompt the replay recorded first
    assert pending_prompts(load_session(settings, "s2")) == []
    assert read_marker(settings, "s2") is not None  # PreCompact's checkpoint ran too


def test_doctor_says_when_hook_events_wait_with_no_daemon(settings: Settings, tmp_path: Path) -> None:
    from dexai_memory.cli.main import cli

    base = {"session_id": "s3", "cwd": str(tmp_path)}
    hook("user-prompt-submit", {**base, "prompt": "I live in Lisbon and my dentist is Dr Costa", "prompt_id": "p1"})
    hook("stop", {**base, "last_assistant_message": "ok"})
    import sqlite3

    with sqlite3.connect(settings.home / "queue.db") as db:
        db.execute("UPDATE hook_events SET received_at = received_at - 900")
    result = CliRunner().invoke(cli, ["memory", "doctor"])
    assert "2 hook event(s) waiting 15 min with no daemon" in result.output and "dexai daemon start" in result.output
    assert spawn(settings, reason="test") and wait_until_answering(settings, 30)
    result = CliRunner().invoke(cli, ["memory", "doctor"])
    assert "waiting" not in result.output


def test_stale_socket_file_does_not_block_a_new_daemon(settings: Settings) -> None:
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(settings.socket_path))
    stale.close()  # a socket file nobody listens on, as a crash leaves it
    (settings.home / "daemon.pid").write_text("999999\n")
    assert spawn(settings, reason="test") and wait_until_answering(settings, 30)
    assert read_pid(settings) != 999999
