"""FailoverProvider: writes survive an external provider's outage and are replayed when it is back."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from dexai_memory.embeddings import Embedder
from dexai_memory.errors import MemoryNotFound, ProviderUnavailable
from dexai_memory.models import HealthStatus, Memory, MemoryEvent, SearchFilters, SearchResult
from dexai_memory.providers import history as timeline
from dexai_memory.providers.base import MemoryProvider
from dexai_memory.providers.fallback import FailoverProvider
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.chain import supersede


class SwitchableProvider(MemoryProvider):
    """A fake external provider: a real SQLite store behind a switch that can take it down.

    ``down`` makes every call raise ProviderUnavailable; ``fail_after`` lets that
    many more writes through and then goes down (an outage in the middle of a replay).
    """

    name = "switchable"
    capabilities = NativeProvider.capabilities

    def __init__(self, path: Path, embedder: Embedder):
        super().__init__()
        self.store = NativeProvider(path, embedder=embedder)
        self.down = False
        self.fail_on_start = False
        self.fail_after: int | None = None
        self.writes = 0

    def _gate(self, write: bool = False) -> None:
        if write and self.fail_after is not None:
            if self.fail_after == 0:
                self.down = True
            self.fail_after -= 1
        if self.down:
            raise ProviderUnavailable("switched off")
        if write:
            self.writes += 1

    async def start(self) -> None:
        if self.fail_on_start:
            raise ProviderUnavailable("cannot connect")
        await self.store.start()

    async def aclose(self) -> None:
        await self.store.aclose()

    async def add(self, memory: Memory) -> Memory:
        self._gate(write=True)
        return await self.store.add(memory)

    async def search(self, query: str, *, user_id: str, filters: SearchFilters | None = None,
                     limit: int = 10) -> builtins.list[SearchResult]:
        self._gate()
        return await self.store.search(query, user_id=user_id, filters=filters, limit=limit)

    async def get(self, memory_id: str, *, user_id: str, include_deleted: bool = False) -> Memory:
        self._gate()
        return await self.store.get(memory_id, user_id=user_id, include_deleted=include_deleted)

    async def update(self, memory_id: str, *, user_id: str, **changes: Any) -> Memory:
        self._gate(write=True)
        return await self.store.update(memory_id, user_id=user_id, **changes)

    async def delete(self, memory_id: str, *, user_id: str, hard: bool = False) -> bool:
        self._gate(write=True)
        return await self.store.delete(memory_id, user_id=user_id, hard=hard)

    async def list(self, *, user_id: str, filters: SearchFilters | None = None, limit: int = 100,
                   offset: int = 0) -> builtins.list[Memory]:
        self._gate()
        return await self.store.list(user_id=user_id, filters=filters, limit=limit, offset=offset)

    async def health_check(self) -> HealthStatus:
        if self.down:
            return HealthStatus(False, self.name, problems=("switched off",))
        return HealthStatus(True, self.name)

    async def record_event(self, event: MemoryEvent, *, user_id: str) -> None:
        self._gate(write=True)
        await self.store.record_event(event, user_id=user_id)

    async def events(self, memory_id: str, *, user_id: str) -> builtins.list[MemoryEvent]:
        self._gate()
        return await self.store.events(memory_id, user_id=user_id)


@pytest.fixture
def primary(tmp_path: Path, embedder: Embedder) -> SwitchableProvider:
    return SwitchableProvider(tmp_path / "external.db", embedder)


@pytest.fixture
def native(tmp_path: Path, embedder: Embedder) -> NativeProvider:
    return NativeProvider(tmp_path / "native.db", embedder=embedder)


@pytest.fixture
async def failover(primary: SwitchableProvider, native: NativeProvider,
                   tmp_path: Path) -> AsyncIterator[FailoverProvider]:
    async with FailoverProvider(primary, native, log_path=tmp_path / "replay.db", recheck_seconds=3600) as fp:
        yield fp


async def test_healthy_primary_takes_everything(failover: FailoverProvider, primary: SwitchableProvider,
                                                native: NativeProvider) -> None:
    m = await failover.add(Memory("Sam drinks oolong", user_id="sam"))
    assert (await primary.store.get(m.id, user_id="sam")).content == "Sam drinks oolong"
    assert await native.count(user_id="sam") == 0
    assert await failover.pending_replay() == 0
    assert [r.memory.id for r in await failover.search("oolong", user_id="sam")] == [m.id]


async def test_outage_writes_go_native_and_are_replayed(failover: FailoverProvider, primary: SwitchableProvider,
                                                        native: NativeProvider) -> None:
    before = await failover.add(Memory("Sam lives in Berlin", user_id="sam"))
    primary.down = True
    during = await failover.add(Memory("Sam adopted a cat named Miso", user_id="sam"))
    assert not failover.primary_up
    assert (await native.get(during.id, user_id="sam")).content.endswith("Miso")
    assert await failover.pending_replay() == 1
    # reads are served from the native store while the primary is down
    assert [r.memory.id for r in await failover.search("cat Miso", user_id="sam")] == [during.id]
    status = await failover.health_check()
    assert status.healthy and status.details["degraded"] and status.details["pending_replay"] == 1
    # an outage-time change of an outage-time memory is logged as well
    await failover.update(during.id, user_id="sam", importance=9)
    assert await failover.pending_replay() == 2

    primary.down = False
    assert await failover.recover() == 2
    assert failover.primary_up and await failover.pending_replay() == 0
    replayed = await primary.store.get(during.id, user_id="sam")
    assert replayed.content == "Sam adopted a cat named Miso" and replayed.importance == 9
    assert (await failover.get(before.id, user_id="sam")).content == "Sam lives in Berlin"


async def test_primary_only_memory_cannot_change_during_outage(failover: FailoverProvider,
                                                              primary: SwitchableProvider) -> None:
    m = await failover.add(Memory("Sam's desk is by the window", user_id="sam"))
    primary.down = True
    with pytest.raises(ProviderUnavailable):
        await failover.update(m.id, user_id="sam", content="Sam's desk is by the door")
    with pytest.raises(ProviderUnavailable):
        await failover.delete(m.id, user_id="sam")
    with pytest.raises(ProviderUnavailable):
        await failover.get(m.id, user_id="sam")
    assert await failover.pending_replay() == 0  # refused, so nothing was accepted and nothing is lost
    primary.down = False
    await failover.recover()
    assert (await failover.get(m.id, user_id="sam")).content == "Sam's desk is by the window"


async def test_supersede_during_outage_replays_chain_and_events(failover: FailoverProvider,
                                                                primary: SwitchableProvider) -> None:
    primary.down = True
    old = await failover.add(Memory("Sam prefers tea", user_id="sam"))
    new = await supersede(failover, old.id, "Sam prefers coffee", user_id="sam", reason="changed taste")
    primary.down = False
    assert await failover.recover() >= 4  # two adds, an update, two events
    chain = await timeline.history(primary.store, new.id, user_id="sam")
    assert [h.memory.id for h in chain] == [old.id, new.id]
    assert any(e.action == "SUPERSEDED" and e.reason == "changed taste" for e in chain[0].events)


async def test_replay_interrupted_keeps_the_rest(failover: FailoverProvider, primary: SwitchableProvider) -> None:
    primary.down = True
    ids = [(await failover.add(Memory(f"note number {i}", user_id="u"))).id for i in range(4)]
    primary.down = False
    primary.fail_after = 2  # the primary goes down again after two replayed writes
    assert await failover.recover() == 2
    assert not failover.primary_up and await failover.pending_replay() == 2
    primary.fail_after = None
    primary.down = False
    assert await failover.recover() == 2
    assert sorted(m.id for m in await primary.store.list(user_id="u")) == sorted(ids)


async def test_log_survives_restart_and_replays_on_start(primary: SwitchableProvider, native: NativeProvider,
                                                         tmp_path: Path, embedder: Embedder) -> None:
    log = tmp_path / "replay.db"
    async with FailoverProvider(primary, native, log_path=log) as fp:
        primary.down = True
        m = await fp.add(Memory("written while Zep was down", user_id="u"))
    primary.down = False
    again = SwitchableProvider(tmp_path / "external.db", embedder)
    async with FailoverProvider(again, NativeProvider(tmp_path / "native.db", embedder=embedder),
                                log_path=log) as fp2:
        assert await fp2.pending_replay() == 0
        assert (await again.store.get(m.id, user_id="u")).content == "written while Zep was down"


async def test_unreachable_at_start_runs_on_native_then_recovers_automatically(
        primary: SwitchableProvider, native: NativeProvider, tmp_path: Path) -> None:
    primary.fail_on_start = True
    async with FailoverProvider(primary, native, log_path=tmp_path / "r.db", recheck_seconds=0) as fp:
        assert not fp.primary_up
        primary.fail_on_start = False
        primary.down = True  # recovery attempts fail while it is still down
        m = await fp.add(Memory("kept locally", user_id="u"))
        assert await fp.pending_replay() == 1
        primary.down = False
        # with recheck_seconds=0 the next call checks the primary and replays first
        got = await fp.get(m.id, user_id="u")
        assert got.content == "kept locally" and fp.primary_up
        assert (await primary.store.get(m.id, user_id="u")).id == m.id


async def test_hard_delete_during_outage_is_replayed(failover: FailoverProvider, primary: SwitchableProvider) -> None:
    primary.down = True
    m = await failover.add(Memory("temporary secret", user_id="u"))
    assert await failover.delete(m.id, user_id="u", hard=True)
    primary.down = False
    await failover.recover()
    with pytest.raises(MemoryNotFound):
        await primary.store.get(m.id, user_id="u", include_deleted=True)
