"""The heuristic gate: one row per signal, filler, threshold and entity novelty."""

from __future__ import annotations

import sys

import pytest

from dexai_memory.capture.gate import (
    WEIGHTS,
    Gate,
    is_filler,
    regex_entities,
)
from dexai_memory.config import load_settings

SIGNAL_CASES = [
    pytest.param("commitment", "I'll send the report to the team", id="commitment-ill"),
    pytest.param("commitment", "I promise to call mom", id="commitment-promise"),
    pytest.param("commitment", "Remind me to water the plants", id="commitment-remind-me"),
    pytest.param("commitment", "don't forget the milk", id="commitment-dont-forget"),
    pytest.param("commitment", "I'm going to finish the draft", id="commitment-going-to"),
    pytest.param("preference", "I prefer tea over coffee", id="preference-prefer"),
    pytest.param("preference", "I really like hiking", id="preference-like"),
    pytest.param("preference", "I always take the stairs", id="preference-always"),
    pytest.param("preference", "my favourite band is Muse", id="preference-favourite"),
    pytest.param("temporal", "see you tomorrow", id="temporal-tomorrow"),
    pytest.param("temporal", "the meeting is next week", id="temporal-next-week"),
    pytest.param("temporal", "call at 3pm", id="temporal-clock"),
    pytest.param("temporal", "it happened two days ago", id="temporal-ago"),
    pytest.param("entities", "I talked to Sarah about it", id="entities-name"),
    pytest.param("entities", "see Dr. Patel", id="entities-title"),
    pytest.param("possessive", "my doctor said so", id="possessive-doctor"),
    pytest.param("possessive", "our project is late", id="possessive-project"),
    pytest.param("factual", "I work at a bakery", id="factual-work-at"),
    pytest.param("factual", "I live in a small town", id="factual-live-in"),
    pytest.param("factual", "I am a nurse", id="factual-i-am"),
    pytest.param("factual", "I have two cats", id="factual-i-have"),
    pytest.param("factual", "I went to a support group", id="factual-past-event"),
    pytest.param("emotional", "I'm worried about the exam", id="emotional-worried"),
    pytest.param("emotional", "this is important", id="emotional-important"),
    pytest.param("instruction", "From now on, write commit messages in the imperative", id="instruction-from-now-on"),
    pytest.param("instruction", "Never commit the .env.production file", id="instruction-never"),
    pytest.param("instruction", "Format Go code with gofumpt, not gofmt", id="instruction-not-x"),
    pytest.param("instruction", "Please use uv instead of plain pip", id="instruction-instead-of"),
    pytest.param("decision", "We settled on four replicas for the worker pool", id="decision-settled"),
    pytest.param("ownership", "Priya owns the billing service", id="ownership-owns"),
    pytest.param("goal", "The goal for this sprint is to ship onboarding", id="goal-sprint"),
    pytest.param("project", "The repo uses pre-commit with ruff", id="project-repo-uses"),
    pytest.param("technical", "Run `make check` first", id="technical-code"),
    pytest.param("technical", "The config lives in /etc/ingestor/config.yaml", id="technical-path"),
    pytest.param("technical", "The worker pool is capped at 32 concurrent jobs", id="technical-limit"),
    pytest.param("deadline", "Invoices must go out by the 15th", id="deadline-by-the-15th"),
    pytest.param("deadline", "The plumber is coming on Saturday", id="deadline-coming"),
    pytest.param("change", "I quit coffee.", id="change-quit"),
    pytest.param("change", "We renamed develop to trunk.", id="change-renamed"),
    pytest.param("change", "I no longer play tennis.", id="change-no-longer"),
    pytest.param("change", "I'm not a vegetarian anymore.", id="change-not-anymore"),
    pytest.param("change", "Staging now points to db-7.", id="change-now-points"),
    pytest.param("change", "I commute to the office by bike now.", id="change-now-at-the-end"),
    pytest.param("change", "I've given up green tea.", id="change-given-up"),
    pytest.param("habit", "I drink coffee every morning.", id="habit-every-morning"),
    pytest.param("habit", "I play tennis on weekends.", id="habit-on-weekends"),
    pytest.param("habit", "The weekly standup is at 10am.", id="habit-weekly"),
    pytest.param("habit", "The database backup runs at midnight.", id="habit-runs-at"),
    pytest.param("statement", "I take the bus to work.", id="statement-take-the-bus"),
    pytest.param("statement", "We use npm for the frontend.", id="statement-we-use"),
    pytest.param("ownership", "I'm on the platform team.", id="ownership-team-membership"),
    pytest.param("ownership", "Luis took over the release process.", id="ownership-took-over"),
    pytest.param("amount", "The budget for the offsite is 5000 euros.", id="amount-euros"),
]


