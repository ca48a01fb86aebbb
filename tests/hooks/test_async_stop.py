"""Stop runs async in the plugin: the turn it closes, SessionEnd's catch-up when it was killed,
and the next prompt's UserPromptSubmit racing it. A real daemon answers the events; what
reaches ``queue.db`` shows what was captured (a gate that passes every non-filler turn)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dexai_memory.capture.gate import Gate
from dexai_memory.config import Settings, load_settings
from dexai_memory.daemon.core import MemoryDaemon
from dexai_memory.daemon.session_state import (
    load_session,
    pending_prompts,
    save_session,
    session_file,
)
from dexai_memory.providers.native import NativeProvider
from tests.hook_daemon import (
    LAUNCHER,
    handle,
    queued_events,
    queued_turns,
    running_daemon,
    write_transcript,
)

SID = "s-async"


@pytest.fixture
def settings(isolated_home: Path) -> Settings:
    return load_settings(home=isolated_home)


@pytest.fixture
async def daemon(settings: Settings) -> AsyncIterator[MemoryDaemon]:
    async with NativeProvider(settings.db_path, embedder=None) as provider, \
            running_daemon(settings, provider, gate=Gate(0.0)) as d:
        yield d


async def prompt(daemon: MemoryDaemon, text: str, prompt_id: str, received: float | None = None) -> None:
    await handle(daemon, "user-prompt-submit", {"session_id": SID, "prompt": text, "prompt_id": prompt_id},
                 user="dana", received=received)


async def test_stop_queues_the_turn_and_session_end_adds_nothing(daemon: MemoryDaemon, settings: Settings,
                                                                 tmp_path: Path) -> None:
    await prompt(daemon, "Our codename is COPPER-FINCH.", "p1")
    assert await handle(daemon, "stop", {"session_id": SID, "last_assistant_message": "Noted: COPPER-FINCH."},
                        user="dana", background=True) == {}
    assert sorted(queued_turns(settings.home).values()) == ["Our codename is COPPER-FINCH."]  # the reply is evidence
    assert pending_prompts(load_session(settings, SID)) == []
    before = queued_turns(settings.home)
    path = write_transcript(tmp_path / "t.jsonl", [("user", "Our codename is COPPER-FINCH."),
                                                    ("assistant", "Noted: COPPER-FINCH.")])
    await handle(daemon, "session-end", {"session_id": SID, "transcript_path": str(path)}, user="dana")
    assert queued_turns(settings.home) == before
    assert not session_file(settings, SID).exists()


async def test_session_end_queues_the_turn_whose_stop_was_killed(daemon: MemoryDaemon, settings: Settings,
                                                                 tmp_path: Path) -> None:
    """`claude -p` kills an async Stop as it exits: SessionEnd queues the prompt and the reply
    (from the transcript), with the ids Stop would have used."""
    await prompt(daemon, "Our codename is COPPER-FINCH.", "p1")
    path = write_transcript(tmp_path / "t.jsonl", [("user", "Our codename is COPPER-FINCH."),
                                                    ("assistant", "Noted: COPPER-FINCH.")])
    await handle(daemon, "session-end", {"session_id": SID, "transcript_path": str(path)}, user="dana")
    caught = queued_turns(settings.home)
    assert sorted(caught.values()) == ["Our codename is COPPER-FINCH."]  # the reply is evidence
    assert f"{SID}:user:p1" in caught
    # a Stop that did finish after all (a late async one) stores nothing twice
    await prompt(daemon, "Our codename is COPPER-FINCH.", "p1")
    await handle(daemon, "stop", {"session_id": SID, "last_assistant_message": "Noted: COPPER-FINCH."},
                 user="dana", background=True)
    assert queued_turns(settings.home) == caught


async def test_an_async_stop_queues_only_the_prompts_received_before_it(daemon: MemoryDaemon,
                                                                         settings: Settings) -> None:
    """Async Stop of turn 1 and UserPromptSubmit of turn 2 (a queued prompt) run at once, and
    the prompt is recorded first: the first Stop queues turn 1's prompt only, the second Stop
    turn 2's; nothing is lost."""
    t0 = time.time()
    await prompt(daemon, "First: the staging host is tern-3.", "p1", received=t0)
    await prompt(daemon, "Second: the prod host is heron-9.", "p2", received=t0 + 2)  # after Stop 1 came
    await handle(daemon, "stop", {"session_id": SID, "last_assistant_message": "Reply one about tern-3."},
                 user="dana", background=True, received=t0 + 1)
    queued = queued_turns(settings.home)
    assert f"{SID}:user:p1" in queued and f"{SID}:user:p2" not in queued
    assert [p["prompt_id"] for p in pending_prompts(load_session(settings, SID))] == ["p2"]
    await handle(daemon, "stop", {"session_id": SID, "last_assistant_message": "Reply two about heron-9."},
                 user="dana", background=True, received=t0 + 3)
    assert f"{SID}:user:p2" in queued_turns(settings.home)
    assert pending_prompts(load_session(settings, SID)) == []


