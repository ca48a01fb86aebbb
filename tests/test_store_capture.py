"""Capture never depends on recall or on a writable data directory: every prompt said while the
store is damaged, the disk is full or the data directory is read-only reaches ``queue.db``, once.

A real daemon (native store, offline extractor) answers the plugin's launcher or its executor;
the transcript (``transcript_path``) is written as Claude Code writes it. Faults: the session
state directory unwritable (``hooks/`` replaced by a file), the queue refusing writes (a queue
whose ``enqueue`` raises the error SQLite gives on a full disk), the store overwritten with
garbage while the daemon runs, a store the daemon cannot open at all, and, as root, a real full
tmpfs and a real read-only bind mount.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from dexai_memory.capture.queue import ExtractionQueue
from dexai_memory.config import Settings, load_settings
from dexai_memory.daemon.catch_up import missing_prompts, transcript_prompts
from dexai_memory.daemon.core import MemoryDaemon
from dexai_memory.errors import QueueError
from dexai_memory.models import Turn
from dexai_memory.supersession.rules import OfflineClassifier
from tests.hook_daemon import (
    handle,
    launch,
    queued_events,
    queued_turns,
    running_daemon,
    write_transcript,
)
from tests.pipeline_fakes import JoinSummarizer

PROMPTS = [f"Remember that I prefer the {theme} theme for the {tool} editor on this project"
           for theme, tool in [("dark", "vim"), ("light", "emacs"), ("solarized", "helix"), ("nord", "zed"),
                               ("gruvbox", "kate"), ("monokai", "nano")]]
FAULTY = (2, 3)  # the turns said during the fault


class FullQueue(ExtractionQueue):
    """The extraction queue, refusing every write while ``full`` (what SQLite raises on a full disk)."""

    full = False

    def enqueue(self, turn: Turn, context: Any = ()) -> bool:
        if self.full:
            raise QueueError(f"cannot enqueue turn {turn.id}: database or disk is full")
        return super().enqueue(turn, context)


@contextmanager
def unwritable_state(home: Path) -> Iterator[None]:
    """``<home>/hooks`` (the session state files) cannot be written: a file stands in its place."""
    shutil.rmtree(home / "hooks", ignore_errors=True)
    (home / "hooks").write_text("not a directory")
    try:
        yield
    finally:
        (home / "hooks").unlink()


def user_prompts(home: Path) -> list[str]:
    """The user turns in ``queue.db`` (one entry per job: a prompt queued twice shows twice)."""
    return [text for tid, text in queued_turns(home).items() if ":user:" in tid]


async def say(home: Path, transcript: Path, turns: list[tuple[str, str]], i: int, *, sid: str,
              daemon: MemoryDaemon | None = None) -> None:
    """Turn ``i``: the prompt (in the transcript, then UserPromptSubmit), the reply, Stop."""
    base = {"session_id": sid, "transcript_path": str(transcript), "cwd": str(home.parent)}
    turns.append(("user", PROMPTS[i]))
    write_transcript(transcript, turns)
    if daemon is None:
        assert (await launch("user-prompt-submit", {**base, "prompt": PROMPTS[i]}, home)).returncode == 0
    else:
        try:
            await handle(daemon, "user-prompt-submit", {**base, "prompt": PROMPTS[i]})
        except Exception:  # the door answers a no-op; the prompt's fate is what is tested
            pass
    turns.append(("assistant", f"Noted ({i})."))
    write_transcript(transcript, turns)
    if daemon is None:
        assert (await launch("stop", {**base, "last_assistant_message": f"Noted ({i})."}, home)).returncode == 0
    else:
        try:
            await handle(daemon, "stop", {**base, "last_assistant_message": f"Noted ({i})."})
        except Exception:
            pass


@pytest.fixture
def settings(isolated_home: Path) -> Settings:
    isolated_home.mkdir(parents=True, exist_ok=True)
    return load_settings(home=isolated_home)


async def test_prompts_said_while_the_state_cannot_be_written_are_queued(settings: Settings,
                                                                          tmp_path: Path) -> None:
    """Through the plugin's launcher: UserPromptSubmit cannot record the prompt, so it queues it
    at once (record first, answer second); nothing lost, nothing twice."""
    home, transcript, turns = settings.home, tmp_path / "t.jsonl", []
    async with running_daemon(settings, serve_socket=True):
        for i in range(len(PROMPTS)):
            if i == FAULTY[0]:
                with unwritable_state(home):
                    for j in FAULTY:
                        await say(home, transcript, turns, j, sid="s-state")
            elif i not in FAULTY:
                await say(home, transcript, turns, i, sid="s-state")
    assert sorted(user_prompts(home)) == sorted(PROMPTS)


async def test_prompts_said_while_nothing_can_be_written_come_back_from_the_transcript(
        settings: Settings, tmp_path: Path) -> None:
    """A full disk: neither the state file nor the queue takes the prompt. The next Stop after the
    fault reads the transcript and queues the prompts no hook queued, once each."""
    home, transcript, turns = settings.home, tmp_path / "t.jsonl", []
    daemon = MemoryDaemon(settings, classifier=OfflineClassifier(), summarizer=JoinSummarizer(), schedule=False)
    daemon.queue = FullQueue.from_settings(settings)
    async with daemon:
        assert isinstance(daemon.queue, FullQueue)
        for i in range(len(PROMPTS)):
            if i in FAULTY:
                daemon.queue.full = True
                with unwritable_state(home):
                    await say(home, transcript, turns, i, sid="s-full", daemon=daemon)
                daemon.queue.full = False
            else:
                await say(home, transcript, turns, i, sid="s-full", daemon=daemon)
            if i == FAULTY[0]:
                assert PROMPTS[i] not in user_prompts(home)  # lost for now
    assert sorted(user_prompts(home)) == sorted(PROMPTS)


async def test_a_new_daemon_catches_up_a_session_it_never_saw(settings: Settings, tmp_path: Path) -> None:
    """Prompts no hook could record while no daemon ran (not even as queued events) are queued by
    the session's first Stop after a daemon starts; a later SessionEnd adds nothing."""
    transcript, turns = tmp_path / "t.jsonl", []
    for i in range(3):  # said while hooks could write nothing at all: only the transcript has them
        turns += [("user", PROMPTS[i]), ("assistant", f"Noted ({i}).")]
    write_transcript(transcript, turns)
    async with running_daemon(settings) as daemon:
        await say(settings.home, transcript, turns, 3, sid="s-new", daemon=daemon)
        assert sorted(user_prompts(settings.home)) == sorted(PROMPTS[:4])
        await handle(daemon, "session-end", {"session_id": "s-new", "transcript_path": str(transcript)})
    assert len(user_prompts(settings.home)) == 4


