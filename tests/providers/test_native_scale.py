"""Costs that grow with other users' data (issue 15 part 4): a user's vectors read from their own
sqlite-vec chunks, BM25 ranked within the user's rowid range; results identical to the plain SQL."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dexai_memory.config import SearchConfig
from dexai_memory.embeddings import HashingEmbedder
from dexai_memory.models import Memory, SearchFilters
from dexai_memory.providers.native import ann, search
from dexai_memory.providers.native.provider import NativeProvider
from dexai_memory.providers.native.schema import bm25_query, fts_query, where_clause
from dexai_memory.providers.native.vectors import VectorIndex, read_user_vectors

WORDS = "cello violin drums bread sourdough bicycle mountain river garden chess pottery sailing".split()


def texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=4)) + f" note {seed} {i}" for i in range(n)]


async def test_user_vectors_read_from_chunks_match_the_vec0_select(tmp_path: Path) -> None:
    embedder = HashingEmbedder(32)
    async with NativeProvider(tmp_path / "m.db", embedder=embedder) as p:
        # two users interleaved, one past a chunk (1,024 vectors), then deletes and an edit
        for step in range(3):
            await p.add_many([Memory(t, user_id="a") for t in texts(500, step)])
            await p.add_many([Memory(t, user_id="b") for t in texts(40, 10 + step)])
        gone = await p.list(user_id="a", limit=30)
        for m in gone[:20]:
            await p.delete(m.id, user_id="a", hard=True)
        await p.update(gone[25].id, user_id="a", content="sailing sailing theremin")
        for user in ("a", "b", "nobody"):
            rows = await p.db.execute_fetchall("SELECT rowid, embedding FROM memories_vec WHERE user_id = ?",
                                               (user,))
            want_ids = np.array([r[0] for r in rows], dtype=np.int64)
            want = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), 32)
            ids, matrix = await search._in_connection(p.db, read_user_vectors, user, 32)
            assert ids.tolist() == want_ids.tolist()
            assert np.array_equal(matrix, want)
        assert len(ids) == 0
        a_ids, _ = await search._in_connection(p.db, read_user_vectors, "a", 32)
        assert len(a_ids) == 1480


async def test_bm25_within_a_users_range_gives_the_joined_rows(tmp_path: Path) -> None:
    async with NativeProvider(tmp_path / "m.db", search=SearchConfig(fusion="bm25", candidates=20)) as p:
        # "big" is most of the store; "block" owns one contiguous stretch; "spread" is interleaved with "big"
        await p.add_many([Memory(t, user_id="big", project="x") for t in texts(600, 1)])
        await p.add_many([Memory(t, user_id="block", project=("p" if i % 3 else "q"))
                          for i, t in enumerate(texts(300, 2))])
        for step in range(30):
            await p.add_many([Memory(t, user_id="big") for t in texts(20, 100 + step)])
            await p.add(Memory(texts(1, 200 + step)[0], user_id="spread"))
        # "block" adds a few later: a second range
        await p.add_many([Memory(t, user_id="block", project="q") for t in texts(30, 300)])
        ranges = await search._in_connection(p.db, search.user_rowids, "block")
        assert ranges is not None and len(ranges) == 2
        assert await search._in_connection(p.db, search.user_rowids, "spread") is None
        cases = [("block", SearchFilters()), ("block", SearchFilters(project="q")), ("spread", SearchFilters()),
                 ("big", SearchFilters()), ("big", SearchFilters(project="x"))]
        for user, filters in cases:
            where, params = where_clause(user, filters, for_search=True)
            for query in ("cello drums", "sourdough bread river", "chess", "sailing mountain garden note"):
                match = fts_query(query)
                assert match is not None
                got = await search._in_connection(p.db, search.bm25_rowids, match, where, params, 20, user)
                want = [r[0] for r in await p.db.execute_fetchall(*bm25_query("m.rowid", match, where, params, 20))]
                assert got == want, (user, filters, query)
                assert got  # every case has hits
                results = await p.search(query, user_id=user, filters=filters, limit=20)
                assert {r.memory.user_id for r in results} == {user}


async def test_one_user_store_skips_the_range(tmp_path: Path) -> None:
    async with NativeProvider(tmp_path / "m.db") as p:
        await p.add_many([Memory(t, user_id="solo") for t in texts(50, 1)])
        assert await search._in_connection(p.db, search.user_rowids, "solo") is None
        assert await search._in_connection(p.db, search.user_rowids, "nobody") is None


async def test_bm25_prunes_common_words_only_above_the_threshold(tmp_path: Path) -> None:
    # "garden" is in every memory, "chess" in 20 of 1,000 (2 %), "kite" in 5
    items = [Memory(f"garden note {i}" + (" chess" if i % 50 == 0 else "") + (" kite" if i % 200 == 0 else ""),
                    user_id="u") for i in range(1000)]
    query = "garden chess kite"
    exact_cfg = SearchConfig(fusion="bm25", candidates=10, bm25_prune_threshold=0)
    async with NativeProvider(tmp_path / "m.db", search=exact_cfg) as exact:
        await exact.add_many(items)
        want = [r.memory.id for r in await exact.search(query, user_id="u", limit=10)]
    assert len(want) == 10
    # below the threshold: the same results as never pruning
    async with NativeProvider(tmp_path / "m.db", search=SearchConfig(fusion="bm25", candidates=10,
                                                                       bm25_prune_threshold=1000)) as p:
        assert [r.memory.id for r in await p.search(query, user_id="u", limit=10)] == want
    # above it: "garden" (in over 2 % of the rows) is left out; every hit holds a rarer word
    async with NativeProvider(tmp_path / "m.db", search=SearchConfig(fusion="bm25", candidates=10,
                                                                       bm25_prune_threshold=500)) as p:
        assert search.prune(p.db._conn, '"garden" OR "chess" OR "kite"', p.term_counts, 500, 10) \
            == '"chess" OR "kite"'
        # the kept words must match enough rows, else the query stays whole
        assert search.prune(p.db._conn, '"garden" OR "kite"', p.term_counts, 500, 10) == '"garden" OR "kite"'
        got = await p.search(query, user_id="u", limit=10)
        assert len(got) == 10
        assert all("chess" in r.memory.content for r in got)
        assert all("kite" in r.memory.content for r in got[:5])  # the memories with both rare words lead
        # counts are kept until the store grows by a quarter
        assert p.term_counts.count(p.db._conn, '"chess"') == 20
        await p.add_many([Memory(f"chess game {i}", user_id="u") for i in range(200)])
        p.term_counts.rows(p.db._conn)
        assert p.term_counts.count(p.db._conn, '"chess"') == 20  # 1,200 rows: kept
        await p.add_many([Memory(f"chess game {i}", user_id="u") for i in range(100)])
        p.term_counts.rows(p.db._conn)
        assert p.term_counts.count(p.db._conn, '"chess"') == 320


def test_vector_index_drops_the_users_searched_least_recently() -> None:
    index = VectorIndex(4, ann_threshold=0, max_vectors=25)
    vec = np.array([1, 0, 0, 0], np.float32)

    def load(user: str, n: int) -> None:
        index.load_arrays(user, np.arange(1, n + 1, dtype=np.int64), np.tile(vec, (n, 1)))

    load("a", 10)
    load("b", 10)
    assert index.knn("a", vec, 1)  # "a" is now the most recently searched
    load("c", 10)  # 30 > 25: "b" goes
    assert [index.loaded(u) for u in "abc"] == [True, False, True]
    assert len(index) == 20
    load("big", 40)  # alone over the bound: kept, every other user dropped
    assert [index.loaded(u) for u in ("a", "c", "big")] == [False, False, True]
    unbounded = VectorIndex(4, ann_threshold=0)
    for user in "xyz":
        unbounded.load_arrays(user, np.arange(1, 101, dtype=np.int64), np.tile(vec, (100, 1)))
    assert len(unbounded) == 300


async def test_bounded_index_searches_like_an_unbounded_one(tmp_path: Path) -> None:
    embedder = HashingEmbedder(32)
    async with NativeProvider(tmp_path / "m.db", embedder=embedder, search=SearchConfig(index_max_vectors=50)) as p, \
            NativeProvider(tmp_path / "m.db", embedder=embedder) as whole:
        for user in ("a", "b", "c"):
            await p.add_many([Memory(t, user_id=user) for t in texts(40, ord(user))])
        for query in ("cello drums", "river garden", "chess pottery sailing"):
            for user in ("a", "b", "c", "a"):
                got = [r.memory.id for r in await p.search(query, user_id=user, limit=10)]
                assert got == [r.memory.id for r in await whole.search(query, user_id=user, limit=10)]
                index = p.vectors.index
                assert index is not None and index.loaded(user) and len(index) <= 50


async def test_ann_graph_is_saved_and_restored_with_the_changes_made_meanwhile(tmp_path: Path) -> None:
    if not ann.available():  # not importorskip: usearch must load after onnxruntime (see ann's docstring)
        pytest.skip("usearch is not installed")
    embedder = HashingEmbedder(64)
    cfg = SearchConfig(fusion="vector", ann_threshold=100)
    async with NativeProvider(tmp_path / "m.db", embedder=embedder, search=cfg) as p:
        added = await p.add_many([Memory(t, user_id="u") for t in texts(400, 1)])
        await p.search("cello", user_id="u")
        index = p.vectors.index
        assert index is not None and index.wait_for_ann("u", timeout=60)
        saved = index.ann_path("u")
        assert saved is not None and saved.is_file() and saved.parent == tmp_path / "m.db.ann"
        assert saved.stat().st_mode & 0o077 == 0
        assert not index._users["u"].ann_restored
    # another process writes meanwhile: 30 added, 10 forgotten (soft: their vectors stay)
    async with NativeProvider(tmp_path / "m.db", embedder=embedder, vector_index=False) as other:
        fresh = await other.add_many([Memory(t, user_id="u") for t in texts(30, 2)])
        for m in added[:10]:
            await other.delete(m.id, user_id="u")
    async with NativeProvider(tmp_path / "m.db", embedder=embedder, search=cfg) as p:
        await p.search("cello", user_id="u")
        index = p.vectors.index
        assert index is not None and index.wait_for_ann("u", timeout=60)
        users = index._users["u"]
        assert users.ann_restored and users.ann is not None
        assert sorted(users.ann.keys().tolist()) == sorted(users.rowids[users.rowids >= 0].tolist())
        got = await p.search(fresh[0].content, user_id="u", limit=5)
        assert got[0].memory.id == fresh[0].id
        assert not {m.id for m in added[:10]} & {r.memory.id for r in await p.search("cello", user_id="u", limit=50)}
        # a hard delete or a content edit drops the saved graph (it must not keep the old vector)
        assert saved.is_file()
        await p.delete(added[20].id, user_id="u", hard=True)
        assert not saved.exists()
        # a re-embed drops the saved graphs (they hold the old vectors)
        await p.reembed()
        assert not (tmp_path / "m.db.ann").exists()


def test_restored_graph_drops_rowids_gone_and_adds_new_ones(tmp_path: Path) -> None:
    if not ann.available():
        pytest.skip("usearch is not installed")
    from dexai_memory.providers.native.vectors import _UserVectors

    rng = np.random.default_rng(5)
    vecs = rng.standard_normal((230, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    saved = tmp_path / "g.usearch"
    graph = ann.AnnIndex(16)
    graph.add(np.arange(1, 201), vecs[:200])
    graph.save(saved)
    # rows 151-200 are gone, 201-220 are new: 70 changes of 170, under a quarter would rebuild
    live = np.r_[np.arange(1, 151), np.arange(201, 221)]
    users = _UserVectors(16, live, vecs[live - 1])
    users.build_ann(16, saved)
    assert users.ann is not None
    assert not users.ann_restored  # over a quarter changed: built afresh
    users = _UserVectors(16, np.arange(1, 196), vecs[:195])  # 5 gone of 200
    graph.save(saved)
    users.build_ann(16, saved)
    assert users.ann_restored and users.ann is not None
    assert sorted(users.ann.keys().tolist()) == list(range(1, 196))
    found = users.ann_knn(vecs[10], 5)
    assert found is not None and found[0][0] == 11
