"""Commitments and goals close (issue 14): done / cancelled through the CLI, the `remember` tool and
the conversation; a closed goal leaves the persistent context, a closed commitment "Coming up"; a
due commitment is shown once, framed forward."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from dexai_memory.agent_tools import MemoryTools
from dexai_memory.cli.main import cli
from dexai_memory.config import load_settings
from dexai_memory.daemon.actions import HookActions
from dexai_memory.lifecycle.closing import is_completion, matches
from dexai_memory.models import Memory, MemoryType, utcnow
from dexai_memory.providers.native import NativeProvider
from dexai_memory.recall.reinjection import l1_block

U = "sam"


def ok(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(autouse=True)
def no_embedder(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\n")


def commitment(what: str, *, goal: bool = False, due_days: float | None = None) -> Memory:
    info = {"what": what, "status": "open",
            "due_at": (utcnow() + timedelta(days=due_days)).isoformat() if due_days is not None else None}
    return Memory(content=what, user_id=U, type=MemoryType.COMMITMENT, importance=7, confidence=0.75,
                  metadata={"commitment": info, **({"category": "goal"} if goal else {})})


def store(*memories: Memory) -> None:
    async def go() -> None:
        async with NativeProvider(load_settings().db_path, embedder=None) as p:
            for m in memories:
                await p.add(m)

    asyncio.run(go())


def block_text() -> str:
    async def go() -> str:
        async with NativeProvider(load_settings().db_path, embedder=None) as p:
            return (await l1_block(p, U, load_settings())).text

    return asyncio.run(go())


@pytest.mark.parametrize(("sentence", "done"), [
    ("I sent the report to Priya.", True),
    ("We've finished the migration plan", True),
    ("The slides for the review are done", True),
    ("I'll send the report to Priya tomorrow.", False),
    ("I haven't sent the report to Priya yet", False),
    ("I didn't send the report", False),
    ("I think the report is good", False),
])
def test_completion_statements(sentence: str, done: bool) -> None:
    assert is_completion(sentence) is done


def test_matching_needs_the_commitments_words() -> None:
    report = commitment("The user will send the report to Priya by Friday.")
    assert matches("I sent the report to Priya.", report)
    assert not matches("I sent the invoice to Marco.", report)


def test_done_and_cancel_through_the_cli() -> None:
    goal = commitment("The user's goal is to cut p95 latency to 200 ms.", goal=True)
    errand = commitment("Renew the TLS certificate", due_days=2)
    store(goal, errand)
    text = block_text()
    assert "cut p95 latency" in text and "Renew the TLS certificate" in text
    out = ok("memory", "done", goal.id, "--user", U).output
    assert f"Marked {goal.id} done" in out
    ok("memory", "cancel", errand.id, "--user", U, "--reason", "the vendor does it now")
    text = block_text()
    assert "cut p95 latency" not in text and "Renew the TLS certificate" not in text
    got = json.loads(ok("memory", "get", errand.id, "--user", U, "--json").stdout)
    assert got["metadata"]["commitment"]["status"] == "cancelled" and got["valid_until"]
    history = ok("memory", "history", errand.id, "--user", U).output
    assert "CANCELLED" in history and "the vendor does it now" in history
    refused = CliRunner().invoke(cli, ["memory", "done", "m_nope", "--user", U])
    assert refused.exit_code == 1


def test_saying_it_is_done_closes_it(tmp_path: Path) -> None:
    path = tmp_path / "monday.jsonl"
    path.write_text(json.dumps({"id": "t1", "role": "user", "content": "I will send the report to Priya on Friday."})
                    + "\n")
    ok("memory", "ingest", str(path), "--user", U, "--vectors", "later")
    listed = json.loads(ok("memory", "list", "--user", U, "--type", "COMMITMENT", "--json").stdout)
    assert len(listed) == 1 and "report to Priya" in listed[0]["content"]
    path = tmp_path / "friday.jsonl"
    path.write_text(json.dumps({"id": "t2", "role": "user", "content": "Good news: I sent the report to Priya."})
                    + "\n")
    ok("memory", "ingest", str(path), "--user", U, "--vectors", "later")
    assert json.loads(ok("memory", "list", "--user", U, "--type", "COMMITMENT", "--json").stdout) == []
    got = json.loads(ok("memory", "get", listed[0]["id"], "--user", U, "--json").stdout)
    assert got["metadata"]["commitment"]["status"] == "done"


async def test_remember_tool_closes_and_pins(tmp_path: Path) -> None:
    async with NativeProvider(tmp_path / "m.db", embedder=None) as p:
        goal = await p.add(commitment("The user's goal is to ship the v2 API.", goal=True))
        tools = MemoryTools(p, user_id=U)
        out = await tools.handle_remember({"content": "shipped the v2 API", "category": "goal", "status": "done"})
        assert f"Marked {goal.id} done" in out["content"][0]["text"]
        assert (await p.get(goal.id, user_id=U)).metadata["commitment"]["status"] == "done"
        nothing = await tools.handle_remember({"content": "booked the flights", "category": "goal",
                                               "status": "done"})
        assert "no open commitment or goal matches" in nothing["content"][0]["text"]
        for i in range(10):
            await p.add(Memory(content=f"Pinned thing {i}", user_id=U, pinned=True))
        out = await tools.handle_remember({"content": "The user's dog is called Rex", "category": "fact",
                                           "pin": True})
        assert "not pinned: 10 memories are pinned already" in out["content"][0]["text"]


async def test_a_due_commitment_is_shown_once(tmp_path: Path) -> None:
    settings = load_settings()
    async with NativeProvider(tmp_path / "m.db", embedder=None) as p:
        due = await p.add(commitment("Call the landlord about the lease", due_days=-1))
        later = await p.add(commitment("Book the dentist", due_days=3))
        actions = HookActions(settings, p)
        first = await actions.l1(user_id=U)
        assert "Call the landlord" in first.text and "(ready whenever you are)" in first.text
        assert "overdue" not in first.text.lower()
        second = await actions.l1(user_id=U)
        assert "Call the landlord" not in second.text  # shown once
        assert "Book the dentist" in second.text       # not due yet: shown while coming up
        assert (await p.get(due.id, user_id=U)).metadata["commitment"]["due_shown_at"]
        assert "due_shown_at" not in (await p.get(later.id, user_id=U)).metadata["commitment"]