@pytest.mark.parametrize(("signal", "text"), SIGNAL_CASES)
def test_each_signal_fires(signal: str, text: str) -> None:
    result = Gate().score(text)
    assert signal in result.signals
    assert result.signals[signal] == WEIGHTS[signal]


NO_SIGNAL_CASES = [
    pytest.param("commitment", "the weather is nice", id="no-commitment-weather"),
    pytest.param("preference", "the bus was late", id="no-preference-bus"),
    pytest.param("temporal", "I like pizza", id="no-temporal-pizza"),
    pytest.param("entities", "Great to see you. How are things?", id="no-entities-sentence-initial"),
    pytest.param("entities", "Hey Mel! Good to see you!", id="no-entities-vocative"),
    pytest.param("possessive", "oh my god", id="no-possessive-set-phrase"),
    pytest.param("instruction", "Run the tests again", id="no-instruction-request"),
    pytest.param("technical", "I like long walks. The end", id="no-technical-prose"),
    pytest.param("change", "it works now", id="no-change-it-works-now"),
    pytest.param("change", "I see it now", id="no-change-i-see-now"),
    pytest.param("change", "I'm done for now", id="no-change-for-now"),
    pytest.param("change", "Now run the tests again", id="no-change-request-now"),
    pytest.param("change", "Move the meeting to 4pm", id="no-change-request-move"),
    pytest.param("change", "Can you rename develop to trunk?", id="no-change-question"),
    pytest.param("change", "I stopped the server", id="no-change-task-at-hand"),
    pytest.param("statement", "I think the bug is in the parser", id="no-statement-thought"),
    pytest.param("statement", "I fixed the import and pushed", id="no-statement-past-report"),
    pytest.param("statement", "We should rename it", id="no-statement-modal"),
    pytest.param("habit", "Does the backup run every night?", id="no-habit-question"),
]


@pytest.mark.parametrize(("signal", "text"), NO_SIGNAL_CASES)
def test_signal_does_not_fire(signal: str, text: str) -> None:
    assert signal not in Gate().score(text).signals


FILLER = [
    pytest.param("ok", id="filler-ok"),
    pytest.param("Okay.", id="filler-okay-dot"),
    pytest.param("thanks!", id="filler-thanks"),
    pytest.param("Thank you so much", id="filler-thank-you"),
    pytest.param("got it", id="filler-got-it"),
    pytest.param("sounds good, thanks", id="filler-sounds-good"),
    pytest.param("👍", id="filler-emoji"),
    pytest.param("🎉🎉 !!", id="filler-emoji-punctuation"),
    pytest.param("   ", id="filler-blank"),
    pytest.param("lol", id="filler-lol"),
]


@pytest.mark.parametrize("text", FILLER)
def test_filler_scores_exactly_zero(text: str) -> None:
    result = Gate().score(text, ["I met Sarah yesterday"])
    assert result.score == 0
    assert result.signals == {}
    assert not result.passed
    assert is_filler(text)


PASS_CASES = [
    pytest.param("I'll call the dentist tomorrow", True, id="pass-commitment-and-time"),
    pytest.param("I prefer window seats", True, id="pass-preference"),
    pytest.param("I went to a LGBTQ support group yesterday and it was so powerful.", True, id="pass-caroline"),
    pytest.param("That's a nice view", False, id="fail-small-talk"),
    pytest.param("see you tomorrow", False, id="fail-single-weak-signal"),
    # short personal facts, habits, schedules, memberships and changes pass ...
    pytest.param("I drink coffee every morning.", True, id="pass-habit"),
    pytest.param("I quit coffee.", True, id="pass-quit"),
    pytest.param("The weekly standup is at 10am.", True, id="pass-schedule"),
    pytest.param("We renamed develop to trunk.", True, id="pass-renamed"),
    pytest.param("I'm not a vegetarian anymore.", True, id="pass-not-anymore"),
    pytest.param("I take the bus to work.", True, id="pass-commute"),
    pytest.param("I'm on the platform team.", True, id="pass-membership"),
    pytest.param("I switched my editor to Neovim.", True, id="pass-switched"),
    pytest.param("We moved the standup to Thursdays.", True, id="pass-moved"),
    pytest.param("My main project now is the data pipeline.", True, id="pass-now"),
    # ... filler, acknowledgements, questions and requests for now do not
    pytest.param("ok thanks", False, id="fail-ok-thanks"),
    pytest.param("sounds good", False, id="fail-sounds-good"),
    pytest.param("run the tests again", False, id="fail-request"),
    pytest.param("what does this do?", False, id="fail-question"),
    pytest.param("ok it works now", False, id="fail-works-now"),
    pytest.param("now run the tests", False, id="fail-request-now"),
    pytest.param("Rename the branch to trunk", False, id="fail-request-rename"),
    pytest.param("I think the issue is in the parser", False, id="fail-thought"),
    pytest.param("Let's switch to the other file", False, id="fail-lets-switch"),
    pytest.param("I ran the tests again", False, id="fail-task-report"),
]


