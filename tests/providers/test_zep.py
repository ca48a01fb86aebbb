"""Zep-specific behaviour: the real zep-cloud client against the local fake Zep v4 server."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta

import pytest

if importlib.util.find_spec("zep_cloud") is None:
    pytest.skip("zep-cloud is not installed", allow_module_level=True)

from dexai_memory.embeddings import Embedder  # noqa: E402
from dexai_memory.errors import MissingExtra, ProviderError, ProviderUnavailable  # noqa: E402
from dexai_memory.models import Memory, utcnow  # noqa: E402
from dexai_memory.providers import history as timeline
from dexai_memory.providers.zep import ZepProvider  # noqa: E402
from dexai_memory.supersession.chain import supersede
from testing.fakezep import FakeZepServer  # noqa: E402


@pytest.fixture
def server(embedder: Embedder) -> Iterator[FakeZepServer]:
    with FakeZepServer(api_key="secret", embed=embedder.embed_batch) as srv:
        yield srv


@pytest.fixture
async def zep(server: FakeZepServer) -> AsyncIterator[ZepProvider]:
    async with ZepProvider(api_key="secret", base_url=server.base_url, max_retries=0) as provider:
        yield provider


async def _edges(zep: ZepProvider, user_id: str) -> list:
    graph = await zep._user(user_id, create=False)
    assert graph is not None
    return [e async for e in await zep.client.graph.edge.list(graph.uuid)]


async def test_memory_is_an_edge_with_attributes(zep: ZepProvider) -> None:
    m = await zep.add(Memory("Sam prefers dark mode", user_id="sam", type="PREFERENCE", project="ide"))
    (edge,) = await _edges(zep, "sam")
    assert edge.fact == "Sam prefers dark mode"
    assert edge.name == "DEXAI_PREFERENCE"
    assert edge.attributes["dx_id"] == m.id and edge.attributes["dx_project"] == "ide"
    assert edge.valid_at is not None and edge.invalid_at is None


async def test_supersede_is_temporal_invalidation(zep: ZepProvider) -> None:
    old = await zep.add(Memory("Sam lives in Berlin", user_id="sam"))
    new = await supersede(zep, old.id, "Sam lives in Lisbon", user_id="sam", reason="moved")
    edges = {e.attributes["dx_id"]: e for e in await _edges(zep, "sam")}
    assert set(edges) == {old.id, new.id}  # the old fact is kept, invalidated, under the same memory id
    assert edges[old.id].invalid_at is not None and edges[old.id].expired_at is not None
    assert edges[new.id].invalid_at is None
    # events survive the rewrite of the old edge
    assert [e.action for e in await zep.events(old.id, user_id="sam")] == ["SUPERSEDED"]
    past = await timeline.as_of(zep, utcnow() - timedelta(seconds=30), user_id="sam")
    assert past == []  # nothing was valid before either fact was added
    assert [m.id for m in await timeline.as_of(zep, utcnow() + timedelta(seconds=1), user_id="sam")] == [new.id]


async def test_session_notes_go_to_a_thread(zep: ZepProvider, server: FakeZepServer) -> None:
    note = await zep.add_session_note("Decided to use SQLite for the cache", user_id="u", session_id="s1")
    threads = list(server.state.threads.values())
    assert len(threads) == 1
    messages = server.state.messages[threads[0]["uuid"]]
    assert [m["content"] for m in messages] == ["Decided to use SQLite for the cache"]
    assert messages[0]["metadata"]["dexai_id"] == note.id
    await zep.add_session_note("Cache eviction is LRU", user_id="u", session_id="s1")
    assert len(server.state.threads) == 1  # the session keeps its thread
    context = await zep.thread_context("s1", user_id="u")
    assert "SQLite" in context
    assert await zep.thread_context("unknown-session", user_id="u") == ""


async def test_zep_own_edges_are_not_memories(zep: ZepProvider) -> None:
    from zep_cloud import EdgeInput, EdgeNodeRef

    await zep.add(Memory("Ana works at Initech", user_id="u"))
    graph = await zep._user("u", create=False)
    assert graph is not None
    await zep.client.graph.edge.add(graph.uuid, edges=[EdgeInput(
        fact="Ana works at Initech (extracted by Zep)", fact_name="WORKS_AT",
        source_node=EdgeNodeRef(name="Ana"), target_node=EdgeNodeRef(name="Initech"))])
    assert [m.content for m in await zep.list(user_id="u")] == ["Ana works at Initech"]
    assert [r.memory.content for r in await zep.search("Ana Initech", user_id="u")] == ["Ana works at Initech"]


async def test_hard_delete_removes_edge_and_episode(zep: ZepProvider, server: FakeZepServer) -> None:
    m = await zep.add(Memory("temporary secret", user_id="u"))
    assert len(server.state.episodes) == 1
    assert await zep.delete(m.id, user_id="u", hard=True)
    assert await _edges(zep, "u") == []
    assert server.state.episodes == {}


async def test_users_are_separate_zep_users(zep: ZepProvider, server: FakeZepServer) -> None:
    await zep.add(Memory("Alice's code is 4711", user_id="alice"))
    await zep.add(Memory("Bob's code is 1234", user_id="bob"))
    assert sorted(u["user_id"] for u in server.state.users.values()) == ["alice", "bob"]
    assert await zep.users() == ["alice", "bob"]


async def test_outage_raises_provider_unavailable(zep: ZepProvider, server: FakeZepServer) -> None:
    await zep.add(Memory("before the outage", user_id="u"))
    server.down = True
    with pytest.raises(ProviderUnavailable):
        await zep.search("outage", user_id="u")
    status = await zep.health_check()
    assert not status.healthy and status.problems
    server.down = False
    assert (await zep.health_check()).healthy


async def test_wrong_key_is_an_error_not_an_outage(server: FakeZepServer) -> None:
    async with ZepProvider(api_key="wrong", base_url=server.base_url, max_retries=0) as p:
        with pytest.raises(ProviderError) as info:
            await p.add(Memory("x", user_id="u"))
        assert not isinstance(info.value, ProviderUnavailable)


async def test_unreachable_server_is_unavailable() -> None:
    with FakeZepServer() as srv:
        url = srv.base_url
    async with ZepProvider(api_key="k", base_url=url, max_retries=0, timeout=2) as p:
        with pytest.raises(ProviderUnavailable):
            await p.add(Memory("x", user_id="u"))


async def test_no_api_key() -> None:
    with pytest.raises(ProviderUnavailable, match="ZEP_API_KEY"):
        await ZepProvider(api_key=None).start()


def test_missing_extra_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from dexai_memory.providers.zep import import_zep

    monkeypatch.setitem(sys.modules, "zep_cloud", None)
    with pytest.raises(MissingExtra, match=r"pip install 'dexai-memory\[zep\]'"):
        import_zep()