async def test_a_reply_whose_prompt_never_reached_the_daemon_catches_up(settings: Settings, tmp_path: Path) -> None:
    """A turn whose UserPromptSubmit never reached the daemon (the hook killed or skipped before it
    could queue the event): the Stop that follows finds no recorded prompt for its reply and queues
    the transcript's prompt, though the session was caught up already."""
    transcript, turns = tmp_path / "t.jsonl", []
    async with running_daemon(settings) as daemon:
        await say(settings.home, transcript, turns, 0, sid="s-skip", daemon=daemon)
        assert "s-skip" in daemon.executor._caught_up
        base = {"session_id": "s-skip", "transcript_path": str(transcript)}
        for i in (1, 2):  # no UserPromptSubmit for these turns, only the transcript has them
            turns += [("user", PROMPTS[i]), ("assistant", f"Noted ({i}).")]
            write_transcript(transcript, turns)
            await handle(daemon, "stop", {**base, "last_assistant_message": f"Noted ({i})."})
            assert sorted(user_prompts(settings.home)) == sorted(PROMPTS[:i + 1])
        await say(settings.home, transcript, turns, 3, sid="s-skip", daemon=daemon)
        await handle(daemon, "session-end", base)
    assert sorted(user_prompts(settings.home)) == sorted(PROMPTS[:4])  # each once


