"""Stop runs async in the plugin (issue 15): the turn it closes, SessionEnd's catch-up when it was
killed, and the next prompt's UserPromptSubmit racing it. A recording backend (our own
:class:`~dexai_memory.daemon.executor.HookBackend`) shows what reaches the queue."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from dexai_memory.capture.queue import ExtractionQueue
from dexai_memory.config import Settings, load_settings
from dexai_memory.daemon.executor import Block, HookBackend, HookContext, handle
from dexai_memory.daemon.session_state import (
    load_session,
    pending_prompts,
    process_start_time,
    remember_injected,
    save_session,
    session_file,
)

SID = "s-async"
LAUNCHER = Path(__file__).resolve().parents[2] / "hooks" / "dexai-hook"


class Recording(HookBackend):
    """Keeps what would be queued, keyed by turn id (the queue is idempotent on it)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.queued: dict[str, str] = {}
        self.turn_ends: list[str] = []

    def l1(self, **kw: Any) -> Block:
        return Block("")

    def recall(self, **kw: Any) -> Block:
        return Block("")

    def submit(self, turn: dict[str, Any], context: Sequence[str]) -> bool:
        new = turn["id"] not in self.queued
        self.queued[turn["id"]] = turn["content"]
        return new

    def turn_end(self, *, user_id: str, session_id: str | None, reply: str = "",
                 injected: Sequence[str] = ()) -> None:
        self.turn_ends.append(reply)

    def pre_compact(self, **kw: Any) -> dict[str, Any]:
        return {}

    def session_end(self, **kw: Any) -> dict[str, Any]:
        return {}


def context(home: Path) -> tuple[HookContext, Recording]:
    settings = load_settings(home=home)
    backend = Recording(settings)
    return HookContext(settings=settings, backend=backend, user_id="dana", project="p"), backend


def submit_prompt(ctx: HookContext, prompt: str, prompt_id: str) -> None:
    """What UserPromptSubmit keeps for Stop (on_user_prompt's state write)."""
    remember_injected(ctx.settings, SID, [], prompt=prompt, prompt_id=prompt_id)


def transcript(tmp_path: Path, turns: list[tuple[str, str]]) -> str:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"type": r, "message": {"role": r, "content": t}}) + "\n" for r, t in turns))
    return str(path)


def test_stop_queues_the_turn_and_session_end_adds_nothing(isolated_home: Path, tmp_path: Path) -> None:
    ctx, backend = context(isolated_home)
    submit_prompt(ctx, "Our codename is COPPER-FINCH.", "p1")
    handle("stop", {"session_id": SID, "last_assistant_message": "Noted: COPPER-FINCH."}, ctx)
    assert sorted(backend.queued.values()) == ["Noted: COPPER-FINCH.", "Our codename is COPPER-FINCH."]
    assert pending_prompts(load_session(ctx.settings, SID)) == []
    before = dict(backend.queued)
    handle("session-end", {"session_id": SID, "transcript_path": transcript(
        tmp_path, [("user", "Our codename is COPPER-FINCH."), ("assistant", "Noted: COPPER-FINCH.")])}, ctx)
    assert backend.queued == before and backend.turn_ends == ["Noted: COPPER-FINCH."]
    assert not session_file(ctx.settings, SID).exists()


def test_session_end_queues_the_turn_whose_stop_was_killed(isolated_home: Path, tmp_path: Path) -> None:
    """`claude -p` kills an async Stop as it exits: SessionEnd queues the prompt and the reply
    (from the transcript), with the ids Stop would have used."""
    ctx, backend = context(isolated_home)
    submit_prompt(ctx, "Our codename is COPPER-FINCH.", "p1")
    path = transcript(tmp_path, [("user", "Our codename is COPPER-FINCH."), ("assistant", "Noted: COPPER-FINCH.")])
    handle("session-end", {"session_id": SID, "transcript_path": path}, ctx)
    assert sorted(backend.queued.values()) == ["Noted: COPPER-FINCH.", "Our codename is COPPER-FINCH."]
    assert f"{SID}:user:p1" in backend.queued
    # a Stop that did finish after all (a late async one) stores nothing twice
    ctx2, late = context(isolated_home)
    submit_prompt(ctx2, "Our codename is COPPER-FINCH.", "p1")
    handle("stop", {"session_id": SID, "last_assistant_message": "Noted: COPPER-FINCH."}, ctx2)
    assert set(late.queued) == set(backend.queued)


