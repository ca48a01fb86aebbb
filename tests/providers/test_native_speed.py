"""The native store's fast paths: ANN above the threshold, BM25 ranked on FTS5 alone, one BLAS thread."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dexai_memory.config import SearchConfig
from dexai_memory.embeddings import HashingEmbedder
from dexai_memory.models import Memory, SearchFilters
from dexai_memory.providers.native import ann
from dexai_memory.providers.native.provider import NativeProvider
from dexai_memory.providers.native.vectors import VectorIndex

WORDS = "cello violin drums bread sourdough bicycle mountain river garden chess pottery sailing".split()


def texts(n: int) -> list[str]:
    rng = np.random.default_rng(3)
    return [" ".join(rng.choice(WORDS, size=4)) + f" note {i}" for i in range(n)]


async def test_bm25_looks_further_down_when_filters_drop_the_best_hits(tmp_path: Path) -> None:
    async with NativeProvider(tmp_path / "m.db", search=SearchConfig(fusion="bm25", candidates=5)) as p:
        await p.add_many([Memory(f"coffee coffee coffee order {i}", user_id="u", project="a") for i in range(120)])
        wanted = await p.add_many([Memory(f"coffee beans from Kenya {i}", user_id="u", project="b")
                                   for i in range(3)])
        res = await p.search("coffee", user_id="u", filters=SearchFilters(project="b"), limit=10)
        assert sorted(r.memory.id for r in res) == sorted(m.id for m in wanted)
        assert [r.bm25_rank for r in res] == [1, 2, 3]


async def test_ann_index_serves_large_users_and_follows_writes(tmp_path: Path) -> None:
    if not ann.available():  # not importorskip: usearch must load after onnxruntime (see ann's docstring)
        pytest.skip("usearch is not installed")
    embedder = HashingEmbedder(64)
    items = [Memory(t, user_id="u") for t in texts(400)]
    exact_cfg = SearchConfig(fusion="vector", ann_threshold=0)
    async with NativeProvider(tmp_path / "m.db", embedder=embedder, search=SearchConfig(fusion="vector",
                                                                                         ann_threshold=100)) as p, \
            NativeProvider(tmp_path / "m.db", embedder=embedder, search=exact_cfg) as exact:
        await p.add_many(items)
        await p.search("cello", user_id="u")  # loads the user's vectors and starts the graph's build
        index = p.vectors.index
        assert index is not None
        assert index.wait_for_ann("u", timeout=60)
        assert index.uses_ann("u")
        for query in ("cello drums", "sourdough bread river", "chess pottery", "sailing mountain garden"):
            got = await p.search(query, user_id="u", limit=10)
            want = await exact.search(query, user_id="u", limit=10)
            # an approximate index: nearly the same neighbours, judged by similarity since many texts tie
            # (HNSW may miss one under load), and never a similarity above the exact top-10's
            want_sims = [r.similarity for r in want]
            assert got[0].similarity == pytest.approx(want_sims[0], abs=1e-6)
            assert all(r.similarity <= want_sims[0] + 1e-6 for r in got)
            assert sum(r.similarity >= want_sims[-1] - 1e-6 for r in got) >= 8, (query, got, want)
        # writes after the build reach the graph
        new = await p.add(Memory("theremin theremin theremin", user_id="u"))
        assert (await p.search("theremin", user_id="u", limit=1))[0].memory.id == new.id
        await p.delete(new.id, user_id="u", hard=True)
        assert new.id not in [r.memory.id for r in await p.search("theremin", user_id="u", limit=5)]


def test_vector_index_stays_exact_without_usearch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ann, "_usearch", False)
    index = VectorIndex(8, ann_threshold=10)
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((50, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    index.load("u", [(i + 1, v.tobytes()) for i, v in enumerate(vecs)])
    assert index.uses_ann("u") is False
    found = index.knn("u", vecs[7], 3)
    assert found[0][0] == 8
    assert found[0][1] == pytest.approx(1.0, abs=1e-6)
    sims = vecs @ vecs[7]
    assert [r for r, _ in found] == [int(i) + 1 for i in np.argsort(-sims)[:3]]


def test_vector_index_never_ranks_removed_rows() -> None:
    index = VectorIndex(4, ann_threshold=0)
    index.load("u", [(1, np.array([1, 0, 0, 0], np.float32).tobytes()),
                     (2, np.array([0, 1, 0, 0], np.float32).tobytes())])
    index.remove("u", 1)
    assert index.knn("u", np.array([1, 0, 0, 0], np.float32), 5) == [(2, 0.0)]
