"""Server-side compaction with memory re-injection (real anthropic client against the fake API),
and the proactive compaction triggers."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anthropic
import pytest

from dexai_memory.api_compaction import (
    API_MIN_TRIGGER_TOKENS,
    COMPACT_EDIT_TYPE,
    COMPACTION_BETA,
    MEMORY_RESTORED_HEADER,
    CompactingClient,
    CompactionReason,
    ConversationState,
    ProactiveCompaction,
    compaction_edit,
    create_with_memory,
    message_text,
)
from dexai_memory.config import Settings, load_settings
from dexai_memory.demo.fakeapi import FakeMessagesAPI, RecordedRequest, Reply
from dexai_memory.embeddings import Embedder
from dexai_memory.models import Memory, MemoryType
from dexai_memory.providers.native import NativeProvider

U = "alice"
MODEL = "claude-sonnet-4-6"
SUMMARY = "The user and assistant planned a trip."
PLANTED = [
    ("User's daughter Maya is allergic to peanuts", MemoryType.FACT),
    ("User prefers window seats on flights", MemoryType.PREFERENCE),
]
CONVERSATION: list[dict[str, Any]] = [
    {"role": "user", "content": "We're flying to Lisbon with Maya next week."},
    {"role": "assistant", "content": [{"type": "text", "text": "Great, how can I help plan it?"}]},
    {"role": "user", "content": "What snacks should I pack for Maya for the flight?"},
]


@pytest.fixture
def settings(isolated_home: Path) -> Settings:
    return load_settings()


@pytest.fixture
def api() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI(compaction_summary=SUMMARY) as fake:
        yield fake


@pytest.fixture
async def client(api: FakeMessagesAPI) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with anthropic.AsyncAnthropic(base_url=api.base_url, api_key="test", max_retries=0) as c:
        yield c


@pytest.fixture
async def store(tmp_path: Path, embedder: Embedder) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(tmp_path / "memory.db", embedder=embedder) as provider:
        for content, mtype in PLANTED:
            await provider.add(Memory(content=content, user_id=U, type=mtype, importance=7))
        yield provider


class QueueDaemon:
    """A stand-in for MemoryDaemon: turns submitted but not yet extracted are stored on flush()."""

    def __init__(self, provider: NativeProvider) -> None:
        self.provider = provider
        self.pending: list[str] = []
        self.flushes = 0

    async def flush(self) -> None:
        self.flushes += 1
        for content in self.pending:
            await self.provider.add(Memory(content=content, user_id=U, type=MemoryType.FACT, importance=8))
        self.pending.clear()


def body(request: RecordedRequest) -> dict[str, Any]:
    assert isinstance(request.body, dict)
    return request.body


async def test_request_carries_the_compaction_edit(api: FakeMessagesAPI, client: anthropic.AsyncAnthropic,
                                                   store: NativeProvider, settings: Settings) -> None:
    run = await create_with_memory(client, messages=CONVERSATION, user_id=U, memory=store, settings=settings,
                                   model=MODEL, max_tokens=100, betas=["other-beta-2025-01-01"],
                                   context_management={"edits": [{"type": "clear_tool_uses_20250919"}]})
    assert run.requests == 1 and not run.compacted
    assert run.response.stop_reason == "end_turn"
    [request] = api.message_requests()
    assert COMPACTION_BETA in request.betas and "other-beta-2025-01-01" in request.betas
    edits = body(request)["context_management"]["edits"]
    assert edits[0] == {"type": "clear_tool_uses_20250919"}
    assert edits[1] == {
        "type": COMPACT_EDIT_TYPE,
        "trigger": {"type": "input_tokens", "value": settings.compaction.server_side_trigger_tokens},
        "instructions": settings.compaction.instructions,
        "pause_after_compaction": True,
    }
    assert body(request)["messages"] == CONVERSATION
    assert run.messages == CONVERSATION


async def test_compaction_pause_reinjects_memory_and_continues(
        api: FakeMessagesAPI, client: anthropic.AsyncAnthropic, store: NativeProvider, settings: Settings) -> None:
    daemon = QueueDaemon(store)
    daemon.pending.append("Maya's flight snacks must be nut-free rice cakes")
    api.enqueue(Reply(compaction=True), Reply(text="Pack nut-free rice cakes for Maya."))
    run = await create_with_memory(client, messages=CONVERSATION, user_id=U, memory=daemon, settings=settings,
                                   model=MODEL, max_tokens=200)
    assert run.requests == 2
    assert run.response.stop_reason == "end_turn"
    assert daemon.flushes == 1
    [event] = run.events
    assert event.summary == SUMMARY and event.flushed

    first, second = (body(r) for r in api.message_requests())
    assert first["messages"] == CONVERSATION
    continued = second["messages"]
    assert continued[:3] == CONVERSATION
    assert continued[3] == {"role": "assistant", "content": [{"type": "compaction", "content": SUMMARY}]}
    restored = continued[4]
    assert restored["role"] == "user"
    memory_text = restored["content"][0]["text"]
    assert memory_text.startswith(MEMORY_RESTORED_HEADER + "\n")
    assert "allergic to peanuts" in memory_text            # planted fact, relevant to the question
    assert "window seats" in memory_text                   # planted preference (profile)
    assert "nut-free rice cakes" in memory_text            # flushed just before the block was built
    # the user's question follows the memory block
    assert restored["content"][1] == {"type": "text", "text": CONVERSATION[-1]["content"]}
    assert second["context_management"] == first["context_management"]
    assert run.messages == continued
    assert any("paused after compaction" in line for line in run.log)
    assert any("re-injected" in line for line in run.log)


async def test_tool_results_are_not_carried_after_compaction(
        api: FakeMessagesAPI, client: anthropic.AsyncAnthropic, store: NativeProvider, settings: Settings) -> None:
    messages = [
        {"role": "user", "content": "Check the weather in Lisbon"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "weather",
                                           "input": {"city": "Lisbon"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Sunny, 24C"}]},
    ]
    api.enqueue(Reply(compaction=True))
    run = await create_with_memory(client, messages=messages, user_id=U, memory=store, settings=settings,
                                   model=MODEL, max_tokens=50)
    restored = body(api.message_requests()[-1])["messages"][-1]
    assert [b["type"] for b in restored["content"]] == ["text"]
    assert restored["content"][0]["text"].startswith(MEMORY_RESTORED_HEADER)
    assert run.compacted and not run.events[0].flushed  # a bare provider has no queue to flush


async def test_repeated_pauses_stop_at_max_compactions(
        api: FakeMessagesAPI, client: anthropic.AsyncAnthropic, store: NativeProvider, settings: Settings) -> None:
    api.responder = lambda body: Reply(compaction=True)
    run = await create_with_memory(client, messages=CONVERSATION, user_id=U, memory=store, settings=settings,
                                   model=MODEL, max_tokens=50, max_compactions=2)
    assert run.requests == 3 and len(run.events) == 2
    assert run.response.stop_reason == "compaction"
    assert "max_compactions=2" in run.log[-1]


async def test_server_side_off_sends_no_edit(api: FakeMessagesAPI, client: anthropic.AsyncAnthropic,
                                             store: NativeProvider, settings: Settings) -> None:
    off = dataclasses.replace(settings, compaction=dataclasses.replace(settings.compaction, use_server_side=False))
    await create_with_memory(client, messages=CONVERSATION, user_id=U, memory=store, settings=off,
                             model=MODEL, max_tokens=50)
    request = api.message_requests()[-1]
    assert "context_management" not in body(request) and COMPACTION_BETA not in request.betas


async def test_streaming_is_refused(client: anthropic.AsyncAnthropic, store: NativeProvider,
                                    settings: Settings) -> None:
    with pytest.raises(TypeError, match="stream"):
        await create_with_memory(client, messages=CONVERSATION, user_id=U, memory=store, settings=settings,
                                 model=MODEL, max_tokens=50, stream=True)


def test_edit_and_message_helpers(settings: Settings) -> None:
    assert compaction_edit(settings.compaction, trigger_tokens=60_000)["trigger"]["value"] == 60_000
    assert message_text({"role": "user", "content": "hi"}) == "hi"
    assert message_text({"role": "user", "content": [
        {"type": "text", "text": "a"}, {"type": "tool_result", "tool_use_id": "t", "content": [
            {"type": "text", "text": "b"}]}, {"type": "image", "source": {}}]}) == "a\nb"


# --------------------------------------------------------------------------- proactive triggers

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
FIXTURE_TALK = ("How do I write a pytest fixture that opens a database connection?",
                "Use a fixture with yield and close the connection after the yield.",
                "Can the fixture be async with pytest-asyncio?")

PROACTIVE_CASES = [
    ("manual", ConversationState(manual=True), CompactionReason.MANUAL),
    ("threshold", ConversationState(input_tokens=120_000), CompactionReason.TOKEN_THRESHOLD),
    ("under-threshold", ConversationState(input_tokens=119_999), None),
    ("task-done", ConversationState(input_tokens=20_000, task_completed=True), CompactionReason.TASK_COMPLETED),
    ("task-done-small-context", ConversationState(input_tokens=1_000, task_completed=True), None),
    ("topic-shift", ConversationState(input_tokens=20_000, recent_messages=FIXTURE_TALK,
                                      current_message="What's a good recipe for banana bread?"),
     CompactionReason.TOPIC_SHIFT),
    ("same-topic", ConversationState(input_tokens=20_000, recent_messages=FIXTURE_TALK,
                                     current_message="How do I parametrize that fixture with two databases?"),
     None),
    ("short-ack", ConversationState(input_tokens=20_000, recent_messages=FIXTURE_TALK,
                                    current_message="ok thanks, that works"), None),
    ("first-message", ConversationState(input_tokens=20_000, current_message="What's a good recipe for bread?"),
     None),
    ("idle", ConversationState(input_tokens=20_000, last_activity=NOW - timedelta(minutes=6), now=NOW),
     CompactionReason.IDLE),
    ("not-idle", ConversationState(input_tokens=20_000, last_activity=NOW - timedelta(minutes=4), now=NOW), None),
    ("idle-small-context", ConversationState(input_tokens=100, last_activity=NOW - timedelta(hours=2), now=NOW),
     None),
]


@pytest.mark.parametrize(("state", "expected"), [c[1:] for c in PROACTIVE_CASES], ids=[c[0] for c in PROACTIVE_CASES])
async def test_proactive_triggers(state: ConversationState, expected: CompactionReason | None,
                                  settings: Settings, embedder: Embedder) -> None:
    proactive = ProactiveCompaction(settings.compaction, embedder)
    assert proactive.threshold_tokens == 120_000  # 60 % of 200,000
    assert await proactive.should_compact(state) is expected


async def test_topic_shift_needs_an_embedder(settings: Settings) -> None:
    state = ConversationState(input_tokens=20_000, recent_messages=FIXTURE_TALK,
                              current_message="What's a good recipe for banana bread?")
    assert await ProactiveCompaction(settings.compaction, None).should_compact(state) is None


async def test_idle_zero_minutes_is_off(settings: Settings) -> None:
    config = dataclasses.replace(settings.compaction, idle_minutes=0.0)
    state = ConversationState(input_tokens=20_000, last_activity=NOW - timedelta(days=1), now=NOW)
    assert await ProactiveCompaction(config).should_compact(state) is None


async def test_compacting_client_lowers_the_trigger_on_task_completion(
        api: FakeMessagesAPI, client: anthropic.AsyncAnthropic, store: NativeProvider, settings: Settings) -> None:
    configured = settings.compaction.server_side_trigger_tokens

    def responder(body: dict[str, Any]) -> Reply | None:
        trigger = body["context_management"]["edits"][0]["trigger"]["value"]
        if trigger < configured:  # only a lowered (proactive) trigger compacts here
            return Reply(compaction=True)
        return Reply(text="Done.", input_tokens=60_000)

    api.responder = responder
    loop = CompactingClient(client, store, user_id=U, settings=settings)
    messages = list(CONVERSATION)
    first = await loop.create(messages=messages, model=MODEL, max_tokens=50, now=NOW)
    assert not first.compacted and first.proactive_reason is None
    assert loop.last_input_tokens == 60_000
    messages = [*first.messages, first.response.to_param(), {"role": "user", "content": "Thanks, what next?"}]
    second = await loop.create(messages=messages, model=MODEL, max_tokens=50, task_completed=True,
                               now=NOW + timedelta(seconds=30))
    assert second.proactive_reason == "task_completed"
    assert second.compacted
    assert second.log[0].startswith("proactive compaction (task_completed")
    requests = api.message_requests()
    assert body(requests[1])["context_management"]["edits"][0]["trigger"]["value"] == 60_000
    assert MEMORY_RESTORED_HEADER in body(requests[2])["messages"][-1]["content"][0]["text"]


async def test_compacting_client_skips_under_the_api_minimum(
        api: FakeMessagesAPI, client: anthropic.AsyncAnthropic, store: NativeProvider, settings: Settings) -> None:
    loop = CompactingClient(client, store, user_id=U, settings=settings)
    loop.last_input_tokens = API_MIN_TRIGGER_TOKENS - 1
    run = await loop.create(messages=CONVERSATION, model=MODEL, max_tokens=50, manual=True)
    assert run.proactive_reason is None and "skipped" in run.log[0]
    trigger = body(api.message_requests()[-1])["context_management"]["edits"][0]["trigger"]["value"]
    assert trigger == settings.compaction.server_side_trigger_tokens
    assert loop.last_input_tokens == run.response.usage.input_tokens
