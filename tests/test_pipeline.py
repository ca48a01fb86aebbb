"""The warm path: redaction, gate, extraction, supersession (each action), commitments, ingest."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from dexai_memory.capture.queue import ExtractionQueue
from dexai_memory.capture.turns_file import read_turns_jsonl
from dexai_memory.commitments import CommitmentStore
from dexai_memory.config import Settings, load_settings
from dexai_memory.errors import InvalidMemory
from dexai_memory.models import (
    Commitment,
    ExtractedNote,
    MemoryType,
    SearchFilters,
    Tier,
    Turn,
    UpdateAction,
)
from dexai_memory.pipeline import Pipeline, PipelineReport, transcript_id
from dexai_memory.providers import history as timeline
from dexai_memory.providers.native import NativeProvider
from tests.pipeline_fakes import EchoExtractor, Extractor


@pytest.fixture
def settings() -> Settings:
    return load_settings()


@pytest.fixture
async def provider(tmp_path: Path) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(tmp_path / "memory.db", embedder=None) as p:
        yield p


def turn(tid: str, content: str, **kw: object) -> Turn:
    return Turn(id=tid, user_id="u", content=content, session_id="s", **kw)  # type: ignore[arg-type]


async def run(pipeline: Pipeline, *turns: Turn) -> PipelineReport:
    return await pipeline.process([(t, ()) for t in turns])


@pytest.mark.parametrize(
    ("first", "second", "action"),
    [
        pytest.param("Caroline lives in Boston", "Melanie paints sunsets over the lake", UpdateAction.ADD, id="add"),
        pytest.param("Caroline lives in Boston", "Caroline lives in Boston", UpdateAction.NOOP, id="noop-duplicate"),
        pytest.param("Caroline lives in Boston", "Caroline now lives in Denver", UpdateAction.SUPERSEDE,
                     id="supersede-new-value"),
        pytest.param("Caroline adopted a dog", "Caroline adopted a dog named Max from the shelter",
                     UpdateAction.UPDATE, id="update-refinement"),
    ],
)
async def test_each_supersession_action(provider: NativeProvider, settings: Settings, first: str, second: str,
                                        action: UpdateAction) -> None:
    pipeline = Pipeline(provider, settings, extractor=EchoExtractor())
    r1 = await run(pipeline, turn("D1:1", first))
    assert r1.added == 1
    r2 = await run(pipeline, turn("D1:2", second))
    counts = {UpdateAction.ADD: r2.added, UpdateAction.UPDATE: r2.updated, UpdateAction.SUPERSEDE: r2.superseded,
              UpdateAction.NOOP: r2.noop}
    assert counts[action] == 1 and sum(counts.values()) == 1
    valid = await provider.list(user_id="u")
    everything = await provider.list(user_id="u", filters=SearchFilters(valid_only=False, include_archived=True))
    if action is UpdateAction.ADD:
        assert sorted(m.content for m in valid) == sorted([first, second])
        return
    if action is UpdateAction.NOOP:
        (m,) = valid
        assert m.mention_count == 2 and m.source_ids == ("D1:1", "D1:2") and m.confidence > 0.7
    elif action is UpdateAction.UPDATE:
        (m,) = valid
        assert m.content == second and m.source_ids == ("D1:1", "D1:2")
    else:
        (new,) = valid
        (old,) = [x for x in everything if x.id != new.id]
        assert new.content == second and old.superseded_by == new.id and old.valid_until is not None
        m = old
    # every decision is in the memory's history with its reason
    history = await timeline.history(provider, m.id, user_id="u")
    events = [(e.action, e.reason) for h in history for e in h.events]
    wanted = {UpdateAction.NOOP: "NOOP", UpdateAction.UPDATE: "UPDATE", UpdateAction.SUPERSEDE: "SUPERSEDED"}[action]
    assert any(a == wanted and reason for a, reason in events), events


async def test_replayed_turn_is_not_stored_twice(provider: NativeProvider, settings: Settings) -> None:
    pipeline = Pipeline(provider, settings, extractor=EchoExtractor())
    t1, t2 = turn("a", "Jon opened a dance studio downtown"), turn("b", "Jon opened a dance studio downtown")
    await run(pipeline, t1, t2)  # b is a NOOP on a
    again = await run(pipeline, t1, t2)
    assert again.skipped == 2 and again.added == again.noop == 0
    (m,) = await provider.list(user_id="u")
    assert m.mention_count == 2


async def test_private_text_and_secrets_never_stored(provider: NativeProvider, settings: Settings) -> None:
    pipeline = Pipeline(provider, settings, extractor=EchoExtractor())
    raw = turn("p1", "I moved to Lisbon last week <private>my bank PIN is 4711</private> "
                     "and my key is sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789")
    clean, verdict = pipeline.admit(raw)
    assert clean is not None and verdict.passed
    assert "4711" not in clean.content and "sk-ant" not in clean.content
    await run(pipeline, raw)  # queued by another process without admission: redacted again
    (m,) = await provider.list(user_id="u")
    assert "Lisbon" in m.content and "4711" not in m.content and "sk-ant" not in m.content
    only_private, verdict = pipeline.admit(turn("p2", "<private>all of it</private>"))
    assert only_private is None and not verdict.passed


class CommitmentExtractor(Extractor):
    async def extract(self, turns: Sequence[Turn], context: Sequence[Turn | str] = ()) -> list[ExtractedNote]:
        due = datetime(2030, 5, 9, tzinfo=UTC)
        return [ExtractedNote(content=f"User promised to {t.content}", type=MemoryType.COMMITMENT, importance=7,
                              source_ids=(t.id,), commitment=Commitment(what=t.content, who="Sarah", due_at=due,
                                                                        due_text="tomorrow"))
                for t in turns]


async def test_commitments_are_their_memories(provider: NativeProvider, settings: Settings) -> None:
    pipeline = Pipeline(provider, settings, extractor=CommitmentExtractor())
    assert isinstance(pipeline.commitments, CommitmentStore)
    report = await run(pipeline, turn("c1", "send Sarah the mockups"))
    again = await run(pipeline, turn("c1", "send Sarah the mockups"))
    assert report.commitments == 1 and again.commitments == 0
    (c,) = await pipeline.commitments.list(user_id="u")
    assert (c.what, c.who, c.due_text, c.status, c.source_ids) == ("send Sarah the mockups", "Sarah", "tomorrow",
                                                                  "open", ("c1",))
    (m,) = await provider.list(user_id="u", filters=SearchFilters(types=(MemoryType.COMMITMENT,)))
    assert c.id == c.memory_id == m.id and m.metadata["commitment"]["who"] == "Sarah"
    now = datetime(2030, 5, 5, tzinfo=UTC)
    assert [x.id for x in await pipeline.commitments.due_soon(user_id="u", days=7, now=now)] == [c.id]
    assert await pipeline.commitments.due_soon(user_id="u", days=1, now=now) == []
    done = await pipeline.commitments.set_status(c.id, "done", user_id="u")
    assert done.status == "done" and await pipeline.commitments.list(user_id="u") == []
    assert await pipeline.commitments.list(user_id="other") == []
    with pytest.raises(InvalidMemory):
        await pipeline.commitments.set_status(c.id, "maybe", user_id="u")


async def test_a_commitment_without_a_memory_gets_one(provider: NativeProvider) -> None:
    store = CommitmentStore(provider)
    rec = await store.add(Commitment(what="review PR 71", due_at=datetime.now(UTC) + timedelta(days=2)),
                          user_id="u", source_ids=("t9",))
    again = await store.add(Commitment(what="review PR 71"), user_id="u", source_ids=("t9",))
    assert again.id == rec.id
    m = await provider.get(rec.id, user_id="u")
    assert m.type is MemoryType.COMMITMENT and m.metadata["commitment"]["what"] == "review PR 71"
    assert [c.id for c in await store.due_soon(user_id="u", days=7)] == [rec.id]
    await store.set_status(rec.id, "cancelled", user_id="u")
    assert await store.list(user_id="u") == [] and len(await store.list(user_id="u", status=None)) == 1


async def test_queue_to_store_through_handle(provider: NativeProvider, settings: Settings, tmp_path: Path) -> None:
    extractor = EchoExtractor()
    pipeline = Pipeline(provider, settings, extractor=extractor)
    q = ExtractionQueue(tmp_path / "queue.db", batch_size=2).open()
    q.enqueue(turn("q1", "Gina works at a bakery"), context=["hello"])
    q.enqueue(Turn(id="q2", user_id="v", content="Gina works at a bakery", session_id="s"))
    q.enqueue(turn("q3", "Gina loves jazz"))
    assert await q.drain(pipeline.handle) == 3
    assert pipeline.totals.added == 3  # user v's note is compared with v's memories only
    assert ["q1"] in [c[0] for c in extractor.calls] and (["q1"], ("hello",)) in extractor.calls
    assert len(await provider.list(user_id="u")) == 2 and len(await provider.list(user_id="v")) == 1
    q.close()


# --------------------------------------------------------------------------- ingest
CONVERSATION = [
    '{"id": "D1:1", "role": "user", "speaker": "Caroline", "content": "Hey Mel!", "timestamp": "2023-05-08T13:56:00"}',
    '{"id": "D1:2", "role": "user", "speaker": "Caroline", "content": "I went to an LGBTQ support group yesterday and it was so powerful.", "timestamp": "2023-05-08T13:57:00"}',
    '',
    '{"id": "D1:3", "role": "assistant", "speaker": "Melanie", "content": "Thanks!", "timestamp": "1:58 pm on 8 May, 2023", "caption": "a photo of a sunset", "img_url": ["x"]}',
    '{"id": "D1:4", "role": "user", "speaker": "Caroline", "content": "I prefer hiking in the Rockies over the beach.", "timestamp": "2023-05-08T13:59:00"}',
]


async def test_ingest_archives_every_turn_and_extracts_gated(provider: NativeProvider, settings: Settings,
                                                             tmp_path: Path) -> None:
    path = tmp_path / "conv.jsonl"
    path.write_text("\n".join(CONVERSATION) + "\n", encoding="utf-8")
    turns = read_turns_jsonl(path, user_id="caro", session_id="s1")
    assert [t.id for t in turns] == ["D1:1", "D1:2", "D1:3", "D1:4"]
    assert turns[2].metadata == {"caption": "a photo of a sunset", "img_url": ["x"]}
    assert turns[2].timestamp == datetime(2023, 5, 8, 13, 58, tzinfo=UTC)
    extractor = EchoExtractor()
    gated = dataclasses.replace(settings, extraction=dataclasses.replace(settings.extraction,
                                                                         ingest_gate_threshold=0.3))
    pipeline = Pipeline(provider, gated, extractor=extractor)
    seen: list[int] = []
    report = await pipeline.ingest(turns, user_id="caro", session_id="s1", progress=seen.append)
    assert (report.turns, report.archived) == (4, 4)
    assert report.gated == 2 and report.extracted == 2 and report.added == 2  # the two substantive turns
    assert sum(seen) == 4
    assert sorted(i for ids, _ in extractor.calls for i in ids) == ["D1:2", "D1:4"]
    t3 = await provider.get(transcript_id("caro", "D1:3"), user_id="caro")
    assert t3.type is MemoryType.TRANSCRIPT and t3.tier is Tier.L3 and t3.source_ids == ("D1:3",)
    assert t3.content == "Melanie: Thanks! [image: a photo of a sunset]"
    assert t3.created_at == datetime(2023, 5, 8, 13, 58, tzinfo=UTC) and t3.session_id == "s1"
    assert t3.metadata["caption"] == "a photo of a sunset"
    # raw turns only when asked for
    plain = await provider.search("support group", user_id="caro")
    assert plain and all(r.memory.type is not MemoryType.TRANSCRIPT for r in plain)
    raw = await provider.search("support group", user_id="caro",
                                filters=SearchFilters(types=(MemoryType.TRANSCRIPT,), tiers=(Tier.L3,)))
    assert [r.memory.source_ids for r in raw] == [("D1:2",)]
    note = [r.memory for r in plain if r.memory.source_ids == ("D1:2",)][0]
    assert note.created_at == datetime(2023, 5, 8, 13, 57, tzinfo=UTC)
    again = await pipeline.ingest(turns, user_id="caro", session_id="s1")
    assert (again.archived, again.added, again.skipped) == (0, 0, 2)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        pytest.param("{not json", "line 2: not valid JSON", id="bad-json"),
        pytest.param('["a list"]', "line 2: expected a JSON object", id="not-object"),
        pytest.param('{"id": "x", "role": "user"}', "line 2: missing 'content'", id="no-content"),
        pytest.param('{"id": "1", "role": "user", "content": "dup"}', "line 2: duplicate turn id '1'", id="dup-id"),
        pytest.param('{"id": "2", "role": "user", "content": "x", "timestamp": "soon"}', "line 2: unreadable "
                     "timestamp", id="bad-time"),
    ],
)
def test_bad_jsonl_line_names_the_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "1", "role": "user", "content": "fine"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(InvalidMemory, match=message):
        read_turns_jsonl(path, user_id="u")


async def test_ingest_supersedes_and_dedupes_within_one_chunk(provider: NativeProvider, settings: Settings) -> None:
    from dexai_memory.capture.gate import Gate

    pipeline = Pipeline(provider, settings, extractor=EchoExtractor(), gate=Gate(0.0))  # extract every turn
    turns = [Turn(id=f"x{i}", user_id="u", content=c) for i, c in enumerate([
        "Caroline lives in Boston", "Melanie paints sunsets over the lake", "Caroline lives in Boston",
        "Caroline now lives in Denver"])]
    report = await pipeline.ingest(turns, user_id="u", session_id="s")
    assert (report.added, report.noop, report.superseded) == (2, 1, 1)
    valid = {m.content: m for m in await provider.list(user_id="u") if m.type is not MemoryType.TRANSCRIPT}
    assert set(valid) == {"Melanie paints sunsets over the lake", "Caroline now lives in Denver"}
    history = await timeline.history(provider, valid["Caroline now lives in Denver"].id, user_id="u")
    (old,) = [h.memory for h in history if h.memory.content == "Caroline lives in Boston"]
    assert old.mention_count == 2 and old.source_ids == ("x0", "x2")
    assert [e.action for e in await provider.events(old.id, user_id="u")] == ["ADD", "NOOP", "SUPERSEDED"]


async def test_ingest_extracts_every_turn_by_default(provider: NativeProvider, settings: Settings,
                                                     tmp_path: Path) -> None:
    """Bulk ingest has no live latency to protect: ``ingest_gate_threshold`` 0 sends every turn
    to the extractor (which still drops filler itself)."""
    assert settings.extraction.ingest_gate_threshold == 0.0
    path = tmp_path / "conv.jsonl"
    path.write_text("\n".join(CONVERSATION) + "\n", encoding="utf-8")
    turns = read_turns_jsonl(path, user_id="caro", session_id="s1")
    extractor = EchoExtractor()
    report = await Pipeline(provider, settings, extractor=extractor).ingest(turns, user_id="caro", session_id="s1")
    assert report.gated == 4 and report.archived == 4
    assert sorted(i for ids, _ in extractor.calls for i in ids) == ["D1:1", "D1:2", "D1:3", "D1:4"]
