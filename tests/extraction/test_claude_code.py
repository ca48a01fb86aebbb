"""Extraction through the user's Claude Code sign-in: the real CLI bundled in claude-agent-sdk,
signed in with a token (like a Claude account user, no ANTHROPIC_API_KEY), against the local
fake Messages API. Covers the backend choice (API key -> sign-in -> offline), the token budget
and the fall back to the offline extractor when the CLI is missing, signed out or failing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from dexai_memory.config import load_settings
from dexai_memory.demo.claude_cli import build_env
from dexai_memory.demo.fakeapi import FakeMessagesAPI, Reply, text_of
from dexai_memory.extraction import claude_code
from dexai_memory.extraction.claude_code import CLI_ENV, ClaudeCodeCall, bundled_cli, sign_in
from dexai_memory.extraction.factory import (
    EXTRACTOR_ENV,
    budget,
    choose_backend,
    make_classifier,
    make_extractor,
)
from dexai_memory.extraction.fallback import FallbackClassifier, FallbackExtractor
from dexai_memory.extraction.haiku import HaikuExtractor
from dexai_memory.extraction.usage import TokenLedger
from dexai_memory.models import Memory, MemoryType, Turn, UpdateAction

CLI = bundled_cli()
pytestmark = pytest.mark.skipif(CLI is None, reason="claude-agent-sdk without its bundled CLI")

TURN = Turn(id="t1", user_id="dana", role="user", content="Always run `make check` before every push.",
            timestamp=datetime(2026, 11, 23, 9, 0, tzinfo=UTC))
NOTE = {"content": "Run `make check` before every push.", "type": "PREFERENCE", "importance": 8,
        "confidence": 0.9, "source_ids": ["t1"]}


def is_extraction(body: dict[str, Any]) -> bool:
    return "record_memories" in json.dumps(body.get("system", ""))


def is_classification(body: dict[str, Any]) -> bool:
    return "classify_update" in json.dumps(body.get("system", ""))


def _words(text: str) -> set[str]:
    return set(text.lower().replace("`", " ").split())


class FakeHaiku:
    """Answers dexai-memory's extraction and classification questions with JSON text, like Haiku."""

    def __init__(self, notes: list[dict[str, Any]], *, input_tokens: int = 900, output_tokens: int = 60):
        self.notes = notes
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens

    def __call__(self, body: dict[str, Any]) -> Reply | None:
        if is_extraction(body):
            text = json.dumps({"notes": self.notes})
        elif is_classification(body):  # NOOP for the same statement in other words, else ADD
            lines = text_of(body).splitlines()
            new = next((line[len("NEW: "):] for line in lines if line.startswith("NEW: ")), "")
            existing = [line[1:].split("] ", 1) for line in lines if line.startswith("[") and "] " in line]
            text = json.dumps({"decisions": [
                {"memory_id": i, "action": "NOOP" if _words(c) & _words(new) >= {"make", "check"} else "ADD",
                 "reason": "the same rule" if _words(c) & _words(new) >= {"make", "check"} else "unrelated"}
                for i, c in existing]})
        else:
            return None
        return Reply(text=text, input_tokens=self.input_tokens, output_tokens=self.output_tokens)


@pytest.fixture(autouse=True)
def fresh_status() -> Iterator[None]:
    claude_code._status_cache.clear()
    yield
    claude_code._status_cache.clear()


def signed_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, api: FakeMessagesAPI, *, token: bool = True) -> None:
    """This process's environment as a Claude Code user's: a throw-away HOME, the fake API and
    (``token``) an auth token; the CLI we start inherits it."""
    env = build_env(tmp_path / "claude-home", api.base_url, auth="token")
    (tmp_path / "claude-home").mkdir(exist_ok=True)
    for key, value in env.items():
        if key.startswith(("ANTHROPIC_", "CLAUDE", "DISABLE_", "IS_SANDBOX")) or key == "HOME":
            monkeypatch.setenv(key, value)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    if not token:
        monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.setenv(CLI_ENV, str(CLI))


@pytest.fixture
def haiku() -> FakeHaiku:
    return FakeHaiku([NOTE])


@pytest.fixture
def api(haiku: FakeHaiku) -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI(responder=haiku) as server:
        yield server


def settings_with(tmp_path: Path, text: str = "") -> Any:
    cfg = tmp_path / "memory-extra.yaml"
    cfg.write_text(text or "{}\n")
    return load_settings(cfg)


# --------------------------------------------------------------------------- the choice


def test_sign_in_status_asks_the_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                     api: FakeMessagesAPI) -> None:
    signed_in(monkeypatch, tmp_path, api)
    status = sign_in()
    assert status.signed_in and status.cli == CLI and status.method == "oauth_token"
    signed_in(monkeypatch, tmp_path, api, token=False)
    assert not sign_in(refresh=True).signed_in
    monkeypatch.setenv(CLI_ENV, "none")
    assert sign_in().reason.startswith("turned off")
    monkeypatch.setenv(CLI_ENV, str(tmp_path / "no-such-claude"))
    assert sign_in().cli is None


