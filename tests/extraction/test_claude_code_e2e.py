"""As installed, with extraction through the sign-in: the real Claude Code CLI with this repository
as a plugin, signed in with a token (no ANTHROPIC_API_KEY anywhere), the daemon the hooks start,
and that daemon extracting through the signed-in CLI (Haiku's answers played by the fake API).
Nothing is started by the test but Claude Code."""

from __future__ import annotations

import time
from contextlib import closing
from pathlib import Path

import pytest

from dexai_memory.capture.queue import ExtractionQueue
from dexai_memory.config import load_settings
from dexai_memory.demo.fakeapi import FakeMessagesAPI, text_of
from dexai_memory.extraction.claude_code import CLI_ENV, bundled_cli
from dexai_memory.extraction.usage import TokenLedger
from dexai_memory.providers.native.driver import store_sqlite
from dexai_memory.recall.block import FENCE_OPEN
from tests.extraction.test_claude_code import FakeHaiku, is_classification, is_extraction
from tests.hooks.test_installed_e2e import mem_home, runner  # noqa: F401 - mem_home is a fixture

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(bundled_cli() is None, reason="no bundled Claude Code CLI")]

SAID = "From now on, always run make check before every push. Our staging host is db-staging-7.internal."
#: Haiku's wording, which the offline extractor would never produce: proof the model wrote it.
NOTES = [{"content": "Run `make check` before every push (standing instruction).", "type": "PREFERENCE",
          "importance": 8, "confidence": 0.9},
         {"content": "The staging host is db-staging-7.internal (project environment).", "type": "FACT",
          "importance": 7, "confidence": 0.9}]


def test_the_daemon_extracts_through_the_users_claude_code_sign_in(tmp_path: Path, mem_home: Path,  # noqa: F811
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CLI_ENV, "")  # as a user has it: find the CLI (here the bundled one)
    haiku = FakeHaiku(NOTES)
    settings = load_settings(home=mem_home)
    with FakeMessagesAPI(responder=haiku) as api:
        run = runner(tmp_path, api, mem_home, autostart=True)
        run(SAID).check()
        run.resume("ok, thanks").check()  # SessionEnd hands the queue to the daemon the hooks started
        deadline = time.monotonic() + 90
        stored: list[str] = []
        while time.monotonic() < deadline:
            if settings.db_path.exists():
                with closing(store_sqlite().connect(settings.db_path)) as db:
                    stored = [r[0] for r in db.execute("SELECT content FROM memories WHERE deleted = 0")]
                if all(n["content"] in stored for n in NOTES):
                    break
            time.sleep(0.5)
        extraction = [r for r in api.message_requests() if is_extraction(r.body)]
        classification = [r for r in api.message_requests() if is_classification(r.body)]

    assert all(n["content"] in stored for n in NOTES), f"Haiku's notes were not stored: {stored}"
    assert extraction, "the daemon never asked the model through Claude Code"
    for request in extraction + classification:
        assert "x-api-key" not in request.headers  # the sign-in token, no API key
        assert request.body.get("tools") == []
        assert FENCE_OPEN not in text_of(request)  # our own hooks did not run in the extraction session
        assert "make check" in text_of(request) or is_classification(request.body)
    today = TokenLedger.in_home(settings.home).today()
    assert today.calls == len(extraction) + len(classification)
    assert today.by_source and set(today.by_source) == {"claude_code"}
    with ExtractionQueue.from_settings(settings) as queue:
        stats = queue.stats()
    assert stats.dead == 0 and stats.pending == 0
    # the extraction sessions (run in the data directory) left no transcript in the user's history
    projects = tmp_path / "claude-home" / ".claude" / "projects"
    assert [d.name for d in projects.iterdir() if d.name.endswith("-memory")] == []
