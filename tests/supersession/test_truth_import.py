"""`dexai memory import` decides new statements like every other door: a statement that changes a
stored fact replaces it, oldest first by when it was said, while the export -> import round trip
stays exact and a failed import writes nothing. Real SQLite stores, the real click entry point."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from dexai_memory.cli.main import cli
from dexai_memory.errors import StorageError
from dexai_memory.models import Memory, MemoryEvent, SearchFilters
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.imports import import_memories

FIELDS = ("id", "content", "type", "tier", "importance", "confidence", "created_at", "updated_at", "valid_from",
          "valid_until", "superseded_by", "superseded_at", "pinned", "archived", "metadata", "mention_count")


def ok(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def run(home: Path, *args: str) -> Any:
    return json.loads(ok(*args, "--user", "robin", "--home", str(home), "--json").stdout)


def everything(home: Path) -> dict[str, dict[str, Any]]:
    return {m["id"]: m for m in run(home, "memory", "list", "--all", "-n", "1000")}


def histories(home: Path) -> dict[str, Any]:
    return {mid: run(home, "memory", "history", mid) for mid in everything(home)}


def by_content(home: Path) -> dict[str, dict[str, Any]]:
    return {m["content"]: m for m in everything(home).values()}


def jsonl(path: Path, *entries: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def at(month: int) -> str:
    return datetime(2026, month, 1, 10, tzinfo=UTC).isoformat()


def test_an_imported_change_replaces_the_stored_fact_from_when_it_was_said(tmp_path: Path) -> None:
    home, old = tmp_path / "h", "m_emacs"
    _store(home, Memory(content="Robin uses Emacs as the editor", user_id="robin", id=old,
                        created_at=datetime(2026, 1, 1, tzinfo=UTC), valid_from=datetime(2026, 1, 1, tzinfo=UTC)))
    changed = jsonl(tmp_path / "new.jsonl", {"content": "Robin switched the editor to Neovim", "valid_from": at(3)})
    out = run(home, "memory", "import", str(changed))
    assert out["imported"] == 1 and len(out["superseded"]) == 1 and out["superseded"][0]["replaced"] == old
    mems = by_content(home)
    new = mems["Robin switched the editor to Neovim"]
    assert new["valid_until"] is None and new["superseded_by"] is None
    emacs = mems["Robin uses Emacs as the editor"]
    assert emacs["superseded_by"] == new["id"]
    assert emacs["valid_until"] == at(3)  # when it was said, not when it was imported
    current = {m["content"] for m in run(home, "memory", "list")}
    assert current == {"Robin switched the editor to Neovim"}
    # importing the same file again changes nothing
    before = everything(home)
    again = run(home, "memory", "import", str(changed))
    assert again["imported"] == 0 and again["skipped"] == 1 and everything(home) == before


def test_statements_are_applied_oldest_first_whatever_the_file_order(tmp_path: Path) -> None:
    home = tmp_path / "h"
    run(home, "memory", "add", "Robin likes green tea")  # a populated store
    newest_first = jsonl(tmp_path / "moves.jsonl",
                         {"content": "Robin moved to Porto", "valid_from": at(5)},
                         {"content": "Robin lives in Lisbon", "valid_from": at(2)},
                         {"content": "Robin switched the editor to Neovim", "valid_from": at(4)},
                         {"content": "Robin uses Emacs as the editor", "valid_from": at(1)})
    run(home, "memory", "import", str(newest_first))
    mems = by_content(home)
    current = {m["content"] for m in run(home, "memory", "list")}
    assert current == {"Robin likes green tea", "Robin moved to Porto", "Robin switched the editor to Neovim"}
    assert mems["Robin lives in Lisbon"]["superseded_by"] == mems["Robin moved to Porto"]["id"]
    assert mems["Robin lives in Lisbon"]["valid_until"] == at(5)
    assert mems["Robin uses Emacs as the editor"]["valid_until"] == at(4)
    # between the two statements, the old one was current
    as_of = {m["content"] for m in run(home, "memory", "list", "--as-of", "2026-03-01")}
    assert "Robin lives in Lisbon" in as_of and "Robin moved to Porto" not in as_of


def test_a_statement_said_before_the_stored_fact_goes_into_its_history(tmp_path: Path) -> None:
    home = tmp_path / "h"
    stored = run(home, "memory", "add", "Robin lives in Lisbon")  # said now
    earlier = jsonl(tmp_path / "old.jsonl", {"content": "Robin lives in Porto", "valid_from": at(1)})
    run(home, "memory", "import", str(earlier))
    mems = by_content(home)
    assert mems["Robin lives in Lisbon"]["valid_until"] is None
    porto = mems["Robin lives in Porto"]
    assert porto["superseded_by"] == stored["id"] and porto["valid_from"] == at(1)


def _store(home: Path, *memories: Memory) -> None:
    """Write memories straight to a store (no supersession), as an older store might hold them."""
    async def go() -> None:
        async with NativeProvider(home / "memory.db", embedder=None) as p:
            for m in memories:
                await p.add(m)
                await p.record_event(MemoryEvent(m.id, "ADD", "written by hand", m.created_at), user_id="robin")

    home.mkdir(parents=True, exist_ok=True)
    asyncio.run(go())


def test_the_round_trip_is_exact_even_when_the_export_holds_two_current_rivals(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    # two current memories the rules would read as a change: the source store kept both, the import must too
    _store(a, Memory(content="Robin uses Emacs as the editor", user_id="robin", id="m_emacs",
                     created_at=datetime(2026, 1, 1, tzinfo=UTC), valid_from=datetime(2026, 1, 1, tzinfo=UTC)),
           Memory(content="Robin switched the editor to Neovim", user_id="robin", id="m_neovim",
                  created_at=datetime(2026, 2, 1, tzinfo=UTC), valid_from=datetime(2026, 2, 1, tzinfo=UTC)))
    run(a, "memory", "add", "Robin lives in Lisbon")
    run(a, "memory", "add", "Robin moved to Porto")  # a real chain
    before, history_before = everything(a), histories(a)
    assert len(before) == 4 and sum(m["superseded_by"] is not None for m in before.values()) == 1
    dump = tmp_path / "dump.json"
    ok("memory", "export", "-o", str(dump), "--user", "robin", "--home", str(a))  # the default format
    run(b, "memory", "import", str(dump))
    after = everything(b)
    assert set(after) == set(before)
    for mid, m in before.items():
        assert {k: after[mid][k] for k in FIELDS} == {k: m[k] for k in FIELDS}, mid
    assert histories(b) == history_before
    # importing a store's own export into it changes nothing
    again = run(a, "memory", "import", str(dump))
    assert again["imported"] == 0 and again["skipped"] == 4
    assert everything(a) == before and histories(a) == history_before


def test_an_export_imported_into_another_populated_store_is_decided_against_it(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    run(b, "memory", "add", "Robin uses Emacs as the editor")
    _store(a, Memory(content="Robin switched the editor to Neovim", user_id="robin", id="m_neovim",
                     created_at=datetime(2026, 12, 1, tzinfo=UTC), valid_from=datetime(2026, 12, 1, tzinfo=UTC)))
    dump = tmp_path / "dump.json"
    ok("memory", "export", "-o", str(dump), "--user", "robin", "--home", str(a))
    run(b, "memory", "import", str(dump))
    mems = by_content(b)
    assert mems["Robin uses Emacs as the editor"]["superseded_by"] == "m_neovim"
    # the imported memory keeps its id and its own history, plus the link
    chain = {entry["memory"]["id"]: [e["action"] for e in entry["events"]]
             for entry in run(b, "memory", "history", "m_neovim")}
    assert sorted(chain["m_neovim"]) == ["ADD", "SUPERSEDES"]


def test_a_bad_file_writes_nothing_into_a_populated_store(tmp_path: Path) -> None:
    home = tmp_path / "h"
    run(home, "memory", "add", "Robin uses Emacs as the editor")
    before, history_before = everything(home), histories(home)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"content": "Robin switched the editor to Neovim"}) + "\n"
                   + json.dumps({"content": "Robin moved to Porto", "importance": "very"}) + "\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["memory", "import", str(bad), "--user", "robin", "--home", str(home)])
    assert result.exit_code != 0 and "nothing was imported" in result.output
    assert everything(home) == before and histories(home) == history_before


class FailingStore(NativeProvider):
    """A real SQLite store whose fifth new memory cannot be written (a disk that fills up): the two
    memories stored first and two of the import go in, the third of the import fails."""

    adds = 0

    async def add(self, memory: Memory) -> Memory:
        self.adds += 1
        if self.adds == 5:
            raise StorageError("disk is full")
        return await super().add(memory)


async def test_a_write_that_fails_midway_undoes_the_import(tmp_path: Path) -> None:
    async with FailingStore(tmp_path / "memory.db", embedder=None) as p:
        emacs = await p.add(Memory(content="Robin uses Emacs as the editor", user_id="robin",
                                   valid_from=datetime(2026, 1, 1, tzinfo=UTC)))
        tea = await p.add(Memory(content="Robin likes green tea", user_id="robin",
                                 valid_from=datetime(2026, 1, 1, tzinfo=UTC)))
        before = {m.id: m for m in await p.list(user_id="robin", limit=0)}
        events_before = {mid: await p.events(mid, user_id="robin") for mid in before}
        todo = [Memory(content="Robin switched the editor to Neovim", user_id="robin", id="n1",
                       valid_from=datetime(2026, 2, 1, tzinfo=UTC)),
                Memory(content="Robin moved to Porto", user_id="robin", id="n2",
                       valid_from=datetime(2026, 3, 1, tzinfo=UTC)),
                Memory(content="Robin drinks coffee", user_id="robin", id="n3",
                       valid_from=datetime(2026, 4, 1, tzinfo=UTC))]
        with pytest.raises(StorageError):
            await import_memories(p, todo, {})
        after = {m.id: m for m in await p.list(user_id="robin", limit=0)}
        assert set(after) == {emacs.id, tea.id}
        for mid, m in before.items():
            assert after[mid].replace(updated_at=None) == m.replace(updated_at=None)
        assert await p.list(user_id="robin", filters=SearchFilters(valid_only=False), limit=0) == list(after.values())
        assert await p.contradiction_log.list(user_id="robin") == []
        # the import had replaced Emacs before the failure: its history keeps that line (events are
        # append-only) and says it was undone; the memory itself is current again
        assert p.adds == 5 and not events_before[emacs.id]
        assert [e.action for e in await p.events(emacs.id, user_id="robin")] == ["SUPERSEDED", "IMPORT_UNDONE"]


def test_a_chain_whose_head_is_already_known_continues_in_the_stored_memory(tmp_path: Path) -> None:
    """An export's chain (Emacs, then Neovim) into a store that already holds the Neovim statement:
    the head is not stored twice, and the file's Emacs entry points at the stored memory."""
    a, b = tmp_path / "a", tmp_path / "b"
    run(a, "memory", "add", "Robin uses Emacs as the editor")
    run(a, "memory", "add", "Robin switched the editor to Neovim")
    known = run(b, "memory", "add", "Robin switched the editor to Neovim")["id"]
    dump = tmp_path / "dump.json"
    ok("memory", "export", "-o", str(dump), "--user", "robin", "--home", str(a))
    out = run(b, "memory", "import", str(dump))
    assert out["imported"] == 1 and out["merged"][0]["into"] == known
    mems = by_content(b)
    assert len(mems) == 2 and mems["Robin uses Emacs as the editor"]["superseded_by"] == known
    assert [m["content"] for m in run(b, "memory", "list")] == ["Robin switched the editor to Neovim"]


