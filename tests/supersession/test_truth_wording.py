"""Stored statements read as notebook sentences: the wordings once seen in stores of the offline
extractor ("Mel is going to the park was fun", "... said on <date> was rough", "Robin said run the
tests again") and a few of their kind, through the real extractor and the pipeline into SQLite."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from dexai_memory.config import load_settings
from dexai_memory.extraction.offline import OfflineExtractor
from dexai_memory.extraction.wording import date_as_subject, gerund_subject, is_request, reported
from dexai_memory.models import MemoryType, Turn
from dexai_memory.pipeline import Pipeline
from dexai_memory.providers.native import NativeProvider

TS = datetime(2026, 3, 2, 10, tzinfo=UTC)  # a Monday


async def notes_of(speaker: str, text: str) -> list[str]:
    turn = Turn(id="t1", user_id="u", speaker=speaker, content=text, timestamp=TS)
    return [n.content for n in await OfflineExtractor().extract([turn])]


@pytest.mark.parametrize(("speaker", "said", "stored"), [
    pytest.param("Melanie", "Going to the park was fun last time.",
                 "Melanie said going to the park was fun last time.", id="gerund-subject"),
    pytest.param("Melanie", "Working late again is exhausting.", "Melanie said working late again is exhausting.",
                 id="gerund-subject-present"),
    pytest.param("Melanie", "Going to the park tomorrow with the kids.",
                 "Melanie is going to the park on 3 March 2026 with the kids.", id="subjectless-plan-still-hers"),
    pytest.param("Dana", "Yesterday was rough.", "Dana said 1 March 2026 was rough.", id="day-subject"),
    pytest.param("Dana", "Last Monday was rough.", "Dana said 23 February 2026 was rough.", id="last-day-subject"),
    pytest.param("Dana", "Last week was a blast.", "Dana said the week of 23 February 2026 was a blast.",
                 id="week-subject"),
    pytest.param("Dana", "Tomorrow is the big day!", "Dana said 3 March 2026 is the big day.", id="future-subject"),
    pytest.param("Dana", "Yesterday I went hiking.", "On 1 March 2026 Dana went hiking.", id="day-adverbial-kept"),
    pytest.param("Robin", "Run the tests again.", "Robin said to run the tests again.", id="request"),
    pytest.param("Robin", "Please run the tests again, they failed.", "Robin said to run the tests again, they failed.",
                 id="please-request"),
    pytest.param("Robin", "Fix the flaky login test.", "Robin said to fix the flaky login test.", id="request-fix"),
    pytest.param("Robin", "Use pnpm from now on.", "Robin said to use pnpm from now on.", id="standing-order"),
])
async def test_the_extractor_writes_a_clean_sentence(speaker: str, said: str, stored: str) -> None:
    assert await notes_of(speaker, said) == [stored]


@pytest.mark.parametrize("bad", ["Mel is going to the park was fun", "said on 1 March 2026 was rough",
                                 "Robin said run the tests again"])
async def test_the_old_wordings_are_gone(bad: str) -> None:
    said = {"Mel is going to the park was fun": ("Mel", "Going to the park was fun."),
            "said on 1 March 2026 was rough": ("Dana", "Yesterday was rough."),
            "Robin said run the tests again": ("Robin", "Run the tests again.")}[bad]
    assert all(bad not in n for n in await notes_of(*said))


def test_the_helpers() -> None:
    assert gerund_subject("Going to the park was fun") and not gerund_subject("Going to the park tomorrow")
    assert not gerund_subject("Thinking about it, it was fine")  # "it" is the subject of "was"
    assert is_request("Please book the room") and is_request("Rerun CI") and not is_request("Mel runs daily")
    assert reported("Robin", "Run `make check` first", "Run `make check` first.") == "Robin said to run `make check` first"
    assert reported("Robin", "GitHub is down", "GitHub is down.") == "Robin said GitHub is down"
    assert date_as_subject("On 1 March 2026 was Dana's birthday") == "1 March 2026 was Dana's birthday"
    assert date_as_subject("Dana met Sam on 1 March 2026 in Porto") == "Dana met Sam on 1 March 2026 in Porto"


async def test_the_pipeline_stores_the_clean_sentence(tmp_path: Path) -> None:
    """Through the pipeline (extraction, supersession) into a real store: the stored text."""
    async with NativeProvider(tmp_path / "memory.db", embedder=None) as provider:
        pipeline = Pipeline(provider, load_settings(), extractor=OfflineExtractor())
        turns = [Turn(id=f"t{i}", user_id="u", speaker=s, content=c, session_id="s", timestamp=TS)
                 for i, (s, c) in enumerate([("Melanie", "Going to the park was fun last time."),
                                             ("Dana", "Yesterday was rough."), ("Robin", "Run the tests again.")])]
        await pipeline.process([(t, ()) for t in turns])
        stored = {m.content for m in await provider.list(user_id="u") if m.type is not MemoryType.TRANSCRIPT}
    assert {"Melanie said going to the park was fun last time.", "Dana said 1 March 2026 was rough.",
            "Robin said to run the tests again."} <= stored
