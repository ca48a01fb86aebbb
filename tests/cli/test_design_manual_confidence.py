"""A fact written by hand starts at 0.6 and gains confidence faster on repetition than an
extracted one, through the real CLI (``dexai memory add``, ``dexai memory facts add``) on real SQLite."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from dexai_memory.cli.main import cli
from dexai_memory.models import CONFIDENCE_BOOST, EXTRACTED_CONFIDENCE, MANUAL_CONFIDENCE


def add(runner: CliRunner, *args: str) -> dict[str, object]:
    out = runner.invoke(cli, [*args, "--json"])
    assert out.exit_code == 0, out.output
    data: dict[str, object] = json.loads(out.stdout)
    return data


def test_a_hand_written_fact_rises_faster_than_an_extracted_one(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\n")
    runner = CliRunner()
    first = add(runner, "memory", "add", "The staging database is db-staging-7.internal", "--type", "fact")
    assert first["confidence"] == MANUAL_CONFIDENCE and first["metadata"] == {"source": "hand"}
    again = add(runner, "memory", "add", "The staging database is db-staging-7.internal", "--type", "fact")
    assert again["id"] == first["id"] and again["mention_count"] == 2
    extracted_once_more = EXTRACTED_CONFIDENCE + CONFIDENCE_BOOST
    assert again["confidence"] - MANUAL_CONFIDENCE > CONFIDENCE_BOOST  # faster than an extracted one rises
    assert again["confidence"] == 0.85 and extracted_once_more == 0.9
    third = add(runner, "memory", "add", "The staging database is db-staging-7.internal", "--type", "fact")
    assert third["confidence"] == 1.0  # two repetitions: fully trusted, as an extracted one is
