"""The first SessionStart on a new store says once that past sessions can be learned; never a
silent import (a real daemon on a real store, transcripts in a fake ``~/.claude/projects``)."""

from __future__ import annotations

from pathlib import Path

from dexai_memory.capture.history_log import HistoryLog
from dexai_memory.config import load_settings
from dexai_memory.models import SearchFilters
from tests.cli.test_learn_history import SHOP, Transcript, write_history
from tests.hook_daemon import context_of, handle, running_daemon


async def test_the_offer_is_made_once_and_nothing_is_read(tmp_path: Path) -> None:
    projects = tmp_path / "claude" / "projects"
    write_history(projects)
    current = Transcript(projects, "s-now", SHOP, "2026-11-28")
    current.prompt("hello")
    settings = load_settings()
    payload = {"session_id": "s-now", "transcript_path": str(current.path), "cwd": SHOP, "source": "startup"}
    async with running_daemon(settings) as daemon:
        first = context_of(await handle(daemon, "session-start", payload, user="dana"), "SessionStart")
        assert "3 past Claude Code sessions (2 projects)" in first and "dexai memory learn-history" in first
        # nothing was read into memory: the user decides
        assert await daemon.provider.count(user_id="dana", filters=SearchFilters(valid_only=False)) == 0
        again = context_of(await handle(daemon, "session-start", {**payload, "session_id": "s-2"}, user="dana"),
                           "SessionStart")
        assert "learn-history" not in again
        # another user of the same daemon gets their own offer; a resume never makes it
        resumed = context_of(await handle(daemon, "session-start", {**payload, "source": "resume"}, user="lee"),
                             "SessionStart")
        assert "learn-history" not in resumed
    assert HistoryLog(settings.home, "dana").offered()


async def test_no_offer_without_past_sessions_or_after_learning(tmp_path: Path) -> None:
    projects = tmp_path / "claude" / "projects"
    only = Transcript(projects, "s-now", SHOP, "2026-11-28")
    only.prompt("hello")
    settings = load_settings()
    payload = {"session_id": "s-now", "transcript_path": str(only.path), "cwd": SHOP, "source": "startup"}
    async with running_daemon(settings) as daemon:
        assert "learn-history" not in context_of(await handle(daemon, "session-start", payload), "SessionStart")
        write_history(projects)
        HistoryLog(settings.home, "alice").record({"s-old": {"file": "x"}})  # learned already
        assert "learn-history" not in context_of(await handle(daemon, "session-start", payload), "SessionStart")
        assert "learn-history" in context_of(await handle(daemon, "session-start", payload, user="bo"),
                                             "SessionStart")
