"""Budget mode of recall_block: notes and L3 transcripts ranked together, one memory per source turn;
block lines without redundant dates."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from dexai_memory.config import SearchConfig, Settings, load_settings
from dexai_memory.embeddings import Embedder
from dexai_memory.models import Memory, MemoryType, SearchFilters, SearchResult, Tier
from dexai_memory.providers.native import NativeProvider
from dexai_memory.recall.block import memory_line
from dexai_memory.recall.ranking import rank, recall_block, select


@pytest.fixture
def settings() -> Settings:
    return load_settings()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(tmp_path / "memory.db", embedder=None) as p:
        yield p


def note(content: str, *sources: str) -> Memory:
    return Memory(content=content, user_id="u", type=MemoryType.EVENT, source_ids=sources)


def transcript(content: str, turn: str) -> Memory:
    return Memory(content=content, user_id="u", type=MemoryType.TRANSCRIPT, tier=Tier.L3, source_ids=(turn,))


async def test_budget_mode_falls_back_to_transcripts(store: NativeProvider, settings: Settings) -> None:
    # D1:2 has no note (extraction missed it): its raw turn is found in L3
    await store.add_many([
        note("Caroline went to a pottery workshop on 3 June 2023.", "D1:1"),
        transcript("Caroline: I went to a pottery workshop yesterday!", "D1:1"),
        transcript("Melanie: My kids love the pottery class at the community center.", "D1:2"),
    ])
    r = await recall_block(store, "u", "pottery class workshop", settings)
    sources = [s for m in r.memories for s in m.memory.source_ids]
    assert sorted(sources) == ["D1:1", "D1:2"]  # each turn once: the note or its transcript, not both
    assert "community center" in r.text


def test_distinct_sources_skips_memories_whose_turns_are_shown() -> None:
    results = [SearchResult(note("Rex is Caroline's dog.", "D1:1"), 1.0),
               SearchResult(transcript("Caroline: my dog Rex is a good boy", "D1:1"), 0.9),
               SearchResult(note("Rex is a golden retriever.", "D1:1", "D1:2"), 0.8)]
    ranked = rank(results, "Rex dog")
    _, every = select(ranked, threshold=0.0, max_tokens=800)
    _, distinct = select(ranked, threshold=0.0, max_tokens=800, distinct_sources=True)
    assert len(every) == 3
    assert [m.memory.source_ids for m in distinct] == [("D1:1",), ("D1:1", "D1:2")]


def test_rank_weights_override() -> None:
    low = SearchResult(note("unrelated words here", "a"), 1.0)
    high = SearchResult(note("pottery class pottery", "b"), 0.1)
    by_relevance = rank([low, high], "pottery class")
    by_rank = rank([low, high], "pottery class", weights=(0.0, 1.0, 0.0, 0.0))
    assert by_relevance[0].memory.source_ids == ("b",) and by_rank[0].memory.source_ids == ("a",)


def test_memory_line_does_not_repeat_a_resolved_date() -> None:
    dated = note("Caroline went to a support group on 7 May 2023.", "D1:1").replace(
        metadata={"event_date": "2023-05-07"})
    undated = note("Caroline went to a support group.", "D1:1").replace(metadata={"event_date": "2023-05-07"})
    assert memory_line(dated) == "- Caroline went to a support group on 7 May 2023."
    assert memory_line(undated) == "- Caroline went to a support group. (2023-05-07)"


class _Words(Embedder):
    """A tiny deterministic embedder (bag of hashed words), counting the texts it embeds."""

    dim = 16
    model_id = "test-words"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, sum(map(ord, w)) % self.dim] += 1.0
            out[i] /= max(1e-6, float(np.linalg.norm(out[i])))
        return out


async def test_transcripts_not_embedded_stay_searchable_by_bm25(tmp_path: Path) -> None:
    embedder = _Words()
    search = dataclasses.replace(SearchConfig(), embed_transcripts=False)
    async with NativeProvider(tmp_path / "m.db", embedder=embedder, search=search) as p:
        await p.add_many([note("Caroline adopted a dog named Rex.", "D1:1"),
                          transcript("Melanie: we went camping at the lake", "D1:2")])
        assert embedder.texts == ["Caroline adopted a dog named Rex."]
        raw = await p.search("camping lake", user_id="u", filters=SearchFilters(types=(MemoryType.TRANSCRIPT,)))
        assert [r.memory.source_ids for r in raw] == [("D1:2",)] and raw[0].similarity is None
        notes = await p.search("dog Rex", user_id="u")
        assert notes[0].memory.source_ids == ("D1:1",) and notes[0].similarity is not None
