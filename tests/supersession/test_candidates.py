"""Word-overlap supersession candidates (:mod:`dexai_memory.supersession.candidates`) and their use by ingest."""

from __future__ import annotations

from dexai_memory.capture.gate import Gate
from dexai_memory.config import load_settings
from dexai_memory.models import Memory, MemoryType, Turn
from dexai_memory.pipeline import Pipeline
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.candidates import CandidateIndex
from tests.pipeline_fakes import EchoExtractor


def note(content: str, user: str = "u", **kw: object) -> Memory:
    return Memory(content=content, user_id=user, **kw)  # type: ignore[arg-type]


def test_candidates_by_shared_words_ranked_by_overlap() -> None:
    a = note("Caroline adopted a dog named Max")
    b = note("Caroline adopted a cat")
    c = note("Melanie paints sunsets over the lake")
    index = CandidateIndex([a, b, c])
    found = index.candidates("Caroline adopted a dog named Max from the shelter", user_id="u")
    assert [m.id for m in found][:2] == [a.id, b.id]
    assert c.id not in {m.id for m in found}


def test_same_slot_is_a_candidate_even_without_other_shared_words() -> None:
    boston = note("Caroline lives in Boston")
    index = CandidateIndex([boston, *(note(f"Caroline mentioned topic number {i}") for i in range(100))])
    # "caroline" is in every note (too common to probe with); the slot (caroline, live in) still finds Boston
    found = index.candidates("Caroline lives in Denver", user_id="u", top_k=3)
    assert found[0].id == boston.id


def test_users_transcripts_and_superseded_rows_are_kept_apart() -> None:
    mine = note("Sam likes green tea")
    theirs = note("Sam likes green tea", user="other")
    raw = note("Sam: I like green tea", type=MemoryType.TRANSCRIPT)
    old = note("Sam likes green tea a lot", superseded_by="m_x")
    index = CandidateIndex([mine, theirs, raw, old])
    assert len(index) == 2 and raw.id not in index and old.id not in index
    assert [m.id for m in index.candidates("Sam likes green tea", user_id="u")] == [mine.id]
    assert index.candidates("Sam likes green tea", user_id="u", exclude={mine.id}) == []


def test_remove_and_replace() -> None:
    m = note("Caroline lives in Boston")
    index = CandidateIndex([m])
    index.add(m.replace(content="Caroline lives in Boston near the harbour"))
    assert index.get(m.id).content.endswith("harbour")  # type: ignore[union-attr]
    assert len(index) == 1
    index.remove(m.id)
    index.remove(m.id)  # unknown: no-op
    assert index.candidates("Caroline lives in Boston", user_id="u") == []


async def test_ingest_supersedes_what_an_earlier_run_stored(provider: NativeProvider) -> None:
    """The index is built from the whole store, so a note supersedes memories of earlier runs and
    of other writers (here a memory added directly)."""
    settings = load_settings()
    pipeline = Pipeline(provider, settings, extractor=EchoExtractor(), gate=Gate(0.0))
    await provider.add(note("Caroline works at a bakery"))
    first = [Turn(id="a1", user_id="u", content="Caroline lives in Boston")]
    await pipeline.ingest(first, user_id="u")
    second = [Turn(id="b1", user_id="u", content="Caroline now lives in Denver"),
              Turn(id="b2", user_id="u", content="Caroline works at a hospital")]
    report = await pipeline.ingest(second, user_id="u")
    assert (report.superseded, report.added) == (2, 0)
    valid = sorted(m.content for m in await provider.list(user_id="u") if m.type is not MemoryType.TRANSCRIPT)
    assert valid == ["Caroline now lives in Denver", "Caroline works at a hospital"]
    again = await pipeline.ingest(second, user_id="u")
    assert (again.superseded, again.added, again.skipped) == (0, 0, 2)
