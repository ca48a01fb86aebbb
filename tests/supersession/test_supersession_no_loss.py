"""No silent loss in supersession (issue 11): facts of the same shape about different people, places,
objects, numbers and dates all stay current; true changes still supersede, keeping the old fact in history.

Run through the real pipeline (offline extractor, native SQLite provider file), on the live path
(``Pipeline.process``, one turn at a time as the daemon does) and in ``Pipeline.ingest`` (the word-overlap
``CandidateIndex``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from dexai_memory.config import Settings
from dexai_memory.extraction.offline import OfflineExtractor
from dexai_memory.models import (
    Memory,
    MemoryType,
    SearchFilters,
    Turn,
    UpdateAction,
    UpdateDecision,
)
from dexai_memory.pipeline import Pipeline
from dexai_memory.providers import history as timeline
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.apply import apply
from dexai_memory.supersession.classifier import UpdateClassifier
from dexai_memory.supersession.decide import classify
from dexai_memory.supersession.rules import OfflineClassifier, guard_meaning, key_tokens

S, A, U, N = UpdateAction.SUPERSEDE, UpdateAction.ADD, UpdateAction.UPDATE, UpdateAction.NOOP

PEOPLE = ("Ana Victor Marta Jonas Priya Tomas Leila Oskar Ines Rafael Sofia Emil Nadia Pavel Clara Dmitri Hana "
          "Lukas Zoe Bruno Greta Felix Irene Mateo Olga Kenji Amara Diego Freya Hugo").split()
PLACES = ("Tartu Trieste Porto Lyon Bergen Krakow Ghent Bologna Tampere Cork Graz Split Malmo Aarhus Brno Utrecht "
          "Riga Vilnius Ljubljana Basel").split()
FOODS = "peanuts shellfish gluten lactose sesame eggs soy kiwi strawberries mustard".split()
DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
MONTHS = "January February March April May June July August September October November December".split()


def _templates(r: random.Random) -> list[tuple[str, ...]]:
    """Sentence shapes; each is filled with a different person every time (no fact updates another)."""
    return [
        ("I need to call {p} about the {place} trip.",),
        ("My friend {p} is allergic to {food}.",),
        ("I have a meeting with {p} on {day} at {hour}:00.",),
        ("{p}'s birthday is on {dom} {month}.",),
        ("I lent {p} {euros} euros for the {place} flat.",),
        ("My cousin {p} lives in {place}.",),
        ("I promised {p} to send the {place} photos by {day}.",),
        ("My colleague {p} has {n} kids and a flat in {place}.",),
    ]


def same_shaped_facts(count: int, seed: int = 11) -> list[str]:
    """``count`` first-person facts of a few shapes, each about a different person within its shape."""
    r = random.Random(seed)
    shapes = _templates(r)
    people = {i: r.sample(PEOPLE, len(PEOPLE)) for i in range(len(shapes))}
    out: list[str] = []
    while len(out) < count:
        i = r.randrange(len(shapes))
        if not people[i]:
            continue
        out.append(shapes[i][0].format(
            p=people[i].pop(), place=r.choice(PLACES), food=r.choice(FOODS), day=r.choice(DAYS),
            hour=r.randint(8, 18), dom=r.randint(1, 28), month=r.choice(MONTHS), euros=r.randint(2, 99) * 10,
            n=r.randint(2, 5)))
    return out


def _markers(fact: str) -> set[str]:
    """The words that make a fact this fact: names, places, numbers (weekdays are resolved to dates)."""
    return {w.lower() for w in re.findall(r"[A-Z][a-z]+|\d+", fact)} - {"i", "my", *(d.lower() for d in DAYS)}


async def lost_facts(provider: NativeProvider, turns: Sequence[Turn]) -> list[str]:
    """The turns no current memory states: none of their notes, with every marker, is still valid.

    Provenance alone is not enough (a merged-away turn's id stays in ``source_ids``), so the text is checked.
    """
    current = [m for m in await provider.list(user_id="u", limit=100_000) if m.type is not MemoryType.TRANSCRIPT]
    by_source: dict[str, list[Memory]] = {}
    for m in current:
        for source in m.source_ids:
            by_source.setdefault(source, []).append(m)
    return [t.content for t in turns
            if not any(_markers(t.content) <= set(re.findall(r"[a-z0-9]+", m.content.lower()))
                       for m in by_source.get(t.id, []))]


def _turns(texts: Sequence[str], start: datetime = datetime(2024, 1, 1, tzinfo=UTC)) -> list[Turn]:
    return [Turn(id=f"t{i}", user_id="u", content=text, role="user", timestamp=start + timedelta(minutes=i),
                 session_id="s") for i, text in enumerate(texts)]


# --------------------------------------------------------------------------- the classifier's rules

@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param("The user needs to call Ana about the Tartu trip.",
                     "The user needs to call Victor about the Trieste trip.", id="other-person-and-place"),
        pytest.param("The user needs to call Ana about the Tartu trip.",
                     "The user needs to call Ana about the Trieste trip.", id="other-place"),
        pytest.param("The user's friend Victor is allergic to peanuts.",
                     "The user's friend Clara is allergic to peanuts.", id="other-persons-allergy"),
        pytest.param("The user's daughter Mia is allergic to peanuts and carries an epipen to school.",
                     "The user's daughter Mia is allergic to sesame and carries an epipen to school.",
                     id="other-object"),
        pytest.param("The user lent Ana 300 euros for the Porto flat.",
                     "The user lent Ana 400 euros for the Porto flat.", id="other-number"),
        pytest.param("The user has a meeting with Ana on 4 January 2024 at 10:00.",
                     "The user has a meeting with Ana on 5 January 2024 at 10:00.", id="other-date"),
        pytest.param("The user has a meeting with Ana on 4 January 2024 at 10:00.",
                     "The user has a meeting with Ana on 4 January 2024 at 15:00.", id="other-time"),
        pytest.param("Ana owes Victor 50 euros.", "Victor owes Ana 50 euros.", id="roles-swapped"),
        pytest.param("The user said tomas's birthday is on 26 September.",
                     "The user said bruno's birthday is on 26 September.", id="other-lowercased-name"),
        pytest.param("The train to Basel leaves at 11:05 from platform 8.",
                     "The train to Basel leaves at 11:05 from platform 9.", id="other-platform"),
    ],
)
def test_different_subject_object_name_number_or_date_is_never_update_or_noop(old: str, new: str) -> None:
    decision = OfflineClassifier().decide(new, Memory(old, user_id="u"))
    assert decision.action is A, decision.reason


@pytest.mark.parametrize(
    ("old", "new", "action"),
    [
        pytest.param("The user lives in Lisbon.", "The user moved from Lisbon to Porto (mentioned on 2 May 2024).",
                     S, id="moved-from-to"),
        pytest.param("The user moved from Boston to Lisbon.", "The user moved from Lisbon to Porto.", S,
                     id="moved-again"),
        pytest.param("The user uses Vim.", "The user switched from Vim to Helix.", S, id="switched-from-to"),
        pytest.param("The user has a dentist appointment on 26 December 2023.",
                     "The user's dentist appointment moved to Friday.", S, id="appointment-moved"),
        pytest.param("The user's meeting with Ana is on 1 January 2024 at 10:00.",
                     "The user said the meeting with Ana was rescheduled to Wednesday.", S, id="meeting-rescheduled"),
        pytest.param("The user's meeting with Ana is on 1 January 2024 at 10:00.",
                     "The user said the meeting with Victor was rescheduled to Wednesday.", A,
                     id="other-meeting-not-rescheduled"),
        pytest.param("The user lives in Lisbon.", "The user moved from Porto to Braga.", S,
                     id="moved-lives-elsewhere-now"),
        pytest.param("The user moved from Lisbon to Porto.", "The user lives in Braga.", S, id="lives-after-move"),
        pytest.param("The user's sister Ana lives in Lisbon.", "The user moved from Lisbon to Porto.", A,
                     id="someone-elses-move"),
        pytest.param("Sam lives in Lisbon.", "Sam no longer lives in Lisbon.", S, id="negated"),
        pytest.param("The user said the meeting went well.", "The user mentioned the meeting went well.", N,
                     id="reworded-repeat"),
        pytest.param("Caroline adopted a dog named Max from the shelter.", "Caroline adopted a dog named Max.", N,
                     id="repeat-with-less-detail"),
        pytest.param("The user needs to call Ana.", "The user needs to call Ana about the Tartu trip.", U,
                     id="refinement"),
    ],
)
def test_true_changes_supersede_and_repeats_stay_noop(old: str, new: str, action: UpdateAction) -> None:
    decision = OfflineClassifier().decide(new, Memory(old, user_id="u"))
    assert decision.action is action, decision.reason


async def test_rescheduling_an_event_several_memories_name_supersedes_none() -> None:
    first = Memory("The user has a meeting on 2 January 2024.", user_id="u")
    second = Memory("The user has a meeting on 9 January 2024.", user_id="u")
    decisions = await OfflineClassifier().classify("The meeting was moved to Friday.", [first, second])
    assert [d.action for d in decisions] == [A, A], decisions


def test_key_tokens_name_people_numbers_and_dates() -> None:
    assert key_tokens("The user needs to call Ana about the Tartu trip on 5 May at 10:30 (mentioned on 1 May).") == [
        "ana", "tartu", "5", "may", "10:30"]
    assert key_tokens("Yesterday Victor's two kids met Clara.") == ["yesterday", "victor", "two", "clara"]


def test_meaning_guard_turns_lossy_noop_into_add_and_lossy_update_into_supersede() -> None:
    old = Memory("The user needs to call Ana about the Tartu trip.", user_id="u")
    new = "The user needs to call Victor about the Trieste trip."
    out = guard_meaning([UpdateDecision(N, old.id, "near-duplicate"),
                         UpdateDecision(U, old.id, "mostly the same", merged_content=new),
                         UpdateDecision(U, old.id, "refines", merged_content=old.content[:-1] + " in May.")],
                        new, [old])
    assert [d.action for d in out] == [A, S, U]
    assert out[0].memory_id is None and "victor" in out[0].reason
    assert out[1].memory_id == old.id and "ana" in out[1].reason and "history" in out[1].reason


class AlwaysUpdate(UpdateClassifier):
    """A careless model: every existing memory is "the same statement", merged into the new text."""

    async def classify(self, new_fact: str, existing: Sequence[Memory]) -> list[UpdateDecision]:
        return [UpdateDecision(U, m.id, "same statement", merged_content=new_fact) for m in existing] or [
            UpdateDecision(A, None, "nothing stored")]


async def test_no_classifier_can_overwrite_a_fact_with_a_different_one(provider: NativeProvider) -> None:
    """Any classifier's UPDATE that drops a name is carried out as SUPERSEDE: the old fact stays in history."""
    old = await provider.add(Memory("The user's friend Victor is allergic to peanuts.", user_id="u"))
    decisions = await classify(AlwaysUpdate(), "The user's friend Clara is allergic to peanuts.", [old])
    assert [d.action for d in decisions] == [S]
    stored = await apply(provider, decisions[0], Memory("The user's friend Clara is allergic to peanuts.",
                                                                user_id="u"))
    assert stored is not None and stored.id != old.id
    history = await timeline.history(provider, stored.id, user_id="u")
    assert [h.memory.content for h in history] == ["The user's friend Victor is allergic to peanuts.",
                                                   "The user's friend Clara is allergic to peanuts."]
    assert history[0].memory.superseded_by == stored.id


async def test_apply_never_rewrites_a_fact_in_place_with_other_names(provider: NativeProvider) -> None:
    """The last guard: an UPDATE handed straight to apply (not through decide) still keeps the old fact."""
    old = await provider.add(Memory("The user needs to call Ana about the Tartu trip.", user_id="u"))
    new = Memory("The user needs to call Victor about the Trieste trip.", user_id="u")
    stored = await apply(provider, UpdateDecision(U, old.id, "mostly the same", merged_content=new.content),
                                           new)
    assert stored is not None and stored.id != old.id
    kept = await provider.get(old.id, user_id="u")
    assert kept.content == "The user needs to call Ana about the Tartu trip." and kept.superseded_by == stored.id
    assert any(e.action == "SUPERSEDED" for e in await provider.events(old.id, user_id="u"))


# --------------------------------------------------------------------------- through the pipeline

async def test_same_shaped_facts_all_stay_current_on_the_live_path(provider: NativeProvider,
                                                                    settings: Settings) -> None:
    facts = same_shaped_facts(160)
    turns = _turns(facts)
    pipeline = Pipeline(provider, settings, extractor=OfflineExtractor())
    for turn in turns:
        await pipeline.process([(turn, ())])
    lost = await lost_facts(provider, turns)
    assert not lost, f"{len(lost)}/{len(facts)} facts ({100 * len(lost) / len(facts):.1f} %) lost: {lost[:5]}"


async def test_same_shaped_facts_all_stay_current_in_ingest(provider: NativeProvider, settings: Settings) -> None:
    facts = same_shaped_facts(160, seed=5)
    turns = _turns(facts)
    report = await Pipeline(provider, settings, extractor=OfflineExtractor()).ingest(turns, user_id="u",
                                                                                     vectors="later")
    lost = await lost_facts(provider, turns)
    assert not lost, f"{len(lost)}/{len(facts)} facts ({100 * len(lost) / len(facts):.1f} %) lost: {lost[:5]}"
    assert report.updated == 0 and report.noop == 0, report


TRUE_UPDATES = [
    pytest.param("I live in Lisbon.", "I moved from Lisbon to Porto.", "Porto", id="moved-city"),
    pytest.param("I have a dentist appointment on Tuesday.", "My dentist appointment moved to Friday.", "Friday",
                 id="appointment-moved"),
    pytest.param("My meeting with Ana is on Monday at 10:00.", "The meeting with Ana was rescheduled to Wednesday.",
                 "Wednesday", id="meeting-rescheduled"),
    pytest.param("I work at Acme.", "I work at Globex now.", "Globex", id="new-employer"),
]


@pytest.mark.parametrize(("before", "after", "marker"), TRUE_UPDATES)
@pytest.mark.parametrize("path", ["live", "ingest"])
async def test_true_updates_among_many_facts_supersede_and_keep_history(
        provider: NativeProvider, settings: Settings, before: str, after: str, marker: str, path: str) -> None:
    facts = same_shaped_facts(40, seed=3)
    texts = [*facts[:20], before, *facts[20:], after]
    turns = _turns(texts)
    pipeline = Pipeline(provider, settings, extractor=OfflineExtractor())
    if path == "live":
        for turn in turns:
            await pipeline.process([(turn, ())])
    else:
        await pipeline.ingest(turns, user_id="u", vectors="later")
    current = [m for m in await provider.list(user_id="u", limit=1000) if m.type is not MemoryType.TRANSCRIPT]
    old_turn, new_turn = turns[20].id, turns[-1].id
    assert not [m for m in current if old_turn in m.source_ids and new_turn not in m.source_ids], \
        "the old statement is still current"
    newest = [m for m in current if new_turn in m.source_ids]
    assert len(newest) == 1 and marker in newest[0].content
    history = await timeline.history(provider, newest[0].id, user_id="u")
    assert len(history) == 2 and old_turn in history[0].memory.source_ids
    everything = await provider.list(user_id="u", filters=SearchFilters(valid_only=False, include_archived=True),
                                     limit=1000)
    assert len([m for m in everything if old_turn in m.source_ids and m.type is not MemoryType.TRANSCRIPT]) >= 1
    assert not await lost_facts(provider, [t for t in turns if t.id not in (old_turn, new_turn)])
