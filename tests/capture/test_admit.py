"""Admission (:mod:`dexai_memory.capture.admit`): every capture path redacts, then gates.

The hook events (UserPromptSubmit + Stop, through the daemon's event executor) and
the SDK / socket path (``MemoryDaemon.submit_turn``, the ``enqueue`` op) must store the
same redacted turn and context, and the gate must score the redacted text on both.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from dexai_memory.capture.admit import admit, redact_turn
from dexai_memory.capture.gate import Gate
from dexai_memory.config import Settings, load_settings
from dexai_memory.daemon import MemoryDaemon
from dexai_memory.models import Turn
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.rules import OfflineClassifier
from dexai_memory.text.redaction import REDACTED
from tests.hook_daemon import handle, running_daemon
from tests.pipeline_fakes import EchoExtractor, JoinSummarizer

SECRET = "sk-ant-api03-" + "Q7x" * 10
PROMPT = "I moved to Lisbon last week. <private>My therapist is Dr. Alvarez in Porto</private>"
REPLY = (f"Noted, you live in Lisbon now and I will remind you tomorrow. Your key {SECRET} is set. "
         "<private>Alvarez Porto Coimbra Braga</private>")
#: Raw text that would pass the gate only for what redaction removes.
HIDDEN = "<private>I promise I'll call Dr. Alvarez tomorrow, my favourite doctor</private> ok"


def turn_dict(tid: str, content: str, role: str) -> dict[str, Any]:
    return {"id": tid, "user_id": "u", "content": content, "role": role, "session_id": "s", "project": "p",
            "metadata": {"source": "claude-code:test", "caption": f"a note saying {SECRET}"}}


def queued(home: Path) -> dict[str, dict[str, Any]]:
    """turn id -> the queued payload (turn and context), whatever the job's status."""
    with sqlite3.connect(home / "queue.db") as conn:
        rows = conn.execute("SELECT turn_id, payload FROM jobs").fetchall()
    return {tid: json.loads(payload) for tid, payload in rows}


@pytest.fixture
def settings(isolated_home: Path) -> Settings:
    s = load_settings()
    return dataclasses.replace(s, extraction=dataclasses.replace(s.extraction, flush_interval_seconds=30.0))


@pytest.fixture
async def provider(tmp_path: Path) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(tmp_path / "memory.db", embedder=None) as p:
        yield p


