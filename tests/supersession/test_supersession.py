"""The offline update classifier's slot rule, and pinned memories never being overwritten."""

from __future__ import annotations

import pytest

from dexai_memory.agent_tools import RememberStatus, remember
from dexai_memory.config import Settings
from dexai_memory.models import Memory, SearchFilters, Turn, UpdateAction, UpdateDecision
from dexai_memory.pipeline import Pipeline
from dexai_memory.providers import history as timeline
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.apply import apply_decision
from dexai_memory.supersession.rules import (
    OfflineClassifier,
    protect_pinned,
    same_slot,
    subject_attribute,
)
from tests.pipeline_fakes import EchoExtractor

S, A, U, N = UpdateAction.SUPERSEDE, UpdateAction.ADD, UpdateAction.UPDATE, UpdateAction.NOOP


@pytest.mark.parametrize(
    ("old", "new", "action"),
    [
        # multi-valued attributes: a different slot is a second value
        ("The user prefers the Vellichor colour theme in every editor screenshot.",
         "The user prefers squash merges with the Zanderfell ticket prefix in every commit title.", A),
        ("The user prefers squash merges with the Zanderfell ticket prefix in commit titles.",
         "The user prefers short bullet-point answers that link the Ravensby style guide.", A),
        ("The user likes hiking in the Alps", "The user likes jazz records", A),
        ("Sam uses Vim for Python", "Sam uses Docker for deployments", A),
        ("Sam enjoys pottery classes", "Sam enjoys long runs by the river", A),
        # multi-valued, same slot: a shared content word
        ("Sam prefers tea in the morning", "Sam prefers coffee in the morning", S),
        ("The user uses Vim for Python", "The user uses VS Code for Python", S),
        # multi-valued, bare values: the general statement is replaced
        ("Sam prefers tea", "Sam prefers coffee", S),
        ("User prefers tabs", "User prefers spaces", S),
        ("Sam is a teacher", "Sam is a doctor", S),
        # single-valued attributes keep superseding
        ("Caroline lives in Boston", "Caroline now lives in Denver", S),
        ("Caroline lives in Boston", "Caroline lives in a flat near the Denver harbour", S),
        ("Sam works at Acme Corp", "Sam works at Globex in the sales team", S),
        ("Sam's favourite colour is red", "Sam's favorite colour is deep ocean blue", S),
        ("Sam is married to Alex", "Sam is married to Jordan", S),
        ("The cat is called Tom", "The cat is called Whiskers", S),
        # a new goal replaces the old one (one goal slot per subject, however it is named)
        ("The user's goal is to get test coverage above 85 percent.",
         "The user's goal now is to cut the cold start below 2 seconds.", S),
        ("The user's main objective is to ship the onboarding flow.",
         "The user's goal is to replace the hand-written SQL with dbt models.", S),
        ("The user's goal is to ship the onboarding flow.", "The team's goal is to migrate off Python 3.8.", A),
        # different attributes or subjects never supersede
        ("Sam is called Sammy", "Sam is a teacher", A),
        ("Sam prefers tea", "Alex prefers coffee", A),
        ("Sam prefers tea", "Sam likes coffee", A),
        # duplicates and refinements as before
        ("Sam prefers tea", "Sam prefers tea", N),
        ("Caroline adopted a dog", "Caroline adopted a dog named Max from the shelter", U),
    ],
)
def test_slot_rule(old: str, new: str, action: UpdateAction) -> None:
    decision = OfflineClassifier().decide(new, Memory(old, user_id="u"))
    assert decision.action is action, decision.reason


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Sam prefers tea", ("sam", "prefer", "tea")),
        ("Caroline now lives in Denver", ("caroline", "live in", "denver")),
        ("Sam is an engineer", ("sam", "is a", "engineer")),
        ("The user is called Bob", ("the user", "is called", "bob")),
        ("Her favorite color is red", ("her", "favourite color is", "red")),
        ("Sam wants to learn piano", ("sam", "want to", "learn piano")),
        ("Melanie paints sunsets", None),
        ("The user's main goal now is to ship v2", ("the user's", "goal is", "to ship v2")),
    ],
)
def test_subject_attribute(text: str, expected: tuple[str, str, str] | None) -> None:
    assert subject_attribute(text) == expected


def test_same_slot_ignores_function_words() -> None:
    # "every" and "with" are shared but name no slot
    assert not same_slot("prefer", "the theme in every screenshot with dark edges",
                         "merges in every commit with a prefix")
    assert same_slot("live in", "boston", "denver")
    assert not same_slot("live in", "boston", "boston")


