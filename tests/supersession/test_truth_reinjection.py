"""The block re-injected after compaction shows an open contradiction as a pair: both sides together,
dated, newest first, marked unresolved, in or out of the budget together. Through the block builder
(:func:`~dexai_memory.recall.reinjection.fill_block`), the store-backed builder and the daemon's
executor (SessionStart after a compaction: what every hook door gets), on real SQLite stores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from dexai_memory.config import Settings, load_settings
from dexai_memory.daemon.session_state import write_marker
from dexai_memory.models import Contradiction, Memory, MemoryType
from dexai_memory.providers.native import NativeProvider
from dexai_memory.recall.block import CONFLICT_MARK
from dexai_memory.recall.reinjection import ReinjectionInputs, fill_block, l1_block
from dexai_memory.text.tokens import count_tokens
from tests.hook_daemon import context_of, handle, running_daemon

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
NOW = T0 + timedelta(days=5)


def pair() -> tuple[Memory, Memory]:
    old = Memory("Robin's standup is at 9:30.", user_id="alice", type=MemoryType.FACT, importance=7,
                 valid_from=T0, created_at=T0)
    new = Memory("Robin's standup is at 10:15.", user_id="alice", type=MemoryType.FACT, importance=7,
                 valid_from=T0 + timedelta(days=2), created_at=T0 + timedelta(days=2))
    return old, new


def standup(text: str) -> list[str]:
    return [line for line in text.splitlines() if "standup" in line]


def test_fill_block_shows_the_pair_together_newest_first() -> None:
    old, new = pair()
    other = Memory("Robin lives in Lisbon.", user_id="alice", importance=7, valid_from=T0)
    # the older side comes first in priority order, the newer one is also a candidate further down
    inputs = ReinjectionInputs(important=[old, other], backfill=[new], conflicts={old.id: (new,), new.id: (old,)})
    block = fill_block(inputs, max_tokens=800, now=NOW)
    first, second = standup(block.text)
    assert "10:15" in first and "(said 2026-03-04;" in first and CONFLICT_MARK in first
    assert "9:30" in second and "(said 2026-03-02;" in second and CONFLICT_MARK in second
    assert "Lisbon" in block.text
    assert [m.id for m in block.memories].count(old.id) == 1 and new.id not in [m.id for m in block.memories]
    assert {m.id for m in block.shown} >= {old.id, new.id}


def test_fill_block_never_shows_one_side_alone() -> None:
    old, new = pair()
    other = Memory("Robin lives in Lisbon.", user_id="alice", importance=6, valid_from=T0)
    inputs = ReinjectionInputs(important=[old], backfill=[other, new], conflicts={old.id: (new,), new.id: (old,)})
    full = fill_block(inputs, max_tokens=800, now=NOW)
    group = next(i.line for i in full.items if i.memory.id == old.id)
    # room for a single line but not for the pair: the pair is left out whole, the short line fits
    tight = fill_block(inputs, max_tokens=full.tokens - count_tokens(group) + 12, now=NOW)
    assert standup(tight.text) == [] and "Lisbon" in tight.text


def test_without_a_contradiction_the_lines_stay_plain() -> None:
    old, new = pair()
    block = fill_block(ReinjectionInputs(important=[new, old]), max_tokens=800, now=NOW)
    assert all(CONFLICT_MARK not in line for line in standup(block.text))


async def _stored(provider: NativeProvider) -> tuple[Memory, Memory]:
    old, new = pair()
    for m in (old, new):
        await provider.add(m)
    assert provider.contradiction_log is not None
    await provider.contradiction_log.add(Contradiction("alice", old.id, new.id, reason="a new time, or a second "
                                                       "standup?", detected_at=new.valid_from or T0))
    return old, new


async def test_the_store_backed_reinjection_block_pairs_them(tmp_path: Path) -> None:
    settings = load_settings()
    async with NativeProvider(tmp_path / "memory.db", embedder=None) as provider:
        old, new = await _stored(provider)
        block = await l1_block(provider, "alice", settings, query="when is the standup", now=NOW,
                               after_compaction=True)
        lines = standup(block.text)
        assert len(lines) == 2 and "10:15" in lines[0] and "9:30" in lines[1], block.text
        assert all(CONFLICT_MARK in line for line in lines)


async def test_session_start_after_compaction_pairs_them(isolated_home: Path) -> None:
    """The executor's answer to SessionStart(compact), what the command hooks, HTTP hooks and SDK
    callbacks all inject; and the startup block agrees."""
    settings: Settings = load_settings()
    async with NativeProvider(settings.db_path, embedder=None) as provider:
        await _stored(provider)
        async with running_daemon(settings, provider) as daemon:
            write_marker(settings, "s1", {"recent_prompts": ["when is the standup again?"]})
            after = context_of(await handle(daemon, "session-start", {"session_id": "s1", "source": "compact"}),
                               "SessionStart")
            start = context_of(await handle(daemon, "session-start", {"session_id": "s2", "source": "startup"}),
                               "SessionStart")
    for text in (after, start):
        lines = standup(text)
        assert len(lines) == 2 and "10:15" in lines[0] and "9:30" in lines[1], text
        assert all(CONFLICT_MARK in line for line in lines)
