"""Issue 14's "done means", through the real Claude Code CLI with the plugin as installed (no API
key, offline extractor): standing instructions, warnings and key project facts said in one
session are in the FIRST request of the next session, in the persistent context, within its
budget; once with the daemon the hooks start, once with autostart off and no daemon (the
session's events wait in queue.db; the daemon the user starts before the next session replays
them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dexai_memory.config import load_settings
from dexai_memory.demo.fakeapi import FakeMessagesAPI, text_of
from dexai_memory.text.tokens import count_tokens

from .test_installed_e2e import (  # noqa: F401 - mem_home is a fixture
    drained,
    mem_home,
    memory_text,
    replayed_by_a_later_daemon,
    runner,
)

pytestmark = pytest.mark.e2e

SESSION_ONE = ("Some ground rules for this repo. Always run make lint-all before you push a branch. "
               "Never edit the generated files in proto/gen by hand. The orders service runs on port 8443. "
               "Priya owns the billing service.")
#: The statements that must open the next session, each a standing instruction, a warning or a project fact.
KEYS = ("make lint-all", "proto/gen", "8443", "Priya owns the billing service")


@pytest.mark.parametrize("autostart", [True, False], ids=["daemon-autostarted", "no-daemon-then-replayed"])
def test_instructions_warnings_and_project_facts_open_the_next_session(
        tmp_path: Path, mem_home: Path, autostart: bool) -> None:  # noqa: F811
    settings = load_settings(home=mem_home)
    with FakeMessagesAPI() as api:
        run = runner(tmp_path, api, mem_home, autostart=autostart)
        run(SESSION_ONE).check()
        run.resume("ok, thanks").check()
        if autostart:  # the daemon the hooks started extracts in the background
            drained(mem_home)
        else:
            replayed_by_a_later_daemon(mem_home)
        api.clear()
        run.last_session_id = None
        run("Good morning, what's next?").check()
        first = api.message_requests()[0]
    remembered = memory_text(text_of(first))
    assert "Persistent context:" in remembered, remembered
    missing = [k for k in KEYS if k not in remembered]
    assert not missing, f"{missing} did not open the next session:\n{remembered}"
    section = remembered.split("Persistent context:", 1)[1]
    assert "Standing instructions" in section and "Warnings" in section and "Facts:" in section
    assert count_tokens(section) <= settings.persistent_context.max_tokens + 10  # + fence close
    assert len(remembered) < 10_000
