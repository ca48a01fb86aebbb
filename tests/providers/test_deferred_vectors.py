"""Deferred vectors: bulk ingest stores memories first and embeds them later (``fill_vectors``)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from dexai_memory.capture.gate import Gate
from dexai_memory.cli.ingest import resolve_vectors
from dexai_memory.cli.main import cli
from dexai_memory.config import load_settings
from dexai_memory.daemon import MemoryDaemon
from dexai_memory.embeddings import BulkMiniLMEmbedder, Embedder, HashingEmbedder, bulk_embedder
from dexai_memory.models import Memory, SearchFilters, Turn
from dexai_memory.pipeline import Pipeline
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.rules import OfflineClassifier
from tests.pipeline_fakes import EchoExtractor, JoinSummarizer

TEXTS = ["Caroline went to a support group", "Melanie paints sunsets over the lake",
         "Caroline adopted a dog named Max", "Melanie ran a charity race for mental health"]


@pytest.fixture
async def provider(tmp_path: Path) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(tmp_path / "memory.db", embedder=HashingEmbedder(64)) as p:
        yield p


def vector_only(p: NativeProvider) -> None:
    p.search_config = dataclasses.replace(p.search_config, fusion="vector")


async def test_deferred_writes_are_keyword_searchable_then_filled(provider: NativeProvider) -> None:
    async with provider.deferred_vectors():
        await provider.add_many([Memory(t, user_id="u") for t in TEXTS])
        await provider.add(Memory("Sam likes green tea", user_id="u"))
    assert await provider.pending_vectors() == 5
    assert (await provider.search("support group", user_id="u"))[0].memory.content == TEXTS[0]  # BM25 at once
    vector_only(provider)
    assert await provider.search("support group", user_id="u") == []  # no vectors yet
    assert (await provider.health_check()).details["vectors_pending"] == 5
    seen: list[int] = []
    assert await provider.fill_vectors(progress=seen.append, batch=2, limit=3) == 3
    assert seen == [2, 1] and await provider.pending_vectors() == 2
    assert await provider.fill_vectors() == 2 and await provider.pending_vectors() == 0
    hits = await provider.search("support group", user_id="u")
    assert hits[0].memory.content == TEXTS[0] and hits[0].vector_rank == 1
    # outside the block writes embed as usual
    await provider.add(Memory("Sam drives a red van", user_id="u"))
    assert await provider.pending_vectors() == 0


async def test_hard_delete_and_reembed_clear_pending(provider: NativeProvider) -> None:
    async with provider.deferred_vectors():
        a, b = await provider.add_many([Memory(t, user_id="u") for t in TEXTS[:2]])
    assert await provider.delete(a.id, user_id="u", hard=True)
    assert await provider.pending_vectors() == 1
    assert await provider.reembed() == 1
    assert await provider.pending_vectors() == 0


async def test_pending_vectors_survive_a_restart(tmp_path: Path) -> None:
    async with NativeProvider(tmp_path / "m.db", embedder=HashingEmbedder(64)) as p:
        async with p.deferred_vectors():
            await p.add(Memory(TEXTS[0], user_id="u"))
    async with NativeProvider(tmp_path / "m.db", embedder=HashingEmbedder(64)) as p:
        assert await p.pending_vectors() == 1
        assert await p.fill_vectors() == 1


async def test_ingest_later_stores_the_same_and_fills(provider: NativeProvider, tmp_path: Path) -> None:
    settings = load_settings()
    turns = [Turn(id=f"t{i}", user_id="u", content=t) for i, t in enumerate(TEXTS)]
    later = await Pipeline(provider, settings, extractor=EchoExtractor(), gate=Gate(0.0)).ingest(
        turns, user_id="u", vectors="later")
    async with NativeProvider(tmp_path / "now.db", embedder=HashingEmbedder(64)) as other:
        now = await Pipeline(other, settings, extractor=EchoExtractor(), gate=Gate(0.0)).ingest(
            turns, user_id="u", vectors="now")
        assert await other.pending_vectors() == 0
    assert later.to_dict() == now.to_dict()
    assert await provider.pending_vectors() == 8  # 4 notes + 4 transcripts (search.embed_transcripts)
    await provider.fill_vectors()
    vector_only(provider)
    hits = await provider.search("dog named Max", user_id="u", filters=SearchFilters(valid_only=True))
    assert hits and hits[0].memory.content == TEXTS[2]
    with pytest.raises(ValueError, match="vectors"):
        await Pipeline(provider, settings).ingest(turns, user_id="u", vectors="sometime")


async def test_daemon_job_fills_pending_vectors(provider: NativeProvider, isolated_home: Path) -> None:
    s = load_settings()
    fast = dataclasses.replace(s, daemon=dataclasses.replace(s.daemon, vector_fill_interval_seconds=0.2,
                                                             vector_fill_batch=100))
    async with provider.deferred_vectors():
        await provider.add_many([Memory(f"{t} ({i})", user_id="u") for i in range(30) for t in TEXTS])
    assert await provider.pending_vectors() == 120
    async with MemoryDaemon(fast, provider, extractor=EchoExtractor(), classifier=OfflineClassifier(),
                            summarizer=JoinSummarizer()) as d:
        assert "vectors" in d.next_runs()
        for _ in range(100):
            if await provider.pending_vectors() == 0 and d.runs["vectors"] >= 2:
                break
            await asyncio.sleep(0.1)
        assert d.runs["vectors"] >= 2  # 100 per run: two runs for 120
    assert await provider.pending_vectors() == 0


def test_auto_resolves_by_file_size() -> None:
    assert resolve_vectors("auto", 1000, 1000) == "now"
    assert resolve_vectors("auto", 1001, 1000) == "later"
    assert resolve_vectors("now", 10**6, 1000) == "now" and resolve_vectors("later", 1, 1000) == "later"


def test_cli_ingest_later_then_reembed_missing(tmp_path: Path, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    path = tmp_path / "conv.jsonl"
    path.write_text("".join(json.dumps({"id": f"D1:{i}", "role": "user", "speaker": "Caroline", "content": t}) + "\n"
                            for i, t in enumerate(TEXTS)), encoding="utf-8")
    runner = CliRunner()
    out = runner.invoke(cli, ["memory", "ingest", str(path), "--user", "c", "--vectors", "later", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["vectors"] == "later" and data["vectors_pending"] == data["added"] + data["archived"] > 0
    text = runner.invoke(cli, ["memory", "stats", "--user", "c"])
    assert f"{data['vectors_pending']} memories wait for vectors" in text.output
    filled = runner.invoke(cli, ["memory", "reembed", "--missing", "--json"])
    assert filled.exit_code == 0, filled.output
    assert json.loads(filled.output) == {"reembedded": data["vectors_pending"], "missing_only": True}
    stats = json.loads(runner.invoke(cli, ["memory", "stats", "--user", "c", "--json"]).output)
    assert stats["database"]["vectors_pending"] == 0
    # a small file with --vectors auto embeds at once
    path2 = tmp_path / "more.jsonl"
    path2.write_text(json.dumps({"id": "x", "role": "user", "content": "Caroline moved to Denver"}) + "\n",
                     encoding="utf-8")
    small = json.loads(runner.invoke(cli, ["memory", "ingest", str(path2), "--user", "c", "--json"]).output)
    assert small["vectors"] == "now" and small["vectors_pending"] == 0


def test_cli_ingest_now_on_a_big_file_stores_first_then_embeds(tmp_path: Path, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  ingest_now_max_turns: 2\n", encoding="utf-8")
    path = tmp_path / "conv.jsonl"
    path.write_text("".join(json.dumps({"id": f"D1:{i}", "role": "user", "content": t}) + "\n"
                            for i, t in enumerate(TEXTS)), encoding="utf-8")
    runner = CliRunner()
    auto = json.loads(runner.invoke(cli, ["memory", "ingest", str(path), "--user", "a", "--json"]).output)
    assert auto["vectors"] == "later" and auto["vectors_pending"] > 0
    now = json.loads(runner.invoke(cli, ["memory", "ingest", str(path), "--user", "b", "--vectors", "now",
                                         "--json"]).output)
    # the pipeline ran with vectors deferred, then the command embedded them all (user a's too)
    assert now["vectors"] == "now" and now["vectors_pending"] == 0 and now["vector_seconds"] > 0


async def test_fill_with_another_embedder_of_the_same_model_only(provider: NativeProvider) -> None:
    from dexai_memory.errors import StorageError

    async with provider.deferred_vectors():
        await provider.add(Memory(TEXTS[0], user_id="u"))
    with pytest.raises(StorageError, match="not the store's model"):
        await provider.fill_vectors(embedder=HashingEmbedder(32))
    assert await provider.fill_vectors(embedder=HashingEmbedder(64)) == 1


async def test_content_edit_inside_the_block_is_queued_too(provider: NativeProvider) -> None:
    m = await provider.add(Memory(TEXTS[0], user_id="u"))  # embedded at once
    async with provider.deferred_vectors():
        await provider.update(m.id, user_id="u", content="Caroline went to a support group on 7 May 2023")
        await provider.update(m.id, user_id="u", mention_count=2)  # no content change: nothing to embed
    assert await provider.pending_vectors() == 1
    await provider.fill_vectors()
    vector_only(provider)
    assert (await provider.search("support group in May", user_id="u"))[0].memory.id == m.id


def test_cli_import_later_then_now(tmp_path: Path, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    dump = tmp_path / "dump.jsonl"
    dump.write_text("".join(json.dumps({"content": t, "user_id": "c"}) + "\n" for t in TEXTS), encoding="utf-8")
    runner = CliRunner()
    later = json.loads(runner.invoke(cli, ["memory", "import", str(dump), "--vectors", "later", "--json"]).output)
    assert later == {"imported": 4, "skipped": 0, "conflicts": [], "vectors": "later", "vectors_pending": 4}
    found = json.loads(runner.invoke(cli, ["memory", "search", "dog named Max", "--user", "c", "--json"]).output)
    assert found and "dog named Max" in json.dumps(found)  # keyword search before any vector exists
    dump.write_text(json.dumps({"content": "Sam drives a red van", "user_id": "c"}) + "\n", encoding="utf-8")
    now = json.loads(runner.invoke(cli, ["memory", "import", str(dump), "--json"]).output)
    # a small file embeds at once; it also catches up the ones left waiting
    assert now == {"imported": 1, "skipped": 0, "conflicts": [], "vectors": "now", "vectors_pending": 0}


async def test_daemon_fills_with_the_bulk_model(tmp_path: Path, isolated_home: Path, embedder: Embedder) -> None:
    """With ``embedding.bulk_model: int8`` and the exact MiniLM in the provider, the daemon's deferred
    vectors come from the int8 bulk model, on the daemon's own threads, and exact queries find them."""
    s = load_settings()
    s = dataclasses.replace(s, embedding=dataclasses.replace(s.embedding, bulk_model="int8"))
    fast = dataclasses.replace(s, daemon=dataclasses.replace(s.daemon, vector_fill_interval_seconds=0.2))
    async with NativeProvider(tmp_path / "memory.db", embedder=embedder) as p:
        async with p.deferred_vectors():
            await p.add_many([Memory(t, user_id="u") for t in TEXTS])
        async with MemoryDaemon(fast, p, extractor=EchoExtractor(), classifier=OfflineClassifier(),
                                summarizer=JoinSummarizer()) as d:
            for _ in range(300):
                if await p.pending_vectors() == 0 and d.runs["vectors"] >= 1:
                    break
                await asyncio.sleep(0.1)
        assert await p.pending_vectors() == 0
        bulk = bulk_embedder(s.embedding, threads=s.embedding.threads)
        assert isinstance(bulk, BulkMiniLMEmbedder) and bulk.quantized is True
        vector_only(p)
        found = await p.search("a pet dog", user_id="u", limit=1)
        assert found and found[0].memory.content == "Caroline adopted a dog named Max"
