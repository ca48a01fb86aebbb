"""The user's ``/compact <instructions>`` re-injected after compaction, and the final snapshot at
session end, through a real daemon's executor on a real SQLite store."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dexai_memory.config import Settings, load_settings
from dexai_memory.daemon.actions import snapshot_id
from dexai_memory.providers.native import NativeProvider
from tests.hook_daemon import context_of, handle, running_daemon


@pytest.fixture
async def provider(tmp_path: Path) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(tmp_path / "memory.db", embedder=None) as p:
        yield p


@pytest.fixture
def settings(isolated_home: Path) -> Settings:
    return load_settings()


def transcript(path: Path, *turns: tuple[str, str]) -> str:
    path.write_text("".join(json.dumps({"type": role, "message": {"role": role, "content": text}}) + "\n"
                            for role, text in turns))
    return str(path)


async def test_compact_instructions_are_re_injected_after_compaction(settings: Settings, provider: NativeProvider,
                                                                    tmp_path: Path) -> None:
    path = transcript(tmp_path / "t.jsonl", ("user", "Migrate the billing tables"), ("assistant", "Started."))
    async with running_daemon(settings, provider) as daemon:
        await handle(daemon, "pre-compact", {"session_id": "c1", "trigger": "manual", "transcript_path": path,
                                             "custom_instructions": "keep the list of migrated tables"})
        text = context_of(await handle(daemon, "session-start", {"session_id": "c1", "source": "compact"}),
                          "SessionStart")
        assert "compacted this conversation with these instructions" in text
        assert "keep the list of migrated tables" in text
        # the marker is gone: the next prompt is an ordinary recall, without the instructions again
        again = await handle(daemon, "user-prompt-submit", {"session_id": "c1", "prompt": "go on"})
        assert "keep the list of migrated tables" not in json.dumps(again)

        # SessionStart(compact) did not run: the first prompt after compaction carries them
        await handle(daemon, "pre-compact", {"session_id": "c2", "trigger": "manual", "transcript_path": path,
                                             "custom_instructions": "focus on the failing test"})
        prompt = context_of(await handle(daemon, "user-prompt-submit", {"session_id": "c2", "prompt": "next?"}),
                            "UserPromptSubmit")
        assert "focus on the failing test" in prompt

        # an automatic compaction has none: nothing is added
        await handle(daemon, "pre-compact", {"session_id": "c3", "trigger": "auto", "transcript_path": path})
        auto = await handle(daemon, "session-start", {"session_id": "c3", "source": "compact"})
        assert "with these instructions" not in json.dumps(auto)


async def test_session_end_stores_the_final_snapshot(settings: Settings, provider: NativeProvider,
                                                     tmp_path: Path) -> None:
    path = transcript(tmp_path / "t.jsonl", ("user", "Write the release notes for 2.4"),
                      ("assistant", "Drafted the notes in CHANGELOG.md; the API section is still open."))
    async with running_daemon(settings, provider) as daemon:
        await handle(daemon, "session-end", {"session_id": "e1", "reason": "logout", "transcript_path": path})
        start = context_of(await handle(daemon, "session-start", {"session_id": "e2", "source": "startup"}),
                           "SessionStart")
        assert "release notes for 2.4" in start  # the next session starts from where this one ended
    snap = await provider.get(snapshot_id("e1"), user_id="alice")
    assert snap.content.startswith("Session ended (logout)")
    assert "Write the release notes for 2.4" in snap.content and "API section is still open" in snap.content
