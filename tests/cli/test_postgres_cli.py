"""`dexai memory migrate --to postgres` and back, and `doctor`'s postgres checks, through the real CLI
against the session's real PostgreSQL server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from dexai_memory.cli.main import cli
from dexai_memory.config import load_settings
from dexai_memory.embeddings import Embedder
from dexai_memory.models import Memory, MemoryType
from dexai_memory.providers import history as timeline
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.chain import supersede
from tests import postgres_server

pytestmark = pytest.mark.skipif(not postgres_server.available(), reason="needs the dev extra (psycopg, pgserver)")


def ok(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def team_server(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """$DEXAI_POSTGRES_DSN names the session's server; this data dir's memory.yaml a fresh schema."""
    schema = postgres_server.fresh_schema()
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text(f"postgres:\n  schema: {schema}\n")
    monkeypatch.setenv("DEXAI_POSTGRES_DSN", postgres_server.dsn())
    return schema


def test_migrate_native_to_postgres_and_back(team_server: str, isolated_home: Path, embedder: Embedder) -> None:
    settings = load_settings()

    async def seed() -> dict[str, str]:
        async with NativeProvider(settings.db_path, embedder=embedder) as native:
            old = await native.add(Memory("Sam lives in Berlin", user_id="sam", source_ids=("D1:1",)))
            new = await supersede(native, old.id, "Sam lives in Lisbon", user_id="sam", reason="moved")
            pref = await native.add(Memory("Sam prefers bullet points", user_id="sam", type=MemoryType.PREFERENCE,
                                           project="dexai", source_ids=("D2:4",),
                                           metadata={"scope": "project-shared"}))
            await native.add(Memory("Ana plays the cello", user_id="ana", project="dexai"))
        return {"old": old.id, "new": new.id, "pref": pref.id}

    ids = asyncio.run(seed())
    report = json.loads(ok("memory", "migrate", "--to", "postgres", "--all-users", "--json").stdout)
    assert report["source"] == "native" and report["copied"] == 4 and report["events"] >= 2
    again = json.loads(ok("memory", "migrate", "--to", "postgres", "--all-users", "--json").stdout)
    assert again["copied"] == 0 and again["skipped"] == 4  # idempotent

    async def on_server() -> None:
        from dexai_memory.providers.postgres import PostgresProvider

        async with PostgresProvider(postgres_server.dsn(), embedder=embedder, schema=team_server) as pg:
            chain = await timeline.history(pg, ids["new"], user_id="sam")
            assert [e.memory.id for e in chain] == [ids["old"], ids["new"]]
            assert any(ev.action == "SUPERSEDED" for ev in chain[0].events)
            # the shared preference is the team's: Ana (a member of dexai) finds it, and it stays Sam's
            found = await pg.search("bullet points", user_id="ana")
            assert found[0].memory.id == ids["pref"] and found[0].memory.user_id == "sam"

    asyncio.run(on_server())
    settings.db_path.rename(settings.db_path.with_suffix(".old"))  # a new machine: an empty local store
    back = json.loads(ok("memory", "migrate", "--from", "postgres", "--to", "native", "--all-users", "--json").stdout)
    assert back["copied"] == 4, "each memory once: Ana's view of Sam's shared memory is not copied as hers"

    async def on_native() -> None:
        async with NativeProvider(settings.db_path, embedder=embedder) as native:
            assert {m.id for m in await native.list(user_id="ana")} == \
                {m.id for m in await native.list(user_id="ana") if m.user_id == "ana"}
            old = await native.get(ids["old"], user_id="sam")
            assert old.superseded_by == ids["new"] and old.source_ids == ("D1:1",)
            assert (await native.get(ids["pref"], user_id="sam")).metadata["scope"] == "project-shared"

    asyncio.run(on_native())


def test_doctor_checks_connection_extension_and_schema(team_server: str) -> None:
    (load_settings().home / "memory.yaml").write_text(
        f"storage:\n  provider: postgres\npostgres:\n  schema: {team_server}\n")
    result = CliRunner().invoke(cli, ["memory", "doctor", "--json"], catch_exceptions=False)
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["postgres connection"]["ok"] and "PostgreSQL" in checks["postgres connection"]["detail"]
    assert checks["pgvector"]["ok"]
    schema = checks["postgres schema"]
    assert schema["ok"] and "version" in schema["detail"]


def test_doctor_without_a_dsn_says_how_and_never_prints_a_password(team_server: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (load_settings().home / "memory.yaml").write_text("storage:\n  provider: postgres\n")
    monkeypatch.delenv("DEXAI_POSTGRES_DSN")
    result = CliRunner().invoke(cli, ["memory", "doctor", "--json"], catch_exceptions=False)
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert not checks["postgres connection"]["ok"] and "DEXAI_POSTGRES_DSN" in checks["postgres connection"]["fix"]
    from testing.postgres import free_port

    monkeypatch.setenv("DEXAI_POSTGRES_DSN", f"postgresql://u:hunter2-secret@127.0.0.1:{free_port()}/db")
    result = CliRunner().invoke(cli, ["memory", "doctor", "--json"], catch_exceptions=False)
    assert "hunter2-secret" not in result.output
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert not checks["postgres connection"]["ok"]


def test_share_makes_a_memory_the_teams_and_private_takes_it_back(team_server: str) -> None:
    (load_settings().home / "memory.yaml").write_text(
        f"storage:\n  provider: postgres\npostgres:\n  schema: {team_server}\n")
    added = json.loads(ok("memory", "add", "We squash-merge every pull request", "--user", "ana",
                          "--project", "web", "--json").stdout)
    ok("memory", "add", "Bo likes green tea", "--user", "bo", "--project", "web")

    def bo_sees() -> list[str]:
        found = json.loads(ok("memory", "search", "squash merge pull request", "--user", "bo", "--project", "web",
                              "--json").stdout)
        return [r["memory"]["id"] if "memory" in r else r["id"] for r in found]

    assert added["id"] not in bo_sees()
    shared = json.loads(ok("memory", "share", added["id"], "--user", "ana", "--json").stdout)
    assert shared["metadata"]["scope"] == "project-shared"
    assert added["id"] in bo_sees()
    result = CliRunner().invoke(cli, ["memory", "share", added["id"], "--user", "bo", "--private"])
    assert result.exit_code == 1, "only the owner changes a shared memory"
    ok("memory", "share", added["id"], "--user", "ana", "--private")
    assert added["id"] not in bo_sees()
