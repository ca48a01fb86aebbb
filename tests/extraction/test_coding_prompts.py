"""Terse coding prompts that say something lasting: the gate lets them through (session_cue) and the
offline extractor keeps them as clean statements; requests for now, drawn lines and bare domains stay out.
The prompts are in the words real Claude Code users type (lower case, no punctuation)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dexai_memory.capture.admit import admit
from dexai_memory.capture.gate import Gate
from dexai_memory.extraction.offline import OfflineExtractor
from dexai_memory.extraction.signals import session_cue
from dexai_memory.models import Turn

TS = datetime(2026, 1, 9, 10, 0, tzinfo=UTC)


def prompt(text: str) -> Turn:
    """A prompt as the Claude Code hooks enqueue it: role user, no speaker name, a hook source."""
    return Turn(id="t1", user_id="u", content=text, role="user", timestamp=TS,
                metadata={"source": "claude-code:user"})


def notes_of(text: str) -> list[tuple[str, str]]:
    return [(n.type.value, n.content) for n in OfflineExtractor().extract_sync([prompt(text)])]


@pytest.mark.parametrize(("said", "kept"), [
    ("install gh (CLI)", ("FACT", "The user asked to install gh (CLI) (on 9 January 2026).")),
    ("disable and uninstall tethering and cellular modules of slate",
     ("FACT", "The user asked to disable and uninstall tethering and cellular modules of slate (on 9 January 2026).")),
    ("ignore lack of backup config.   research NVMe controller warning.",
     ("INSIGHT", "Ignore lack of backup config.")),
    ("yes, lets be cautious and verify at each step", ("INSIGHT", "Be cautious and verify at each step.")),
    ("please run the audit.  please prompt me for sudo tool calls", ("INSIGHT", "Prompt the user for sudo tool calls.")),
    ("complete the commit, always verify and run hooks.", ("INSIGHT", "Always verify and run hooks.")),
    ("push it, never force push to main", ("INSIGHT", "Never force push to main.")),
    # a statement with its own subject is not a request: its trailing "never ..." stays part of it
    ("We decided src/billing/invoice.py must round with Decimal, never float.",
     ("FACT", "The team decided src/billing/invoice.py must round with Decimal, never float.")),
    ("fix the brew npm confusion.  I only want one version of you, preferably brew",
     ("PREFERENCE", "The user only wants one version of you, preferably brew.")),
    ("I dont want unlock to be only a alphanum password",
     ("PREFERENCE", "The user doesn't want unlock to be only a alphanum password.")),
    # the plan after a request is the user's; the request is for now
    ("add the research context to the plan and we'll start fresh", ("COMMITMENT", "The team will start fresh.")),
    # how to configure something a given way: the way is what the user wants of it
    ("how do we configure MacOS login and sudo to be passwordless(except for filevault)?",
     ("FACT", "The user wants MacOS login and sudo to be passwordless(except for filevault).")),
])
def test_a_lasting_coding_prompt_is_kept_as_a_statement(said: str, kept: tuple[str, str]) -> None:
    assert kept in notes_of(said)


def test_the_user_s_lines_of_a_numbered_list_are_read_one_by_one() -> None:
    """A numbered list the user typed answers several questions at once: a short first-person line
    ("14. I use hyper v"), a statement with a question aside, a port order and a to-do are theirs;
    a heading-like fragment and the question lines are not notes."""
    said = ("1.  we're auditing BitDefender  (is there a cli or local api?)\n"
            "3.  Shared-Secret-Free\n"
            "10. huh, explain how that happens\n"
            "11.  anothor todo for new:  web research remote access\n"
            "12. shut it down!  close 139, 5040, 9000.\n"
            "13. why is port 9000 open?\n"
            "14. I use hyper v")
    notes = [content for _, content in notes_of(said)]
    assert "The team is auditing BitDefender." in notes
    assert "The user uses hyper v." in notes
    assert "The user asked to close 139, 5040, 9000 (on 9 January 2026)." in notes
    assert any("web research remote access" in n for n in notes)
    assert not any("Shared-Secret" in n or "explain" in n or "why" in n.lower() for n in notes)


def test_the_user_s_setup_is_kept_like_a_fact_that_names_a_tool() -> None:
    """"I use hyper v", "I have a second yubikey": what every later session works with, as important
    as a fact naming a tool (6), so the next sessions' persistent context has room for it."""
    for said in ("I use hyper v", "I have a second(mostly cloned) yubikey, should we pair it?"):
        (note,) = OfflineExtractor().extract_sync([prompt(said)])
        assert note.importance >= 6, note
    (note,) = OfflineExtractor().extract_sync([prompt("I went to the store")])
    assert note.importance == 5  # not the setup


@pytest.mark.parametrize("said", [
    "how do I fix this?",           # a how-to question that wants nothing configured
    "how do we get the tests to pass?",
    "install via brew",             # no object: what it installs is in the turn before
    "install it again",
    "⏺ Ran 1 stop hook.",           # a line Claude Code drew, pasted back
    "GitHub.com",                   # a bare domain
    "run the tests again",
])
def test_a_request_for_now_or_a_pasted_line_is_not(said: str) -> None:
    assert notes_of(said) == []


@pytest.mark.parametrize(("said", "cue"), [
    ("install gh (CLI)", True),
    ("yes, lets be cautious and verify at each step", True),
    ("complete the commit, always verify and run hooks", True),
    ("I have a second yubikey, should we pair it?", True),
    ("run it for both displays", False),
    ("what is this", False),
])
def test_session_cue(said: str, cue: bool) -> None:
    assert session_cue(said) is cue


def test_a_coding_prompt_with_a_session_cue_passes_the_gate() -> None:
    gate = Gate(0.3)
    assert not gate.score("disable and uninstall tethering and cellular modules of slate").passed
    assert admit(prompt("disable and uninstall tethering and cellular modules of slate"), [], gate).passed
    # the assistant saying it is not the user saying it: still evidence
    reply = Turn(id="t2", user_id="u", content="I will install gh now", role="assistant", timestamp=TS,
                 metadata={"source": "claude-code:assistant"})
    assert not admit(reply, [], gate).passed
