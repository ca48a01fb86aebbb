"""Learning from use, through the daemon's executor on a real native store: a prompt's recall block
is answered by a reply (Stop); what the reply used is counted cited, what it did not use ignored,
and the next recall for the same prompt ranks by those counts, within a bounded multiplier."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from dexai_memory.config import Settings, load_settings
from dexai_memory.daemon.core import MemoryDaemon
from dexai_memory.daemon.session_state import AWAITING, load_session
from dexai_memory.lifecycle.usage import record_citations
from dexai_memory.models import Memory, MemoryType
from dexai_memory.providers.native import NativeProvider
from dexai_memory.recall.ranking import recall_request, usage_factor
from tests.hook_daemon import context_of, handle, running_daemon

U = "alice"
PROMPT = "Which orders port should I use?"
#: Three notes that match PROMPT equally (the same words, the same length): only use tells them apart.
PORTS = {"8443": "Orders port: 8443 staging", "9090": "Orders port: 9090 production",
         "7070": "Orders port: 7070 testing"}
#: A reply that uses the note of each port (repeats its distinctive words), and none of the others.
REPLIES = {"8443": "Use 8443, the staging one.", "9090": "Use 9090 for production.",
           "7070": "Use 7070 while testing."}


def settings_with(home: Path, extra: str = "") -> Settings:
    home.mkdir(parents=True, exist_ok=True)
    (home / "memory.yaml").write_text("embedding:\n  backend: none\n" + extra)
    return load_settings(home=home)


@pytest.fixture
def settings(isolated_home: Path) -> Settings:
    return settings_with(isolated_home)


@pytest.fixture
async def provider(settings: Settings) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(settings.db_path, embedder=None) as p:
        yield p


async def add_ports(provider: NativeProvider, user: str = U) -> dict[str, Memory]:
    # confidence 0.5: below the persistent context's floor, so only the prompt's recall shows them
    return {port: await provider.add(Memory(content=text, user_id=user, confidence=0.5))
            for port, text in PORTS.items()}


def order(text: str) -> list[str]:
    """The ports in the order a block shows them."""
    return sorted((p for p in PORTS if p in text), key=text.index)


async def counts(provider: NativeProvider, memory: Memory) -> tuple[int, int]:
    m = await provider.get(memory.id, user_id=memory.user_id)
    return m.citation_count, m.ignore_count


async def settled(provider: NativeProvider, memories: Sequence[Memory], want: int) -> None:
    """Wait for the Stop's background count (at least ``want`` counts over ``memories``)."""
    for _ in range(300):
        if sum([sum(await counts(provider, m)) for m in memories]) >= want:
            return
        await asyncio.sleep(0.01)


async def turn(daemon: MemoryDaemon, session: str, reply: str) -> str:
    """One prompt (PROMPT) and its reply in ``session``; returns the prompt's block."""
    await handle(daemon, "session-start", {"session_id": session, "source": "startup"})
    block = context_of(await handle(daemon, "user-prompt-submit", {"session_id": session, "prompt": PROMPT}),
                       "UserPromptSubmit")
    await handle(daemon, "stop", {"session_id": session, "last_assistant_message": reply})
    return block


async def test_the_reply_counts_the_block_cited_or_ignored_and_the_next_block_ranks_by_it(
        provider: NativeProvider, settings: Settings) -> None:
    ports = await add_ports(provider)
    tabs = await provider.add(Memory(content="Alice indents with tabs in every repository", user_id=U,
                                     type=MemoryType.PREFERENCE, importance=9, pinned=True))
    async with running_daemon(settings, provider) as daemon:
        await handle(daemon, "session-start", {"session_id": "s1", "source": "startup"})
        first = context_of(await handle(daemon, "user-prompt-submit", {"session_id": "s1", "prompt": PROMPT}),
                           "UserPromptSubmit")
        before = order(first)
        assert len(before) == 3  # all three shown, equally matching: the store's own order
        last = before[-1]
        assert set(load_session(settings, "s1")[AWAITING]) == {m.id for m in ports.values()}
        await handle(daemon, "stop", {"session_id": "s1", "last_assistant_message": REPLIES[last]})
        await settled(provider, list(ports.values()), 3)
        assert await counts(provider, ports[last]) == (1, 0)  # used: cited, not ignored
        assert [await counts(provider, ports[p]) for p in before[:2]] == [(0, 1), (0, 1)]  # shown, not used
        assert await counts(provider, tabs) == (0, 0)  # the SessionStart block is not the prompt's
        # ... but it was shown: retrieved (the never-used rule keeps it), its expiry clock untouched
        shown = await provider.get(tabs.id, user_id=U)
        assert shown.retrieval_count == 1 and shown.last_accessed is None
        assert not load_session(settings, "s1").get(AWAITING)  # answered
        # a second reply without a new prompt ignores nothing more
        await handle(daemon, "stop", {"session_id": "s1", "last_assistant_message": "Anything else?"})
        await asyncio.sleep(0.2)
        assert [await counts(provider, ports[p]) for p in before[:2]] == [(0, 1), (0, 1)]

        # the next session: the cited note leads the same prompt's block, the ignored ones follow
        after = order(await turn(daemon, "s2", "Noted."))
        assert after == [last, *before[:2]]


