"""Consolidation and retention cleanup on a database with aged rows."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from dexai_memory.config import Settings, load_settings
from dexai_memory.consolidation import cleanup, consolidate, known_users, word_overlap
from dexai_memory.embeddings import Embedder
from dexai_memory.models import Memory, MemoryType, SearchFilters, Tier, utcnow
from dexai_memory.providers import history as timeline
from dexai_memory.providers.native import NativeProvider
from tests.pipeline_fakes import JoinSummarizer


def aged(content: str, days: float, **kw: object) -> Memory:
    when = utcnow() - timedelta(days=days)
    return Memory(content=content, user_id="u", created_at=when, **kw)  # type: ignore[arg-type]


def with_consolidation(settings: Settings, **changes: object) -> Settings:
    return dataclasses.replace(settings, consolidation=dataclasses.replace(settings.consolidation, **changes))


@pytest.fixture
async def bm25_provider(tmp_path: Path) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(tmp_path / "memory.db", embedder=None) as p:
        yield p


HIKES = [
    "Caroline went hiking in the Rocky Mountains in June",
    "Caroline went hiking in the Rocky Mountains in July",
    "Caroline went hiking in the Rocky Mountains with Mel",
]


async def test_consolidate_by_word_overlap(bm25_provider: NativeProvider) -> None:
    p = bm25_provider
    settings = with_consolidation(load_settings(), cluster_similarity=0.7, min_cluster_size=3, min_age_days=7)
    old = [await p.add(aged(c, 30 + i, source_ids=(f"D{i}:1",))) for i, c in enumerate(HIKES)]
    await p.add(aged("Caroline went hiking in the Rocky Mountains in May", 30, pinned=True))  # pinned: untouched
    await p.add(aged("Caroline went hiking in the Rocky Mountains in August", 2))  # too recent
    await p.add(aged("Melanie paints sunsets by the lake", 40))
    await p.add(aged("Caroline went hiking in the Rocky Mountains twice", 50, type=MemoryType.COMMITMENT))

    dry = await consolidate(p, "u", settings, None, dry_run=True)
    assert dry.method == "word-overlap" and dry.candidates == 4
    assert [sorted(c.member_ids) for c in dry.clusters] == [sorted(m.id for m in old)]
    assert all(m.is_valid for m in await p.list(user_id="u"))  # dry run wrote nothing

    summarizer = JoinSummarizer()
    ticks: list[int] = []
    report = await consolidate(p, "u", settings, summarizer, progress=ticks.append)
    assert report.superseded == 3 and ticks == [1] and sorted(summarizer.calls[0]) == sorted(HIKES)
    abstract = await p.get(report.clusters[0].abstract_id or "", user_id="u")
    assert abstract.tier is Tier.L3 and abstract.type is MemoryType.INSIGHT
    assert set(abstract.source_ids) == {"D0:1", "D1:1", "D2:1"}  # every source id kept
    for m in old:
        after = await p.get(m.id, user_id="u")
        assert after.superseded_by == abstract.id and not after.is_valid  # superseded, not deleted
        history = await timeline.history(p, m.id, user_id="u")
        assert any(e.action == "CONSOLIDATED" and "similar" in e.reason for h in history for e in h.events)
    valid = {m.content for m in await p.list(user_id="u")}
    assert "Caroline went hiking in the Rocky Mountains in May" in valid  # the pinned one
    assert "Caroline went hiking in the Rocky Mountains in August" in valid  # the recent one
    # nothing left to merge the second time
    assert (await consolidate(p, "u", settings, summarizer)).clusters == []
    assert await known_users(p) == ["u"]


async def test_consolidate_by_embedding(tmp_path: Path, embedder: Embedder) -> None:
    settings = with_consolidation(load_settings(), cluster_similarity=0.8, min_cluster_size=2)
    async with NativeProvider(tmp_path / "memory.db", embedder=embedder) as p:
        a = await p.add(aged("Sam prefers dark mode in the code editor", 20))
        b = await p.add(aged("Sam likes dark mode in his code editor", 21))
        await p.add(aged("The quarterly tax report is due in April", 22))
        report = await consolidate(p, "u", settings, JoinSummarizer())
        assert report.method == "embedding"
        assert [sorted(c.member_ids) for c in report.clusters] == [sorted([a.id, b.id])]
        assert report.clusters[0].min_similarity >= 0.8


def test_word_overlap() -> None:
    assert word_overlap("Caroline likes tea", "caroline likes tea a lot") == 1.0
    assert word_overlap("", "anything") == 0.0


async def test_cleanup_by_retention(bm25_provider: NativeProvider) -> None:
    p = bm25_provider
    settings = load_settings()
    rows = {
        "old_event": aged("Went to the concert", 100, type=MemoryType.EVENT),
        "new_event": aged("Went to the museum", 10, type=MemoryType.EVENT),
        "old_task": aged("Fix the bike", 40, type=MemoryType.TASK),
        "old_fact": aged("Caroline is a counselor", 1000, type=MemoryType.FACT),
        "pinned_event": aged("Wedding day", 400, type=MemoryType.EVENT, pinned=True),
        "old_note": aged("Discussed the roadmap", 8, type=MemoryType.SESSION_NOTE),
        "old_snapshot": aged("Working on the parser", 8, type=MemoryType.SNAPSHOT),
        "new_snapshot": aged("Working on the lexer", 1, type=MemoryType.SNAPSHOT),
    }
    for m in rows.values():
        await p.add(m)
    expired = {"old_event", "old_task", "old_note", "old_snapshot"}

    dry = await cleanup(p, "u", settings, dry_run=True)
    assert {a.id for a in dry.archived} == {rows[k].id for k in expired}
    assert all(m.is_valid for m in [await p.get(r.id, user_id="u") for r in rows.values()])

    report = await cleanup(p, "u", settings)
    assert {a.id for a in report.archived} == {rows[k].id for k in expired}
    for key, m in rows.items():
        after = await p.get(m.id, user_id="u")
        if key in expired:
            assert after.archived and after.tier is Tier.L3 and not after.is_valid
            events = await p.events(m.id, user_id="u")
            assert events[-1].action == "ARCHIVED" and "retention" in events[-1].reason
        else:
            assert after.is_valid and not after.archived and after.tier is m.tier
    assert (await p.get(rows["pinned_event"].id, user_id="u")).pinned
    assert (await cleanup(p, "u", settings)).archived == []
    archived = await p.list(user_id="u", filters=SearchFilters(include_archived=True, valid_only=False,
                                                               tiers=(Tier.L3,)))
    assert len(archived) == 4
