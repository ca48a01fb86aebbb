"""The postgres provider beyond the shared contract: team scope, migrations, search, health, secrets.

Every test runs against the session's real PostgreSQL + pgvector server
(tests/postgres_server.py), each in a fresh schema.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import pytest

from dexai_memory.embeddings import Embedder
from dexai_memory.errors import InvalidMemory, MemoryNotFound, ProviderUnavailable
from dexai_memory.models import Memory, MemoryType, SearchFilters, UpdateAction, UpdateDecision
from dexai_memory.supersession.apply import apply_decision
from tests import postgres_server

if TYPE_CHECKING:
    from dexai_memory.providers.postgres import PostgresProvider

pytestmark = pytest.mark.skipif(not postgres_server.available(), reason="needs the dev extra (psycopg, pgserver)")

SHARED = {"scope": "project-shared"}


@pytest.fixture
async def pg(embedder: Embedder) -> AsyncIterator[PostgresProvider]:
    from dexai_memory.providers.postgres import PostgresProvider

    async with PostgresProvider(postgres_server.dsn(), embedder=embedder, schema=postgres_server.fresh_schema(),
                                pool_size=3) as provider:
        yield provider


async def test_project_shared_memories_are_seen_by_the_team_personal_ones_are_not(pg: PostgresProvider) -> None:
    convention = await pg.add(Memory("The team formats Python with ruff, line length 100", user_id="ana",
                                     project="dexai", type=MemoryType.INSIGHT, metadata=SHARED))
    personal = await pg.add(Memory("Ana formats her shopping lists with bullet points", user_id="ana",
                                   project="dexai"))
    elsewhere = await pg.add(Memory("Project zeta formats SQL in uppercase", user_id="ana", project="zeta",
                                    metadata=SHARED))
    # Bo asks about the project: the shared convention, never Ana's personal memory
    found = await pg.search("how do we format code", user_id="bo", filters=SearchFilters(project="dexai"))
    assert [r.memory.id for r in found] == [convention.id]
    listed = await pg.list(user_id="bo", filters=SearchFilters(project="dexai"))
    assert [m.id for m in listed] == [convention.id]
    with pytest.raises(MemoryNotFound):
        await pg.get(personal.id, user_id="bo")
    # without naming a project, Bo sees the shared memories of the projects he is a member of only
    assert await pg.search("formats", user_id="bo") == []
    await pg.add(Memory("Bo reviews pull requests on Fridays", user_id="bo", project="dexai"))
    ids = {r.memory.id for r in await pg.search("formats", user_id="bo")}
    assert convention.id in ids
    assert not ids & {personal.id, elsewhere.id}, "zeta's shared memory and Ana's personal one stay out"
    assert (await pg.get(convention.id, user_id="bo")).user_id == "ana"
    assert elsewhere.id not in {m.id for m in await pg.list(user_id="bo")}
    # a shared memory changes only by its owner
    with pytest.raises(MemoryNotFound):
        await pg.update(convention.id, user_id="bo", content="hijacked")
    assert await pg.delete(convention.id, user_id="bo", hard=True) is False
    assert (await pg.get(convention.id, user_id="ana")).content.startswith("The team formats")


async def test_a_decision_on_a_teammates_memory_stores_the_note_as_ones_own(pg: PostgresProvider) -> None:
    shared = await pg.add(Memory("Deploys happen on Tuesdays", user_id="ana", project="p", metadata=SHARED))
    await pg.add(Memory("Bo works on p", user_id="bo", project="p"))
    note = Memory("Deploys happen on Wednesdays", user_id="bo", project="p")
    stored = await apply_decision(pg, UpdateDecision(UpdateAction.SUPERSEDE, shared.id, "changed"), note)
    assert stored is not None and stored.user_id == "bo" and stored.id == note.id
    assert (await pg.get(shared.id, user_id="ana")).is_valid


async def test_scope_is_validated_and_can_be_changed_by_the_owner(pg: PostgresProvider) -> None:
    with pytest.raises(InvalidMemory):
        await pg.add(Memory("x", user_id="u", project="p", metadata={"scope": "everyone"}))
    with pytest.raises(InvalidMemory):
        await pg.add(Memory("shared but no project", user_id="u", metadata=SHARED))
    m = await pg.add(Memory("Use feature flags for risky changes", user_id="ana", project="p"))
    await pg.add(Memory("Bo is on p", user_id="bo", project="p"))
    found = await pg.search("feature flags", user_id="bo", filters=SearchFilters(project="p"))
    assert m.id not in {r.memory.id for r in found}
    await pg.update(m.id, user_id="ana", metadata={**m.metadata, **SHARED})
    res = await pg.search("feature flags", user_id="bo", filters=SearchFilters(project="p"))
    assert res[0].memory.id == m.id


async def test_search_fuses_full_text_and_vectors(pg: PostgresProvider) -> None:
    await pg.add(Memory("Sam adopted a golden retriever puppy named Biscuit", user_id="u"))
    await pg.add(Memory("The invoice for the cloud bill arrives monthly", user_id="u"))
    res = await pg.search("Biscuit", user_id="u", limit=2)
    assert res[0].memory.content.startswith("Sam adopted") and res[0].bm25_rank == 1
    assert res[0].vector_rank is not None and res[0].score == pytest.approx(1.0)
    semantic = await pg.search("dog", user_id="u", limit=2)  # no shared word: found by the vector arm
    assert semantic[0].memory.content.startswith("Sam adopted") and semantic[0].bm25_rank is None
    assert all(0.0 <= r.score <= 1.0 for r in semantic)


async def test_filters_time_and_archive(pg: PostgresProvider) -> None:
    from datetime import timedelta

    from dexai_memory.models import Tier, utcnow

    now = utcnow()
    old = await pg.add(Memory("kiwi note from last year", user_id="u", created_at=now - timedelta(days=400),
                              importance=3))
    new = await pg.add(Memory("kiwi note from today", user_id="u", importance=9, pinned=True))
    archived = await pg.add(Memory("kiwi archived note", user_id="u", archived=True, tier=Tier.L3))
    transcript = await pg.add(Memory("kiwi said in a raw turn", user_id="u", type=MemoryType.TRANSCRIPT))

    async def ids(**kw: Any) -> set[str]:
        return {r.memory.id for r in await pg.search("kiwi", user_id="u", filters=SearchFilters.make(**kw))}

    assert await ids() == {old.id, new.id}
    assert await ids(created_after=now - timedelta(days=1)) == {new.id}
    assert await ids(created_before=now - timedelta(days=1)) == {old.id}
    assert await ids(min_importance=5) == {new.id}
    assert await ids(pinned=True) == {new.id}
    assert archived.id in await ids(include_archived=True, tiers=["L3"])
    assert await ids(types=["TRANSCRIPT"]) == {transcript.id}


async def test_deferred_vectors_are_filled_later(pg: PostgresProvider) -> None:
    async with pg.deferred_vectors():
        await pg.add_many([Memory(f"bulk note {i} about otters", user_id="u") for i in range(5)])
    assert await pg.pending_vectors() == 5
    assert await pg.fill_vectors(batch=2) == 5
    assert await pg.pending_vectors() == 0
    assert (await pg.search("sea mammals", user_id="u"))[0].vector_rank is not None


async def test_replayed_events_are_stored_once(pg: PostgresProvider) -> None:
    from dexai_memory.models import MemoryEvent, utcnow

    m = await pg.add(Memory("event target", user_id="u"))
    event = MemoryEvent(m.id, "ADD", "new", utcnow())
    await pg.record_event(event, user_id="u")
    await pg.record_event(event, user_id="u")
    assert len(await pg.events(m.id, user_id="u")) == 1


async def test_many_starts_at_once_migrate_once(embedder: Embedder) -> None:
    from dexai_memory.providers.postgres import PostgresProvider
    from dexai_memory.providers.postgres.migrations import latest_version

    schema = postgres_server.fresh_schema()
    providers = [PostgresProvider(postgres_server.dsn(), embedder=embedder, schema=schema, pool_size=1)
                 for _ in range(4)]
    await asyncio.gather(*(p.start() for p in providers))
    try:
        status = await providers[0].health_check()
        assert status.healthy, status.problems
        assert status.details["schema_version"] == latest_version()
        assert status.details["pgvector"] and all(p.vectors_ready for p in providers)
    finally:
        await asyncio.gather(*(p.aclose() for p in providers))


async def test_another_embedder_turns_vector_search_off(pg: PostgresProvider, embedder: Embedder) -> None:
    from dexai_memory.embeddings import HashingEmbedder
    from dexai_memory.providers.postgres import PostgresProvider

    await pg.add(Memory("a memory embedded by MiniLM", user_id="u"))
    async with PostgresProvider(postgres_server.dsn(), embedder=HashingEmbedder(), schema=pg.schema) as other:
        assert not other.vectors_ready
        assert (await other.search("MiniLM", user_id="u"))[0].vector_rank is None
        assert not (await other.health_check()).healthy


async def test_password_never_logged_and_down_server_is_unavailable(caplog: pytest.LogCaptureFixture) -> None:
    from dexai_memory.providers.postgres import PostgresProvider
    from testing.postgres import free_port

    dsn = f"postgresql://dexai:s3cret-pw@127.0.0.1:{free_port()}/nowhere"
    provider = PostgresProvider(dsn, connect_timeout_seconds=1)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ProviderUnavailable) as info:
        await provider.start()
    assert "s3cret-pw" not in str(info.value) and "s3cret-pw" not in repr(provider)
    assert "s3cret-pw" not in caplog.text
    with pytest.raises(ProviderUnavailable):
        PostgresProvider("")


async def test_vector_arm_is_exact_when_hnsw_leaves_too_few_rows_for_the_user(embedder: Embedder) -> None:
    """HNSW filters by user after its walk: with a small ef_search (or a user holding a small share of a big
    table) the walk leaves fewer rows than asked for, and the exact KNN over the user's rows answers instead."""
    from dexai_memory.providers.postgres import PostgresProvider
    from dexai_memory.providers.postgres.search import results, search_sql

    async with PostgresProvider(postgres_server.dsn(), embedder=embedder, schema=postgres_server.fresh_schema(),
                                ef_search=1) as pg:
        await pg.add_many([Memory(f"colleague note {i} about gardening", user_id="other") for i in range(60)])
        mine = await pg.add_many([Memory(f"my note {i} about cooking pasta", user_id="me") for i in range(8)])
        vector = await embedder.aembed("recipes")
        built = search_sql(pg.search_config, "recipes", vector, user_id="me", filters=None, limit=8)
        assert built is not None
        sql, params = built
        async with pg.database.connection() as conn:
            # leave the planner nothing but the HNSW index (as on a large table), walked with ef_search = 1
            await conn.execute("DROP INDEX ix_memories_user, ix_memories_user_type, ix_memories_session, "
                               "ix_memories_superseded_by, ix_memories_shared")
            await conn.execute("SET enable_seqscan = off")
            await conn.execute("SET enable_bitmapscan = off")
            plan = "\n".join(r[0] for r in await (await conn.execute("EXPLAIN " + sql, params)).fetchall())
            rows = await (await conn.execute(sql, params)).fetchall()
            await conn.execute("RESET ALL")
            await conn.execute(f"SET hnsw.ef_search = {pg.database.ef_search}")
        assert "ix_memories_embedding" in plan, [line for line in plan.splitlines() if "Index" in line]
        found = results(rows)
        assert {r.memory.id for r in found if r.vector_rank is not None} == {m.id for m in mine}