def test_auto_picks_api_key_then_sign_in_then_offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                      api: FakeMessagesAPI) -> None:
    signed_in(monkeypatch, tmp_path, api)
    settings = load_settings()
    assert choose_backend(settings).name == "claude_code"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    assert choose_backend(settings).name == "api_key"
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN")
    claude_code._status_cache.clear()
    backend = choose_backend(settings)
    assert backend.name == "offline" and "not signed in" in backend.reason
    monkeypatch.setenv(EXTRACTOR_ENV, "claude_code")  # asked for, but signed out: offline, and says why
    backend = choose_backend(settings)
    assert backend.name == "offline" and backend.reason.startswith("extractor is claude_code but")
    monkeypatch.setenv(CLI_ENV, str(tmp_path / "missing"))  # the CLI is missing
    assert "no Claude Code CLI" in choose_backend(settings).reason
    monkeypatch.setenv(EXTRACTOR_ENV, "offline")
    assert choose_backend(settings).name == "offline"


# --------------------------------------------------------------------------- calls through the CLI


async def test_extraction_through_the_sign_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                              api: FakeMessagesAPI) -> None:
    signed_in(monkeypatch, tmp_path, api)
    settings = load_settings()
    extractor = make_extractor(settings)
    assert isinstance(extractor, FallbackExtractor) and isinstance(extractor.model, HaikuExtractor)
    assert isinstance(extractor.model._tool, ClaudeCodeCall)
    notes = await extractor.extract([TURN])
    assert [n.content for n in notes] == [NOTE["content"]]
    assert notes[0].importance == 8 and notes[0].source_ids == ("t1",)
    requests = [r for r in api.message_requests() if is_extraction(r.body)]
    assert len(requests) == 1
    body = requests[0].body
    assert body["model"] == settings.extraction.extraction_model
    assert body.get("tools") == []  # no tools: the model can only answer
    assert "thinking" not in body or body["thinking"].get("type") == "disabled"
    assert TURN.content in text_of(body)
    # the sign-in's bearer token, never an API key
    assert "x-api-key" not in requests[0].headers and requests[0].headers["authorization"].startswith("Bearer ")
    # charged with what the API reported, under the carrier's name
    today = TokenLedger.in_home(settings.home).today()
    assert (today.input_tokens, today.output_tokens, today.calls) == (900, 60, 1)
    assert today.by_source == {"claude_code": 960}
    # no session of ours is saved in the user's Claude Code history
    assert not list((tmp_path / "claude-home").rglob("*.jsonl"))


async def test_classification_through_the_sign_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                  api: FakeMessagesAPI) -> None:
    signed_in(monkeypatch, tmp_path, api)
    classifier = make_classifier(load_settings())
    assert isinstance(classifier, FallbackClassifier)
    old = Memory(id="m1", user_id="dana", content="Run `make check` before every push.", type=MemoryType.PREFERENCE)
    decisions = await classifier.classify("Always run make check before pushing.", [old])
    assert [(d.action, d.memory_id, d.reason) for d in decisions] == [(UpdateAction.NOOP, "m1", "the same rule")]
    assert any(is_classification(r.body) for r in api.message_requests())


async def test_a_spent_budget_hands_over_to_the_offline_extractor(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                  api: FakeMessagesAPI) -> None:
    signed_in(monkeypatch, tmp_path, api)
    settings = settings_with(tmp_path, "extraction:\n  daily_token_budget: 1000\n")
    extractor = make_extractor(settings)
    assert [n.content for n in await extractor.extract([TURN])] == [NOTE["content"]]  # 960 of 1000 used
    turn = Turn(id="t2", user_id="dana", role="user", content="From now on, never force-push to main.",
                timestamp=TURN.timestamp)
    notes = await extractor.extract([turn])  # 40 left: still asked, and now 1,920 used
    assert budget(settings).left() == 0
    asked = len(api.message_requests())
    notes = await extractor.extract([turn])  # spent: the offline extractor answers, nothing is sent
    assert len(api.message_requests()) == asked
    assert notes and "force-push" in notes[0].content and notes[0].source_ids == ("t2",)
    assert isinstance(extractor, FallbackExtractor) and extractor.notice.fallbacks == 1


async def test_signed_out_falls_back_to_offline_and_cools_down(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                               api: FakeMessagesAPI, haiku: FakeHaiku) -> None:
    signed_in(monkeypatch, tmp_path, api)
    extractor = make_extractor(load_settings())
    assert isinstance(extractor, FallbackExtractor)
    api.responder = lambda body: Reply(status=401, error_type="authentication_error",
                                       error_message="OAuth token has expired")
    notes = await extractor.extract([TURN])
    assert notes and "make check" in notes[0].content  # the offline extractor kept it
    asked = len(api.message_requests())
    assert asked >= 1
    await extractor.extract([TURN])  # cooling down: not asked again at once
    assert len(api.message_requests()) == asked
    assert extractor.notice.fallbacks == 2


async def test_a_missing_cli_means_offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           api: FakeMessagesAPI) -> None:
    signed_in(monkeypatch, tmp_path, api)
    monkeypatch.setenv(CLI_ENV, str(tmp_path / "claude"))
    from dexai_memory.extraction.offline import OfflineExtractor

    assert isinstance(make_extractor(load_settings()), OfflineExtractor)
    assert not api.message_requests()