@pytest.mark.parametrize(("text", "passed"), PASS_CASES)
def test_threshold_decision(text: str, passed: bool) -> None:
    result = Gate(threshold=0.3).score(text)
    assert result.passed is passed
    assert result.score == pytest.approx(min(1.0, sum(result.signals.values())))


def test_threshold_is_configurable() -> None:
    assert not Gate(threshold=0.9).score("I prefer window seats").passed
    assert Gate(threshold=0.1).score("see you tomorrow").passed


def test_threshold_comes_from_settings() -> None:
    settings = load_settings()
    assert Gate.from_settings(settings).threshold == settings.extraction.gate_threshold == 0.3


def test_entity_novelty_against_recent_context() -> None:
    gate = Gate()
    fresh = gate.score("I had lunch with Priya at Nandos", recent=["I like pasta"])
    seen = gate.score("I had lunch with Priya at Nandos", recent=["Priya and I love Nandos"])
    assert fresh.signals["novelty"] == pytest.approx(WEIGHTS["novelty"])
    assert "novelty" not in seen.signals
    assert fresh.score > seen.score


def test_novelty_is_partial_when_some_entities_are_known() -> None:
    result = Gate().score("I had lunch with Priya at Nandos", recent=["Priya is great"])
    assert result.signals["novelty"] == pytest.approx(WEIGHTS["novelty"] / 2)


def test_novelty_needs_fast_signals_first() -> None:
    # a bare name is one weak signal (0.2): novelty is computed, a lone "Paris!" is not filler
    result = Gate().score("Paris is lovely")
    assert "entities" not in result.signals  # sentence-initial capital is not evidence
    assert "novelty" not in result.signals


def test_regex_entities() -> None:
    assert regex_entities("I met Dr. Smith in New York, then NASA called.") == ["Dr. Smith", "New York", "NASA"]
    assert regex_entities("Thanks, Melanie! I went to Paris.") == ["Paris"]


def test_importing_gate_does_not_import_spacy() -> None:
    import subprocess

    code = "import sys, dexai_memory.capture.gate; print('spacy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


class _CountingStr(str):
    """A str that counts the characters every slice of it copies."""

    copied = 0

    def __getitem__(self, key):  # type: ignore[no-untyped-def]
        out = super().__getitem__(key)
        if isinstance(key, slice):
            _CountingStr.copied += len(out)
        return out


def test_regex_entities_is_linear_in_the_text_issue_11() -> None:
    """Issue 11: slicing the text before every capitalised word made a 5 MB reply keep Stop busy > 35 s.

    Finding entities must copy no more of the text than its length (a linear
    walk), whatever the number of capitalised words.
    """
    text = _CountingStr("then Alice met Bob in Paris and Lisbon with Carla " * 2000)  # 100 kB, 10,000 names
    _CountingStr.copied = 0
    found = regex_entities(text)
    assert found == ["Alice", "Bob", "Paris", "Lisbon", "Carla"]
    assert _CountingStr.copied <= len(text)


def test_the_gate_scores_a_long_reply_like_a_short_one_issue_11() -> None:
    unit = "Then Alice deployed the orders service to prod-eu-1 and we decided to keep it. "
    big = unit * (1_000_000 // len(unit))
    small, large = Gate().score(unit), Gate().score(big)
    assert large.signals.keys() == small.signals.keys() and large.passed