def test_protect_pinned_turns_overwrites_into_adds() -> None:
    pinned = Memory("The user prefers tea", user_id="u", pinned=True)
    plain = Memory("The user drinks water", user_id="u")
    decisions = [UpdateDecision(S, pinned.id, "new value"), UpdateDecision(U, pinned.id, "refines"),
                 UpdateDecision(N, pinned.id, "duplicate"), UpdateDecision(S, plain.id, "new value")]
    out = protect_pinned(decisions, [pinned, plain])
    assert [d.action for d in out] == [A, A, N, S]
    assert out[0].memory_id is None and "pinned" in out[0].reason and "explicit user action" in out[0].reason
    assert out[3] == decisions[3]


async def test_pipeline_never_supersedes_a_pinned_memory(provider: NativeProvider, settings: Settings) -> None:
    pinned = await provider.add(Memory("Sam prefers tea", user_id="u", pinned=True, importance=8))
    pipeline = Pipeline(provider, settings, extractor=EchoExtractor())
    report = await pipeline.process([(Turn(id="t1", user_id="u", content="Sam prefers coffee", session_id="s"), ())])
    assert report.added == 1 and report.superseded == 0
    valid = {m.content: m for m in await provider.list(user_id="u")}
    assert set(valid) == {"Sam prefers tea", "Sam prefers coffee"}
    assert valid["Sam prefers tea"].pinned and valid["Sam prefers tea"].superseded_by is None
    history = await timeline.history(provider, valid["Sam prefers coffee"].id, user_id="u")
    reasons = [e.reason for h in history for e in h.events if e.action == "ADD"]
    assert any("is pinned" in r for r in reasons), reasons
    assert (await provider.get(pinned.id, user_id="u")).content == "Sam prefers tea"


async def test_remember_never_updates_a_pinned_memory(provider: NativeProvider) -> None:
    await provider.add(Memory("Caroline adopted a dog", user_id="u", pinned=True, importance=8))
    result = await remember(provider, "Caroline adopted a dog named Max from the shelter", "fact", user_id="u")
    assert result.status is RememberStatus.ADDED
    contents = sorted(m.content for m in await provider.list(user_id="u"))
    assert contents == ["Caroline adopted a dog", "Caroline adopted a dog named Max from the shelter"]


async def test_apply_decision_guards_pinned_memories(provider: NativeProvider) -> None:
    """Even a decision that bypassed classify_update does not overwrite a pinned memory."""
    pinned = await provider.add(Memory("Sam lives in Boston", user_id="u", pinned=True))
    stored = await apply_decision(provider, UpdateDecision(S, pinned.id, "new city"),
                                           Memory("Sam lives in Denver", user_id="u"))
    assert stored is not None and stored.id != pinned.id
    assert (await provider.get(pinned.id, user_id="u")).is_valid
    everything = await provider.list(user_id="u", filters=SearchFilters(valid_only=False))
    assert len(everything) == 2


async def test_unpinned_memory_still_superseded(provider: NativeProvider, settings: Settings) -> None:
    await provider.add(Memory("Sam lives in Boston", user_id="u"))
    pipeline = Pipeline(provider, settings, extractor=EchoExtractor())
    report = await pipeline.process([(Turn(id="t1", user_id="u", content="Sam lives in Denver", session_id="s"), ())])
    assert report.superseded == 1
    assert [m.content for m in await provider.list(user_id="u")] == ["Sam lives in Denver"]


async def test_a_new_goal_said_in_conversation_replaces_the_old_one(provider: NativeProvider,
                                                                   settings: Settings) -> None:
    """Through the offline extractor, as a user without an API key has it."""
    from dexai_memory.extraction.offline import OfflineExtractor

    pipeline = Pipeline(provider, settings, extractor=OfflineExtractor())
    said = ["My goal this quarter is to get test coverage of the API above 85 percent.",
            "New goal: cut the cold start of the CLI below 2 seconds."]
    for i, text in enumerate(said):
        await pipeline.process([(Turn(id=f"g{i}", user_id="u", content=text, session_id="s"), ())])
    current = [m.content for m in await provider.list(user_id="u")]
    assert [c for c in current if "goal" in c] == ["The user's goal is to cut the cold start of the CLI below 2 seconds."]
    old = [m for m in await provider.list(user_id="u", filters=SearchFilters(valid_only=False)) if "85" in m.content]
    assert old and not old[0].is_valid and old[0].superseded_by  # kept in history, no longer current
