"""Contradictions you can review (issue 14, seed 002): every supersession caused by a
contradiction is recorded; unsure ones are left open; `dexai memory conflicts` lists them and
`dexai memory resolve ID a_wins|b_wins|both_valid|merged [--note]` decides, on a real SQLite file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from dexai_memory.cli.main import cli
from dexai_memory.config import load_settings
from dexai_memory.models import Memory, UpdateAction, UpdateDecision
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.apply import apply_decision

U = "sam"


def dexai(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def ok(*args: str) -> Result:
    result = dexai(*args)
    assert result.exit_code == 0, result.output
    return result


def listed(*extra: str) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = json.loads(ok("memory", "conflicts", "--user", U, "--json", *extra).stdout)
    return rows


def current(memory_id: object) -> bool:
    got = json.loads(ok("memory", "get", str(memory_id), "--user", U, "--json").stdout)
    return got["superseded_by"] is None and got["valid_until"] is None


@pytest.fixture(autouse=True)
def no_embedder(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\n")


def contradict(old_text: str, new_text: str, confidence: float) -> tuple[str, str]:
    """Store ``old_text``, then apply a SUPERSEDE of it by ``new_text`` at ``confidence``."""

    async def go() -> tuple[str, str]:
        async with NativeProvider(load_settings().db_path, embedder=None) as p:
            old = await p.add(Memory(content=old_text, user_id=U, confidence=0.75))
            new = await apply_decision(p, UpdateDecision(UpdateAction.SUPERSEDE, old.id, "same attribute, new value"),
                                         Memory(content=new_text, user_id=U, confidence=confidence))
            assert new is not None
            return old.id, new.id

    return asyncio.run(go())


def test_a_confident_supersession_is_recorded_resolved(tmp_path: Path) -> None:
    for i, text in enumerate(("I live in Lisbon.", "I live in Porto now.")):
        path = tmp_path / f"t{i}.jsonl"
        path.write_text(json.dumps({"id": f"t{i}", "role": "user", "content": text}) + "\n")
        ok("memory", "ingest", str(path), "--user", U, "--vectors", "later")
    assert listed() == []  # nothing open
    [row] = listed("--all")
    assert row["resolution"] == "b_wins" and row["auto"] is True
    assert "Lisbon" in row["a"]["content"] and "Porto" in row["b"]["content"]  # type: ignore[index]
    assert not current(row["memory_a"]) and current(row["memory_b"])
    assert "b_wins (auto)" in ok("memory", "conflicts", "--user", U, "--all").output
    # the user disagrees: the older statement wins after all
    out = ok("memory", "resolve", str(row["id"]), "a_wins", "--note", "the move fell through", "--user", U).output
    assert f"Resolved #{row['id']}: a_wins" in out
    assert current(row["memory_a"]) and not current(row["memory_b"])
    [again] = listed("--all")
    assert again["resolution"] == "a_wins" and again["note"] == "the move fell through" and again["auto"] is False
    assert "REINSTATED" in ok("memory", "history", str(row["memory_a"]), "--user", U).output


def test_an_unsure_contradiction_is_left_open_then_resolved_by_hand() -> None:
    a, b = contradict("The staging database is db-staging-7", "The staging database is db-staging-9", 0.5)
    assert current(a) and current(b)  # both kept
    [row] = listed()
    assert row["resolution"] is None and (row["memory_a"], row["memory_b"]) == (a, b)
    assert f"#{row['id']}" in ok("memory", "conflicts", "--user", U).output and "open" in \
        ok("memory", "conflicts", "--user", U).output
    ok("memory", "resolve", str(row["id"]), "b_wins", "--user", U)
    assert not current(a) and current(b)
    assert listed() == []


def test_both_valid_and_merged() -> None:
    a, b = contradict("Sam works on the billing service", "Sam works on the orders service", 0.5)
    c1 = listed()[0]["id"]
    ok("memory", "resolve", str(c1), "both_valid", "--user", U)
    assert current(a) and current(b)
    a2, b2 = contradict("The deploy window is Tuesday", "The deploy window is Thursday", 0.9)
    assert not current(a2)  # confident: replaced at once
    c2 = listed("--all")[0]["id"]
    refused = dexai("memory", "resolve", str(c2), "merged", "--user", U)
    assert refused.exit_code == 1 and "--note" in refused.output
    out = json.loads(ok("memory", "resolve", str(c2), "merged", "--note",
                        "The deploy window is Tuesday or Thursday", "--user", U, "--json").stdout)
    merged = out["merged"]
    assert merged["content"] == "The deploy window is Tuesday or Thursday" and current(merged["id"])
    assert not current(a2) and not current(b2)
    bad = dexai("memory", "resolve", "999", "a_wins", "--user", U)
    assert bad.exit_code == 1 and "no contradiction 999" in bad.output