def test_a_stop_leaves_the_prompt_submitted_after_it_started_to_its_own_stop(isolated_home: Path) -> None:
    """Async Stop of turn 1 and UserPromptSubmit of turn 2 (a queued prompt) run at once: the
    first Stop queues turn 1's prompt only, the second Stop turn 2's; nothing is lost."""
    ctx, backend = context(isolated_home)
    submit_prompt(ctx, "First: the staging host is tern-3.", "p1")
    started = time.time()  # Stop 1 starts here ...
    time.sleep(0.01)
    submit_prompt(ctx, "Second: the prod host is heron-9.", "p2")  # ... and prompt 2 arrives before it reads
    from dexai_memory.daemon.executor import close_turn

    close_turn(ctx, {"session_id": SID}, "Reply one.", started=started)
    assert f"{SID}:user:p1" in backend.queued and f"{SID}:user:p2" not in backend.queued
    assert [p["prompt_id"] for p in pending_prompts(load_session(ctx.settings, SID))] == ["p2"]
    handle("stop", {"session_id": SID, "last_assistant_message": "Reply two."}, ctx)
    assert f"{SID}:user:p2" in backend.queued
    assert pending_prompts(load_session(ctx.settings, SID)) == []


def test_a_state_file_from_before_pending_still_queues_its_prompt(isolated_home: Path) -> None:
    ctx, backend = context(isolated_home)
    ctx.settings.home.mkdir(parents=True, exist_ok=True)
    save_session(ctx.settings, SID, {"last_prompt": "Old prompt about tern-3.", "prompt_id": "p0"})
    handle("stop", {"session_id": SID, "last_assistant_message": "ok"}, ctx)
    assert backend.queued[f"{SID}:user:p0"] == "Old prompt about tern-3."
    save_session(ctx.settings, SID, {"last_prompt": "Queued already.", "queued_prompt": "Queued already."})
    assert pending_prompts(load_session(ctx.settings, SID)) == []


def test_process_start_time_is_before_now() -> None:
    assert time.time() - 600 < process_start_time() <= time.time()


def test_each_prompt_is_pending_once(isolated_home: Path) -> None:
    ctx, _ = context(isolated_home)
    submit_prompt(ctx, "one", "p1")
    submit_prompt(ctx, "two", "p2")
    assert [p["prompt_id"] for p in pending_prompts(load_session(ctx.settings, SID))] == ["p1", "p2"]


def _ignores_sigterm(pid: int) -> bool:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
@pytest.mark.parametrize("mode", ["--async", ""])
def test_an_async_hook_finishes_the_turn_after_the_sigterm_claude_p_sends(isolated_home: Path, mode: str) -> None:
    """`claude -p` sends SIGTERM to async hooks as it exits: the launcher's ``--async`` hook ignores
    it and queues the turn; a synchronous one is killed by it (Claude Code never sends it one)."""
    settings = load_settings(home=isolated_home)
    isolated_home.mkdir(parents=True, exist_ok=True)
    remember_injected(settings, SID, [], prompt="My name is Dana and I prefer pytest over unittest.",
                      prompt_id="p1")
    env = {**os.environ, "DEXAI_HOOK_PYTHON": sys.executable, "DEXAI_MEMORY_USER": "dana"}
    proc = subprocess.Popen([str(LAUNCHER), "stop", *([mode] if mode else [])], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 30
        # the hook waits for its input; once Python runs, SIGTERM's disposition is what it inherited
        while time.monotonic() < deadline and "python" not in Path(f"/proc/{proc.pid}/cmdline").read_text():
            time.sleep(0.01)
        assert _ignores_sigterm(proc.pid) == bool(mode)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(json.dumps({"session_id": SID, "last_assistant_message": "Noted."}), timeout=60)
    finally:
        proc.kill()
    with ExtractionQueue.from_settings(settings) as queue:
        queued = queue.pending_count()
    if mode:
        assert proc.returncode == 0 and out.strip() == "{}"
        assert queued >= 1 and pending_prompts(load_session(settings, SID)) == []
    else:
        assert proc.returncode == -signal.SIGTERM and queued == 0
