"""The fact lifecycle of issue 14 (seed 003), one rule at a time, through the `dexai` command on a
real SQLite file: starting confidence, repetition, the cap and eviction score, category expiry,
the pin limit, clear with its exact count, and undo."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from dexai_memory.cli.main import cli
from dexai_memory.config import load_settings
from dexai_memory.models import Memory, MemoryType, SearchFilters, utcnow
from dexai_memory.providers.native import NativeProvider

U = "sam"


def dexai(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def ok(*args: str, input: str | None = None) -> Result:
    result = dexai(*args, input=input)
    assert result.exit_code == 0, result.output
    return result


def get(memory_id: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(ok("memory", "get", memory_id, "--user", U, "--json").stdout)
    return data


def store(memories: Sequence[Memory]) -> None:
    """Write memories (with past dates) straight to the store the CLI reads."""

    async def go() -> None:
        async with NativeProvider(load_settings().db_path, embedder=None) as p:
            await p.add_many(memories)

    asyncio.run(go())


def current() -> list[Memory]:
    async def go() -> list[Memory]:
        async with NativeProvider(load_settings().db_path, embedder=None) as p:
            return await p.list(user_id=U, filters=SearchFilters(), limit=10_000)

    return asyncio.run(go())


def ingest(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / f"{name}.jsonl"
    path.write_text(json.dumps({"id": f"{name}-1", "role": "user", "content": text}) + "\n")
    ok("memory", "ingest", str(path), "--user", U, "--vectors", "later")


@pytest.fixture(autouse=True)
def no_embedder(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\n")


def test_added_by_hand_starts_at_0_6() -> None:
    out = json.loads(ok("memory", "add", "Sam's laptop is a ThinkPad", "--user", U, "--json").stdout)
    assert out["confidence"] == pytest.approx(0.6)


def test_extracted_starts_at_0_75_and_each_repetition_adds_0_15_and_a_mention(tmp_path: Path) -> None:
    ingest(tmp_path, "monday", "The orders service runs on port 8443.")
    [fact] = [m for m in current() if "8443" in m.content and m.type is MemoryType.FACT]
    assert fact.confidence == pytest.approx(0.75) and fact.mention_count == 1
    ingest(tmp_path, "tuesday", "The orders service runs on port 8443.")
    after = get(fact.id)
    assert after["confidence"] == pytest.approx(0.9) and after["mention_count"] == 2
    ingest(tmp_path, "wednesday", "The orders service runs on port 8443.")
    assert get(fact.id)["confidence"] == pytest.approx(1.0)  # capped at 1


def old(content: str, days: float, type: MemoryType = MemoryType.FACT, confidence: float = 0.8,
        **kw: object) -> Memory:
    return Memory(content=content, user_id=U, type=type, confidence=confidence,
                  created_at=utcnow() - timedelta(days=days), **kw)  # type: ignore[arg-type]


def test_category_expiry_unless_referenced() -> None:
    used = {"retrieval_count": 1}  # injected once, long ago: the unused rule (below) leaves them to their expiry
    store([
        old("Project fact unreferenced for 61 days", 61, **used),
        old("Project fact recalled last week", 61, last_accessed=utcnow() - timedelta(days=7), **used),
        old("Preference unreferenced for 100 days", 100, MemoryType.PREFERENCE, **used),
        old("Preference unreferenced for 181 days", 181, MemoryType.PREFERENCE, **used),
        old("Colleague known for 300 days", 300, MemoryType.RELATIONSHIP, **used),
        old("Colleague known for 366 days", 366, MemoryType.RELATIONSHIP, **used),
        old("Pinned project fact of 400 days", 400, pinned=True),
    ])
    dry = json.loads(ok("memory", "prune", "--user", U, "--dry-run", "--json").stdout)
    assert len(dry["expired"]) == 3 and len(current()) == 7  # a dry run changes nothing
    report = json.loads(ok("memory", "prune", "--user", U, "--json").stdout)
    assert sorted(e["content"] for e in report["expired"]) == [
        "Colleague known for 366 days", "Preference unreferenced for 181 days",
        "Project fact unreferenced for 61 days"]
    assert {e["category"] for e in report["expired"]} == {"project", "preference", "identity"}
    left = {m.content for m in current()}
    assert left == {"Project fact recalled last week", "Preference unreferenced for 100 days",
                    "Colleague known for 300 days", "Pinned project fact of 400 days"}
    # archived to L3, never deleted
    archived = json.loads(ok("memory", "list", "--user", U, "--all", "--json").stdout)
    gone = [m for m in archived if m["archived"]]
    assert len(gone) == 3 and {m["tier"] for m in gone} == {"L3"}


def test_never_used_facts_are_archived_after_the_unused_window() -> None:
    """lifecycle.unused_forget_days (90): a durable fact never injected, recalled nor cited is
    archived 90 days after it was stored, whatever its category; one used once, a pinned one and
    one written by hand are kept; `prune` reports them under "unused", archived to L3."""
    store([
        old("Colleague Priya was never mentioned again", 120, MemoryType.RELATIONSHIP),
        old("Preference for tabs never came up", 95, MemoryType.PREFERENCE),
        old("Project fact stored last month", 30),
        old("Colleague Omar was recalled once", 120, MemoryType.RELATIONSHIP, retrieval_count=1,
            last_accessed=utcnow() - timedelta(days=100)),
        old("Colleague Ines was cited once", 120, MemoryType.RELATIONSHIP, citation_count=1,
            last_accessed=utcnow() - timedelta(days=100)),
        old("Pinned preference for dark mode", 120, MemoryType.PREFERENCE, pinned=True),
        old("Preference typed by hand for UTC dates", 120, MemoryType.PREFERENCE, metadata={"source": "cli"}),
    ])
    dry = json.loads(ok("memory", "prune", "--user", U, "--dry-run", "--json").stdout)
    assert sorted(e["content"] for e in dry["unused"]) == [
        "Colleague Priya was never mentioned again", "Preference for tabs never came up"]
    assert len(current()) == 7  # a dry run changes nothing
    text = ok("memory", "prune", "--user", U).output
    assert "2 unused" in text and "unused: never injected, recalled nor cited in the 90 days" in text
    left = {m.content for m in current()}
    assert "Colleague Priya was never mentioned again" not in left and len(left) == 5
    gone = [m for m in json.loads(ok("memory", "list", "--user", U, "--all", "--json").stdout) if m["archived"]]
    assert {m["tier"] for m in gone} == {"L3"} and len(gone) == 2  # archived, never deleted


def test_cap_evicts_highest_score_first_down_to_the_cap() -> None:
    # 160 durable facts: over the hard cap (150), so at least 10 go, the highest
    # age x weight / confidence first; pinned ones never.
    memories = [old(f"Routine project note number {i}", 10 + i * 0.1) for i in range(150)]
    memories += [old(f"Unsure old project note {i}", 30, confidence=0.3) for i in range(5)]
    memories += [old(f"Old preference {i}", 40, MemoryType.PREFERENCE) for i in range(3)]
    memories += [old(f"Pinned ancient note {i}", 59, pinned=True, confidence=0.1) for i in range(2)]
    store(memories)
    report = json.loads(ok("memory", "prune", "--user", U, "--json").stdout)
    assert report["facts_before"] == 160 and report["facts_after"] == 150
    evicted = [e["content"] for e in report["evicted"]]
    assert len(evicted) == 10
    assert all(c.startswith("Unsure old project note") for c in evicted[:5])  # 30 x 0.8 / 0.3 = 80
    assert not any("Pinned" in c for c in evicted) and not any("preference" in c for c in evicted)
    scores = [e["score"] for e in report["evicted"]]
    assert scores == sorted(scores, reverse=True)
    # between prune_from (120) and the cap, eviction is gradual: prune_batch (10) per run
    report = json.loads(ok("memory", "prune", "--user", U, "--json").stdout)
    assert report["facts_before"] == 150 and len(report["evicted"]) == 10


def test_at_most_ten_pins_with_a_clear_message_on_the_eleventh() -> None:
    ids = [json.loads(ok("memory", "add", f"Important thing {i}", "--user", U, "--json").stdout)["id"]
           for i in range(11)]
    for mid in ids[:10]:
        ok("memory", "pin", mid, "--user", U)
    eleventh = dexai("memory", "pin", ids[10], "--user", U)
    assert eleventh.exit_code == 1
    assert "10 memories are pinned already" in eleventh.output and "unpin" in eleventh.output
    assert get(ids[10])["pinned"] is False
    refused = dexai("memory", "add", "One more pinned thing", "--pin", "--user", U)
    assert refused.exit_code == 1 and "pinned already" in refused.output
    ok("memory", "pin", ids[0], "--user", U)  # pinning a pinned memory again is fine
    ok("memory", "unpin", ids[0], "--user", U)
    ok("memory", "pin", ids[10], "--user", U)  # room again


def test_clear_shows_the_exact_count_asks_and_can_be_undone() -> None:
    for i in range(3):
        ok("memory", "add", f"Sam fact {i}", "--user", U)
    ok("memory", "add", "Someone else's fact", "--user", "other")
    refused = dexai("memory", "clear", "--user", U)  # no terminal, no --yes: refused, nothing removed
    assert refused.exit_code == 1 and "This will remove all 3 memories of sam" in refused.output
    assert "--yes" in refused.output and len(current()) == 3
    aborted = dexai("memory", "clear", "--user", U, input="n\n")
    assert len(current()) == 3, aborted.output
    out = ok("memory", "clear", "--user", U, "--yes").output
    assert "Cleared 3 memories of sam" in out and "dexai memory undo" in out
    assert current() == []
    assert json.loads(ok("memory", "list", "--user", "other", "--json").stdout)  # other users untouched
    assert "Restored 3 memories" in ok("memory", "undo", "--user", U).output
    assert sorted(m.content for m in current()) == ["Sam fact 0", "Sam fact 1", "Sam fact 2"]
    again = dexai("memory", "undo", "--user", U)
    assert again.exit_code == 1 and "no clear of sam to undo" in again.output


def test_undo_window_passes_then_cleanup_erases(tmp_path: Path) -> None:
    from dexai_memory.lifecycle.clear import purge_expired

    ok("memory", "add", "A fact to clear", "--user", U)
    ok("memory", "clear", "--user", U, "--yes")
    settings = load_settings()
    later = utcnow() + timedelta(minutes=settings.lifecycle.undo_minutes + 1)

    async def go() -> int:
        async with NativeProvider(settings.db_path, embedder=None) as p:
            return await purge_expired(p, settings.home, U, settings.lifecycle, now=later)

    assert asyncio.run(go()) == 1
    again = dexai("memory", "undo", "--user", U)
    assert again.exit_code == 1
    assert json.loads(ok("memory", "list", "--user", U, "--all", "--json").stdout) == []
