"""As installed: the real Claude Code CLI with this repository loaded as a plugin, nothing else
started by the test (no daemon, no facts written to the store), no ANTHROPIC_API_KEY (the CLI
signs in with a token, like a Claude account user), facts said in the conversation.

Covers issue 10's "done means": facts reach the model after each of three compactions
(manual and auto) and a new session starts with the profile, once with the daemon the hooks
start and once with autostart off and the daemon run by the user (a service); with autostart off
and no daemon, the sessions' events wait in queue.db and the daemon started later captures them;
a SIGKILLed daemon is replaced by
the next hook with nothing lost or stored twice; two sessions at once share one daemon.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from dexai_memory.capture.queue import ExtractionQueue
from dexai_memory.config import load_settings
from dexai_memory.daemon.control import lock_held, read_pid, spawn, stop, wait_until_answering
from dexai_memory.demo.claude_cli import ClaudeRun
from dexai_memory.demo.fakeapi import (
    FakeMessagesAPI,
    RecordedRequest,
    Reply,
    is_compaction_prompt,
    text_of,
)
from dexai_memory.providers.native.driver import store_sqlite
from dexai_memory.recall.block import FENCE_CLOSE, FENCE_OPEN
from testing.harness import queue_drained

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
#: What the user says in the first prompt, and the words that must come back from memory.
FACTS_PROMPT = "My name is Dana. The project codename is BLUE-HERON. I prefer pytest over unittest."
KEYS = ("Dana", "BLUE-HERON", "pytest")
#: What the startup block holds today (pinned memories, L1, strong preferences); widening it to
#: standing instructions, project facts and people is the persistent-context issue (14).
PROFILE_KEYS = ("pytest",)
FILLER = ("ok, let's look at the logs", "run the linter please", "looks fine, next file")


def memory_text(text: str) -> str:
    return "\n".join(re.findall(re.escape(FENCE_OPEN) + r".*?" + re.escape(FENCE_CLOSE), text, flags=re.S))


def outside_memory(text: str) -> str:
    return re.sub(re.escape(FENCE_OPEN) + r".*?" + re.escape(FENCE_CLOSE), "", text, flags=re.S)


def after_last_compaction(api: FakeMessagesAPI) -> RecordedRequest:
    requests = api.message_requests()
    idx = max(i for i, r in enumerate(requests) if is_compaction_prompt(r.body))
    assert idx + 1 < len(requests), "no request after the compaction request"
    return requests[idx + 1]


def daemons_for(home: Path) -> list[int]:
    """Pids of `dexai daemon run` processes serving ``home`` (from /proc)."""
    homes = {str(home), str(load_settings(home=home).home)}
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in args]
        if "daemon" in words and "run" in words and "--home" in words \
                and words[words.index("--home") + 1] in homes:
            pids.append(int(entry.name))
    return pids


@pytest.fixture
def mem_home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "memory"
    yield home
    settings = load_settings(home=home)
    stop(settings, timeout=15)  # the daemon the hooks started, if any
    for pid in daemons_for(home):
        os.kill(pid, signal.SIGKILL)


def runner(tmp_path: Path, api: FakeMessagesAPI, home: Path, *, autostart: bool, project: str = "project",
           **kw: object) -> ClaudeRun:
    env = {"DEXAI_MEMORY_HOME": str(home), "DEXAI_MEMORY_USER": "dana",
           "DEXAI_DAEMON_AUTOSTART": "1" if autostart else "0",
           "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    return ClaudeRun(home=tmp_path / "claude-home", base_url=api.base_url, cwd=tmp_path / project,
                     plugin_dirs=[REPO], env=env, timeout=180, auth="token", **kw)  # type: ignore[arg-type]


def assert_recalled(request: RecordedRequest, keys: tuple[str, ...], where: str) -> None:
    text = text_of(request)
    remembered = memory_text(text)
    missing = [k for k in keys if k not in remembered]
    assert not missing, f"{where}: {missing} did not reach the model from memory:\n{remembered}"
    assert not any(k in outside_memory(text).replace(FACTS_PROMPT, "") for k in ("BLUE-HERON",)), \
        f"{where}: the fact came from the summary, not from memory"


def users_daemon(home: Path) -> int:
    """The daemon a user runs with autostart off (``dexai daemon start``, a service): its pid."""
    settings = load_settings(home=home)
    pid = spawn(settings, reason="the user's own service")
    assert pid and wait_until_answering(settings, 60)
    return int(read_pid(settings) or 0)


def replayed_by_a_later_daemon(home: Path) -> None:
    """With autostart off and no daemon, the sessions' events wait in queue.db: the daemon the
    user starts replays them (then they are gone) and extracts the turns they queue."""
    from dexai_memory.capture.queue_file import queue_path, queued_events

    assert not daemons_for(home), "a daemon ran with autostart off"
    assert queued_events(queue_path(home)), "the hooks kept no event for a daemon to replay"
    users_daemon(home)
    assert queued_events(queue_path(home)) == []
    drained(home)


def drained(home: Path, seconds: float = 30) -> None:
    """Wait until the running daemon extracted every queued turn, none of them a dead letter."""
    queue_drained(home, seconds)
    with ExtractionQueue.from_settings(load_settings(home=home)) as queue:
        assert queue.pending_count() == 0 and queue.stats().dead == 0


@pytest.mark.parametrize("autostart", [True, False], ids=["daemon-autostarted", "users-daemon"])
def test_facts_said_in_conversation_survive_three_compactions_and_reach_the_next_session(
        tmp_path: Path, mem_home: Path, autostart: bool) -> None:
    started = None if autostart else users_daemon(mem_home)
    with FakeMessagesAPI() as api:  # its compaction summary keeps nothing
        run = runner(tmp_path, api, mem_home, autostart=autostart, autocompact=100_000)
        run(FACTS_PROMPT).check()
        assert not any(r.api_key and r.api_key.startswith("sk-ant-api") for r in api.message_requests())
        for round_no, trigger in enumerate(("manual", "auto", "manual"), 1):
            for filler in FILLER:
                run.resume(filler).check()
            if trigger == "manual":
                run.resume("/compact").check()
                run.resume("What should we do next?").check()
            else:
                api.enqueue(Reply(text="Here is a long answer.", input_tokens=95_000))
                run.resume("Summarise the plan in detail.").check()
                run.resume("And then?").check()
            compactions = [r for r in api.message_requests() if is_compaction_prompt(r.body)]
            assert len(compactions) == round_no, f"round {round_no} did not compact ({trigger})"
            assert_recalled(after_last_compaction(api), KEYS, f"after compaction {round_no} ({trigger})")

        # the next morning: a new session in the same project starts with the profile
        api.clear()
        run.last_session_id = None
        run("Good morning.").check()
        assert_recalled(api.message_requests()[0], PROFILE_KEYS, "first request of the next session")

    settings = load_settings(home=mem_home)
    with ExtractionQueue.from_settings(settings) as queue:
        stats = queue.stats()
    assert stats.dead == 0
    if autostart:
        assert lock_held(settings) and read_pid(settings), "the hooks did not start a daemon"
        assert len(daemons_for(mem_home)) == 1
    else:
        assert daemons_for(mem_home) == [started], "the hooks started a daemon with autostart off"


def test_sigkilled_daemon_is_replaced_and_nothing_is_lost_or_stored_twice(tmp_path: Path, mem_home: Path) -> None:
    settings = load_settings(home=mem_home)
    with FakeMessagesAPI() as api:
        run = runner(tmp_path, api, mem_home, autostart=True)
        run(FACTS_PROMPT).check()
        assert wait_until_answering(settings, 30), "the hooks did not start a daemon"
        first = read_pid(settings)
        assert first is not None
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while lock_held(settings) and time.monotonic() < deadline:
            time.sleep(0.1)
        run.resume("Also: our staging host is db-staging-7.internal and I live in Lisbon.").check()
        run.resume("/compact").check()
        run.resume("What next?").check()
        assert_recalled(after_last_compaction(api), KEYS, "after compaction")
        assert wait_until_answering(settings, 30), "no daemon after the kill"
        second = read_pid(settings)
        assert second is not None and second != first
        assert daemons_for(mem_home) == [second]


    with ExtractionQueue.from_settings(settings) as queue:
        stats = queue.stats()
    assert stats.dead == 0 and stats.pending == 0
    with closing(store_sqlite().connect(settings.db_path)) as db:
        rows = db.execute("SELECT content FROM memories WHERE deleted = 0 AND type NOT IN "
                          "('SNAPSHOT', 'TRANSCRIPT', 'EPISODE')").fetchall()  # records of the session, not facts
    contents = [r[0] for r in rows]
    assert len(contents) == len(set(contents)), f"a memory was stored twice: {contents}"
    for key in ("Dana", "BLUE-HERON", "pytest", "Lisbon"):
        assert sum(key in c for c in contents) == 1, (key, contents)


def test_two_sessions_at_once_share_one_daemon(tmp_path: Path, mem_home: Path) -> None:
    settings = load_settings(home=mem_home)
    with FakeMessagesAPI() as api:
        runs = [runner(tmp_path, api, mem_home, autostart=True, project=f"p{i}") for i in range(2)]
        procs = []
        for r in runs:
            Path(r.cwd).mkdir(parents=True, exist_ok=True)
            Path(r.home).mkdir(parents=True, exist_ok=True)
            from dexai_memory.demo.claude_cli import build_env

            procs.append(subprocess.Popen(r.command("I prefer short commit messages."), cwd=r.cwd,
                                          env=build_env(Path(r.home), api.base_url, r.env, auth="token"),
                                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        for p in procs:
            out, err = p.communicate(timeout=180)
            assert p.returncode == 0, err
    assert wait_until_answering(settings, 30)
    time.sleep(1.0)  # a losing second daemon exits within its lock wait; none is left
    assert daemons_for(mem_home) == [read_pid(settings)]


@pytest.mark.parametrize("autostart", [True, False], ids=["daemon-autostarted", "no-daemon-then-replayed"])
def test_facts_said_without_any_compaction_reach_the_next_session(
        tmp_path: Path, mem_home: Path, autostart: bool) -> None:
    """SessionEnd gets the queue extracted by the daemon the hooks start; with autostart off and
    no daemon, the session's events wait in queue.db and the daemon the user starts before the
    next session replays them: a session that never compacted still leaves its facts."""
    with FakeMessagesAPI() as api:
        run = runner(tmp_path, api, mem_home, autostart=autostart)
        run(FACTS_PROMPT).check()
        run.resume(FILLER[0]).check()
        if autostart:  # the daemon the hooks started extracts in the background
            drained(mem_home)
        else:
            replayed_by_a_later_daemon(mem_home)
        api.clear()
        run.last_session_id = None
        run("Good morning.").check()
        assert_recalled(api.message_requests()[0], PROFILE_KEYS, "first request of the next session")
    with closing(store_sqlite().connect(load_settings(home=mem_home).db_path)) as db:
        stored = " ".join(r[0] for r in db.execute("SELECT content FROM memories WHERE deleted = 0"))
    for key in KEYS:
        assert key in stored, f"{key} was not captured: {stored}"
