"""Haiku extraction, classification and summarization through the real ``anthropic``
client against the local fake Messages API (including malformed model output)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import anthropic
import pytest

from dexai_memory.config import load_settings
from dexai_memory.demo.fakeapi import FakeMessagesAPI, Reply, ToolUse, text_of
from dexai_memory.errors import ConfigError, ExtractionError
from dexai_memory.extraction.factory import make_classifier, make_extractor, make_summarizer
from dexai_memory.extraction.fallback import (
    FallbackClassifier,
    FallbackExtractor,
    FallbackSummarizer,
)
from dexai_memory.extraction.haiku import HaikuClassifier, HaikuExtractor
from dexai_memory.extraction.offline import OfflineExtractor
from dexai_memory.extraction.summarizer import HaikuSummarizer, OfflineSummarizer
from dexai_memory.models import Memory, MemoryType, Turn, UpdateAction
from dexai_memory.supersession.rules import OfflineClassifier

MODEL = "claude-haiku-4-5-20251001"
TS = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
TURN = Turn(id="D1:3", user_id="u1", speaker="Caroline", timestamp=TS,
            content="I went to a LGBTQ support group yesterday. My key is sk-ant-api03-AAAABBBBCCCCDDDDEEEEFFFF1234")


@pytest.fixture
def api() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as server:
        yield server


@pytest.fixture
async def client(api: FakeMessagesAPI):
    c = anthropic.AsyncAnthropic(base_url=api.base_url, api_key="test", max_retries=0)
    yield c
    await c.close()


def record(*notes: dict) -> Reply:
    return Reply(tool_uses=[ToolUse("record_memories", {"notes": list(notes)})])


async def test_extracts_notes_with_tool_use(api: FakeMessagesAPI, client) -> None:
    api.enqueue(record({
        "content": "Caroline went to a LGBTQ support group on 7 May 2023.", "type": "EVENT", "importance": 7,
        "confidence": 0.9, "event_date": "2023-05-07", "entities": ["Caroline", "LGBTQ support group"],
        "source_ids": ["D1:3"],
    }))
    notes = await HaikuExtractor(client, MODEL).extract([TURN])
    assert len(notes) == 1
    note = notes[0]
    assert note.content == "Caroline went to a LGBTQ support group on 7 May 2023."
    assert (note.type, note.importance, note.confidence, note.event_date) == (MemoryType.EVENT, 7, 0.9, "2023-05-07")
    assert note.source_ids == ("D1:3",)
    body = api.message_requests()[-1].body
    assert body["model"] == MODEL
    assert body["tool_choice"] == {"type": "tool", "name": "record_memories"}
    assert body["tools"][0]["name"] == "record_memories"
    sent = text_of(body)
    assert "[D1:3] Caroline" in sent and "8 May 2023" in sent
    assert "sk-ant" not in sent  # secrets are redacted before anything is sent


async def test_commitment_with_due_date(api: FakeMessagesAPI, client) -> None:
    api.enqueue(record({
        "content": "Caroline will send Melanie the photos by 10 May 2023.", "type": "COMMITMENT", "importance": 6,
        "commitment": {"what": "send the photos", "who": "Melanie", "when": "2023-05-10"},
    }))
    [note] = await HaikuExtractor(client, MODEL).extract([TURN])
    assert note.commitment is not None
    assert note.commitment.what == "send the photos"
    assert note.commitment.who == "Melanie"
    assert note.commitment.due_at == datetime(2023, 5, 10, tzinfo=UTC)


async def test_repairs_wrong_types_and_ranges(api: FakeMessagesAPI, client) -> None:
    api.enqueue(record(
        {"content": "Caroline likes hiking.", "type": "preference", "importance": "12", "confidence": 85,
         "entities": "Caroline", "source_ids": ["nope"], "event_date": "yesterday"},
        {"content": "Caroline has a dog.", "type": "WHATEVER", "importance": 0.2, "confidence": "high"},
        {"content": 42, "type": "FACT", "importance": 5},            # unusable: dropped
        {"content": "My password: hunter22", "type": "FACT", "importance": 5},
    ))
    notes = await HaikuExtractor(client, MODEL).extract([TURN])
    assert [n.content for n in notes] == ["Caroline likes hiking.", "Caroline has a dog.", "My password: [redacted]"]
    first, second, _ = notes
    assert (first.type, first.importance, first.confidence) == (MemoryType.PREFERENCE, 10, 0.85)
    assert first.entities == ("Caroline",)
    assert first.source_ids == ("D1:3",)           # unknown ids fall back to the batch's turns
    assert first.event_date == "2023-05-07"         # a phrase is resolved against the turn
    assert (second.type, second.importance, second.confidence) == (MemoryType.FACT, 1, 0.7)


async def test_json_in_text_is_repaired(api: FakeMessagesAPI, client) -> None:
    payload = {"notes": [{"content": "Caroline moved to Boston.", "type": "FACT", "importance": 5}]}
    api.enqueue(Reply(text="Here you go:\n```json\n" + json.dumps(payload) + "\n```"))
    notes = await HaikuExtractor(client, MODEL).extract([TURN])
    assert [n.content for n in notes] == ["Caroline moved to Boston."]
    assert len(api.message_requests()) == 1


async def test_missing_tool_call_is_retried_once(api: FakeMessagesAPI, client) -> None:
    api.enqueue(Reply(text="I could not find anything."),
                record({"content": "Caroline went to a support group.", "type": "EVENT", "importance": 5}))
    notes = await HaikuExtractor(client, MODEL).extract([TURN])
    assert [n.content for n in notes] == ["Caroline went to a support group."]
    assert len(api.message_requests()) == 2


@pytest.mark.parametrize("bad", [
    pytest.param(Reply(text="no tool call here"), id="no-tool-call"),
    pytest.param(Reply(text='{"notes": [ {"content": "broken'), id="invalid-json"),
    pytest.param(Reply(tool_uses=[ToolUse("record_memories", {"notes": "not json ["})]), id="notes-bad-json-string"),
    pytest.param(Reply(tool_uses=[ToolUse("record_memories", {"notes": 7})]), id="notes-wrong-type"),
    pytest.param(Reply(tool_uses=[ToolUse("record_memories", {"notes": [{"content": None}, 3]})]),
                 id="every-note-garbage"),
    pytest.param(Reply(tool_uses=[ToolUse("other_tool", {"x": 1})]), id="wrong-tool"),
])
async def test_malformed_twice_raises_extraction_error(api: FakeMessagesAPI, client, bad: Reply) -> None:
    api.enqueue(bad, bad)
    with pytest.raises(ExtractionError, match="malformed"):
        await HaikuExtractor(client, MODEL).extract([TURN])
    assert len(api.message_requests()) == 2


async def test_empty_notes_is_a_valid_answer(api: FakeMessagesAPI, client) -> None:
    api.enqueue(record())
    assert await HaikuExtractor(client, MODEL).extract([TURN]) == []
    assert len(api.message_requests()) == 1


async def test_api_error_becomes_extraction_error(api: FakeMessagesAPI, client) -> None:
    api.enqueue(Reply(status=529, error_message="Overloaded"))
    with pytest.raises(ExtractionError, match="API error"):
        await HaikuExtractor(client, MODEL).extract([TURN])


async def test_client_retries_transient_errors_first(api: FakeMessagesAPI) -> None:
    api.enqueue(Reply(status=529, headers={"retry-after-ms": "1"}),
                record({"content": "Caroline likes tea.", "type": "PREFERENCE", "importance": 4}))
    async with anthropic.AsyncAnthropic(base_url=api.base_url, api_key="test", max_retries=2) as c:
        notes = await HaikuExtractor(c, MODEL).extract([TURN])
    assert [n.content for n in notes] == ["Caroline likes tea."]


# --------------------------------------------------------------------------- classification

def memories() -> list[Memory]:
    return [Memory(content="Caroline lives in Boston.", user_id="u1", id="m_old"),
            Memory(content="Caroline likes tea.", user_id="u1", id="m_tea")]


async def test_classifier_decisions(api: FakeMessagesAPI, client) -> None:
    api.enqueue(Reply(tool_uses=[ToolUse("classify_update", {"decisions": [
        {"memory_id": "m_old", "action": "supersede", "reason": "she moved"},
        {"memory_id": "m_tea", "action": "ADD", "reason": "unrelated"},
        {"memory_id": "m_ghost", "action": "NOOP", "reason": "hallucinated id"},
    ]})]))
    decisions = await HaikuClassifier(client, MODEL).classify("Caroline lives in Denver.", memories())
    assert [(d.action, d.memory_id, d.reason) for d in decisions] == [
        (UpdateAction.SUPERSEDE, "m_old", "she moved"), (UpdateAction.ADD, None, "unrelated")]
    assert "[m_old] Caroline lives in Boston." in text_of(api.message_requests()[-1])


async def test_classifier_update_keeps_merged_content_and_fills_gaps(api: FakeMessagesAPI, client) -> None:
    api.enqueue(Reply(tool_uses=[ToolUse("classify_update", {"decisions": [
        {"memory_id": "m_tea", "action": "UPDATE", "reason": "more detail", "merged_content": "Caroline likes green tea."},
    ]})]))
    decisions = await HaikuClassifier(client, MODEL).classify("Caroline likes green tea.", memories())
    assert decisions[0].action is UpdateAction.ADD and decisions[0].memory_id is None
    assert decisions[1].action is UpdateAction.UPDATE
    assert decisions[1].merged_content == "Caroline likes green tea."


async def test_classifier_without_existing_makes_no_call(api: FakeMessagesAPI, client) -> None:
    [decision] = await HaikuClassifier(client, MODEL).classify("anything", [])
    assert decision.action is UpdateAction.ADD
    assert api.message_requests() == []


async def test_classifier_garbage_twice_raises(api: FakeMessagesAPI, client) -> None:
    bad = Reply(tool_uses=[ToolUse("classify_update", {"decisions": [{"memory_id": "m_old", "action": "MAYBE"}]})])
    api.enqueue(bad, bad)
    with pytest.raises(ExtractionError):
        await HaikuClassifier(client, MODEL).classify("Caroline lives in Denver.", memories())


# --------------------------------------------------------------------------- summaries

async def test_haiku_summarizer(api: FakeMessagesAPI, client) -> None:
    api.enqueue(Reply(tool_uses=[ToolUse("write_summary", {"summary": "Caroline hikes and paints."})]))
    summary = await HaikuSummarizer(client, MODEL).summarize(["Caroline hikes.", "Caroline paints."])
    assert summary == "Caroline hikes and paints."
    assert "- Caroline hikes." in text_of(api.message_requests()[-1])


async def test_haiku_summarizer_malformed_twice(api: FakeMessagesAPI, client) -> None:
    api.enqueue(Reply(tool_uses=[ToolUse("write_summary", {"summary": ""})]), Reply(text="no"))
    with pytest.raises(ExtractionError):
        await HaikuSummarizer(client, MODEL).summarize(["a fact", "another fact"])


async def test_offline_summarizer_is_extractive_and_drops_duplicates() -> None:
    summary = await OfflineSummarizer().summarize([
        "Caroline went hiking in the Alps.", "Caroline went hiking in the Alps!", "Caroline paints landscapes.",
    ])
    assert summary.count("Alps") == 1
    assert "Caroline paints landscapes" in summary
    with pytest.raises(ExtractionError):
        await OfflineSummarizer().summarize(["", "  "])


# --------------------------------------------------------------------------- factories

def test_factories_offline_without_key() -> None:
    settings = load_settings()
    assert isinstance(make_extractor(settings), OfflineExtractor)
    assert isinstance(make_classifier(settings), OfflineClassifier)
    assert isinstance(make_summarizer(settings), OfflineSummarizer)


async def test_factories_haiku_with_key(monkeypatch: pytest.MonkeyPatch, api: FakeMessagesAPI) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    settings = load_settings()
    extractor = make_extractor(settings)
    # Haiku, with the offline implementation behind it for a spent budget
    assert isinstance(extractor, FallbackExtractor) and isinstance(extractor.model, HaikuExtractor)
    classifier, summarizer = make_classifier(settings), make_summarizer(settings)
    assert isinstance(classifier, FallbackClassifier) and isinstance(classifier.model, HaikuClassifier)
    assert isinstance(summarizer, FallbackSummarizer) and isinstance(summarizer.model, HaikuSummarizer)
    api.enqueue(record({"content": "Caroline likes tea.", "type": "PREFERENCE", "importance": 4}))
    assert [n.content for n in await extractor.extract([TURN])] == ["Caroline likes tea."]
    await extractor.aclose()


def test_factories_respect_offline_setting(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    cfg = tmp_path / "m.yaml"
    cfg.write_text("extraction:\n  extractor: offline\n")
    assert isinstance(make_extractor(load_settings(cfg)), OfflineExtractor)


def test_haiku_setting_without_key_is_a_config_error(tmp_path) -> None:
    cfg = tmp_path / "m.yaml"
    cfg.write_text("extraction:\n  extractor: haiku\n")
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        make_extractor(load_settings(cfg))


def test_importing_extraction_does_not_import_anthropic() -> None:
    import subprocess
    import sys

    code = ("import sys, dexai_memory.extraction.haiku, dexai_memory.extraction.offline, "
            "dexai_memory.extraction.summarizer, dexai_memory.extraction.factory; print('anthropic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
