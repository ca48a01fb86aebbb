"""Evidence, not memories (:mod:`dexai_memory.capture.evidence`): a coding session's tool
results, the assistant's replies, slash commands, interruptions and pasted output are never
queued for extraction; what the user says is; named speakers keep every turn."""

from __future__ import annotations

import pytest

from dexai_memory.capture.admit import admit
from dexai_memory.capture.evidence import evidence_kind
from dexai_memory.capture.gate import Gate
from dexai_memory.models import Turn
from dexai_memory.text.output import machine_line, pasted_output, prose_lines

PYTEST_PASTE = """============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.3.4, pluggy-1.5.0
rootdir: /home/dev/app
configfile: pyproject.toml
plugins: anyio-4.7.0
collected 12 items

tests/test_api.py::test_login FAILED
E   AssertionError: assert 401 == 200"""

TRACEBACK = """Traceback (most recent call last):
  File "/home/dev/app/main.py", line 12, in <module>
    main()
  File "/home/dev/app/main.py", line 8, in main
    raise ValueError("no config")
ValueError: no config"""


def session_turn(text: str, role: str = "user", kind: str = "user") -> Turn:
    return Turn(id="t", user_id="u", content=text, role=role, session_id="s",
                metadata={"source": f"claude-code:{kind}"})


@pytest.mark.parametrize(("text", "role", "kind", "why"), [
    ("Downloading black (1.4MiB)\nInstalled 12 packages in 40ms", "tool", "tool-Bash", "tool"),
    ("19 files changed, 2195 insertions(+)", "tool", "tool-1", "tool"),
    ("[{'type': 'text', 'text': 'Done (1 tool use)'}]", "tool", "tool-Task", "tool"),
    ("Commit successful. I pushed the branch and the CI is green now.", "assistant", "assistant", "assistant"),
    ("I'll remind you to email Priya on Friday.", "assistant", "assistant", "assistant"),
    ("[Request interrupted by user for tool use]", "user", "user", "interruption"),
    ("/compact", "user", "user", "command"),
    (PYTEST_PASTE, "user", "user", "pasted output"),
    (TRACEBACK, "user", "user", "pasted output"),
    ("```\n$ ls -l\ntotal 8\n-rw-r--r-- 1 dev dev 120 Jan 1 main.py\n```", "user", "user", "pasted output"),
])
def test_machine_text_and_narration_are_evidence(text: str, role: str, kind: str, why: str) -> None:
    turn = session_turn(text, role, kind)
    assert evidence_kind(turn) == why
    admission = admit(turn, [], Gate(0.0))  # even a gate that passes everything
    assert not admission.passed and admission.evidence == why


@pytest.mark.parametrize("text", [
    "Always use conventional commits for the commit messages in this repo.",
    "Never push directly to main; open a PR and wait for the review.",
    "My name is Dana Whitfield and my e-mail is dana@example.org.",
    "This app is Apple-only, we never ship it on Linux or Windows.",
    "The tests fail with this error, please fix it but don't touch the fixtures:\n"
    "E   AssertionError: assert 401 == 200",
    "/review check that we never log tokens, the security team asked for it",
])
def test_what_the_user_says_is_read(text: str) -> None:
    turn = session_turn(text)
    assert evidence_kind(turn) is None
    assert admit(turn, [], Gate(0.0)).passed


def test_named_speakers_are_not_a_coding_session() -> None:
    """A conversation between people (LoCoMo, an ingest) keeps every turn, an assistant's too."""
    turn = Turn(id="t", user_id="u", content="I'll call you on Friday about the house.", role="assistant",
                speaker="Melanie", metadata={"source": "claude-code:assistant"})
    assert evidence_kind(turn) is None
    plain = Turn(id="t", user_id="u", content="I'll send the deck to Priya tomorrow.", role="assistant")
    assert evidence_kind(plain) is None  # no hook source: not an agent session


def test_pasted_output_is_judged_by_its_lines() -> None:
    assert pasted_output(TRACEBACK)
    assert not pasted_output("Use pnpm, not npm.\nAnd run the linter before you commit.")
    assert not pasted_output("Please look at src/app.ts and the error it prints when the port is taken.")


AUDIT_PASTE = """m@book ~ % ~/documents/M-Claude/docs/security-audit-sudo.sh

==============================================
  M-BOOK Security Audit - Privileged Scan
==============================================
[*] Validating sudo access...
Enter PIN for 'Certificate For PIV Authentication (Yubico PIV Authentication)':
=== Remote Login (SSH) Status ===
Remote Login: Off
1 : /Applications/Mullvad VPN.app/Contents/Resources/mullvad-daemon
             (Allow incoming connections)
7 : /usr/bin/python3
             (Allow incoming connections)"""


def test_a_pasted_terminal_session_is_evidence_and_its_lines_are_not_statements() -> None:
    assert evidence_kind(session_turn(AUDIT_PASTE)) == "pasted output"
    typed = "the audit found these, keep the firewall rules as they are:\n" + "\n".join(AUDIT_PASTE.splitlines()[5:11])
    assert prose_lines(typed) == "the audit found these, keep the firewall rules as they are:"
    short = "never commit without signing.\nuse ps GPG alt"
    assert prose_lines(short) == short  # two typed lines are left as they are


@pytest.mark.parametrize(("line", "machine"), [
    ("14. I use hyper v", False),                # the user speaking of themselves, however short
    ("12. shut it down!  close 139, 5040, 9000.", False),  # a numbered entry is judged by its text
    ("3. Checks for unsigned binaries", False),
    ("7 : /usr/bin/python3", True),              # a listing entry
    ("1. /usr/bin/python3", True),
    ("2) NETWORK PERFORMANCE", True),            # a numbered heading
    ("INFO I started the server", True),         # a log line stays output
])
def test_a_line_of_a_numbered_list(line: str, machine: bool) -> None:
    assert machine_line(line) is machine