async def test_both_capture_paths_store_the_same_redacted_turn(settings: Settings, provider: NativeProvider,
                                                               tmp_path: Path) -> None:
    gate = Gate(settings.extraction.gate_threshold)
    # the hook events: the prompt (UserPromptSubmit, queued by Stop), then the reply; the daemon
    # keeps the (redacted) prompt as the reply's context
    hook = settings.with_home(tmp_path / "hook-home")
    async with running_daemon(hook, provider, extractor=EchoExtractor()) as d:
        for text, prompt_id in ((PROMPT, "p1"), (HIDDEN, "p3"), (REPLY, "p2")):
            await handle(d, "user-prompt-submit", {"session_id": "s", "prompt": text, "prompt_id": prompt_id},
                         user="u", DEXAI_MEMORY_PROJECT="p")
        # the assistant's reply is evidence: context for the next turn, never queued
        await handle(d, "stop", {"session_id": "s", "last_assistant_message": REPLY + " Done."}, user="u",
                     DEXAI_MEMORY_PROJECT="p")
        by_hook = {("t1" if "Lisbon last week" in t["turn"]["content"] else "t2"): t
                   for t in queued(hook.home).values()}
        assert all(t["turn"]["role"] == "user" for t in queued(hook.home).values())
    assert len(queued(hook.home)) == 2  # HIDDEN passed only on what redaction removes
    # the SDK / daemon path: the same turns, the daemon keeping the recent turns itself
    daemon = MemoryDaemon(settings.with_home(tmp_path / "daemon-home"), provider, extractor=EchoExtractor(),
                          classifier=OfflineClassifier(), summarizer=JoinSummarizer())
    async with daemon as d:
        verdicts = {tid: d.submit_turn(Turn.from_dict(turn_dict(tid, text, role)))
                    for tid, text, role in (("t1", PROMPT, "user"), ("t3", HIDDEN, "user"),
                                            ("t2", REPLY, "user"), ("t4", REPLY + " Done.", "assistant"))}
        by_daemon = queued(d.settings.home)
    assert set(by_hook) == set(by_daemon) == {"t1", "t2"}
    assert not verdicts["t3"].passed and gate.score(HIDDEN).passed  # it passed only on what was removed
    assert not verdicts["t4"].passed  # the reply: evidence on this path too
    for tid in ("t1", "t2"):
        hook_turn, daemon_turn = by_hook[tid]["turn"], by_daemon[tid]["turn"]
        assert hook_turn["content"] == daemon_turn["content"]
        assert by_hook[tid]["context"] == by_daemon[tid]["context"]
        text = " ".join([hook_turn["content"], *by_hook[tid]["context"]])
        assert SECRET not in text and "Alvarez" not in text and "<private>" not in text
        # the gate scored the redacted text against the redacted context, on both paths
        assert gate.score(hook_turn["content"], by_hook[tid]["context"]).score == verdicts[tid].score
    assert by_daemon["t2"]["turn"]["metadata"]["caption"] == f"a note saying {REDACTED}"
    assert redact_turn(Turn(id="x", user_id="u", content=PROMPT)).content in by_hook["t2"]["context"]  # type: ignore[union-attr]
    raw = gate.score(REPLY, [PROMPT]).score
    assert raw != verdicts["t2"].score  # the raw text would have scored differently (the private names)


def test_admit_redacts_text_captions_and_context_before_the_gate() -> None:
    seen: list[tuple[str, tuple[str, ...]]] = []

    class RecordingGate(Gate):
        def score(self, text: str, recent: Any = ()) -> Any:
            seen.append((text, tuple(recent)))
            return super().score(text, recent)

    admission = admit(turn_dict("t1", REPLY, "user"), [PROMPT, f"token: {SECRET}"], RecordingGate())
    assert admission.turn is not None and admission.passed
    assert SECRET not in admission.turn.content and "Alvarez" not in admission.turn.content
    assert admission.turn.metadata["caption"] == f"a note saying {REDACTED}"
    assert seen == [(admission.turn.content, admission.context)]
    assert all(SECRET not in c and "Alvarez" not in c for c in admission.context)
    nothing = admit(Turn(id="t2", user_id="u", content="<private>all of it</private>"), [], RecordingGate())
    assert nothing.turn is None and not nothing.passed and len(seen) == 1  # never scored


def test_a_hook_event_queued_for_replay_is_redacted(isolated_home: Path) -> None:
    """No daemon answers (autostart off): the event waits in queue.db, without the secret or the
    private text, and the daemon that replays it still captures the rest of the turn."""
    import io

    from dexai_memory.hooks.client import run

    for event, payload in (("user-prompt-submit", {"session_id": "s", "prompt": PROMPT, "prompt_id": "p1"}),
                           ("stop", {"session_id": "s", "last_assistant_message": REPLY})):
        out = io.StringIO()
        assert run(event, io.StringIO(json.dumps(payload)), out) == 0 and out.getvalue() == "{}\n"
    raw = b"".join(p.read_bytes() for p in isolated_home.glob("queue.db*"))
    from tests.hook_daemon import queued_events

    assert [e["event"] for e in queued_events(isolated_home)] == ["user-prompt-submit", "stop"]
    assert "Lisbon" in queued_events(isolated_home)[0]["payload"]["prompt"]
    assert SECRET.encode() not in raw and b"Alvarez" not in raw and b"<private>" not in raw
