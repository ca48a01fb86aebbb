"""``dexai memory recall --as-of`` recalls among what was valid at that time, with the meaning
``list --as-of`` and ``search --as-of`` have (and ``now`` for this moment at all three); the
``--json`` lines keep their shape exactly. Real CLI entry point, real SQLite store."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dexai_memory.cli.main import cli
from dexai_memory.models import utcnow

U = "sam"
KEYS = ["query", "text", "tokens", "memories", "latency_ms"]


@pytest.fixture(autouse=True)
def no_embedder(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\n")


def dexai(*args: str) -> str:
    result = CliRunner().invoke(cli, ["memory", *args, "--user", U], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def recall_lines(*args: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in dexai("recall", *args, "--json").splitlines()]


@pytest.fixture
def moved() -> tuple[str, str]:
    """Sam lived in Porto, then moved to Lisbon: the moment between, and the old memory's id."""
    old = json.loads(dexai("add", "Sam lives in Porto with two cats", "--json"))["id"]
    time.sleep(0.05)
    between = utcnow().isoformat()
    time.sleep(0.05)
    dexai("supersede", old, "Sam lives in Lisbon with two cats", "--reason", "moved")
    return between, old


def test_recall_as_of_sees_what_was_valid_then(moved: tuple[str, str]) -> None:
    between, old = moved
    [now] = recall_lines("--query", "Where does Sam live?")
    assert "Lisbon" in now["text"] and "Porto" not in now["text"]
    [then] = recall_lines("--query", "Where does Sam live?", "--as-of", between)
    assert "Porto" in then["text"] and "Lisbon" not in then["text"]
    assert [m["id"] for m in then["memories"]] == [old]
    # the same meaning as list --as-of: what recall shows then is among what list shows then
    listed = {m["id"] for m in json.loads(dexai("list", "--as-of", between, "--json"))}
    assert {m["id"] for m in then["memories"]} <= listed and old in listed
    assert list(then) == list(now) == KEYS  # the --json shape, unchanged


def test_as_of_now_at_every_command(moved: tuple[str, str]) -> None:
    [now] = recall_lines("--query", "Where does Sam live?", "--as-of", "now")
    assert "Lisbon" in now["text"] and "Porto" not in now["text"] and list(now) == KEYS
    assert [m["content"] for m in json.loads(dexai("list", "--as-of", "now", "--json"))] == [
        "Sam lives in Lisbon with two cats"]
    assert "Lisbon" in dexai("search", "Sam", "--as-of", "NOW")


def test_a_queries_file_with_as_of_echoes_its_keys(moved: tuple[str, str], tmp_path: Path) -> None:
    between, _ = moved
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "a", "query": "Where does Sam live?"}\n{"id": "b", "query": "cats"}\n')
    lines = recall_lines("--queries", str(queries), "--as-of", between)
    assert [line["id"] for line in lines] == ["a", "b"] and list(lines[0]) == ["id", *KEYS]
    assert "Porto" in lines[0]["text"]


def test_a_bad_date_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["memory", "recall", "-q", "x", "--as-of", "last week"])
    assert result.exit_code == 2 and "not an ISO 8601 date/time" in result.output
    assert "'now'" in CliRunner().invoke(cli, ["memory", "recall", "--help"]).output
