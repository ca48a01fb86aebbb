"""Pattern triggers (seed 000): which user messages earn a reflection hint, and the per-session holder."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dexai_memory.triggers import (
    HINT_PREFIX,
    HINTS,
    ReflectionHints,
    TriggerKind,
    check_user_message,
)

E, C, P = TriggerKind.EXPLICIT, TriggerKind.CORRECTION, TriggerKind.PREFERENCE

CASES = [
    # explicit
    ("remember this: the staging DB is on port 5433", E),
    ("Please remember that my sister is called Ana", E),
    ("keep in mind the deadline is Friday", E),
    ("Don't forget I'm vegetarian", E),
    ("don\u2019t forget the API key rotates monthly", E),
    ("Important: never deploy on Fridays", E),
    ("note: the tests need Docker running", E),
    ("for future reference, the VPN is vpn.corp", E),
    ("remember that I prefer tabs", E),  # explicit wins over preference
    # correction
    ("No, I meant the other file", C),
    ("no actually use the v2 endpoint", C),
    ("That's wrong, the port is 8080", C),
    ("that's not what I asked for", C),
    ("Actually, it lives in /srv/app", C),
    ("Thanks. Actually, make it async", C),
    ("I told you to use pnpm", C),
    ("stop doing that, it breaks the build", C),
    # preference
    ("I prefer Bun over Node", P),
    ("I really like concise answers", P),
    ("I hate trailing whitespace", P),
    ("I don't like emojis in commit messages", P),
    ("Always use type hints", P),
    ("please never push to main directly", P),
    ("I always run the linter first", P),
    ("From now on, answer in French", P),
    ("my favourite editor is Helix", P),
    # nothing
    ("What time is it in Tokyo?", None),
    ("It always fails on CI, can you look?", None),
    ("Let's refactor the parser", None),
    ("", None),
    ("   ", None),
    ("Here is the log:\n```\nNote: retrying in 5s\nImportant: disk full\n```\nwhat happened?", None),
    ("> I prefer the old layout\nthat was someone else's comment, thoughts?", None),
    ("the flag `--always-make` is set", None),
]


@pytest.mark.parametrize(("text", "kind"), CASES, ids=[f"{(k or 'none')}:{t[:30]}" for t, k in CASES])
def test_check_user_message(text: str, kind: TriggerKind | None) -> None:
    trigger = check_user_message(text)
    if kind is None:
        assert trigger is None
    else:
        assert trigger is not None
        assert trigger.kind is kind
        assert trigger.matched
        assert trigger.hint.startswith(HINT_PREFIX)
        assert "remember" in trigger.hint


def test_hints_name_the_tool_and_category() -> None:
    assert "preference" in HINTS[P]
    assert "warning" in HINTS[C]
    assert all(h.startswith(HINT_PREFIX) for h in HINTS.values())


def test_only_the_start_of_a_long_paste_is_scanned() -> None:
    assert check_user_message("x " * 5000 + "I prefer tabs") is None


def test_on_user_prompt_gives_the_hint_once() -> None:
    hints = ReflectionHints()
    assert hints.on_user_prompt("hello there") is None
    hint = hints.on_user_prompt("I prefer dark mode")
    assert hint == HINTS[P]
    assert hints.pop() is None  # consumed


def test_same_kind_is_not_repeated_within_the_gap() -> None:
    hints = ReflectionHints(min_gap_prompts=2)
    assert hints.on_user_prompt("I prefer tabs") == HINTS[P]     # prompt 1
    assert hints.on_user_prompt("I like short answers") is None  # prompt 2: cool-down
    assert hints.on_user_prompt("I like vim") is None            # prompt 3: cool-down
    assert hints.on_user_prompt("I love pytest") == HINTS[P]     # prompt 4: gap passed
    # another kind is not held back by the preference cool-down
    assert hints.on_user_prompt("No, I meant pytest-asyncio") == HINTS[C]


def test_observe_then_pop_for_a_later_turn() -> None:
    hints = ReflectionHints(min_gap_prompts=0)
    assert hints.observe("Actually, it's port 5433") is not None
    assert hints.observe("remember that too") is not None
    assert hints.pending == (C, E)
    text = hints.pop()
    assert text == HINTS[C] + "\n" + HINTS[E]
    assert hints.pending == ()


def test_state_survives_json_round_trip() -> None:
    hints = ReflectionHints()
    hints.observe("I prefer tabs")
    restored = ReflectionHints.from_json(hints.to_json())
    assert restored.prompts == 1
    assert restored.pending == (P,)
    assert restored.on_user_prompt("I like spaces") == HINTS[P]  # pending one still delivered
    # cool-down state came along too
    assert restored.on_user_prompt("I like vim") is None


@pytest.mark.parametrize("bad", [None, "", "not json", "[1, 2]", '{"prompts": "x"}'])
def test_from_json_tolerates_bad_state(bad: str | None) -> None:
    hints = ReflectionHints.from_json(bad)
    assert hints.prompts == 0 and hints.pending == ()


def test_module_imports_only_the_standard_library() -> None:
    code = ("import sys, dexai_memory.triggers; "
            "heavy = [m for m in ('anthropic', 'claude_agent_sdk', 'numpy', 'onnxruntime', 'yaml') if m in sys.modules]; "
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
