"""Issue 18's prefetch "done means", through the real Claude Code CLI with the plugin as installed
(no API key, offline extractor, no daemon the user would not have): a decision about a file said
in one session reaches the model in a later session through PostToolUse when the model opens
that file, inside the memory fence; when the session already shows it (auto-recall for the
prompt), the prefetch does not repeat it. The first session is recorded as an episode.

The persistent context is off here: with it on, the decision (a project fact) opens every
session and the prefetch rightly adds nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dexai_memory.config import Settings, load_settings
from dexai_memory.demo.fakeapi import (
    FakeMessagesAPI,
    RecordedRequest,
    Reply,
    ToolUse,
    last_user_text,
    text_of,
)
from dexai_memory.models import Memory, MemoryType, SearchFilters
from dexai_memory.providers.native import NativeProvider

from .test_installed_e2e import (  # noqa: F401 - mem_home is a fixture
    drained,
    mem_home,
    memory_text,
    replayed_by_a_later_daemon,
    runner,
    users_daemon,
)

pytestmark = pytest.mark.e2e

DECISION = "We decided src/billing/invoice.py must round with Decimal, never float."
#: The words of the decision that must come back (the extractor may rephrase "We decided").
KEY = "src/billing/invoice.py must round with Decimal, never float"
OPEN_PROMPT = "Open the file and tell me what it does."
#: A prompt auto-recall answers with the decision before the file is opened.
ASKING_PROMPT = "How must we round invoice totals, with Decimal or float? Open the file and check."


def tool_session(run: Any, api: FakeMessagesAPI, prompt: str, tool: ToolUse, reply: str,
                 when: Callable[[dict[str, Any]], bool] | None = None) -> tuple[RecordedRequest, RecordedRequest]:
    """A new session whose model answers ``prompt`` with one ``tool`` call (when ``when`` holds
    for the request; by default when ``prompt`` is the last user text), then ``reply``:
    (the request before the tool's result, the one that carries it)."""
    api.clear()
    run.last_session_id = None
    api.enqueue(Reply(tool_uses=[tool]), when=when or (lambda body: prompt in last_user_text(body)))
    api.enqueue(Reply(text=reply))
    run(prompt).check()
    requests = [r for r in api.message_requests() if prompt in text_of(r)]
    after = next((i for i, r in enumerate(requests) if "tool_result" in str(r.body.get("messages"))), None)
    assert after, f"the fake model's {tool.name} never ran"
    return requests[after - 1], requests[after]


def _session_opening(run: Any, api: FakeMessagesAPI, source: Path,
                     prompt: str) -> tuple[RecordedRequest, RecordedRequest]:
    """A new session whose model reads ``source``: (the request before the Read, the one after)."""
    def opens_file(body: dict[str, Any]) -> bool:
        names = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        return "Read" in names and prompt in last_user_text(body)

    return tool_session(run, api, prompt, ToolUse("Read", {"file_path": str(source)}), "It sums the invoice lines.",
                        when=opens_file)



def episodes_of(settings: Settings) -> list[Memory]:
    """Dana's episodes in the store (read after the sessions, with no daemon writing)."""
    async def read() -> list[Memory]:
        async with NativeProvider(settings.db_path, embedder=None) as provider:
            return await provider.list(user_id="dana", filters=SearchFilters(types=(MemoryType.EPISODE,)))

    return asyncio.run(read())

@pytest.mark.parametrize("autostart", [True, False], ids=["daemon-autostarted", "no-daemon-then-replayed"])
def test_a_decision_about_a_file_comes_back_when_a_later_session_opens_it(
        tmp_path: Path, mem_home: Path, autostart: bool) -> None:  # noqa: F811
    settings = load_settings(home=mem_home)
    source = tmp_path / "project" / "src" / "billing" / "invoice.py"
    source.parent.mkdir(parents=True)
    source.write_text("def total(lines):\n    return sum(float(x) for x in lines)\n")
    mem_home.mkdir(parents=True, exist_ok=True)
    (mem_home / "memory.yaml").write_text(  # the block brings neither facts nor the last session's snapshot
        "persistent_context:\n  enabled: false\nl1_block:\n  session_tokens: 0\n")
    with FakeMessagesAPI() as api:
        run = runner(tmp_path, api, mem_home, autostart=autostart)
        run(DECISION).check()
        if autostart:  # the daemon the hooks started extracts in the background
            drained(mem_home)
        else:  # the daemon the user starts replays the session and answers the later ones
            replayed_by_a_later_daemon(mem_home)
        # 1. the decision reaches the model when the file is opened
        before, after = _session_opening(run, api, source, OPEN_PROMPT)
        assert KEY not in text_of(before), "shown before the file was opened"
        remembered = memory_text(text_of(after))
        assert "Known about src/billing/invoice.py" in remembered and KEY in remembered, remembered
        assert text_of(after).count(KEY) == 1
        # 2. auto-recall already showed it for the prompt: opening the file repeats nothing
        before, after = _session_opening(run, api, source, ASKING_PROMPT)
        assert KEY in memory_text(text_of(before))
        assert "Known about src/billing/invoice.py" not in text_of(after)
        assert text_of(after).count(KEY) == text_of(before).count(KEY)
    episodes = episodes_of(settings)
    # one-prompt sessions that edited nothing are kept as their facts, not as episodes
    assert episodes == [], [e.content for e in episodes]


def test_a_failing_command_brings_the_known_fix_through_post_tool_use_failure(
        tmp_path: Path, mem_home: Path) -> None:  # noqa: F811
    """A Bash command that exits non-zero (the plugin hooks PostToolUseFailure for Bash, and
    PostToolUse reads a non-zero exit code): what is known about the error reaches the model
    beside it."""
    lesson = "The nightly export dies with ConnectionResetError when the VPN is down: reconnect the VPN first."
    prompt = "Run the export script."
    command = "python3 -c \"raise ConnectionResetError('Connection reset by peer')\""
    mem_home.mkdir(parents=True, exist_ok=True)
    (mem_home / "memory.yaml").write_text(  # the block brings neither facts nor the last session's snapshot
        "persistent_context:\n  enabled: false\nl1_block:\n  session_tokens: 0\n")
    users_daemon(mem_home)  # autostart off: the user runs the daemon
    with FakeMessagesAPI() as api:
        run = runner(tmp_path, api, mem_home, autostart=False)
        run(lesson).check()
        drained(mem_home)
        _, after = tool_session(run, api, prompt, ToolUse("Bash", {"command": command, "description": "run the export"}),
                                "The VPN is down.")
    assert "ConnectionResetError" in text_of(after)  # the failure itself
    remembered = memory_text(text_of(after))
    assert "reconnect the VPN" in remembered, remembered
    # the session that ran the command is an episode, with the command among its artifacts
    episodes = episodes_of(load_settings(home=mem_home))
    assert [e.metadata["artifacts"]["commands"] for e in episodes] == [[command]], [e.content for e in episodes]
