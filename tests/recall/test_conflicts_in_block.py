"""An open contradiction in the block: a block that shows one side shows both, dated, newest first,
marked unresolved; once resolved, only the winner is shown. The contradiction is recorded through the
real path (the pipeline's offline extractor and supersession) in a real SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from dexai_memory.config import Settings, load_settings
from dexai_memory.extraction.offline import OfflineExtractor
from dexai_memory.lifecycle.contradictions import resolve
from dexai_memory.models import Memory, MemoryType, Turn
from dexai_memory.pipeline import Pipeline
from dexai_memory.providers.native import NativeProvider
from dexai_memory.recall.block import (
    CONFLICT_MARK,
    BlockInputs,
    compose_block,
    gather_block_inputs,
    open_conflicts,
)
from dexai_memory.recall.reinjection import l1_block
from dexai_memory.text.tokens import count_tokens

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
NOW = T0 + timedelta(days=5)
OLD = "I'm allergic to peanuts and carry an epipen."
NEW = "I'm allergic to cats and carry an epipen."


@pytest.fixture
async def provider(tmp_path: Path) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(tmp_path / "memory.db", embedder=None) as p:
        yield p


@pytest.fixture
def settings() -> Settings:
    return load_settings()


def _turn(i: int, text: str, when: datetime) -> Turn:
    return Turn(id=f"t{i}", user_id="u", content=text, role="user", session_id=f"s{i}", timestamp=when)


async def _said_apart(provider: NativeProvider, settings: Settings) -> tuple[Memory, Memory]:
    """The two statements, two days apart, through the pipeline: supersession cannot tell a change
    from a second value and records the contradiction open, both current."""
    pipeline = Pipeline(provider, settings, extractor=OfflineExtractor())
    await pipeline.process([(_turn(1, OLD, T0), ())])
    await pipeline.process([(_turn(2, NEW, T0 + timedelta(days=2)), ())])
    notes = [m for m in await provider.list(user_id="u") if m.type is not MemoryType.TRANSCRIPT]
    assert provider.contradiction_log is not None
    assert len(await provider.contradiction_log.list(user_id="u", open_only=True)) == 1
    (old,) = [m for m in notes if "peanuts" in m.content]
    (new,) = [m for m in notes if "cats" in m.content]
    return old, new


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "allergic" in line]


async def test_the_block_that_shows_one_side_shows_both_newest_first(provider: NativeProvider,
                                                                      settings: Settings) -> None:
    old, new = await _said_apart(provider, settings)
    inputs = await gather_block_inputs(provider, user_id="u", relevant=[old], now=NOW)
    block = compose_block(inputs, now=NOW)
    first, second = _lines(block.text)
    assert "cats" in first and "(said 2026-03-04;" in first and CONFLICT_MARK in first
    assert "peanuts" in second and "(said 2026-03-02;" in second and CONFLICT_MARK in second
    assert [m.id for m in block.memories] == [old.id]
    assert {m.id for m in block.shown} == {old.id, new.id}


async def test_the_session_block_shows_the_pair_once(provider: NativeProvider, settings: Settings) -> None:
    """The L1 block of a prompt about it (search finds both sides): the pair is shown once, as a pair."""
    old, new = await _said_apart(provider, settings)
    block = await l1_block(provider, "u", settings, query="what am I allergic to, the epipen", now=NOW)
    lines = _lines(block.text)
    assert len(lines) == 2 and "cats" in lines[0] and "peanuts" in lines[1]
    assert all(CONFLICT_MARK in line for line in lines)
    assert block.tokens <= sum((settings.l1_block.profile_tokens, settings.l1_block.memories_tokens,
                                settings.l1_block.commitments_tokens, settings.l1_block.session_tokens)) + 40


async def test_the_persistent_context_at_session_start_shows_the_pair_once(provider: NativeProvider,
                                                                           settings: Settings) -> None:
    """Important enough to be standing knowledge: the SessionStart block (no prompt yet) opens with
    the persistent context, which shows the pair together, and nothing below repeats either side."""
    old, new = await _said_apart(provider, settings)
    for m in (old, new):
        await provider.update(m.id, user_id="u", importance=8)
    block = await l1_block(provider, "u", settings, query=None, now=NOW)
    lines = _lines(block.text)
    assert len(lines) == 2 and "cats" in lines[0] and "peanuts" in lines[1], block.text
    assert all(CONFLICT_MARK in line for line in lines)
    assert {m.id for m in block.shown} >= {old.id, new.id}


async def test_a_resolved_contradiction_shows_only_the_winner(provider: NativeProvider, settings: Settings) -> None:
    old, new = await _said_apart(provider, settings)
    assert provider.contradiction_log is not None
    (c,) = await provider.contradiction_log.list(user_id="u", open_only=True)
    assert c.id is not None
    await resolve(provider, c.id, "b_wins", user_id="u")
    current = await provider.get(new.id, user_id="u")
    assert await open_conflicts(provider, "u", [current]) == {}
    block = compose_block(await gather_block_inputs(provider, user_id="u", relevant=[current], now=NOW), now=NOW)
    (line,) = _lines(block.text)
    assert "cats" in line and CONFLICT_MARK not in line


async def test_both_valid_is_no_longer_a_conflict(provider: NativeProvider, settings: Settings) -> None:
    old, new = await _said_apart(provider, settings)
    assert provider.contradiction_log is not None
    (c,) = await provider.contradiction_log.list(user_id="u", open_only=True)
    assert c.id is not None
    await resolve(provider, c.id, "both_valid", user_id="u")
    assert await open_conflicts(provider, "u", [old, new]) == {}


def test_the_pair_is_in_or_out_together_within_the_budget() -> None:
    a = Memory("The user is allergic to peanuts.", user_id="u", valid_from=T0)
    b = Memory("The user is allergic to cats.", user_id="u", valid_from=T0 + timedelta(days=2))
    c = Memory("The user lives in Lisbon.", user_id="u", valid_from=T0)
    inputs = BlockInputs(relevant=[a, c], conflicts={a.id: (b,)})
    full = compose_block(inputs, now=NOW)
    assert len(_lines(full.text)) == 2 and "Lisbon" in full.text
    pair_cost = count_tokens(full.items[0].line)
    # a budget too small for the pair but large enough for a single line: the pair is left out whole,
    # never shown half (one side alone, unmarked)
    tight = compose_block(inputs, budgets=(0, pair_cost - 5, 0, 0), now=NOW)
    assert _lines(tight.text) == [] and "Lisbon" in tight.text
    assert tight.tokens <= pair_cost + 40


async def test_the_recall_door_shows_both(provider: NativeProvider, settings: Settings) -> None:
    """``auto_recall``: what the UserPromptSubmit hook, ``dexai memory recall`` and MCP ``recall`` inject."""
    from dexai_memory.recall.ranking import auto_recall

    await _said_apart(provider, settings)
    result = await auto_recall(provider, "u", "what am I allergic to? do I need the epipen", [], settings, now=NOW)
    lines = _lines(result.text)
    assert len(lines) == 2 and "cats" in lines[0] and all(CONFLICT_MARK in line for line in lines)
