"""The offline extractor on an assistant session's user: warnings, instructions, decisions, requests."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dexai_memory.extraction.offline import (
    DECISION_IMPORTANCE,
    WARNING_IMPORTANCE,
    OfflineExtractor,
)
from dexai_memory.models import MemoryType, Turn

TS = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


def user(text: str) -> Turn:
    """A prompt as the Claude Code hooks enqueue it: role user, no speaker name."""
    return Turn(id="t1", user_id="u", content=text, role="user", timestamp=TS)


def notes_of(text: str) -> list[tuple[str, str, int, str | None]]:
    notes = OfflineExtractor().extract_sync([user(text)])
    return [(n.type.value, n.content, n.importance, n.category) for n in notes]


@pytest.mark.parametrize(
    ("said", "content", "category"),
    [
        ("Never run the Grimsby migration on a Friday, it locks the orders table.",
         "Never run the Grimsby migration on a Friday, it locks the orders table.", "warning"),
        ("Never deploy the Cobbleton service unless its feature flag is off.",
         "Never deploy the Cobbleton service unless its feature flag is off.", "warning"),
        ("Don't touch the Ashcombe cron job, it feeds the finance reports.",
         "Don't touch the Ashcombe cron job, it feeds the finance reports.", "warning"),
        ("Be careful: the Brackwater staging cluster shares its database with production.",
         "The Brackwater staging cluster shares its database with production.", "warning"),
        ("Watch out: the Pellucid API allows only 30 requests per minute.",
         "The Pellucid API allows only 30 requests per minute.", "warning"),
        ("Please do not push to my release branch without a review.",
         "Do not push to the user's release branch without a review.", "warning"),
        ("Always run the linters before pushing to main.",
         "Always run the linters before pushing to main.", "instruction"),
        ("From now on, run `make check` before every push.",
         "From now on, run `make check` before every push.", "instruction"),
        ("Please use `uv pip install` instead of plain pip in this project.",
         "Use `uv pip install` instead of plain pip in this project.", "instruction"),
        ("Remember to update docs/api.md whenever an endpoint changes.",
         "Update docs/api.md whenever an endpoint changes.", "instruction"),
        ("Format Go code with gofumpt, not gofmt.", "Format Go code with gofumpt, not gofmt.", "instruction"),
        ("Heads up: the test database is wiped every night at 02:00 UTC.",
         "The test database is wiped every night at 02:00 UTC.", "warning"),
        ("The legacy Orbit service crashes if you send it more than 500 ids in one request.",
         "The legacy Orbit service crashes if you send it more than 500 ids in one request.", "warning"),
    ],
)
def test_commands_are_kept_in_the_imperative(said: str, content: str, category: str) -> None:
    [(kind, text, importance, cat)] = notes_of(said)
    assert (kind, text, cat) == ("INSIGHT", content, category)
    assert importance >= WARNING_IMPORTANCE


@pytest.mark.parametrize("said", ["Don't worry, it's fine.", "Never give up on the project!", "Be careful.",
                                  "Don't you think the build is slow?"])
def test_encouragement_and_questions_are_not_warnings(said: str) -> None:
    assert notes_of(said) == []


def test_a_warning_keeps_its_reason_from_the_next_sentence() -> None:
    [(kind, text, _, cat)] = notes_of("Never run the Grimsby migration on a Friday. It locks the orders table.")
    assert kind == "INSIGHT" and cat == "warning"
    assert text == "Never run the Grimsby migration on a Friday; it locks the orders table."


@pytest.mark.parametrize(
    ("said", "content"),
    [
        ("We decided to keep user sessions in the Tarnwick cache instead of Redis.",
         "The team decided to keep user sessions in the Tarnwick cache instead of Redis."),
        ("We settled on four replicas for the Dunmore worker pool.",
         "The team settled on four replicas for the Dunmore worker pool."),
        ("We agreed to drop support for the Merriwether legacy client in version 3.",
         "The team agreed to drop support for the Merriwether legacy client in version 3."),
        ("Let's go with SQLite for the desktop app since it has to work offline.",
         "The team decided to go with SQLite for the desktop app since it has to work offline."),
        ("Decision: the search service will use OpenSearch 2.11.", "The search service will use OpenSearch 2.11."),
        ("I decided to use Ruff instead of Flake8.", "The user decided to use Ruff instead of Flake8."),
    ],
)
def test_decisions_are_durable_facts(said: str, content: str) -> None:
    [(kind, text, importance, cat)] = notes_of(said)
    assert (kind, text, cat) == ("FACT", content, "decision")
    assert importance >= DECISION_IMPORTANCE


@pytest.mark.parametrize("said", [
    "Fix the typo in the README installation section.",
    "Rename the helper functions in utils.py to clearer names.",
    "Please add type hints to the config loader.",
    "Explain the difference between a list and a tuple in Python.",
    "Some context for this project before we start.",
    "Here is some background.",
])
def test_requests_and_framing_give_no_note(said: str) -> None:
    assert notes_of(said) == []


def test_before_we_start_is_not_rewritten_into_the_note() -> None:
    notes = notes_of("Some context for this project before we start. I prefer tabs over spaces in Makefiles.")
    assert [(k, t) for k, t, _, _ in notes] == [("PREFERENCE", "The user prefers tabs over spaces in Makefiles.")]
    assert all("start" not in t for _, t, _, _ in notes)


def test_warning_category_is_stored_in_metadata() -> None:
    [note] = OfflineExtractor().extract_sync([user("Never deploy the Cobbleton service on Fridays.")])
    memory = note.to_memory(user_id="u")
    assert memory.type is MemoryType.INSIGHT and memory.metadata["category"] == "warning"


def test_named_speakers_keep_the_general_rules() -> None:
    """LoCoMo-style turns: advice between people is not stored; a decision stays a dated event."""
    ex = OfflineExtractor()
    advice = Turn(id="d1", user_id="u", content="Never give up on your dreams, Caroline!", speaker="Melanie",
                  timestamp=TS)
    command = Turn(id="d2", user_id="u", content="Never run the old dishwasher at night.", speaker="Melanie",
                   timestamp=TS)
    decision = Turn(id="d3", user_id="u", content="Yesterday we decided to adopt a puppy.", speaker="Melanie",
                    timestamp=TS)
    assert ex.extract_sync([advice]) == [] and ex.extract_sync([command]) == []
    [note] = ex.extract_sync([decision])
    assert note.type is MemoryType.EVENT and note.category is None


# ---------------------------------------------------------------------------- issue 13
MONDAY = datetime(2026, 3, 2, 9, 15, tzinfo=UTC)


def said_on(text: str, when: datetime = MONDAY) -> list:
    return OfflineExtractor().extract_sync([Turn(id="t1", user_id="u", content=text, role="user", timestamp=when)])


@pytest.mark.parametrize(("said", "content"), [
    ("Marco took over the billing service from Priya.", "Robin said Marco took over the billing service from Priya."),
    ("The retro moved to Teams.", "Robin said the retro moved to Teams."),
    ("Use pnpm from now on.", "Robin said to use pnpm from now on."),
])
def test_what_a_named_speaker_reports_reads_as_said(said: str, content: str) -> None:
    """A name opening the report keeps its capital; a standing order is "said to ..."."""
    notes = OfflineExtractor().extract_sync([Turn(id="t1", user_id="u", content=said, role="user", speaker="Robin",
                                                  timestamp=MONDAY)])
    assert [n.content for n in notes] == [content]


def test_a_dentist_appointment_on_friday_said_on_monday_is_the_coming_friday() -> None:
    [note] = said_on("I have a dentist appointment on Friday at 10.")
    assert note.content == "The user has a dentist appointment on 6 March 2026 at 10."
    assert note.type is MemoryType.COMMITMENT and note.event_date == "2026-03-06"
    assert note.commitment is not None and note.commitment.due_at == datetime(2026, 3, 6, tzinfo=UTC)


@pytest.mark.parametrize(("said", "content"), [
    ("Our CI runs on Buildkite with 6 parallel agents.", "The team's CI runs on Buildkite with 6 parallel agents."),
    ("We host everything on AWS in eu-west-1.", "The team hosts everything on AWS in eu-west-1."),
    ("The config for the ingest worker lives in /etc/ingestor/config.yaml.",
     "The config for the ingest worker lives in /etc/ingestor/config.yaml."),
    ("Priya owns the billing service.", "Priya owns the billing service."),
    ("Remember this: the staging database is restored from prod every Sunday.",
     "The staging database is restored from prod every Sunday."),
    ("I live in Lisbon and work at Lumenfield as a backend engineer.",
     "The user lives in Lisbon and works at Lumenfield as a backend engineer."),
])
def test_facts_are_clean_self_contained_sentences(said: str, content: str) -> None:
    [note] = said_on(said)
    assert note.content == content
    assert note.importance >= 5 and note.confidence >= 0.7


def test_project_facts_rank_high_enough_for_the_post_compaction_block() -> None:
    [note] = said_on("The production database is Postgres 15 on db-prod-01.internal.")
    assert (note.type, note.importance >= 6, note.confidence >= 0.7) == (MemoryType.FACT, True, True)
    [pref] = said_on("I prefer pytest fixtures over unittest setUp methods.")
    [rule] = said_on("Run `make check` before every push.")
    assert pref.importance >= 7 and rule.importance >= pref.importance


@pytest.mark.parametrize(("said", "content"), [
    ("My goal this quarter is to get test coverage above 85 percent.",
     "The user's goal is to get test coverage above 85 percent this quarter."),
    ("New goal: replace the hand-written SQL in reports with dbt models.",
     "The user's goal is to replace the hand-written SQL in reports with dbt models."),
    ("I'm trying to cut the Docker image size below 200 MB.",
     "The user's goal is to cut the Docker image size below 200 MB."),
])
def test_goals_are_open_commitments_of_one_shape(said: str, content: str) -> None:
    """One shape ("The user's goal is ..."), so a new goal reads as a new value of the same attribute."""
    [note] = said_on(said)
    assert (note.content, note.type, note.category) == (content, MemoryType.COMMITMENT, "goal")
    assert note.importance >= 7 and note.commitment is not None and note.commitment.status == "open"
    assert note.commitment.what == content.removeprefix("The user's goal is to ").rstrip(".")


@pytest.mark.parametrize(("said", "content"), [
    ("I like jazz.", "The user likes jazz."), ("I have a dog.", "The user has a dog."),
    ("I'm vegan.", "The user is vegan."), ("I'm a nurse.", "The user is a nurse."),
    ("We use pnpm.", "The team uses pnpm."), ("I love pottery too.", "The user loves pottery too."),
])
def test_a_short_statement_of_a_lasting_state_is_kept(said: str, content: str) -> None:
    """One content word is enough when the sentence states a liking, a possession or who the user is."""
    assert [n.content for n in said_on(said)] == [content]


@pytest.mark.parametrize("said", ["I have a question.", "I have a bug.", "I like it.", "I'm stuck.", "I'm done."])
def test_a_short_statement_of_the_moment_is_not(said: str) -> None:
    assert said_on(said) == []


@pytest.mark.parametrize("said", [
    "Sorry, I meant the second file.", "Looks good to me.", "It works now!", "Run the tests again.",
    "Whatever works.", "Show me the diff.", "Don't worry about it.", "Write a unit test for parse_date.",
])
def test_chatter_and_errands_give_no_note(said: str) -> None:
    assert said_on(said) == []


@pytest.mark.parametrize("said", [
    'I get this error:\nTraceback (most recent call last):\n  File "/app/main.py", line 42, in <module>\n'
    '    run(config)\nValueError: bad port 8443\nWhat does it mean?',
    "Here is my config:\n```yaml\nserver:\n  port: 8443\n  host: db-prod-01.internal\n```\nCan you check it?",
    "2026-03-02 09:15:01 ERROR worker-3 Connection refused to redis://cache:6379",
])
def test_pasted_code_logs_and_tracebacks_give_no_note(said: str) -> None:
    assert said_on(said) == []


def test_a_statement_next_to_a_request_is_kept_alone() -> None:
    notes = said_on("Fix the bug in parser.py. Also, from now on always run the linters before committing.")
    assert [(n.content, n.category) for n in notes] == [
        ("From now on always run the linters before committing.", "instruction")]


@pytest.mark.parametrize("said", [
    "I want you to figure out the router address and ssh into it.",
    "can you run an eval of your abilities within the terminal",
    "you run it and prompt me as needed",
    "update your Claude Code app shortcut",
    "Please provide the specific aerospace.toml configuration commands.",
    "Analyze the features of the AeroSpace window manager and compare them to Cosmic.",
    "Install all necessary tools:",
    "Commit and push all changes to M-Claude.",
])
def test_requests_for_the_task_at_hand_are_not_memories(said: str) -> None:
    assert notes_of(said) == []


def test_an_order_that_changes_a_named_thing_is_kept_dated() -> None:
    [(kind, text, _, category)] = notes_of("remove all trace of RDP")
    assert kind == "FACT" and category == "decision"
    assert text.startswith("The user asked to remove all trace of RDP (on ")


def test_the_lines_of_a_pasted_report_are_not_the_users_statements() -> None:
    report = "\n".join([
        "here is what the audit script does, keep it:",
        "Checks for unsigned binaries in /Applications.",
        "Lynis - Industry-standard UNIX security auditor with macOS support.",
        "Runs osquery queries for running processes and launch agents.",
        "Executive Summary: High-level overview of security posture.",
        "DNS resolution failures.",
        "Never commit the audit output, it holds host names.",
    ])
    notes = notes_of(report)
    assert [(n[1], n[3]) for n in notes] == [("Never commit the audit output, it holds host names.", "warning")]
