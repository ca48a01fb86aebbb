"""Compression forms written by Haiku at consolidation, through the real ``anthropic`` client
against the local fake Messages API: stored with ``forms_by``, checked per memory (the offline
rules behind every bad or missing answer), no call offline, the token budget respected, and
unchanged content never asked about twice."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from dexai_memory.config import load_settings
from dexai_memory.consolidation import consolidate_user, store_forms
from dexai_memory.demo.fakeapi import FakeMessagesAPI, Reply, ToolUse
from dexai_memory.extraction.factory import make_form_writer
from dexai_memory.extraction.form_writer import HaikuFormWriter, OfflineFormWriter
from dexai_memory.models import Memory, MemoryType
from dexai_memory.providers.base import MemoryProvider
from dexai_memory.providers.memory import InMemoryProvider
from dexai_memory.recall.forms import (
    FORMS_ASKED_KEY,
    FORMS_BY_KEY,
    FORMS_KEY,
    build_forms,
    checked_forms,
    content_key,
)

U = "u"
CONTENTS = [
    "The team chose PostgreSQL over MySQL for the JSON support in the shop service.",
    "Never run the billing migrations in src/billing/migrate.py on Fridays before 18:00.",
    "Alice prefers pytest fixtures over unittest setUp methods in every test module.",
]


def numbered(body: dict[str, Any]) -> dict[int, str]:
    """The numbered memories a write_forms request shows."""
    prompt = body["messages"][-1]["content"]
    return {int(n): text for n, text in re.findall(r"^(\d+)\. (.+)$", prompt, re.M)}


def model_forms(n: int, content: str) -> dict[str, Any]:
    """Forms a good model would write (recognisable: the index key names the number)."""
    words = content.rstrip(".").split()
    return {"n": n, "summary": content, "compressed": " ".join(words[:6]), "index": f"topic{n} key"}


def answer_all(body: dict[str, Any]) -> Reply | None:
    if not body.get("tools") or body["tools"][0]["name"] != "write_forms":
        return None
    return Reply(tool_uses=[ToolUse("write_forms", {"forms": [model_forms(n, c) for n, c in numbered(body).items()]})])


@pytest.fixture
def api() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as server:
        yield server


@pytest.fixture
def model_env(monkeypatch: pytest.MonkeyPatch, api: FakeMessagesAPI) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)


@pytest.fixture
async def store() -> AsyncIterator[MemoryProvider]:
    async with InMemoryProvider() as p:
        yield p


async def seed(store: MemoryProvider, contents: list[str] = CONTENTS) -> list[Memory]:
    return [await store.add(Memory(content=c, user_id=U, type=MemoryType.FACT)) for c in contents]


async def run(store: MemoryProvider, settings: Any = None) -> dict[str, Any]:
    row = await consolidate_user(store, U, settings or load_settings(), cleanup_too=False)
    return row["consolidation"]


def forms_requests(api: FakeMessagesAPI) -> list[dict[str, Any]]:
    return [r.body for r in api.message_requests() if (r.body.get("tools") or [{}])[0].get("name") == "write_forms"]


async def test_model_forms_are_stored_and_not_asked_again(model_env: None, api: FakeMessagesAPI,
                                                          store: MemoryProvider) -> None:
    api.responder = answer_all
    secret = "Deploy with the key sk-ant-api03-AAAABBBBCCCCDDDDEEEEFFFF1234 from the vault in ci/deploy.yml."
    mems = await seed(store, [*CONTENTS, secret])
    assert isinstance(make_form_writer(load_settings()), HaikuFormWriter)
    report = await run(store)
    assert report["forms_built"] == 4
    [body] = forms_requests(api)  # one call for the batch
    assert body["tool_choice"] == {"type": "tool", "name": "write_forms"}
    assert body["model"] == load_settings().consolidation.consolidation_model
    assert set(numbered(body).values()) >= set(CONTENTS) and "sk-ant" not in str(body)  # redacted before sending
    for m in mems[:3]:
        stored = await store.get(m.id, user_id=U)
        n = next(k for k, v in numbered(body).items() if v == m.content)
        assert stored.metadata[FORMS_KEY] == {k: v for k, v in model_forms(n, m.content).items() if k != "n"}
        assert stored.metadata[FORMS_BY_KEY] == "model" and FORMS_ASKED_KEY not in stored.metadata
    # unchanged content is not asked about again
    assert (await run(store))["forms_built"] == 0 and len(forms_requests(api)) == 1
    # an edited memory is, alone
    edited = "Never run the billing migrations on Fridays."
    await store.update(mems[1].id, user_id=U, content=edited)
    assert (await run(store))["forms_built"] == 1
    assert list(numbered(forms_requests(api)[-1]).values()) == [edited]
    assert (await store.get(mems[1].id, user_id=U)).metadata[FORMS_KEY]["summary"] == edited


async def test_bad_or_missing_answers_fall_back_to_rules_per_memory(model_env: None, api: FakeMessagesAPI,
                                                                    store: MemoryProvider) -> None:
    def partial(body: dict[str, Any]) -> Reply | None:
        shown = numbered(body)
        by_content = {c: n for n, c in shown.items()}
        good = model_forms(by_content[CONTENTS[0]], CONTENTS[0])
        too_long = {**model_forms(by_content[CONTENTS[1]], CONTENTS[1]),
                    "compressed": CONTENTS[1] + " and more words than the summary has"}
        return Reply(tool_uses=[ToolUse("write_forms", {"forms": [good, too_long, {"n": 99, **good}, "junk"]})])

    api.responder = partial
    mems = await seed(store)
    assert (await run(store))["forms_built"] == 3
    first, second, third = [await store.get(m.id, user_id=U) for m in mems]
    assert first.metadata[FORMS_BY_KEY] == "model"
    for m in (second, third):  # invalid, missing: the rules' forms, and the model is not asked again
        assert m.metadata[FORMS_KEY] == build_forms(m.content)
        assert m.metadata[FORMS_BY_KEY] == "rules" and m.metadata[FORMS_ASKED_KEY] == content_key(m.content)
    assert (await run(store))["forms_built"] == 0 and len(forms_requests(api)) == 1


async def test_malformed_answers_and_api_errors_leave_rules_to_upgrade_later(
        tmp_path: Path, model_env: None, api: FakeMessagesAPI, store: MemoryProvider) -> None:
    api.enqueue(Reply(text="I cannot do that."), Reply(text="Still no JSON."))  # malformed twice
    mems = await seed(store)
    assert (await run(store))["forms_built"] == 3  # never an error to the user
    assert len(forms_requests(api)) == 2
    for m in mems:
        stored = await store.get(m.id, user_id=U)
        assert stored.metadata[FORMS_KEY] == build_forms(m.content) and stored.metadata[FORMS_BY_KEY] == "rules"
        assert FORMS_ASKED_KEY not in stored.metadata  # no answer: asked again next time
    cfg = tmp_path / "m.yaml"
    cfg.write_text("extraction:\n  max_retries: 0\n")
    api.enqueue(Reply(status=500, text="overloaded"))
    assert (await run(store, load_settings(cfg)))["forms_built"] == 0  # the API failing: the rules' forms stay
    assert len(forms_requests(api)) == 3  # one call, no more this run
    api.responder = answer_all
    assert (await run(store))["forms_built"] == 3  # upgraded by the model
    assert {(await store.get(m.id, user_id=U)).metadata[FORMS_BY_KEY] for m in mems} == {"model"}


async def test_offline_never_calls_and_a_model_later_upgrades(monkeypatch: pytest.MonkeyPatch, model_env: None,
                                                              api: FakeMessagesAPI, store: MemoryProvider) -> None:
    api.responder = answer_all
    monkeypatch.setenv("DEXAI_EXTRACTOR", "offline")
    assert isinstance(make_form_writer(load_settings()), OfflineFormWriter)
    mems = await seed(store)
    assert (await run(store))["forms_built"] == 3
    assert api.message_requests() == []
    assert (await run(store))["forms_built"] == 0
    assert {(await store.get(m.id, user_id=U)).metadata[FORMS_BY_KEY] for m in mems} == {"rules"}
    monkeypatch.delenv("DEXAI_EXTRACTOR")
    assert (await run(store))["forms_built"] == 3  # the rules' forms upgraded once a model is there
    assert {(await store.get(m.id, user_id=U)).metadata[FORMS_BY_KEY] for m in mems} == {"model"}
    assert len(forms_requests(api)) == 1


async def test_spent_budget_and_run_limit_leave_the_rest_to_rules(tmp_path: Path, model_env: None,
                                                                  api: FakeMessagesAPI, store: MemoryProvider) -> None:
    api.responder = answer_all
    cfg = tmp_path / "m.yaml"
    cfg.write_text("extraction:\n  daily_token_budget: 50\n")
    settings = load_settings(cfg)
    mems = await seed(store)
    writer = make_form_writer(settings)
    assert isinstance(writer, HaikuFormWriter)
    writer.batch_size = 1
    assert await store_forms(store, U, writer=writer) == 3  # the first call spends the budget
    assert len(forms_requests(api)) == 1
    bys = [(await store.get(m.id, user_id=U)).metadata for m in mems]
    assert sorted(b[FORMS_BY_KEY] for b in bys) == ["model", "rules", "rules"]
    assert all(FORMS_ASKED_KEY not in b for b in bys)  # not asked: upgraded when the budget allows
    await writer.aclose()

    # at most model_forms_per_run memories go to the model; new ones past it get the rules
    cfg.write_text("consolidation:\n  model_forms_per_run: 1\n")
    more = await seed(store, ["Bob owns the payments module in src/payments.", "Carol reviews every schema change."])
    await run(store, load_settings(cfg))
    assert len(numbered(forms_requests(api)[-1])) == 1
    assert sorted([(await store.get(m.id, user_id=U)).metadata[FORMS_BY_KEY] for m in more]) == ["model", "rules"]


def test_checked_forms() -> None:
    content = CONTENTS[1]
    good = {"summary": "Never run src/billing/migrate.py migrations on Fridays before 18:00.",
            "compressed": "never billing migrations src/billing/migrate.py Fridays 18:00",
            "index": "Billing  Migrations friday"}
    assert checked_forms(content, good) == {**good, "index": "billing migrations friday"}
    assert checked_forms(content, {**good, "index": "a b c d e"}) is None  # over 4 words
    assert checked_forms(content, {**good, "index": ""}) is None
    assert checked_forms(content, {**good, "compressed": "one two three four five six seven eight nine ten eleven "
                                                         "twelve thirteen"}) is None
    assert checked_forms("Short.", good) is None  # a summary longer than the memory
    assert checked_forms(content, {**good, "summary": None}) is None
    assert checked_forms(content, {**good, "summary": "Billing migrations: never on Fridays."}) is None  # < compressed
