"""Which memories consolidation links (the rules of :mod:`dexai_memory.lifecycle.links`), and how
recall brings the linked ones in (:mod:`dexai_memory.recall.linked`), on the in-memory provider."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from dexai_memory.config import load_settings
from dexai_memory.lifecycle.links import (
    MAX_LINKS_PER_MEMORY,
    MAX_NAME_MEMORIES,
    discover_links,
    files,
    find_links,
    names,
)
from dexai_memory.models import Memory, MemoryType, utcnow
from dexai_memory.providers.memory import InMemoryProvider
from dexai_memory.recall.ranking import recall_block

NOW = utcnow()


def said(content: str, days_ago: float = 0.0, **kw: object) -> Memory:
    return Memory(content=content, user_id="u", created_at=NOW - timedelta(days=days_ago), **kw)  # type: ignore[arg-type]


def kinds(memories: list[Memory]) -> set[tuple[str, str, str]]:
    index = {m.id: i for i, m in enumerate(memories)}
    return {(f"m{index[k.memory_a]}", f"m{index[k.memory_b]}", k.kind) for k in find_links(memories, user_id="u")}


def test_names_and_files() -> None:
    assert names("Caroline: Went to the Pride parade in Sweden with the LGBTQ group") == {"pride", "sweden", "lgbtq"}
    assert names("The user's CandidateIndex and store_statement broke in May") == {"candidateindex",
                                                                                   "store_statement"}
    assert files("edit src/app/main.py and README.md, not main.pyc") == {"main.py", "readme.md"}


@pytest.mark.parametrize(("texts", "expected"), [
    pytest.param(["The nightly job fails with an out of memory error in exporter.py",
                  "Fixed exporter.py: rows are streamed in batches of 500 now"],
                 {("m0", "m1", "fix"), ("m0", "m1", "file")}, id="an error and its later fix"),
    pytest.param(["Fixed exporter.py: rows are streamed in batches of 500 now",
                  "The nightly job fails with an out of memory error in exporter.py"],
                 {("m0", "m1", "file")}, id="a fix said before the error fixes another one"),
    pytest.param(["We decided to go with Kafka for the event bus",
                  "Kafka was picked for the event bus because RabbitMQ dropped messages under load"],
                 {("m0", "m1", "reason"), ("m0", "m1", "entity")}, id="a decision and its reason"),
    pytest.param(["Melanie ran a charity race for Hopewell shelter", "Hopewell shelter asked Melanie for a poster"],
                 {("m0", "m1", "entity")}, id="a rare name"),
    pytest.param(["Melanie likes tea", "Melanie paints sunsets"], set(), id="a capital at a sentence's start"),
    pytest.param(["Melanie likes tea", "Melanie paints sunsets", "Tea with Melanie"], {
        ("m0", "m1", "entity"), ("m0", "m2", "entity"), ("m1", "m2", "entity")}, id="a name seen elsewhere"),
    pytest.param(["The retro is on Zoom with Dana", "We wrote the Zoom notes with Dana"],
                 {("m0", "m1", "entity")}, id="two shared names, one link"),
])
def test_link_rules(texts: list[str], expected: set[tuple[str, str, str]]) -> None:
    memories = [said(t, days_ago=10 - i) for i, t in enumerate(texts)]
    assert kinds(memories) == expected


def test_what_is_never_linked() -> None:
    common = [said(f"Talked with Melanie about Zephyr, item {i}", 30 - i) for i in range(MAX_NAME_MEMORIES + 1)]
    assert kinds(common) == set()  # a name nearly every memory carries links nothing
    one_turn = [said("Dana moved the retro to Zoom", source_ids=("t1",)),
                said("the retro is on Zoom, says Dana", source_ids=("t1",))]
    assert kinds(one_turn) == set()  # one source turn: tied by provenance already
    projects = [said("the Zoom call with Dana", project="a"), said("notes of Dana's Zoom call", project="b")]
    assert kinds(projects) == set()
    gone = [said("the Zoom call with Dana"), said("notes of the Zoom call with Dana", superseded_by="m_x")]
    assert kinds(gone) == set()  # only current memories
    snap = [said("the Zoom call with Dana"), said("working on the Zoom call with Dana", type=MemoryType.SNAPSHOT)]
    assert kinds(snap) == set()


def test_a_memory_takes_part_in_a_few_links_at_most() -> None:
    hub = said("Asked Ana, Bea, Cy, Dee, Eve and Fay about Quokka")
    others = [said(f"{name} wrote the {i} report", i + 1) for i, name in
              enumerate(["Ok: Ana", "Ok: Bea", "Ok: Cy", "Ok: Dee", "Ok: Eve", "Ok: Fay"])]
    found = find_links([hub, *others], user_id="u")
    assert sum(hub.id in (k.memory_a, k.memory_b) for k in found) == MAX_LINKS_PER_MEMORY


async def recall(provider: InMemoryProvider, query: str, *, follow: bool = True, **kw: object) -> list[tuple[str, str | None]]:
    s = load_settings()
    s = dataclasses.replace(s, auto_recall=dataclasses.replace(s.auto_recall, follow_links=follow))
    result = await recall_block(provider, "u", query, s, **kw)  # type: ignore[arg-type]
    return [(r.memory.content, r.via) for r in result.memories]


async def test_recall_brings_a_linked_memory_in_below_its_source() -> None:
    p = InMemoryProvider()
    error = await p.add(said("The nightly job fails with an out of memory error in exporter.py", 3))
    fix = await p.add(said("Fixed exporter.py: rows are streamed in batches of 500 now", 2))
    await p.add(said("Sam waters the plants on Sundays", 1))
    query = "what happened with the nightly job"
    assert await recall(p, query) == [(error.content, None)]
    assert await discover_links(p, "u", dry_run=True) == 2 and await discover_links(p, "u") == 2
    assert await discover_links(p, "u") == 0  # found again, stored once
    assert await recall(p, query) == [(error.content, None), (fix.content, f"fix link from {error.id}")]
    assert await recall(p, query, follow=False) == [(error.content, None)]
    assert await recall(p, query, as_of=NOW) == [(error.content, None)]  # a look back follows no links
    # a block too small for both keeps the source, not what it brought in
    assert await recall(p, query, max_tokens=50) == [(error.content, None)]
    # a linked memory that is no longer current is not brought in
    await p.update(fix.id, user_id="u", valid_until=NOW)
    assert await recall(p, query) == [(error.content, None)]
