"""Auto-recall decisions, relevance, visibility, caps; recall_block budget mode; the L1 block."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from dexai_memory.config import Settings, load_settings
from dexai_memory.embeddings import Embedder
from dexai_memory.models import Memory, MemoryType, SearchResult, utcnow
from dexai_memory.providers.native import NativeProvider
from dexai_memory.recall.ranking import (
    VisibleContext,
    auto_recall,
    content_terms,
    lexical_relevance,
    needs_recall,
    rank,
    recall_block,
    semantic_relevance,
)
from dexai_memory.recall.reinjection import l1_block
from dexai_memory.text.tokens import count_tokens

RECENT = ["Let's refactor the parser module today.", "Sure, starting with the tokenizer in parser.py."]

FACTS = [
    ("User's dog is named Rex", ("D1:1",)),
    ("User prefers dark mode in every editor", ("D1:2",)),
    ("The billing service uses Postgres 16", ("D2:1",)),
    ("User is allergic to peanuts", ("D2:2",)),
    ("Caroline went to the LGBTQ support group on 7 May 2023", ("D3:1",)),
]


@pytest.mark.parametrize(
    ("prompt", "recent", "expected"),
    [
        pytest.param("hello there", [], (True, "cold start"), id="cold-start"),
        pytest.param("ok", RECENT, (False, "continuation"), id="ack"),
        pytest.param("continue", RECENT, (False, "continuation"), id="continue"),
        pytest.param("what did we decide about my deploy script?", RECENT, (True, "personal reference"),
                     id="personal"),
        pytest.param("also check how Kubernetes handles this", RECENT, (True, "new entity"), id="new-entity"),
        pytest.param("now rename the tokenizer function in the parser", RECENT, (False, "continuation"),
                     id="on-topic"),
        pytest.param("book flights hotel rental car vacation", RECENT, (True, "topic shift"), id="topic-shift"),
        pytest.param("   ", RECENT, (False, "empty prompt"), id="empty"),
    ],
)
def test_needs_recall(prompt: str, recent: list[str], expected: tuple[bool, str]) -> None:
    assert needs_recall(prompt, recent) == expected


def test_skip_on_continuation_off_always_searches() -> None:
    assert needs_recall("ok", RECENT, skip_on_continuation=False) == (True, "always")


def test_relevance_scales() -> None:
    assert semantic_relevance(0.1) == 0.0 and semantic_relevance(0.5) == 1.0
    assert semantic_relevance(None) == 0.0
    assert lexical_relevance(content_terms("dog names"), "User's dog is named Rex") == 1.0
    assert lexical_relevance(content_terms("dog name"), "Totally unrelated sentence") == 0.0


def test_rank_prefers_relevant_then_important() -> None:
    a = Memory(content="The cat sleeps", user_id="u", importance=9)
    b = Memory(content="The dog is named Rex", user_id="u", importance=2)
    ranked = rank([SearchResult(a, 1.0, 1), SearchResult(b, 0.9, 2)], "dog named")
    assert ranked[0].memory is b and ranked[0].relevance == 1.0 and ranked[1].relevance == 0.0


def test_visible_context_detects_repeats() -> None:
    m = Memory(content="The billing service uses Postgres 16", user_id="u")
    assert VisibleContext(["fyi: the billing service uses Postgres 16!"]).holds(m)
    assert not VisibleContext(["we talk about something else"]).holds(m)
    assert VisibleContext([], exclude_ids=[m.id]).holds(m)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return load_settings(home=tmp_path / "home")


@pytest.fixture
async def store(tmp_path: Path, embedder: Embedder) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(tmp_path / "memory.db", embedder=embedder) as p:
        for content, sources in FACTS:
            await p.add(Memory(content=content, user_id="u", source_ids=sources))
        await p.add(Memory(content="Other user's dog is named Fido", user_id="someone-else"))
        yield p


async def test_auto_recall_finds_relevant_memory(store: NativeProvider, settings: Settings) -> None:
    r = await auto_recall(store, "u", "what's my dog called?", [], settings)
    assert r.skipped_reason is None and r.reason == "cold start"
    assert [m.memory.content for m in r.memories] == ["User's dog is named Rex"]
    assert "User's dog is named Rex" in r.text and "Fido" not in r.text
    assert r.tokens == count_tokens(r.text) <= settings.auto_recall.max_tokens


async def test_auto_recall_drops_irrelevant(store: NativeProvider, settings: Settings) -> None:
    r = await auto_recall(store, "u", "fix the typo on line 3 please", [], settings)
    assert r.text == "" and r.memories == () and r.skipped_reason == "below threshold"


async def test_auto_recall_skips_continuation(store: NativeProvider, settings: Settings) -> None:
    r = await auto_recall(store, "u", "ok", RECENT, settings)
    assert r.text == "" and r.skipped_reason == "continuation"


async def test_auto_recall_drops_what_is_visible(store: NativeProvider, settings: Settings) -> None:
    recent = ["Remember the billing service uses Postgres 16.", "Noted."]
    r = await auto_recall(store, "u", "which database does my billing service use?", recent, settings)
    assert all("Postgres" not in m.memory.content for m in r.memories)
    assert r.skipped_reason in (None, "already visible")


async def test_auto_recall_respects_max_memories_and_tokens(tmp_path: Path, embedder: Embedder,
                                                           settings: Settings) -> None:
    async with NativeProvider(tmp_path / "many.db", embedder=embedder) as p:
        for i in range(30):
            await p.add(Memory(content=f"My garden project note {i}: water the garden tomatoes every morning "
                                       f"and check the garden soil moisture sensor number {i}", user_id="u"))
        r = await auto_recall(p, "u", "what are my garden notes about tomatoes?", [], settings, max_memories=5)
        assert len(r.memories) == 5
        assert r.tokens <= settings.auto_recall.max_tokens
        big = await recall_block(p, "u", "what are my garden notes about tomatoes?", settings)
        assert len(big.memories) > 5 and big.tokens <= settings.auto_recall.max_tokens
        # by default the hook's recall is the same budget-mode block (the token budget binds first),
        # each line with the day it was said
        full = await auto_recall(p, "u", "what are my garden notes about tomatoes?", [], settings)
        dated = await recall_block(p, "u", "what are my garden notes about tomatoes?", settings, said=True)
        assert full.memory_ids == dated.memory_ids and full.text == dated.text
        assert all(line.endswith(")") and "(said 20" in line for line in full.text.splitlines() if line.startswith("- "))
        assert [m.memory.id for m in big.memories] == [m.id for m in big.block.memories]
        for m in big.memories:
            assert m.memory.content in big.text
        small = await recall_block(p, "u", "garden tomatoes", settings, max_tokens=120)
        assert small.tokens <= 120 and 0 < len(small.memories) < len(big.memories)


async def test_auto_recall_disabled(store: NativeProvider, tmp_path: Path) -> None:
    cfg = tmp_path / "off.yaml"
    cfg.write_text("auto_recall:\n  enabled: false\n")
    r = await auto_recall(store, "u", "what's my dog called?", [], load_settings(cfg, home=tmp_path))
    assert r.skipped_reason == "disabled" and r.text == ""


async def test_recall_block_json_shape(store: NativeProvider, settings: Settings) -> None:
    r = await recall_block(store, "u", "When did Caroline go to the support group?", settings)
    data = r.to_json("When did Caroline go to the support group?", id=7)
    assert set(data) == {"id", "query", "text", "tokens", "memories", "latency_ms"}
    assert data["memories"][0]["source_ids"] == ["D3:1"]
    assert set(data["memories"][0]) == {"id", "content", "source_ids", "score"}


async def test_l1_block_has_profile_commitments_and_session(store: NativeProvider, settings: Settings) -> None:
    await store.add(Memory(content="Prefers bullet points", user_id="u", type=MemoryType.PREFERENCE, importance=8))
    due = (utcnow() + timedelta(days=2)).isoformat()
    await store.add(Memory(content="Send Sarah the mockups", user_id="u", type=MemoryType.COMMITMENT,
                           metadata={"commitment": {"what": "Send Sarah the mockups", "due_at": due}}))
    await store.add(Memory(content="Current task: refactor parser", user_id="u", type=MemoryType.SNAPSHOT,
                           session_id="s1"))
    block = await l1_block(store, "u", settings, query="what's my dog called?", session_id="s1")
    # a strong preference opens the block in the persistent context (not repeated in the profile)
    assert block.section("persistent")[0].content == "Prefers bullet points"
    assert "Prefers bullet points" not in [m.content for m in block.section("profile")]
    assert [m.content for m in block.section("relevant")] == ["User's dog is named Rex"]
    assert block.section("commitments")[0].content == "Send Sarah the mockups"
    assert "in 2 days" in block.text
    assert block.section("session")[0].content == "Current task: refactor parser"
    assert block.tokens <= 1000 + 30 + settings.persistent_context.max_tokens


async def test_recall_shows_raw_turns_but_not_backup_records_or_episodes(tmp_path: Path, embedder: Embedder,
                                                                         settings: Settings) -> None:
    from dexai_memory.models import Tier

    async with NativeProvider(tmp_path / "kinds.db", embedder=embedder) as p:
        turn = await p.add(Memory(content="User: the release checklist lives in docs/release.md", user_id="u",
                                  type=MemoryType.TRANSCRIPT, tier=Tier.L3, source_ids=("s1:user:1",)))
        backup = await p.add(Memory(content="Transcript of session s1 before manual compaction: "
                                            "/tmp/transcripts/release-checklist.jsonl", user_id="u",
                                    type=MemoryType.TRANSCRIPT, tier=Tier.L3, metadata={"path": "/tmp/x"}))
        episode = await p.add(Memory(content="Session: wrote the release checklist", user_id="u",
                                     type=MemoryType.EPISODE))
        r = await auto_recall(p, "u", "where is the release checklist?", [], settings)
        assert turn.id in r.memory_ids
        assert backup.id not in r.memory_ids and episode.id not in r.memory_ids
