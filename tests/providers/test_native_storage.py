"""Native SQLite store specifics: migrations, backups, corrupt files, bulk import, BM25-only mode."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from dexai_memory.config import SearchConfig
from dexai_memory.embeddings import Embedder, HashingEmbedder
from dexai_memory.errors import DatabaseCorrupt
from dexai_memory.models import Memory, MemoryType, SearchFilters
from dexai_memory.providers.native import migrations
from dexai_memory.providers.native.provider import NativeProvider
from dexai_memory.providers.native.schema import fts_query


def make_v1_database(path: Path) -> None:
    """A database as version 1 of the schema left it, with one memory."""
    conn = sqlite3.connect(path, isolation_level=None)
    migrations.current_version(conn)
    conn.executescript("BEGIN;\n" + migrations.m001_initial() +
                       "\nINSERT INTO schema_migrations VALUES (1, 'm001_initial', '2025-01-01');\nCOMMIT;")
    conn.execute(
        "INSERT INTO memories (id, user_id, content, type, created_at, valid_from) VALUES (?, ?, ?, ?, ?, ?)",
        ("m_old", "sam", "Sam has a dog named Rex", "FACT", "2025-01-01T00:00:00.000000Z", "2025-01-01T00:00:00.000000Z"),
    )
    conn.close()


async def test_migrates_old_database_with_backup(tmp_path: Path, embedder: Embedder) -> None:
    db = tmp_path / "memory.db"
    make_v1_database(db)
    async with NativeProvider(db, embedder=embedder) as p:
        assert p.backup_path is not None and p.backup_path.exists()
        assert (await p.get("m_old", user_id="sam")).content == "Sam has a dog named Rex"
        assert (await p.health_check()).details["schema_version"] == max(m[0] for m in migrations.MIGRATIONS)
        assert [r.memory.id for r in await p.search("dog Rex", user_id="sam")] == ["m_old"]
    backup = sqlite3.connect(p.backup_path)
    assert backup.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == 1
    assert backup.execute("SELECT content FROM memories").fetchone()[0] == "Sam has a dog named Rex"


async def test_new_database_needs_no_backup(tmp_path: Path) -> None:
    async with NativeProvider(tmp_path / "memory.db") as p:
        assert p.backup_path is None
    assert [f.name for f in tmp_path.iterdir() if ".bak" in f.name] == []


async def test_failed_migration_rolls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "memory.db"
    make_v1_database(db)

    def m999_broken() -> str:
        return "CREATE TABLE half_done (x INTEGER); INSERT INTO no_such_table VALUES (1);"

    latest = migrations.MIGRATIONS[-1][0]
    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, (999, "m999_broken", m999_broken)])
    with pytest.raises(migrations.MigrationError, match="m999_broken"):
        async with NativeProvider(db):
            pass
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'half_done'").fetchone() is None
    # every real migration before the broken one landed
    assert conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == latest


@pytest.mark.parametrize("garbage", [b"this is not a database at all" * 10, b"\x00\xff" * 4096],
                         ids=["text-file", "binary-noise"])
async def test_corrupt_file_is_reported_and_untouched(tmp_path: Path, garbage: bytes) -> None:
    db = tmp_path / "memory.db"
    db.write_bytes(garbage)
    with pytest.raises(DatabaseCorrupt, match="left untouched"):
        async with NativeProvider(db):
            pass
    assert db.read_bytes() == garbage
    assert sorted(f.name for f in tmp_path.iterdir()) == ["memory.db"]


async def test_truncated_sqlite_file_is_reported(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with NativeProvider(db) as p:
        await p.add(Memory("x" * 50, user_id="u"))
    data = db.read_bytes()
    db.write_bytes(data[:100] + b"\x00" * 50 + data[150:2000])
    before = db.read_bytes()
    with pytest.raises(DatabaseCorrupt):
        async with NativeProvider(db):
            pass
    assert db.read_bytes() == before


async def test_bm25_only_without_embedder(tmp_path: Path) -> None:
    async with NativeProvider(tmp_path / "m.db", embedder=None) as p:
        await p.add(Memory("Ana plays the cello on Sundays", user_id="u"))
        await p.add(Memory("Ben repairs bicycles", user_id="u"))
        res = await p.search("who plays cello?", user_id="u")
        assert [r.memory.content for r in res] == ["Ana plays the cello on Sundays"]
        assert res[0].vector_rank is None and res[0].bm25_rank == 1


async def test_embedder_change_disables_vectors_until_reembed(tmp_path: Path, embedder: Embedder) -> None:
    db = tmp_path / "m.db"
    async with NativeProvider(db, embedder=embedder) as p:
        await p.add(Memory("Ana plays the cello", user_id="u"))
    async with NativeProvider(db, embedder=HashingEmbedder(32)) as p:
        status = await p.health_check()
        assert not status.healthy and "reembed" in status.problems[0]
        assert await p.reembed() == 1
        assert (await p.health_check()).healthy
        res = await p.search("cello", user_id="u")
        assert res[0].vector_rank == 1


async def test_add_many_bulk(tmp_path: Path, embedder: Embedder) -> None:
    seen: list[int] = []
    async with NativeProvider(tmp_path / "m.db", embedder=embedder, search=SearchConfig(candidates=20)) as p:
        mems = [Memory(f"Bulk memory number {i} about topic {i % 7}", user_id="u", type=MemoryType.EVENT)
                for i in range(1200)]
        await p.add_many(mems, progress=seen.append)
        assert sum(seen) == 1200
        assert await p.count(user_id="u") == 1200
        res = await p.search("number 1199", user_id="u", limit=3)
        assert res[0].memory.content.startswith("Bulk memory number 1199")


async def test_search_excludes_transcripts_unless_asked(tmp_path: Path) -> None:
    async with NativeProvider(tmp_path / "m.db") as p:
        await p.add(Memory("Caroline: I love pottery", user_id="u", type=MemoryType.TRANSCRIPT, tier="L3"))
        assert await p.search("pottery", user_id="u") == []
        res = await p.search("pottery", user_id="u", filters=SearchFilters.make(types=["TRANSCRIPT"]))
        assert len(res) == 1


def test_fts_query_drops_stopwords_and_quotes_terms() -> None:
    assert fts_query("What did she do about the \"pottery\" class?") == '"pottery" OR "class"'
    assert fts_query("and the of") is None
    assert fts_query("AND OR NOT NEAR(xy)") == '"near" OR "xy"'


@pytest.mark.parametrize(("query", "found"), [
    ("Zürich café", {1}),                      # accents: the index folds them, the query's phrase too
    ("zurich", {1}),
    ("Who won?", {2}),                          # "won" is a word, "won't" a stop word
    ("rename user_id", {3}),                    # an identifier is the FTS5 phrase "user id"
    ("Caroline's co-founder", {2}),
], ids=["unicode", "folded", "won", "identifier", "possessive-compound"])
def test_fts_query_matches_the_index_tokenizer(query: str, found: set[int]) -> None:
    """The query words of :func:`fts_query` find what the ``porter unicode61`` index (unchanged
    since the first migration) holds: databases built before the one tokenizer search the same."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(content, tokenize='porter unicode61')")
    conn.executemany("INSERT INTO t(rowid, content) VALUES (?, ?)", [
        (1, "We met at a café in Zürich"), (2, "Caroline's co-founder won the award"),
        (3, "The user_id column moved to accounts")])
    match = fts_query(query)
    assert match is not None
    assert {r[0] for r in conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,))} == found


