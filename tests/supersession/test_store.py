"""One write path: a fact added by hand (``remember``, ``dexai memory add``) goes through the same
supersession as a note extracted from a turn, so a contradiction between them is decided, stored and
recorded the same way whichever came first."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from dexai_memory.agent_tools.tools import RememberStatus, remember
from dexai_memory.config import load_settings
from dexai_memory.models import Memory, Turn, UpdateAction, UpdateDecision
from dexai_memory.pipeline import Pipeline
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.classifier import UpdateClassifier
from dexai_memory.supersession.rules import OfflineClassifier
from dexai_memory.supersession.store import store_statement
from tests.pipeline_fakes import EchoExtractor


class RecordingClassifier(UpdateClassifier):
    """The offline rules, recording every statement they are asked about."""

    def __init__(self) -> None:
        self.inner = OfflineClassifier()
        self.asked: list[str] = []

    async def classify(self, new_fact: str, existing: Sequence[Memory]) -> list[UpdateDecision]:
        self.asked.append(new_fact)
        return await self.inner.classify(new_fact, existing)


@dataclass
class DaemonParts:
    """What the agent tools are handed in the daemon: its provider and its pipeline."""

    provider: NativeProvider
    pipeline: Pipeline


@pytest.fixture
async def parts(tmp_path: Path) -> AsyncIterator[DaemonParts]:
    async with NativeProvider(tmp_path / "memory.db", embedder=None) as provider:
        yield DaemonParts(provider, Pipeline(provider, load_settings(), extractor=EchoExtractor(),
                                             classifier=RecordingClassifier()))


async def extracted(parts: DaemonParts, tid: str, content: str) -> Memory:
    await parts.pipeline.process([(Turn(id=tid, user_id="u", content=content, session_id="s"), ())])
    (memory,) = [m for m in await parts.provider.list(user_id="u") if m.content == content]
    return memory


async def by_hand(parts: DaemonParts, content: str) -> Memory:
    result = await remember(parts, content, "fact", user_id="u", session_id="s")
    assert result.memory is not None
    return result.memory


Door = Callable[..., Awaitable[Memory]]


@pytest.mark.parametrize(("first", "second"), [
    pytest.param(extracted, by_hand, id="extracted-then-remembered"),
    pytest.param(by_hand, extracted, id="remembered-then-extracted"),
    pytest.param(by_hand, by_hand, id="remembered-twice"),
])
async def test_a_contradicting_fact_supersedes_the_old_one_whatever_the_door(parts: DaemonParts, first: Door,
                                                                            second: Door) -> None:
    async def add(door: Door, content: str) -> Memory:
        if door is extracted:
            return await extracted(parts, "t1" if "Berlin" in content else "t2", content)
        return await by_hand(parts, content)

    old = await add(first, "Ana lives in Berlin")
    new = await add(second, "Ana lives in Lisbon")
    classifier = parts.pipeline.classifier
    assert isinstance(classifier, RecordingClassifier)
    assert classifier.asked[-1] == "Ana lives in Lisbon"  # the daemon's classifier decided, whatever the door
    before = await parts.provider.get(old.id, user_id="u")
    assert before.superseded_by == new.id and not before.is_valid
    assert [e.action for e in await parts.provider.events(old.id, user_id="u")] == ["ADD", "SUPERSEDED"]
    assert [e.action for e in await parts.provider.events(new.id, user_id="u")] == ["SUPERSEDES"]
    assert parts.provider.contradiction_log is not None
    (c,) = await parts.provider.contradiction_log.list(user_id="u", open_only=False)
    assert (c.memory_a, c.memory_b, c.resolution) == (old.id, new.id, "b_wins")


async def test_remember_reports_what_store_statement_did(parts: DaemonParts) -> None:
    await by_hand(parts, "Ana works at Initech")
    result = await remember(parts, "Ana works at Hooli", "fact", user_id="u")
    assert result.status is RememberStatus.SUPERSEDED and result.previous is not None
    assert result.previous.content == "Ana works at Initech"
    again = await store_statement(parts.provider, Memory("Ana works at Hooli", user_id="u"))
    assert again.decision.action is UpdateAction.NOOP
    assert again.memory is not None and result.memory is not None and again.memory.id == result.memory.id
