"""Hooks under oversized input: a 20 MB prompt and a 200 MB transcript still get a valid answer
within the hook's time limit, and what is kept is bounded."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

from dexai_memory.config import load_settings
from dexai_memory.daemon.session_state import compaction_instructions, load_session
from dexai_memory.hooks.client import HOOK_SECONDS, PRECOMPACT_SECONDS, run
from dexai_memory.providers.native import NativeProvider
from tests.hook_daemon import launch, queued_events, running_daemon

PROMPT_20MB = "Remember that I deploy on Fridays. " + "lorem ipsum dolor sit amet " * 776_000


def _line(role: str, text: str) -> str:
    return json.dumps({"type": role, "message": {"role": role, "content": text}}) + "\n"


async def test_a_20mb_prompt_answers_valid_json(isolated_home: Path) -> None:
    settings = load_settings(home=isolated_home)
    payload = json.dumps({"session_id": "big-prompt", "hook_event_name": "UserPromptSubmit",
                          "prompt": PROMPT_20MB})
    assert len(payload) > 20_000_000
    async with NativeProvider(settings.db_path, embedder=None) as provider, \
            running_daemon(settings, provider, serve_socket=True):
        start = time.monotonic()
        proc = await launch("user-prompt-submit", payload, isolated_home)
        took = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    assert isinstance(json.loads(proc.stdout), dict)
    assert took < HOOK_SECONDS
    # the prompt was recorded for Stop to queue: its start, bounded
    [pending] = load_session(settings, "big-prompt")["pending"]
    assert pending["prompt"].startswith("Remember that I deploy on Fridays.")
    assert len(pending["prompt"]) <= settings.limits.max_turn_chars


def test_a_20mb_prompt_with_no_daemon_is_queued_bounded(isolated_home: Path) -> None:
    """The Python client alone (no daemon, autostart off): valid output, and the event kept for
    the daemon to replay holds the start of the prompt, held to the cap."""
    settings = load_settings(home=isolated_home)
    payload = json.dumps({"session_id": "cold", "prompt": PROMPT_20MB})
    out = io.StringIO()
    assert run("user-prompt-submit", io.StringIO(payload), out) == 0
    assert json.loads(out.getvalue()) == {}
    [event] = queued_events(isolated_home)
    prompt = event["payload"]["prompt"]
    assert prompt.startswith("Remember that I deploy on Fridays.")
    assert len(prompt) <= settings.limits.max_turn_chars and "characters cut" in prompt
    assert event["payload"]["session_id"] == "cold"


async def test_precompact_on_a_200mb_transcript_answers(isolated_home: Path, tmp_path: Path) -> None:
    """A 200 MB transcript (sparse: 200 MB without a newline, then the session's last lines)."""
    settings = load_settings(home=isolated_home)
    transcript = tmp_path / "t.jsonl"
    with transcript.open("wb") as fh:
        fh.truncate(200 * 1024 * 1024)
        fh.seek(0, 2)
        fh.write(("\n" + _line("user", "Refactor the parser, keep pnpm.") + _line("assistant", "Parser refactored.")
                  ).encode())
    payload = {"session_id": "huge", "transcript_path": str(transcript), "trigger": "auto"}
    async with NativeProvider(settings.db_path, embedder=None) as provider, \
            running_daemon(settings, provider, serve_socket=True):
        start = time.monotonic()
        proc = await launch("pre-compact", payload, isolated_home)
        took = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == compaction_instructions(settings).strip()
    assert took < PRECOMPACT_SECONDS
    [backup] = (isolated_home / "transcripts").iterdir()
    assert backup.stat().st_size < 4 * 1024 * 1024  # not 200 MB, nor 16 MB of escaped NULs
    assert "Parser refactored." in backup.read_text()


async def test_precompact_backup_keeps_the_end_within_lowered_limits(isolated_home: Path, tmp_path: Path) -> None:
    """Lowered limits through memory.yaml: a 4 MB transcript is backed up by its last 64 KB,
    each string held to 1,000 characters."""
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("limits:\n  max_backup_bytes: 65536\n  max_turn_chars: 1000\n")
    settings = load_settings(home=isolated_home)
    transcript = tmp_path / "t.jsonl"
    with transcript.open("w") as fh:
        for i in range(1000):
            fh.write(_line("user" if i % 2 else "assistant", f"message {i} " + "x " * 2000))
        fh.write(_line("user", "The last prompt: ship it."))
    assert transcript.stat().st_size > 4_000_000
    payload = {"session_id": "lowered", "transcript_path": str(transcript), "trigger": "manual"}
    async with NativeProvider(settings.db_path, embedder=None) as provider, \
            running_daemon(settings, provider, serve_socket=True):
        proc = await launch("pre-compact", payload, isolated_home)
    assert proc.returncode == 0, proc.stderr
    [backup] = (isolated_home / "transcripts").iterdir()
    lines = backup.read_text().splitlines()
    assert 0 < len(lines) <= 17  # 64 KB of 4 KB lines
    assert "The last prompt: ship it." in lines[-1]
    assert all(len(json.loads(line)["message"]["content"]) <= 1000 for line in lines)
