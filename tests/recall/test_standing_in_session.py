"""What the user says during a coding session reaches a later prompt's block, through the daemon's
UserPromptSubmit: the standing knowledge stored after the session's block joins the next prompt that
asks for work (once; not an acknowledgement, not while the user's own sentence is still in the last
messages); and a prompt with pasted output searches with the user's words around the paste.
A real daemon, the offline extractor, the native store in the test's data directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dexai_memory.config import Settings, load_settings
from dexai_memory.extraction.offline import OfflineExtractor
from dexai_memory.limits import PersistentContextConfig
from dexai_memory.models import Memory, MemoryType, utcnow
from dexai_memory.recall.ranking import prompt_query
from dexai_memory.recall.standing import pick_new
from tests.hook_daemon import context_of, handle, running_daemon, write_transcript

SID = "s-standing"


@pytest.fixture
def settings(isolated_home: Path) -> Settings:
    isolated_home.mkdir(parents=True, exist_ok=True)
    return load_settings(home=isolated_home)


#: The conversation so far (the transcript Claude Code writes), opened by earlier work.
TURNS: list[tuple[str, str]] = []


async def prompt(daemon: Any, text: str, transcript: Path) -> str:
    """One turn: UserPromptSubmit (what it injects is returned), then Stop; the queue is extracted."""
    base = {"session_id": SID, "cwd": "/work/laptop", "transcript_path": str(transcript)}
    TURNS.append(("user", text))
    write_transcript(transcript, TURNS)
    added = context_of(await handle(daemon, "user-prompt-submit", {**base, "prompt": text}), "UserPromptSubmit")
    reply = f"I looked into it and changed the configuration ({len(TURNS)})."
    TURNS.append(("assistant", reply))
    write_transcript(transcript, TURNS)
    await handle(daemon, "stop", {**base, "last_assistant_message": reply})
    assert await daemon.flush(30)
    return added


async def test_what_the_user_said_in_the_session_joins_the_next_task_prompt_once(settings: Settings,
                                                                               tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    TURNS[:] = [("user", "set up passwordless sudo on the mac"), ("assistant", "Here is the plan, in four steps.")]
    async with running_daemon(settings, extractor=OfflineExtractor()) as daemon:
        await handle(daemon, "session-start", {"session_id": SID, "cwd": "/work/laptop", "source": "startup"})
        assert await prompt(daemon, "yes, lets be cautious and verify at each step", t) == ""
        assert await prompt(daemon, "ok", t) == ""  # an acknowledgement gets nothing
        assert await prompt(daemon, "verify", t) == ""  # nor a one-word reply
        task = await prompt(daemon, "can we config touch id or Yubi to approve sudo at the begining of a session", t)
        assert "Be cautious and verify at each step." in task
        again = await prompt(daemon, "now configure the pam module for sudo on the login screen as well", t)
        assert "cautious" not in again  # shown once in the session: still in the conversation


async def test_what_the_session_block_showed_is_not_added_again(settings: Settings, tmp_path: Path) -> None:
    TURNS[:] = []
    async with running_daemon(settings, extractor=OfflineExtractor()) as daemon:
        await handle(daemon, "session-start", {"session_id": "s-before", "cwd": "/work/laptop", "source": "startup"})
        await handle(daemon, "user-prompt-submit", {"session_id": "s-before", "cwd": "/work/laptop",
                                                    "prompt": "never force push to main"})
        await handle(daemon, "stop", {"session_id": "s-before", "last_assistant_message": "Noted."})
        assert await daemon.flush(30)
        start = context_of(await handle(daemon, "session-start", {"session_id": SID, "cwd": "/work/laptop",
                                                                  "source": "startup"}), "SessionStart")
        assert "Never force push to main." in start
        task = await prompt(daemon, "rebase the feature branch onto main and push the result to origin",
                            tmp_path / "t.jsonl")
        assert "force push" not in task


def _memory(content: str, *, type_: MemoryType = MemoryType.FACT, category: str | None = None,
            importance: int = 6) -> Memory:
    return Memory(content=content, user_id="u", type=type_, importance=importance, confidence=0.8,
                  metadata={"category": category} if category else {}, created_at=utcnow())


def test_the_project_comes_first_and_the_person_only_on_a_personal_prompt() -> None:
    """Instructions and facts, then the plans the user set, then preferences; the person on a personal
    prompt only; nothing already shown, nothing under importance 5."""
    cfg = PersistentContextConfig()
    person = _memory("The user's sister is called Ana.", type_=MemoryType.RELATIONSHIP)
    taste = _memory("The user prefers dark themes.", type_=MemoryType.PREFERENCE)
    rule = _memory("Never commit without signing.", type_=MemoryType.INSIGHT, category="instruction", importance=8)
    fact = _memory("The user uses hyper v.", importance=5)
    minor = _memory("The user saw a warning.", importance=3)
    plan = _memory("The team will start fresh.", type_=MemoryType.COMMITMENT, importance=7)
    picked = pick_new([person, taste, plan, rule, fact, minor], cfg, exclude=set(), shown=lambda m: False,
                      personal=False)
    assert picked == [rule, fact, plan, taste]
    assert person in pick_new([person], cfg, exclude=set(), shown=lambda m: False, personal=True)
    assert pick_new([rule], cfg, exclude={rule.id}, shown=lambda m: False, personal=False) == []


def test_a_prompt_with_pasted_output_searches_with_the_user_s_words() -> None:
    pasted = ("the build fails again on the windows runner, check the signing step\n"
              "```\nTraceback (most recent call last):\n  File \"sign.py\", line 3\nKeyError: 'GPG_KEY'\n```\n"
              "    at Object.<anonymous> (/app/index.js:1:1)\n"
              "ERROR: gpg failed to sign the data")
    assert prompt_query(pasted) == "the build fails again on the windows runner, check the signing step"
    assert prompt_query("KeyError: 'GPG_KEY'") == "KeyError: 'GPG_KEY'"  # nothing else: the prompt itself
