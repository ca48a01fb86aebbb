"""Change detection: a change replaces, a second value stays, an unsure one is recorded for review,
and the change takes effect when it was said. Real SQLite, the offline extractor and rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dexai_memory.agent_tools import RememberStatus, remember
from dexai_memory.config import Settings
from dexai_memory.extraction.offline import OfflineExtractor
from dexai_memory.lifecycle.editing import add_by_hand
from dexai_memory.models import Memory, MemoryType, SearchFilters, Turn, UpdateAction
from dexai_memory.pipeline import Pipeline
from dexai_memory.providers import history as timeline
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.changes import changes_named, stems
from dexai_memory.supersession.contradictions import Unsure
from dexai_memory.supersession.rules import OfflineClassifier, key_tokens, statement_words

S, A = UpdateAction.SUPERSEDE, UpdateAction.ADD
T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("old", "new", "action"),
    [
        pytest.param("The user prefers tabs over spaces.", "The user prefers spaces over tabs now.", S, id="reversed"),
        pytest.param("The user uses Emacs as their editor.", "The user switched their editor to Neovim.", S,
                     id="switched-attribute"),
        pytest.param("The team's main database is PostgreSQL.", "The team switched from PostgreSQL to MySQL.", S,
                     id="from-x-to-y"),
        pytest.param("The user is based in Copenhagen.", "The user is based in London.", S, id="based-in"),
        pytest.param("The user works at Acme as a backend engineer.", "The user started a new job at Globex.", S,
                     id="new-job"),
        pytest.param("The user drinks coffee every morning.", "The user quit coffee.", S, id="quit"),
        pytest.param("Priya owns the billing service.", "Marco took over the billing service from Priya.", S,
                     id="took-over-from"),
        pytest.param("The user lives in Munich.", "The user lives in Berlin, not Munich.", S, id="correction-not-x"),
        pytest.param("The API runs on port 8000.", "The user misspoke: the API runs on port 8080.", S,
                     id="misspoke"),
        pytest.param("The user uses Slack for team chat.", "The user no longer uses Slack.", S, id="no-longer"),
        pytest.param("The team uses npm for the frontend.", "The team now uses pnpm instead of npm.", S,
                     id="instead"),
        pytest.param("The team's CI runs on Travis.", "The team's CI runs on Buildkite now.", S, id="now"),
        pytest.param("The user drives a Corolla.", "The user sold the Corolla and drives a Civic now.", S,
                     id="sold-not-a-refinement"),
        pytest.param("I use Emacs as my editor.", "The user switched their editor to Neovim.", S,
                     id="hand-added-first-person"),
        pytest.param("Robin works at Café Zürich.", "Robin moved from Café Zürich to Bäckerei Müller.", S,
                     id="unicode-names"),
        pytest.param("The main branch is develop.", "The team renamed develop to trunk.", S,
                     id="renamed-whatever-the-subject"),
        # second values, other people, other attributes
        pytest.param("The user loves hiking in the mountains.", "The user also loves swimming in the sea.", A,
                     id="also"),
        pytest.param("Priya owns the billing service.", "Marco owns the search service.", A, id="two-people"),
        pytest.param("The user's sister lives in Oslo.", "The user's brother lives in Bergen.", A, id="relations"),
        pytest.param("The user uses uv for Python projects.", "The user uses pnpm for JavaScript projects.", A,
                     id="two-scopes"),
        pytest.param("The user switched their editor to Neovim.", "The user switched their terminal to WezTerm.", A,
                     id="two-switches"),
        pytest.param("The user quit smoking in 2020.", "The user quit their job at the bank in 2022.", A,
                     id="two-quits"),
        pytest.param("The user's sister Ana lives in Lisbon.", "The user moved from Lisbon to Porto.", A,
                     id="someone-elses-old-value"),
        pytest.param("The user likes to develop games.", "The team renamed develop to trunk.", A,
                     id="renamed-name-not-the-word"),
    ],
)
def test_changes_and_second_values(old: str, new: str, action: UpdateAction) -> None:
    decision = OfflineClassifier().decide(new, Memory(old, user_id="u"))
    assert decision.action is action, decision.reason
    assert not isinstance(decision, Unsure), decision.reason


def test_a_one_for_one_change_without_a_marker_is_unsure() -> None:
    decision = OfflineClassifier().decide("The user is allergic to cats.", Memory("The user is allergic to peanuts.",
                                                                                   user_id="u"))
    assert isinstance(decision, Unsure) and decision.action is A and decision.memory_id is not None


def test_named_changes() -> None:
    assert [(c.old, c.new) for c in changes_named("We replaced Jira with Linear for tickets.")] == [
        ("Jira", "Linear for tickets")]
    assert changes_named("Tom took over from Sara as team lead.")[0].old == "Sara"
    assert changes_named("The user no longer plays tennis.")[0].old == "plays tennis"
    assert changes_named("The user lives in Lisbon.") == []


def test_words_keep_unicode_letters() -> None:
    assert {"café", "zürich"} <= statement_words("Robin lives near Café Zürich.")
    assert {"café", "zürich"} <= stems("Robin lives near Café Zürich.")
    assert key_tokens("Robin works at Bäckerei Müller in Zürich.") == ["robin", "bäckerei", "müller", "zürich"]


# --------------------------------------------------------------------------- through the store

def _turn(i: int, text: str, when: datetime) -> Turn:
    return Turn(id=f"t{i}", user_id="u", content=text, role="user", session_id=f"s{i}", timestamp=when)


async def _notes(provider: NativeProvider, **filters: object) -> list[Memory]:
    return [m for m in await provider.list(user_id="u", filters=SearchFilters(**filters), limit=100)  # type: ignore[arg-type]
            if m.type is not MemoryType.TRANSCRIPT]


async def test_a_change_takes_effect_when_it_was_said(provider: NativeProvider, settings: Settings) -> None:
    pipeline = Pipeline(provider, settings, extractor=OfflineExtractor())
    said = T0 + timedelta(days=9)
    await pipeline.process([(_turn(1, "I use Emacs as my editor.", T0), ())])
    await pipeline.process([(_turn(2, "I switched my editor to Neovim.", said), ())])
    assert [m.content for m in await _notes(provider)] == ["The user switched their editor to Neovim."]
    old = [m for m in await _notes(provider, valid_only=False) if "Emacs" in m.content][0]
    assert old.superseded_by and old.valid_until == said
    then = await timeline.as_of(provider, T0 + timedelta(days=4), user_id="u")
    assert [m.content for m in then if m.type is not MemoryType.TRANSCRIPT] == ["The user uses Emacs as their editor."]


async def test_a_statement_said_before_what_replaces_it_is_stored_as_the_past(provider: NativeProvider,
                                                                             settings: Settings) -> None:
    """Turns imported out of order: the older statement arrives second and does not win."""
    pipeline = Pipeline(provider, settings, extractor=OfflineExtractor())
    await pipeline.process([(_turn(2, "I'm based in London now.", T0 + timedelta(days=30)), ())])
    await pipeline.process([(_turn(1, "I'm based in Copenhagen.", T0), ())])
    assert [m.content for m in await _notes(provider)] == ["The user is based in London now."]
    past = [m for m in await _notes(provider, valid_only=False) if "Copenhagen" in m.content][0]
    assert past.superseded_by and past.valid_until == T0 + timedelta(days=30)
    then = await timeline.as_of(provider, T0 + timedelta(days=3), user_id="u")
    assert [m.content for m in then if m.type is not MemoryType.TRANSCRIPT] == ["The user is based in Copenhagen."]


async def test_an_unsure_change_is_kept_beside_and_recorded_for_review(provider: NativeProvider,
                                                                       settings: Settings) -> None:
    pipeline = Pipeline(provider, settings, extractor=OfflineExtractor())
    await pipeline.process([(_turn(1, "I'm allergic to peanuts and carry an epipen.", T0), ())])
    await pipeline.process([(_turn(2, "I'm allergic to cats and carry an epipen.", T0 + timedelta(days=2)), ())])
    assert len(await _notes(provider)) == 2
    assert provider.contradiction_log is not None
    open_ = await provider.contradiction_log.list(user_id="u", open_only=True)
    assert len(open_) == 1 and "second value" in open_[0].reason


async def test_unsure_changes_are_recorded_in_ingest_too(provider: NativeProvider, settings: Settings) -> None:
    turns = [_turn(1, "I'm allergic to peanuts and carry an epipen.", T0),
             _turn(2, "I'm allergic to cats and carry an epipen.", T0 + timedelta(days=2))]
    await Pipeline(provider, settings, extractor=OfflineExtractor()).ingest(turns, user_id="u", vectors="later")
    assert provider.contradiction_log is not None
    assert len(await provider.contradiction_log.list(user_id="u", open_only=True)) == 1


async def test_hand_added_facts_go_through_the_same_decision(provider: NativeProvider, settings: Settings) -> None:
    """`remember` (MCP, panel, `facts add`) and `dexai memory add` are replaced by a later change, and replace."""
    added = await remember(provider, "I use Emacs as my editor.", "fact", user_id="u")
    assert added.status is RememberStatus.ADDED
    pipeline = Pipeline(provider, settings, extractor=OfflineExtractor())
    await pipeline.process([(_turn(1, "I switched my editor to Neovim.", datetime.now(UTC)), ())])
    assert [m.content for m in await _notes(provider)] == ["The user switched their editor to Neovim."]
    done = await add_by_hand(provider, Memory("The user switched from Neovim to Helix.", user_id="u"), top_k=10)
    assert done.decision.action is S, done.decision.reason
    assert [m.content for m in await _notes(provider)] == ["The user switched from Neovim to Helix."]
    again = await remember(provider, "I moved my editor from Helix to Zed.", "fact", user_id="u")
    assert again.status is RememberStatus.SUPERSEDED


async def test_a_speaker_correcting_what_they_reported_resolves_it(provider: NativeProvider,
                                                                   settings: Settings) -> None:
    """A reported statement (confidence below the auto-resolve floor) replaces what the same speaker
    reported before; another speaker's report does not replace it."""
    pipeline = Pipeline(provider, settings, extractor=OfflineExtractor())

    def said(i: int, who: str, text: str, days: int) -> Turn:
        return Turn(id=f"t{i}", user_id="u", content=text, role="user", speaker=who, session_id=f"s{i}",
                    timestamp=T0 + timedelta(days=days))

    await pipeline.process([(said(1, "Dana", "The retro is on Zoom.", 0), ())])
    await pipeline.process([(said(2, "Dana", "The retro moved to Teams.", 3), ())])
    assert [m.content for m in await _notes(provider)] == ["Dana said the retro moved to Teams."]
    await pipeline.process([(said(3, "Sam", "The retro moved to Meet.", 5), ())])
    assert sorted(m.content for m in await _notes(provider)) == ["Dana said the retro moved to Teams.",
                                                                  "Sam said the retro moved to Meet."]
