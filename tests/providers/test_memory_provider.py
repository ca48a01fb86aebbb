"""The in-memory provider beyond the shared contract: chosen by settings, keyword ranking, no shared state."""

from __future__ import annotations

from pathlib import Path

from dexai_memory.config import load_settings
from dexai_memory.models import Memory, SearchFilters
from dexai_memory.providers import make_provider
from dexai_memory.providers.memory import InMemoryProvider


async def test_settings_select_it_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / "memory.yaml").write_text("storage:\n  provider: memory\n")
    settings = load_settings(home=tmp_path)
    async with make_provider(settings) as provider:
        assert isinstance(provider, InMemoryProvider)
        await provider.add(Memory("Sam lives in Lisbon", user_id="sam"))
        status = await provider.health_check()
        assert status.healthy and status.details["memories"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.yaml"]


async def test_rarer_words_rank_higher_and_unrelated_memories_stay_out() -> None:
    async with InMemoryProvider() as p:
        for i in range(4):
            await p.add(Memory(f"Sam fixed bug number {i} in the parser", user_id="u"))
        kiwi = await p.add(Memory("Sam ate a kiwi at lunch", user_id="u"))
        await p.add(Memory("The quarterly tax report is due in April", user_id="u"))
        results = await p.search("what did Sam eat, a kiwi?", user_id="u")
        assert results[0].memory.id == kiwi.id  # "kiwi" is rare, "Sam" is everywhere
        assert all("tax" not in r.memory.content for r in results)
        assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
        assert await p.search("the of and", user_id="u") == []  # stop words only


async def test_what_a_caller_holds_is_a_copy() -> None:
    async with InMemoryProvider() as p:
        m = await p.add(Memory("Sam prefers tabs", user_id="u", metadata={"tags": ["style"]}))
        got = await p.get(m.id, user_id="u")
        got.metadata["tags"].append("changed")  # type: ignore[index]
        assert (await p.get(m.id, user_id="u")).metadata == {"tags": ["style"]}


async def test_list_pages_newest_first_and_restore_undoes_a_soft_delete() -> None:
    async with InMemoryProvider() as p:
        ids = [(await p.add(Memory(f"note {i}", user_id="u"))).id for i in range(5)]
        page = await p.list(user_id="u", limit=2, offset=1)
        assert [m.id for m in page] == [ids[3], ids[2]]
        assert await p.delete(ids[0], user_id="u")
        assert await p.count(user_id="u") == 4
        restored = await p.restore(ids[0], user_id="u")
        assert not restored.deleted and await p.count(user_id="u", filters=SearchFilters()) == 5
        assert [e.action for e in await p.events(ids[0], user_id="u")] == ["FORGET", "RESTORE"]