async def test_a_cited_note_outranks_an_equal_never_used_one_and_five_ignores_drop_one_below(
        isolated_home: Path) -> None:
    """Every recall door's block (the executor's recall, and the CLI's own route without a
    daemon): cited once beats an equal never-used note; ignored five times falls below one."""
    settings = settings_with(isolated_home)
    async with NativeProvider(settings.db_path, embedder=None) as provider:
        cited = await add_ports(provider, "u-cited")
        ignored = await add_ports(provider, "u-ignored")
        async with running_daemon(settings, provider) as daemon:
            async def block(user: str) -> list[str]:
                result = await daemon.executor.recall(user_id=user, prompt=PROMPT)
                cli = await recall_request(provider, settings, {"user_id": user, "prompt": PROMPT})
                assert order(cli["text"]) == order(result.text)  # one ranking behind every door
                return order(result.text)

            base = await block("u-cited")
            assert await block("u-ignored") == base  # the same store order for both users
            top, second = base[0], base[1]

            # the reply used the second note once: it now leads the never-used top one
            await record_citations(provider, "u-cited", REPLIES[second], [cited[second].id], session_id="s")
            assert (await block("u-cited"))[:2] == [second, top]

            # the top note was shown five times and never used: the never-used second one leads
            for _ in range(5):
                await provider.record_retrieval([ignored[top].id], user_id="u-ignored", ignored=True)
            after = await block("u-ignored")
            assert after[0] == second and after.index(top) > after.index(second)


async def test_use_is_bounded_and_can_be_turned_off(isolated_home: Path) -> None:
    """A note cited ten times never beats a clearly better match; ``auto_recall.usage_weight: 0``
    leaves the store's order as it was whatever the counts."""
    strong = Memory(content="The orders service port is 8443 and orders go through the port gateway",
                    user_id=U, confidence=0.5)
    weak = Memory(content="Orders are shipped on Mondays", user_id=U, confidence=0.5, citation_count=10)
    def factor(cited: int, ignored: int) -> float:
        return usage_factor(Memory(content="x", user_id=U, citation_count=cited, ignore_count=ignored), 0.1)

    assert factor(0, 0) == 1.0 and factor(1, 0) == pytest.approx(1.05) and factor(0, 5) == pytest.approx(0.9286, abs=1e-4)
    assert factor(1, 2) == 1.0  # one use outweighs two ignores
    assert 1.0 < factor(10_000, 0) <= 1.1 and 0.9 <= factor(0, 10_000) < 1.0  # capped either way
    on = settings_with(isolated_home / "on")
    async with NativeProvider(on.db_path, embedder=None) as provider:
        await provider.add_many([strong, weak])
        result = await recall_request(provider, on, {"user_id": U, "prompt": "Which port do the orders use?"})
        ids = [m["id"] for m in result["memories"]]
        assert ids.index(strong.id) < ids.index(weak.id)

    off = settings_with(isolated_home / "off", "auto_recall:\n  usage_weight: 0\n")
    async with NativeProvider(off.db_path, embedder=None) as provider:
        ports = await add_ports(provider)
        base = order((await recall_request(provider, off, {"user_id": U, "prompt": PROMPT}))["text"])
        for _ in range(5):
            await provider.record_retrieval([ports[base[0]].id], user_id=U, ignored=True)
        await record_citations(provider, U, REPLIES[base[-1]], [ports[base[-1]].id], session_id="s")
        assert order((await recall_request(provider, off, {"user_id": U, "prompt": PROMPT}))["text"]) == base
