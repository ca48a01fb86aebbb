"""Links between memories and the background contradiction scan, through the doors a user has:
`dexai memory add`, `consolidate` (and its dry run), `get`, `recall`, `conflicts`, `resolve`, on a
real SQLite file in a temporary data directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from dexai_memory.cli.main import cli

U = "sam"


def ok(*args: str) -> Result:
    result = CliRunner().invoke(cli, [*args, "--user", U], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def as_json(*args: str) -> Any:
    return json.loads(ok(*args, "--json").stdout)


def add(text: str, *extra: str) -> str:
    return str(as_json("memory", "add", text, *extra)["id"])


def consolidate(*extra: str) -> dict[str, Any]:
    [row] = as_json("memory", "consolidate", *extra)["users"]
    return dict(row["consolidation"])


def recalled(query: str) -> list[dict[str, Any]]:
    return list(as_json("memory", "recall", "-q", query)["memories"])


@pytest.fixture(autouse=True)
def bm25_only(isolated_home: Path) -> Path:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\n")
    return isolated_home


def test_consolidate_links_an_error_to_its_fix_and_recall_follows_the_link(bm25_only: Path) -> None:
    error = add("The nightly job fails with an out of memory error in exporter.py")
    fix = add("Fixed exporter.py: rows are streamed in batches of 500 now")
    decision = add("We decided to go with Kafka for the event bus")
    reason = add("Kafka was picked for the event bus because RabbitMQ dropped messages under load")
    add("Sam waters the plants on Sundays")
    query = "What happened with the nightly job?"
    assert [m["id"] for m in recalled(query)] == [error]  # no links yet: the fix shares no word with the question

    dry = consolidate("--dry-run")
    assert dry["links_found"] == 4 and dry["contradictions_found"] == 0  # fix, file, reason, Kafka
    assert as_json("memory", "get", error)["links"] == []  # a dry run stores nothing

    report = consolidate()
    assert report["links_found"] == 4
    assert "found 0 new link(s)" in ok("memory", "consolidate").output  # found again, stored once

    shown = as_json("memory", "get", error)["links"]
    assert {(k["kind"], k["direction"], k["other_id"]) for k in shown} == {("fix", "to", fix), ("file", "to", fix)}
    assert shown[0]["other"]["content"].startswith("Fixed exporter.py")
    assert {(k["kind"], k["direction"], k["other_id"]) for k in as_json("memory", "get", reason)["links"]} == {
        ("reason", "from", decision), ("entity", "from", decision)}
    text = ok("memory", "get", error).output
    assert f"fix -> {fix} (a fix of this error): Fixed exporter.py" in text

    hits = recalled(query)
    assert [m["id"] for m in hits] == [error, fix]  # the fix comes in through its link, below the error
    assert hits[1]["via"] == f"fix link from {error}" and hits[1]["score"] < hits[0]["score"]
    assert "Fixed exporter.py" in as_json("memory", "recall", "-q", query)["text"]

    # the same store with auto_recall.follow_links off: the search hits only
    (bm25_only / "memory.yaml").write_text("embedding:\n  backend: none\nauto_recall:\n  follow_links: false\n")
    assert [m["id"] for m in recalled(query)] == [error]


def test_the_scan_records_a_contradiction_supersession_kept_open_once(bm25_only: Path) -> None:
    lisbon = add("Sam lives in Lisbon", "--pin")
    porto = add("Sam lives in Porto")  # the pinned statement is never overwritten: both current, nothing recorded
    add("Sam prefers green tea")
    assert as_json("memory", "conflicts") == []

    assert consolidate("--dry-run")["contradictions_found"] == 1
    assert as_json("memory", "conflicts") == []  # a dry run records nothing

    assert consolidate()["contradictions_found"] == 1
    [row] = as_json("memory", "conflicts")
    assert (row["memory_a"], row["memory_b"], row["resolution"]) == (lisbon, porto, None)
    assert row["reason"].startswith("found by the consolidation scan: same subject and attribute")
    assert row["a"]["current"] and row["b"]["current"]  # never resolved on its own
    shown = ok("memory", "conflicts").output
    assert "Sam lives in Porto" in shown and "why: found by the consolidation scan" in shown

    assert consolidate()["contradictions_found"] == 0  # a pair already recorded is not recorded again
    ok("memory", "resolve", str(row["id"]), "both_valid", "--note", "two homes")
    assert consolidate()["contradictions_found"] == 0  # nor one resolved
    assert as_json("memory", "conflicts") == [] and len(as_json("memory", "conflicts", "--all")) == 1


def test_the_panel_status_counts_the_last_run(bm25_only: Path) -> None:
    from dexai_memory.config import load_settings
    from dexai_memory.consolidation import last_run

    add("Sam lives in Lisbon", "--pin")
    add("Sam lives in Porto")
    consolidate()
    last = last_run(load_settings(), U)
    assert last is not None and last["contradictions_found"] == 1 and last["links_found"] == 0
