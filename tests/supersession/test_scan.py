"""The consolidation's contradiction scan (:mod:`dexai_memory.supersession.scan`) on a real native
store: what it records (open, never resolved) and what it leaves alone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from dexai_memory.models import Contradiction, Memory, utcnow
from dexai_memory.providers.memory import InMemoryProvider
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.scan import SCAN_REASON, scan_contradictions
from dexai_memory.supersession.store import store_statement

NOW = utcnow()


def said(content: str, days_ago: float, **kw: object) -> Memory:
    return Memory(content=content, user_id="u", created_at=NOW - timedelta(days=days_ago), **kw)  # type: ignore[arg-type]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(tmp_path / "memory.db", embedder=None) as p:
        yield p


async def pairs(p: NativeProvider) -> set[tuple[str, str, str | None]]:
    assert p.contradiction_log is not None
    return {(c.memory_a, c.memory_b, c.resolution) for c in await p.contradiction_log.list(user_id="u", open_only=False)}


async def test_records_what_the_rules_read_as_a_change_open_and_once(store: NativeProvider) -> None:
    # stored without supersession (as an import of an export or a model classifier's ADD may leave them)
    tea = await store.add(said("Sam prefers tea in the morning", 9))
    coffee = await store.add(said("Sam prefers coffee in the morning", 5))
    manager = await store.add(said("The user's manager is Dana", 8))
    priya = await store.add(said("The user's manager is Priya", 4))  # a change or a second value: unsure
    await store.add(said("Sam prefers tea in the morning, really", 3))  # a repeat of the first: not a contradiction
    await store.add(said("Sam plays squash on Fridays", 2, project="other"))
    assert await scan_contradictions(store, "u", dry_run=True) == 2 and await pairs(store) == set()
    assert await scan_contradictions(store, "u") == 2
    assert await pairs(store) == {(tea.id, coffee.id, None), (manager.id, priya.id, None)}
    assert all(c.reason.startswith(SCAN_REASON) for c in await store.contradiction_log.list(user_id="u"))  # type: ignore[union-attr]
    assert all(m.is_valid for m in await store.list(user_id="u"))  # nothing superseded or resolved
    assert await scan_contradictions(store, "u") == 0


async def test_leaves_alone_what_the_write_path_decided(store: NativeProvider) -> None:
    lisbon = await store.add(said("Sam lives in Lisbon", 9))
    done = await store_statement(store, said("Sam lives in Porto", 5, confidence=0.9))
    porto = done.memory  # Lisbon superseded at write time, recorded resolved b_wins
    assert porto is not None and await pairs(store) == {(lisbon.id, porto.id, "b_wins")}
    braga = await store.add(said("Sam lives in Braga", 1))  # stored past supersession: Porto is current too
    assert await scan_contradictions(store, "u") == 1  # Porto and Braga; Lisbon is history already
    assert (porto.id, braga.id, None) in await pairs(store)
    assert store.contradiction_log is not None
    await store.contradiction_log.add(Contradiction("u", "m_a", "m_b", reason="by hand"))
    assert await scan_contradictions(store, "u") == 0


async def test_a_store_without_a_contradiction_log_is_not_scanned() -> None:
    p = InMemoryProvider()
    await p.add(said("Sam prefers tea", 3))
    await p.add(said("Sam prefers coffee", 1))
    assert await scan_contradictions(p, "u") == 0


async def test_since_decides_only_what_was_written_or_edited_since(store: NativeProvider) -> None:
    await store.add(said("Sam prefers tea in the morning", 9))
    await store.add(said("Sam prefers coffee in the morning", 5))  # decided by an earlier scan: not again
    assert await scan_contradictions(store, "u", since=NOW - timedelta(days=2)) == 0
    cocoa = await store.add(said("Sam prefers cocoa in the morning", 1))
    assert await scan_contradictions(store, "u", since=NOW - timedelta(days=2)) == 1
    assert [b for _, b, _ in await pairs(store)] == [cocoa.id]  # one decision: against one older memory