async def test_vector_index_matches_vec0_and_follows_writes(tmp_path: Path, embedder: Embedder) -> None:
    db = tmp_path / "m.db"
    texts = ["Ana plays the cello", "Ben repairs bicycles", "Caro bakes sourdough bread", "Dan climbs mountains"]
    async with NativeProvider(db, embedder=embedder, search=SearchConfig(fusion="vector")) as fast, \
            NativeProvider(db, embedder=embedder, search=SearchConfig(fusion="vector"), vector_index=False) as slow:
        mems = [await fast.add(Memory(t, user_id="u")) for t in texts]
        for query in ["music instrument", "bread", "outdoor sport"]:
            a = [r.memory.id for r in await fast.search(query, user_id="u", limit=4)]
            b = [r.memory.id for r in await slow.search(query, user_id="u", limit=4)]
            assert a == b
        # a write through another connection is seen (data_version changes)
        other = await slow.add(Memory("Eve plays the violin in an orchestra", user_id="u"))
        hits = [r.memory.id for r in await fast.search("violin orchestra", user_id="u", limit=1)]
        assert hits == [other.id]
        # own writes: update re-embeds, hard delete removes
        await fast.update(mems[1].id, user_id="u", content="Ben now plays the drums")
        assert (await fast.search("percussion drums", user_id="u", limit=1))[0].memory.id == mems[1].id
        await fast.delete(mems[0].id, user_id="u", hard=True)
        assert mems[0].id not in [r.memory.id for r in await fast.search("cello", user_id="u", limit=5)]
        # filters are applied to index hits
        res = await fast.search("music", user_id="u", filters=SearchFilters.make(types=["EVENT"]))
        assert res == []


async def test_a_store_before_ignore_count_gains_it_and_keeps_its_counts(tmp_path: Path) -> None:
    """Migration 7 adds ``ignore_count`` (0) to a store written before it (here: at migration 5); the other counts stay."""
    db = tmp_path / "memory.db"
    conn = sqlite3.connect(db, isolation_level=None)
    migrations.current_version(conn)
    for number, name, fn in migrations.MIGRATIONS:
        if number <= 5:
            conn.executescript(f"BEGIN;\n{fn()}\nINSERT INTO schema_migrations VALUES ({number}, '{name}', 'then');"
                               "\nCOMMIT;")
    conn.execute("INSERT INTO memories (id, user_id, content, type, created_at, valid_from, retrieval_count, "
                 "citation_count) VALUES ('m_old', 'sam', 'The orders service runs on port 8443', 'FACT', "
                 "'2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z', 4, 3)")
    conn.close()
    async with NativeProvider(db, embedder=None) as p:
        old = await p.get("m_old", user_id="sam")
        assert (old.retrieval_count, old.citation_count, old.ignore_count) == (4, 3, 0)
        await p.record_retrieval(["m_old"], user_id="sam", ignored=True)
        assert (await p.get("m_old", user_id="sam")).ignore_count == 1
