"""Mem0-specific behaviour: the real mem0ai library, local Qdrant, our embedder (no mocks of Mem0)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

if importlib.util.find_spec("mem0") is None:  # find_spec, not importorskip: importing mem0 first would
    pytest.skip("mem0ai is not installed", allow_module_level=True)  # skip our telemetry switch-off

from dexai_memory.config import Mem0Config  # noqa: E402
from dexai_memory.demo.fakeapi import FakeMessagesAPI, Reply, texts_of  # noqa: E402
from dexai_memory.embeddings import Embedder  # noqa: E402
from dexai_memory.errors import MissingExtra  # noqa: E402
from dexai_memory.models import Memory, MemoryType, SearchFilters  # noqa: E402
from dexai_memory.providers.mem0 import Mem0Provider  # noqa: E402


async def test_fields_live_in_mem0_metadata_and_session_is_run_id(tmp_path: Path, embedder: Embedder) -> None:
    async with Mem0Provider(tmp_path / "m", embedder=embedder) as p:
        note = await p.add_session_note("Chose SQLite for the cache", user_id="sam", session_id="s-42", importance=7)
        raw = (await p.mem.get_all(filters={"user_id": "sam", "run_id": "s-42"}))["results"]
        assert len(raw) == 1
        assert raw[0]["memory"] == "Chose SQLite for the cache"
        assert raw[0]["run_id"] == "s-42"
        assert raw[0]["metadata"]["dx_id"] == note.id
        assert raw[0]["metadata"]["dx_type"] == "SESSION_NOTE"
        assert raw[0]["metadata"]["dx_importance"] == 7
        # and Mem0's own search with our metadata filter finds it
        hits = (await p.mem.search("cache database", filters={"user_id": "sam", "dx_type": "SESSION_NOTE"}))["results"]
        assert [h["metadata"]["dx_id"] for h in hits] == [note.id]


async def test_mem0_history_is_merged_into_events(tmp_path: Path, embedder: Embedder) -> None:
    async with Mem0Provider(tmp_path / "m", embedder=embedder) as p:
        m = await p.add(Memory("The team meets on Mondays", user_id="u"))
        await p.update(m.id, user_id="u", content="The team meets on Thursdays")
        await p.update(m.id, user_id="u", importance=9)  # metadata only: no Mem0 UPDATE row, no re-embedding
        actions = [e.action for e in await p.events(m.id, user_id="u")]
        assert actions == ["MEM0_ADD", "MEM0_UPDATE"]
        update = (await p.events(m.id, user_id="u"))[1]
        assert update.details["before"] == "The team meets on Mondays"
        assert update.details["after"] == "The team meets on Thursdays"


async def test_hard_delete_erases_mem0_history(tmp_path: Path, embedder: Embedder) -> None:
    async with Mem0Provider(tmp_path / "m", embedder=embedder) as p:
        m = await p.add(Memory("Secret: the vault code is 0042", user_id="u"))
        point = (await p._item(m.id, "u"))["id"]  # type: ignore[index]
        assert await p.mem.history(point)
        assert await p.delete(m.id, user_id="u", hard=True)
        assert await p.mem.history(point) == []
        assert await p.mem.get(point) is None


async def test_store_persists_on_disk(tmp_path: Path, embedder: Embedder) -> None:
    async with Mem0Provider(tmp_path / "m", embedder=embedder) as p:
        m = await p.add(Memory("Sam's bike is green", user_id="sam", type=MemoryType.FACT, source_ids=("D1:1",)))
    async with Mem0Provider(tmp_path / "m", embedder=embedder) as again:
        got = await again.get(m.id, user_id="sam")
        assert got.source_ids == ("D1:1",)
        assert [r.memory.id for r in await again.search("bicycle colour", user_id="sam")] == [m.id]
        assert await again.users() == ["sam"]


async def test_add_messages_without_key_stores_verbatim(tmp_path: Path, embedder: Embedder) -> None:
    async with Mem0Provider(tmp_path / "m", embedder=embedder) as p:
        assert not p.infer_enabled
        stored = await p.add_messages([{"role": "user", "content": "I moved to Lisbon last spring"},
                                       {"role": "system", "content": "ignored"}], user_id="sam", session_id="s1",
                                      source_ids=("t1",))
        assert [m.content for m in stored] == ["I moved to Lisbon last spring"]
        got = await p.get(stored[0].id, user_id="sam")
        assert got.session_id == "s1" and got.source_ids == ("t1",)
        assert got.metadata["mem0_infer"] is False


async def test_add_messages_infers_with_haiku_through_fake_api(tmp_path: Path, embedder: Embedder) -> None:
    """Mem0's Anthropic LLM accepts a base URL: its extraction runs against the local fake Messages API."""
    with FakeMessagesAPI() as api:
        api.enqueue(Reply(text=json.dumps({"memory": [{"text": "Sam lives in Lisbon"},
                                                      {"text": "Sam moved in spring 2024"}]})))
        config = Mem0Config(llm_base_url=api.base_url)
        async with Mem0Provider(tmp_path / "m", embedder=embedder, config=config, api_key="test-key") as p:
            assert p.infer_enabled
            stored = await p.add_messages("I moved to Lisbon in spring 2024, loving it", user_id="sam",
                                          session_id="s1")
            assert sorted(m.content for m in stored) == ["Sam lives in Lisbon", "Sam moved in spring 2024"]
            assert all(m.metadata["mem0_infer"] is True for m in stored)
            hits = await p.search("where does Sam live", user_id="sam", filters=SearchFilters(session_id="s1"))
            assert hits[0].memory.content == "Sam lives in Lisbon"
        requests = api.message_requests()
        assert len(requests) == 1
        assert requests[0].body["model"] == config.llm_model
        assert any("Lisbon" in t for t in texts_of(requests[0]))


def test_missing_extra_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from dexai_memory.providers.mem0 import import_mem0

    monkeypatch.setitem(sys.modules, "mem0", None)  # what Python does for a package that is not installed
    with pytest.raises(MissingExtra, match=r"pip install 'dexai-memory\[mem0\]'"):
        import_mem0()
