"""The gate on the plugin path: a real daemon on a real native store keeps each session's recent
turns (bounded, dropped at SessionEnd) and scores a hook turn against them: a name the recent
turns never mentioned scores higher (entity novelty, code names included), and a turn whose
meaning departs from them is looked at again in the background (semantic divergence)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from dexai_memory.capture.divergence import (
    FLOOR,
    Divergence,
    distance,
    divergence_score,
    worth_a_look,
)
from dexai_memory.capture.recent import RecentTurns
from dexai_memory.config import Settings, load_settings
from dexai_memory.daemon.core import MemoryDaemon
from dexai_memory.embeddings import HashingEmbedder, OnnxMiniLMEmbedder
from dexai_memory.extraction.signals import GateResult, SignalScorer, code_names
from dexai_memory.models import Turn
from dexai_memory.providers.native import NativeProvider
from tests.hook_daemon import handle, queued_turns, running_daemon

U = "dana"
HABIT = "every morning we regenerate proto_gen"  # habit 0.2; + novelty 0.3 while proto_gen is new


@pytest.fixture
def settings(isolated_home: Path) -> Settings:
    return load_settings(home=isolated_home)


async def prompt_and_reply(daemon: MemoryDaemon, sid: str, text: str, n: int) -> None:
    await handle(daemon, "user-prompt-submit", {"session_id": sid, "prompt": text, "prompt_id": f"p{n}"}, user=U)
    await handle(daemon, "stop", {"session_id": sid, "last_assistant_message": "Done."}, user=U)


@pytest.fixture
async def daemon(settings: Settings) -> AsyncIterator[MemoryDaemon]:
    async with NativeProvider(settings.db_path, embedder=None) as store, running_daemon(settings, store) as d:
        yield d


def test_code_names_count_for_novelty() -> None:
    assert code_names("see `make lint-all`, src/app/main.py, setup.cfg and max_retries") == [
        "make lint-all", "src/app/main.py", "setup.cfg", "max_retries"]
    new = SignalScorer().score(HABIT, ["we talked about the flaky build"])
    seen = SignalScorer().score(HABIT, ["proto_gen came up"])
    assert new.signals.get("novelty") == 0.3 and new.passed
    assert "novelty" not in seen.signals and not seen.passed
    assert "novelty" not in SignalScorer(code_names=False).score(HABIT, ["the flaky build"]).signals


async def test_a_name_new_to_the_session_passes_and_the_same_turn_later_does_not(daemon: MemoryDaemon,
                                                                                 settings: Settings) -> None:
    await prompt_and_reply(daemon, "s1", "the flaky build is back", 0)
    await prompt_and_reply(daemon, "s1", HABIT, 1)               # proto_gen: new to the session
    await prompt_and_reply(daemon, "s1", HABIT + " again", 2)    # proto_gen: in the recent turns now
    await prompt_and_reply(daemon, "s2", HABIT + " too", 3)      # another session never heard of it
    queued = set(queued_turns(settings.home).values())
    assert HABIT in queued and HABIT + " too" in queued
    assert HABIT + " again" not in queued


async def test_recent_turns_are_bounded_and_dropped_at_session_end(daemon: MemoryDaemon) -> None:
    for n in range(8):
        await prompt_and_reply(daemon, "s1", f"turn number {n} about the build", n)
    held = daemon.recent.extend((U, "s1"), ())
    assert len(held) == daemon.recent.per_session and held[-1] == "Done."
    await handle(daemon, "session-end", {"session_id": "s1"}, user=U)
    assert daemon.recent.extend((U, "s1"), ()) == ()
    turns = RecentTurns(per_session=2, sessions=3)
    for s in range(5):
        turns.append(("u", f"s{s}"), "x")
    assert len(turns) == 3 and turns.extend(("u", "s0"), ()) == ()  # the least recently used went first


def test_divergence_is_bounded() -> None:
    a, b = np.array([1.0, 0.0], dtype=np.float32), np.array([0.0, 1.0], dtype=np.float32)
    assert distance(a, np.stack([a, a])) == pytest.approx(0.0)
    assert distance(b, np.stack([a, a])) == pytest.approx(1.0)
    assert divergence_score(FLOOR) == 0.0 and divergence_score(1.0) == 0.2 and divergence_score(2.0) == 0.2
    assert divergence_score(1.0, 0.0) == 0.0
    assert not worth_a_look(GateResult(0.0, False), 0.3)           # filler
    assert not worth_a_look(GateResult(0.05, False), 0.3)          # out of reach
    assert not worth_a_look(GateResult(0.4, True), 0.3)            # passed already
    assert worth_a_look(GateResult(0.1, False), 0.3)


async def test_a_turn_far_from_the_recent_ones_is_admitted_in_the_background(settings: Settings) -> None:
    kitchen = "every morning the kettle boils twice"               # habit 0.2: short of 0.3 alone
    async with NativeProvider(settings.db_path, embedder=HashingEmbedder()) as store, \
            running_daemon(settings, store) as daemon:
        for n, text in enumerate(["the flaky build fails on main", "the flaky build fails in CI", kitchen]):
            await prompt_and_reply(daemon, "s1", text, n)
        for _ in range(400):  # a background task: up to 20 s on a busy machine
            if daemon.second_look.admitted:
                break
            await asyncio.sleep(0.05)
        assert daemon.second_look.admitted == 1 and daemon.runs["divergence-admitted"] == 1
        assert kitchen in set(queued_turns(settings.home).values())
        # close to the recent turns: looked at, not admitted
        again = await daemon.second_look.reconsider(
            daemon.second_look.signal() or pytest.fail("no signal"),
            Turn(id="t9", user_id=U, content="every morning the flaky build fails"),
            ["the flaky build fails on main", "the flaky build fails in CI"], GateResult(0.2, False, {"habit": 0.2}),
            0.3, lambda turn, context: pytest.fail("queued"))
        assert not again.passed and again.score < 0.3


async def test_no_signal_without_a_loaded_embedder_or_with_weight_zero(settings: Settings, tmp_path: Path) -> None:
    async with NativeProvider(settings.db_path, embedder=None) as store, running_daemon(settings, store) as daemon:
        assert daemon.second_look.signal() is None
    unloaded = OnnxMiniLMEmbedder()
    assert not unloaded.loaded
    (settings.home / "memory.yaml").write_text("extraction:\n  gate_divergence_weight: 0\n")
    off = load_settings(home=settings.home)
    async with NativeProvider(tmp_path / "other.db", embedder=HashingEmbedder()) as store, \
            running_daemon(off, store) as daemon:
        assert daemon.second_look.signal() is None


def test_the_vectors_of_recent_turns_are_cached() -> None:
    class Counting(HashingEmbedder):
        calls = 0

        def embed_batch(self, texts):  # type: ignore[no-untyped-def]
            Counting.calls += len(texts)
            return super().embed_batch(texts)

    signal = Divergence(Counting())
    signal.distance("c", ["a", "b"])
    signal.distance("d", ["b", "c"])
    assert Counting.calls == 4  # a, b, c, then d alone


def test_a_burst_of_second_looks_is_bounded() -> None:
    from dexai_memory.capture.divergence import MAX_PENDING, SecondLook

    look = SecondLook(0.2, HashingEmbedder)
    near_miss = GateResult(0.2, False, {"habit": 0.2})
    assert look.wanted(near_miss, 0.3) is not None
    look.pending = MAX_PENDING
    assert look.wanted(near_miss, 0.3) is None and look.skipped == 1
    assert SecondLook(0.0, HashingEmbedder).wanted(near_miss, 0.3) is None  # weight 0: off