async def test_a_normal_session_queues_each_prompt_once(settings: Settings, tmp_path: Path) -> None:
    """No fault: the catch-up finds nothing to add, whatever ids the prompts had (Claude Code's
    ``prompt_id`` in the hook input and ``promptId`` in the transcript, or neither)."""
    transcript = tmp_path / "t.jsonl"
    lines: list[str] = []
    async with running_daemon(settings) as daemon:
        for i, prompt in enumerate(PROMPTS):
            pid = {"prompt_id": f"p{i}"} if i % 2 else {}
            entry: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": prompt}}
            if i % 2:
                entry["promptId"] = f"p{i}"
            lines += [json.dumps(entry), json.dumps({"type": "assistant", "message": {"role": "assistant",
                                                                                      "content": "Noted."}})]
            transcript.write_text("\n".join(lines) + "\n")
            base = {"session_id": "s-ok", "transcript_path": str(transcript)}
            await handle(daemon, "user-prompt-submit", {**base, "prompt": prompt, **pid})
            await handle(daemon, "stop", {**base, "last_assistant_message": "Noted."})
            if i == 2:  # a failed event: the next Stop reads the transcript again
                daemon.executor._caught_up.discard("s-ok")
        await handle(daemon, "session-end", {"session_id": "s-ok", "transcript_path": str(transcript)})
    assert sorted(user_prompts(settings.home)) == sorted(PROMPTS)


async def test_prompts_said_while_the_store_is_damaged_are_queued(settings: Settings, tmp_path: Path) -> None:
    """The store overwritten with garbage under a running daemon: recall fails, capture does not."""
    home, transcript, turns = settings.home, tmp_path / "t.jsonl", []
    async with running_daemon(settings, serve_socket=True):
        for i in range(len(PROMPTS)):
            if i == FAULTY[0]:
                size = settings.db_path.stat().st_size
                with settings.db_path.open("r+b") as fh:
                    fh.seek(100)
                    fh.write(os.urandom(size - 100))
            await say(home, transcript, turns, i, sid="s-garbage")
    assert sorted(user_prompts(home)) == sorted(PROMPTS)


def test_prompts_said_while_no_daemon_can_open_the_store_wait_in_the_queue(settings: Settings,
                                                                            tmp_path: Path) -> None:
    """A store no daemon can open: each hook keeps its event in ``queue.db`` (autostart off here:
    at once) and the daemon that starts after a restore replays them: every prompt queued."""
    import asyncio

    from tests.hook_daemon import launch_sync

    settings.db_path.write_bytes(b"SQLite format 3\x00" + os.urandom(8192))
    transcript, turns = tmp_path / "t.jsonl", []
    for i in range(3):
        turns.append(("user", PROMPTS[i]))
        write_transcript(transcript, turns)
        base = {"session_id": "s-cold", "transcript_path": str(transcript)}
        assert launch_sync("user-prompt-submit", {**base, "prompt": PROMPTS[i]}, settings.home).returncode == 0
        turns.append(("assistant", "Noted."))
        write_transcript(transcript, turns)
        assert launch_sync("stop", {**base, "last_assistant_message": "Noted."}, settings.home).returncode == 0
    assert len(queued_events(settings.home)) == 6
    settings.db_path.unlink()  # the damaged store set aside (restore-backup does this)

    async def restart() -> None:
        async with running_daemon(settings):
            pass

    asyncio.run(restart())
    assert sorted(user_prompts(settings.home)) == sorted(PROMPTS[:3])