async def test_a_synchronous_stop_queues_every_pending_prompt(daemon: MemoryDaemon, settings: Settings) -> None:
    """Only an async Stop may run beside the next prompt: a synchronous one closes them all."""
    t0 = time.time()
    await prompt(daemon, "First: the staging host is tern-3.", "p1", received=t0)
    await prompt(daemon, "Second: the prod host is heron-9.", "p2", received=t0 + 2)
    await handle(daemon, "stop", {"session_id": SID, "last_assistant_message": "Both noted."}, user="dana",
                 received=t0 + 1)
    assert {f"{SID}:user:p1", f"{SID}:user:p2"} <= set(queued_turns(settings.home))
    assert pending_prompts(load_session(settings, SID)) == []


async def test_a_state_file_from_before_pending_still_queues_its_prompt(daemon: MemoryDaemon,
                                                                        settings: Settings) -> None:
    save_session(settings, SID, {"last_prompt": "Old prompt about tern-3.", "prompt_id": "p0"})
    await handle(daemon, "stop", {"session_id": SID, "last_assistant_message": "ok"}, user="dana")
    assert queued_turns(settings.home)[f"{SID}:user:p0"] == "Old prompt about tern-3."
    save_session(settings, SID, {"last_prompt": "Queued already.", "queued_prompt": "Queued already."})
    assert pending_prompts(load_session(settings, SID)) == []


async def test_each_prompt_is_pending_once(daemon: MemoryDaemon, settings: Settings) -> None:
    await prompt(daemon, "one more thing about tern-3", "p1")
    await prompt(daemon, "two more things about heron-9", "p2")
    assert [p["prompt_id"] for p in pending_prompts(load_session(settings, SID))] == ["p1", "p2"]


def _stop_killed_by_sigterm(mode: str) -> tuple[int, str]:
    """Run the launcher's Stop, send it SIGTERM once Python runs, then give it its input."""
    env = {**os.environ, "DEXAI_HOOK_PYTHON": sys.executable, "DEXAI_MEMORY_USER": "dana"}
    proc = subprocess.Popen([str(LAUNCHER), "stop", *([mode] if mode else [])], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        # the launcher sets its disposition before it reads its input (Python inherits it)
        deadline = time.monotonic() + (30 if mode else 0.5)
        while time.monotonic() < deadline and not _ignores_sigterm(proc.pid):
            time.sleep(0.01)
        assert _ignores_sigterm(proc.pid) == bool(mode)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(json.dumps({"session_id": SID, "last_assistant_message": "Noted."}), timeout=60)
    finally:
        proc.kill()
    return proc.returncode, out


def _ignores_sigterm(pid: int) -> bool:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
@pytest.mark.parametrize("mode", ["--async", ""])
async def test_an_async_hook_finishes_after_the_sigterm_claude_p_sends(settings: Settings, mode: str) -> None:
    """`claude -p` sends SIGTERM to async hooks as it exits: the launcher's ``--async`` hook ignores
    it and hands the Stop over (no daemon answers and autostart is off: it is queued for replay,
    and the daemon that starts next queues the turn); a synchronous one is killed by it (Claude
    Code never sends it one)."""
    settings.home.mkdir(parents=True, exist_ok=True)
    async with NativeProvider(settings.db_path, embedder=None) as provider:
        async with running_daemon(settings, provider, gate=Gate(0.0)) as daemon:
            await prompt(daemon, "My name is Dana and I prefer pytest over unittest.", "p1")
    # the turn's prompt was recorded while a daemon ran; none answers its Stop
    returncode, out = await asyncio.to_thread(_stop_killed_by_sigterm, mode)
    saved = queued_events(settings.home)
    if not mode:
        assert returncode == -signal.SIGTERM and saved == []
        return
    assert returncode == 0 and out.strip() == "{}"
    assert [(e["event"], e["background"], e["payload"]["session_id"]) for e in saved] == [("stop", True, SID)]
    async with NativeProvider(settings.db_path, embedder=None) as provider:
        async with running_daemon(settings, provider, gate=Gate(0.0)):
            assert queued_events(settings.home) == []  # replayed at the start, then dropped
    assert queued_turns(settings.home)[f"{SID}:user:p1"] == "My name is Dana and I prefer pytest over unittest."
    assert pending_prompts(load_session(settings, SID)) == []
