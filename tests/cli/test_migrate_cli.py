"""`dexai memory migrate` through the real click entry point: native <-> mem0, native -> zep."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Iterator
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

needs_mem0 = pytest.mark.skipif(importlib.util.find_spec("mem0") is None, reason="mem0ai is not installed")
needs_zep = pytest.mark.skipif(importlib.util.find_spec("zep_cloud") is None, reason="zep-cloud is not installed")


def dexai(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def ok(*args: str) -> Result:
    result = dexai(*args)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def seeded(isolated_home: Path, embedder: Embedder) -> dict[str, str]:
    """A native store with a supersession chain, provenance and two users.

    The tests are synchronous: the CLI runs its own event loop.
    """
    async def seed() -> dict[str, str]:
        async with NativeProvider(load_settings().db_path, embedder=embedder) as native:
            old = await native.add(Memory("Sam lives in Berlin", user_id="sam", source_ids=("D1:1",)))
            new = await supersede(native, old.id, "Sam lives in Lisbon", user_id="sam", reason="moved")
            pref = await native.add(Memory("Sam prefers bullet points", user_id="sam", type=MemoryType.PREFERENCE,
                                           importance=8, project="dexai", source_ids=("D2:4", "D2:5")))
            other = await native.add(Memory("Ana plays the cello", user_id="ana"))
        return {"old": old.id, "new": new.id, "pref": pref.id, "other": other.id}

    return asyncio.run(seed())


def test_same_provider_is_refused() -> None:
    result = dexai("memory", "migrate", "--from", "native", "--to", "native")
    assert result.exit_code == 1 and "same provider" in result.output


@needs_mem0
def test_native_to_mem0_and_back(seeded: dict[str, str], embedder: Embedder, isolated_home: Path) -> None:
    from dexai_memory.providers.mem0 import Mem0Provider

    dry = json.loads(ok("memory", "migrate", "--from", "native", "--to", "mem0", "--user", "sam", "--dry-run",
                        "--json").stdout)
    assert dry["dry_run"] and dry["total"] == 3 and dry["users"] == {"sam": 3}
    text = ok("memory", "migrate", "--from", "native", "--to", "mem0", "--user", "sam", "--dry-run").stdout
    assert "would copy 3 memories from native to mem0" in text and "Sam lives in Lisbon" in text
    async def nothing_written() -> None:
        async with Mem0Provider(isolated_home / "mem0", embedder=embedder) as mem0:
            assert await mem0.users() == []  # the dry run wrote nothing

    asyncio.run(nothing_written())

    done = json.loads(ok("memory", "migrate", "--from", "native", "--to", "mem0", "--user", "sam",
                         "--json").stdout)
    assert done["copied"] == 3 and done["skipped"] == 0 and done["events"] >= 2
    async def check_mem0() -> None:
        async with Mem0Provider(isolated_home / "mem0", embedder=embedder) as mem0:
            chain = await timeline.history(mem0, seeded["new"], user_id="sam")
            assert [h.memory.id for h in chain] == [seeded["old"], seeded["new"]]
            assert any(e.action == "SUPERSEDED" and e.reason == "moved" for e in chain[0].events)
            pref = await mem0.get(seeded["pref"], user_id="sam")
            assert pref.source_ids == ("D2:4", "D2:5") and pref.importance == 8 and pref.project == "dexai"
            assert pref.metadata["migrated_from"] == "native"
            hits = await mem0.search("where does Sam live", user_id="sam")
            assert [r.memory.id for r in hits][0] == seeded["new"]
            assert seeded["old"] not in [r.memory.id for r in hits]  # superseded stays out of search
            assert await mem0.users() == ["sam"]  # --user sam copied only sam

    asyncio.run(check_mem0())

    again = json.loads(ok("memory", "migrate", "--from", "native", "--to", "mem0", "--all-users",
                          "--json").stdout)
    assert again["copied"] == 1 and again["skipped"] == 3  # only ana's memory was new

    # and back, into a fresh native store
    (isolated_home / "memory.db").unlink()
    back = json.loads(ok("memory", "migrate", "--from", "mem0", "--to", "native", "--all-users",
                         "--json").stdout)
    assert back["copied"] == 4 and back["users"] == {"ana": 1, "sam": 3}
    async def check_native() -> None:
        async with NativeProvider(load_settings().db_path, embedder=embedder) as native:
            old = await native.get(seeded["old"], user_id="sam")
            assert old.superseded_by == seeded["new"] and not old.is_valid
            assert old.metadata["migrated_from"] == "mem0"
            assert not any(e.action.startswith("MEM0_") for e in await native.events(seeded["old"], user_id="sam"))

    asyncio.run(check_native())


@pytest.fixture
def zep_server(embedder: Embedder, isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    from testing.fakezep import FakeZepServer

    with FakeZepServer(api_key="zep-test", embed=embedder.embed_batch) as server:
        config = isolated_home.parent / "zep.yaml"
        config.write_text(f"zep:\n  base_url: {server.base_url}\n  max_retries: 0\n")
        monkeypatch.setenv("ZEP_API_KEY", "zep-test")
        yield config


@needs_zep
def test_native_to_zep(seeded: dict[str, str], zep_server: Path) -> None:
    from dexai_memory.providers.zep import ZepProvider

    done = json.loads(ok("memory", "migrate", "--from", "native", "--to", "zep", "--all-users",
                         "--config", str(zep_server), "--json").stdout)
    assert done["copied"] == 4
    async def check_zep() -> None:
        async with ZepProvider.from_settings(load_settings(zep_server)) as zep:
            old = await zep.get(seeded["old"], user_id="sam")
            assert old.valid_until is not None and old.superseded_by == seeded["new"]
            assert {m.id for m in await zep.list(user_id="sam")} == {seeded["new"], seeded["pref"]}
            assert sorted(await zep.users()) == ["ana", "sam"]

    asyncio.run(check_zep())
