"""The offline extractor on realistic turns (LoCoMo-style chat)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dexai_memory.extraction.offline import OfflineExtractor
from dexai_memory.models import MemoryType, Turn

TS = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # "1:56 pm on 8 May, 2023", a Monday


def turn(tid: str, speaker: str, content: str, **metadata: object) -> Turn:
    return Turn(id=tid, user_id="u1", speaker=speaker, content=content, timestamp=TS, metadata=metadata)


MEL = turn("D1:2", "Melanie", "Hey Caroline! Good to see you! What's up with you?")


async def extract(*turns: Turn, context: tuple = ()) -> list:
    return await OfflineExtractor().extract(list(turns), context=context)


async def test_caroline_support_group() -> None:
    [note] = await extract(turn("D1:3", "Caroline", "I went to a LGBTQ support group yesterday."))
    assert note.content == "Caroline went to a LGBTQ support group on 7 May 2023."
    assert note.type is MemoryType.EVENT
    assert note.event_date == "2023-05-07"
    assert note.source_ids == ("D1:3",)
    assert "Caroline" in note.entities
    assert 1 <= note.importance <= 10


@pytest.mark.parametrize("text", [
    pytest.param("ok", id="ok"), pytest.param("Thanks!", id="thanks"), pytest.param("got it 👍", id="got-it"),
    pytest.param("Hey Mel! Good to see you!", id="greeting"), pytest.param("🎉🎉", id="emoji"),
    pytest.param("Is this your own painting?", id="pure-question"),
    pytest.param("Wow, that's so cool!", id="exclamation"),
])
async def test_filler_gives_nothing(text: str) -> None:
    assert await extract(turn("t", "Caroline", text)) == []


@pytest.mark.parametrize(("text", "note_type", "needle"), [
    pytest.param("I love hiking in the mountains.", MemoryType.PREFERENCE, "Caroline loves hiking", id="preference"),
    pytest.param("My favourite food is sushi.", MemoryType.PREFERENCE, "Caroline's favourite food is sushi",
                 id="favourite"),
    pytest.param("My sister lives in Boston.", MemoryType.RELATIONSHIP, "Caroline's sister lives in Boston",
                 id="relationship"),
    pytest.param("I need to renew my passport.", MemoryType.TASK, "Caroline needs to renew Caroline's passport",
                 id="task"),
    pytest.param("I realized that running helps my anxiety.", MemoryType.INSIGHT, "Caroline realized that running",
                 id="insight"),
    pytest.param("I work at a bakery and I have two cats.", MemoryType.FACT,
                 "Caroline works at a bakery and Caroline has two cats", id="fact"),
    pytest.param("I painted that lake sunrise last year!", MemoryType.EVENT,
                 "Caroline painted that lake sunrise in 2022", id="event-year"),
])
async def test_types_and_third_person(text: str, note_type: MemoryType, needle: str) -> None:
    [note] = await extract(turn("t", "Caroline", text))
    assert note.type is note_type
    assert needle in note.content
    assert " I " not in f" {note.content} " and " my " not in f" {note.content.lower()} "


async def test_commitment_with_due_date_and_person() -> None:
    [note] = await extract(turn("D2:1", "Caroline", "I'll send you the photos tomorrow."), context=(MEL,))
    assert note.type is MemoryType.COMMITMENT
    assert note.content == "Caroline will send Melanie the photos on 9 May 2023."
    c = note.commitment
    assert c is not None
    assert c.what == "send Melanie the photos"
    assert c.who == "Melanie"
    assert c.due_at == datetime(2023, 5, 9, tzinfo=UTC)
    assert c.due_text == "tomorrow"


async def test_remind_me_is_a_commitment() -> None:
    [note] = await extract(turn("t", "Caroline", "Remind me to call the vet next Friday."))
    assert note.type is MemoryType.COMMITMENT
    assert note.commitment is not None and note.commitment.what == "call the vet"
    assert note.commitment.due_at == datetime(2023, 5, 12, tzinfo=UTC)


async def test_caption_becomes_a_note() -> None:
    notes = await extract(turn("D1:12", "Melanie", "By the way, take a look at this.",
                               caption="a photo of a painting of a sunset over a lake"))
    assert [n.content for n in notes] == ["Melanie shared a photo of a painting of a sunset over a lake on 8 May 2023."]
    assert notes[0].source_ids == ("D1:12",)


async def test_multi_sentence_turn_is_split() -> None:
    notes = await extract(turn("D3:4", "Melanie", "Hey Caroline! I'm swamped with the kids & work. "
                               "I ran a charity race for mental health last Saturday. What's new with you?"))
    contents = [n.content for n in notes]
    assert contents == ["Melanie is swamped with the kids & work.",
                        "Melanie ran a charity race for mental health on 6 May 2023."]
    assert all(n.source_ids == ("D3:4",) for n in notes)


async def test_statement_clause_of_a_question_is_kept() -> None:
    [note] = await extract(turn("t", "Caroline", "I just got back from Paris, have you ever been?"))
    assert note.content.startswith("Caroline just got back from Paris")


async def test_we_names_both_speakers_when_known() -> None:
    [note] = await extract(turn("t", "Caroline", "We had a blast at the Pride fest last year."), context=(MEL,))
    assert note.content == "Caroline and Melanie had a blast at the Pride fest in 2022."


async def test_we_without_other_speaker() -> None:
    [note] = await extract(turn("t", "Caroline", "We had a blast at the Pride fest last year."))
    assert note.content.startswith("Caroline's group had a blast")


async def test_we_with_a_family_in_the_turn() -> None:
    notes = await extract(turn("t", "Melanie", "Here's a pic of my family camping at the beach. We love camping there every summer!"),
                          context=(turn("c", "Caroline", "Hi!"),))
    contents = " ".join(n.content for n in notes)
    assert "Melanie shared a photo of Melanie's family camping at the beach" in contents
    assert "Melanie's family love camping there every summer" in contents


async def test_short_answer_keeps_its_question() -> None:
    question = turn("D5:1", "Melanie", "Do you have any pets?")
    notes = await extract(question, turn("D5:2", "Caroline", "Yes, a dog named Max!"))
    assert len(notes) == 1
    assert notes[0].content == 'Asked by Melanie "Do you have any pets?", Caroline answered: a dog named Max.'
    assert notes[0].source_ids == ("D5:1", "D5:2")


async def test_string_context_names_the_other_speaker() -> None:
    [note] = await extract(turn("t", "Caroline", "I'll call you tomorrow."), context=("Melanie: how are you?",))
    assert "Melanie" in note.content


async def test_turn_without_speaker_uses_role() -> None:
    t = Turn(id="x", user_id="u1", content="I prefer dark mode in every editor.", role="user")
    [note] = await extract(t)
    assert note.content == "The user prefers dark mode in every editor."
    assert note.type is MemoryType.PREFERENCE


async def test_importance_reflects_signal_strength() -> None:
    strong, weak = await extract(
        turn("a", "Caroline", "My mom was diagnosed with cancer yesterday."),
        turn("b", "Caroline", "The weather here is quite grey and windy."),
    )
    assert strong.importance > weak.importance


async def test_caption_written_into_the_text() -> None:
    notes = await extract(turn("D1:5", "Caroline", "Look at this mural! [shares an image: a pride flag mural]"))
    assert [n.content for n in notes] == ["Caroline shared a photo of a pride flag mural on 8 May 2023."]


def test_inline_image_caption_of_the_locomo_loader_becomes_a_shared_photo_note() -> None:
    """``benchmarks.locomo`` writes captions into the text as "[image: ...]": a photo note, not "X said [image ...]"."""
    from datetime import UTC, datetime

    from dexai_memory.extraction.offline import OfflineExtractor
    from dexai_memory.models import Turn

    turn = Turn(id="D1:1", user_id="u", content="Take a look at this. [image: a photo of a painting of a sunset]",
                role="user", speaker="Melanie", timestamp=datetime(2023, 5, 8, tzinfo=UTC))
    notes = [n.content for n in OfflineExtractor().extract_sync([turn])]
    assert notes == ["Melanie shared a photo of a painting of a sunset on 8 May 2023."]