def test_transcript_prompts_skip_tool_results_meta_commands_and_the_compaction_summary(tmp_path: Path) -> None:
    lines = [{"type": "user", "message": {"role": "user", "content": "First question about the build"},
              "promptId": "a1"},
             {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}},
             {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "content": "x"}]}},
             {"type": "user", "isMeta": True, "message": {"role": "user", "content": "caveat"}},
             {"type": "user", "message": {"role": "user", "content": "<command-name>/clear</command-name>"}},
             {"type": "user", "isCompactSummary": True, "isVisibleInTranscriptOnly": True,
              "message": {"role": "user", "content": "This session is being continued from a previous "
                          "conversation that ran out of context. Pick up the last task."}},
             {"type": "user", "message": {"role": "user", "content": "Second question, still running"}}]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n{broken\n")
    prompts = transcript_prompts(str(path))
    assert [(p.text, p.prompt_id, p.answered) for p in prompts] == [
        ("First question about the build", "a1", True), ("Second question, still running", None, False)]
    queue_db = tmp_path / "queue.db"
    todo = missing_prompts(prompts, session_id="s", user_id="u", queue_db=queue_db, pending=[], handled=[],
                           answered_only=True)
    assert [p.text for p in todo] == ["First question about the build"]
    assert missing_prompts(prompts, session_id="s", user_id="u", queue_db=queue_db,
                           pending=[{"prompt": "Second question, still running"}], handled=[prompts[0].key],
                           answered_only=False) == []


ROOT = os.geteuid() == 0 and shutil.which("mount") is not None


@contextmanager
def mounted(home: Path, *options: str) -> Iterator[None]:
    result = subprocess.run(["mount", *options, str(home)], capture_output=True, check=False)
    if result.returncode != 0:
        pytest.skip(f"cannot mount here: {result.stderr.decode(errors='replace').strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "--lazy", str(home)], capture_output=True, check=False)


@pytest.mark.skipif(not ROOT, reason="a real full disk and a read-only mount need root (mount)")
@pytest.mark.parametrize("fault", ["disk-full", "read-only"])
async def test_real_disk_faults_lose_no_prompt(fault: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tmpfs data directory filled to the last byte, or made read-only by a bind mount, for two
    turns, through the plugin's launcher: 0 prompts lost, none twice."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("DEXAI_MEMORY_HOME", str(home))
    options = ("-t", "tmpfs", "-o", "size=64m", "tmpfs") if fault == "disk-full" else ()
    with mounted(home, *options) if options else _nothing():
        settings = load_settings(home=home)
        transcript, turns = tmp_path / "t.jsonl", []
        async with running_daemon(settings, serve_socket=True):
            for i in range(len(PROMPTS)):
                if i == FAULTY[0] and fault == "disk-full":
                    await sh("dd", "if=/dev/zero", f"of={home}/ballast", "bs=64k", check=False)
                if i == FAULTY[0] and fault == "read-only":
                    await sh("mount", "--bind", str(home), str(home))
                    await sh("mount", "-o", "remount,bind,ro", str(home))
                await say(home, transcript, turns, i, sid=f"s-{fault}")
                if i == FAULTY[-1]:
                    if fault == "disk-full":
                        (home / "ballast").unlink()
                    else:
                        await sh("umount", str(home))
        assert sorted(user_prompts(home)) == sorted(PROMPTS)


@contextmanager
def _nothing() -> Iterator[None]:
    yield


async def sh(*command: str, check: bool = True) -> None:
    """Run ``command`` (a mount, a fill) off the event loop the daemon answers on."""
    import asyncio

    await asyncio.to_thread(subprocess.run, list(command), capture_output=True, check=check)


def test_a_hook_does_not_wait_out_its_budget_for_a_daemon_that_failed_at_start(settings: Settings) -> None:
    """A store no daemon can open, autostart on: the daemon started for the hook exits at start,
    and the hook's wait ends then (not after ``hooks.cold_start_wait_seconds``): it queues its
    event at once."""
    import time

    from dexai_memory.daemon.control import spawn, wait_until_answering

    settings.db_path.write_bytes(b"SQLite format 3\x00" + os.urandom(8192))
    assert spawn(settings, reason="test") is not None
    started = time.monotonic()
    assert wait_until_answering(settings, 600.0) is False
    assert time.monotonic() - started < 300  # a guard against waiting out the budget, not a speed target