def test_records_are_stored_as_they_are(tmp_path: Path) -> None:
    """A transcript line says what was said, it is not a statement: it replaces nothing."""
    home = tmp_path / "h"
    _store(home, Memory(content="Robin uses Emacs as the editor", user_id="robin", id="m_emacs",
                        created_at=datetime(2026, 1, 1, tzinfo=UTC), valid_from=datetime(2026, 1, 1, tzinfo=UTC)))
    line = jsonl(tmp_path / "t.jsonl", {"content": "Robin switched the editor to Neovim", "type": "TRANSCRIPT",
                                        "tier": "L3", "valid_from": at(3)})
    assert run(home, "memory", "import", str(line))["imported"] == 1
    assert everything(home)["m_emacs"]["superseded_by"] is None


@pytest.mark.parametrize("index_from", [0, 10_000], ids=["word-index", "search"])
async def test_both_ways_of_finding_candidates_decide_alike(tmp_path: Path, index_from: int) -> None:
    """A big import finds candidates in a word index (as bulk ingest), a small one by search: the
    same statements end the same way."""
    def when(month: int) -> datetime:
        return datetime(2026, month, 1, 10, tzinfo=UTC)

    async with NativeProvider(tmp_path / "memory.db", embedder=None) as p:
        await p.add(Memory("Robin likes green tea", user_id="robin", id="tea", valid_from=when(1)))
        await p.add(Memory("Robin uses Emacs as the editor", user_id="robin", id="emacs", valid_from=when(1)))
        todo = [Memory("Robin moved to Porto", user_id="robin", id="porto", valid_from=when(5)),
                Memory("Robin lives in Lisbon", user_id="robin", id="lisbon", valid_from=when(2)),
                Memory("Robin switched the editor to Neovim", user_id="robin", id="neovim", valid_from=when(4)),
                Memory("Robin likes green tea", user_id="robin", id="tea2", valid_from=when(3))]
        done = await import_memories(p, todo, {}, index_from=index_from)
        current = {m.id for m in await p.list(user_id="robin", limit=0)}
        assert current == {"tea", "porto", "neovim"}
        assert (await p.get("lisbon", user_id="robin")).superseded_by == "porto"
        assert (await p.get("emacs", user_id="robin")).valid_until == when(4)
        assert done.merged == [("tea2", "tea")] and sorted(done.superseded) == [("neovim", "emacs"), ("porto", "lisbon")]
