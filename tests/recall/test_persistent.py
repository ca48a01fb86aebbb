"""The persistent context (issue 14): categories, priorities, budgets, "+N more", goals, the
10,000-character cap, and the same section with and without a daemon."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from dexai_memory.config import Settings, load_settings
from dexai_memory.limits import CategoryLimits
from dexai_memory.models import Memory, MemoryType
from dexai_memory.providers.native import NativeProvider
from dexai_memory.recall.block import MAX_INJECTION_CHARS
from dexai_memory.recall.persistent import (
    SECTION_TITLE,
    TITLES,
    compose_persistent,
    persistent_category,
)
from dexai_memory.recall.reinjection import l1_block
from dexai_memory.text.tokens import count_tokens
from tests.hook_daemon import hook_block

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
U = "alice"


def mem(content: str, type: MemoryType = MemoryType.FACT, importance: int = 7, *, minutes: int = 0,
        category: str | None = None, confidence: float = 0.8, **kw: object) -> Memory:
    metadata = dict(kw.pop("metadata", {}) or {})  # type: ignore[call-overload]
    if category:
        metadata["category"] = category
    return Memory(content=content, user_id=U, type=type, importance=importance, confidence=confidence,
                  created_at=NOW - timedelta(minutes=minutes), metadata=metadata, **kw)  # type: ignore[arg-type]


def goal(content: str, minutes: int, status: str = "open") -> Memory:
    return mem(content, MemoryType.COMMITMENT, 7, minutes=minutes, category="goal",
               metadata={"commitment": {"what": content, "status": status}})


@pytest.mark.parametrize(("memory", "category"), [
    (mem("Always run make check before pushing", MemoryType.INSIGHT, category="instruction"), "instruction"),
    (mem("Never force-push to main", MemoryType.INSIGHT, category="warning"), "warning"),
    (goal("The user's goal is to ship v2", 0), "goal"),
    (goal("The user's goal is to ship v1", 0, status="done"), None),
    (mem("Prefers pytest", MemoryType.PREFERENCE), "preference"),
    (mem("The orders service runs on port 8443"), "project_fact"),
    (mem("We chose Postgres", category="decision"), "project_fact"),
    (mem("Priya is the user's manager", MemoryType.RELATIONSHIP), "person"),
    (mem("Lesson: flaky tests hide races", MemoryType.INSIGHT), "insight"),
    (mem("Send the report", MemoryType.COMMITMENT), None),
    (mem("Went hiking", MemoryType.EVENT), None),
], ids=lambda v: v if isinstance(v, str | type(None)) else v.content[:20])
def test_categories_map_types_and_tags(memory: Memory, category: str | None) -> None:
    assert persistent_category(memory) == category


def test_order_priority_confidence_and_more_lines() -> None:
    cfg = dataclasses.replace(Settings().persistent_context, warning=CategoryLimits(max_items=2, max_tokens=300))
    memories = [
        mem("Never deploy on Fridays", MemoryType.INSIGHT, 8, category="warning", minutes=5),
        mem("Never commit secrets to the repo", MemoryType.INSIGHT, 9, category="warning", minutes=1),
        mem("Avoid the legacy billing API", MemoryType.INSIGHT, 8, category="warning", minutes=1),
        mem("Watch out: staging shares the prod queue", MemoryType.INSIGHT, 8, category="warning", minutes=9),
        mem("Always rebase before merging", MemoryType.INSIGHT, 8, category="instruction"),
        mem("The user maybe likes Rust", MemoryType.PREFERENCE, 8, confidence=0.5),     # not confident
        mem("A passing remark about lunch", MemoryType.FACT, 3),                        # not important
        mem("The API runs on port 8443", MemoryType.FACT, 6, metadata={"origin": "tool"}),  # tool output
    ]
    section = compose_persistent(memories, cfg)
    lines = list(section.lines)
    assert lines[0] == SECTION_TITLE
    assert lines.index(TITLES["instruction"]) < lines.index(TITLES["warning"])  # categories by priority
    warnings = [i.memory.content for i in section.items if persistent_category(i.memory) == "warning"]
    # most important first, then newest within equal importance
    assert warnings == ["Never commit secrets to the repo", "Avoid the legacy billing API"]
    assert "- +2 more warnings: ask recall" in lines
    assert dict(section.more) == {"warning": 2}
    text = "\n".join(lines)
    for left_out in ("Rust", "lunch", "8443"):
        assert left_out not in text


def test_goals_replace_goals_and_finished_goals_leave() -> None:
    cfg = Settings().persistent_context
    section = compose_persistent([goal("The user's goal is to ship v1", 60), goal("The user's goal is to ship v2", 1),
                                  goal("The user's goal is to run a marathon", 0, status="done")], cfg)
    assert [i.memory.content for i in section.items] == ["The user's goal is to ship v2"]
    assert "more goal" not in "\n".join(section.lines)


def test_budgets_hold_and_the_block_stays_under_the_character_cap() -> None:
    cfg = Settings().persistent_context
    long = " ".join(["detail"] * 60)
    memories = [mem(f"Fact {i} about the orders service: {long}", importance=8, minutes=i) for i in range(40)]
    memories += [mem(f"Always do thing {i}: {long}", MemoryType.INSIGHT, 8, category="instruction", minutes=i)
                 for i in range(30)]
    section = compose_persistent(memories, cfg, max_chars=MAX_INJECTION_CHARS // 2)
    assert section.tokens <= cfg.max_tokens
    assert section.chars <= MAX_INJECTION_CHARS // 2
    for cat in ("instruction", "project_fact"):
        lines = [i.line for i in section.items if persistent_category(i.memory) == cat]
        limits = getattr(cfg, cat)
        assert len(lines) <= limits.max_items
        assert count_tokens("\n".join([TITLES[cat], *lines])) <= limits.max_tokens
    assert any(c == "project_fact" and n > 0 for c, n in section.more)


@pytest.fixture
def settings() -> Settings:
    return load_settings()


@pytest.fixture
async def store(settings: Settings) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(settings.db_path, embedder=None) as p:
        yield p


async def test_l1_block_opens_with_it_the_same_in_every_door(store: NativeProvider,
                                                                         settings: Settings) -> None:
    long = " ".join(["detail"] * 40)
    for i in range(60):
        await store.add(mem(f"Project fact number {i}: {long}", importance=7, minutes=i))
    await store.add(mem("Never force-push to main", MemoryType.INSIGHT, 8, category="warning"))
    await store.add(mem("Always run make check before pushing", MemoryType.INSIGHT, 8, category="instruction"))
    for after in (False, True):
        block = await l1_block(store, U, settings, after_compaction=after)
        assert "Never force-push to main" in block.text and "Always run make check" in block.text
        assert block.text.index("Persistent context:") < block.text.index("Never force-push")
        assert len(block.text) < MAX_INJECTION_CHARS < 10_000
        assert "more facts: ask recall" in block.text
        persistent = block.section("persistent")
        assert count_tokens("\n".join(i.line for i in block.items if i.section == "persistent")) \
            <= settings.persistent_context.max_tokens
        assert len({m.id for m in block.memories}) == len(block.memories)  # nothing shown twice
        assert persistent
        # the hooks inject exactly this block (SessionStart at startup, and after a compaction)
        assert await hook_block(settings, store, U, after_compaction=after) == block.text


async def test_disabled_leaves_the_block_as_before(store: NativeProvider, settings: Settings) -> None:
    await store.add(mem("Never force-push to main", MemoryType.INSIGHT, 8, category="warning"))
    off = dataclasses.replace(settings, persistent_context=dataclasses.replace(settings.persistent_context,
                                                                                enabled=False))
    block = await l1_block(store, U, off)
    assert "Persistent context:" not in block.text


async def test_an_older_goal_does_not_come_back_anywhere_in_the_block(store: NativeProvider,
                                                                     settings: Settings) -> None:
    await store.add(goal("The user's goal is to ship v1 of the API", 600))
    await store.add(goal("The user's goal is to cut p95 latency to 200 ms", 5))
    for after in (False, True):
        block = await l1_block(store, U, settings, after_compaction=after, query="what is the goal for the API?")
        assert "cut p95 latency" in block.text and "ship v1" not in block.text, block.text
    # the hook's block after a compaction whose last prompt asked it
    injected = await hook_block(settings, store, U, query="what is the goal for the API?", after_compaction=True)
    assert "cut p95 latency" in injected and "ship v1" not in injected, injected
