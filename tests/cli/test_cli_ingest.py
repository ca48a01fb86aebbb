"""``dexai memory ingest`` through the real entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dexai_memory.cli.main import cli

TURNS = [
    {"id": "D1:1", "role": "user", "speaker": "Caroline", "content": "Hey Mel! Good to see you!",
     "timestamp": "2023-05-08T13:56:00"},
    {"id": "D1:2", "role": "user", "speaker": "Caroline",
     "content": "I went to a LGBTQ support group yesterday and it was so powerful.", "timestamp": "2023-05-08T13:57:00"},
    {"id": "D1:3", "role": "assistant", "speaker": "Melanie", "content": "Wow, that's cool! I'm swamped with the kids.",
     "timestamp": "2023-05-08T13:58:00", "caption": "a photo of a painting of a sunset"},
    {"id": "D1:4", "role": "user", "speaker": "Caroline",
     "content": "I'm keen on counseling. I want to work with trans people and help them.",
     "timestamp": "2023-05-08T13:59:00"},
    {"id": "D1:5", "role": "assistant", "speaker": "Melanie", "content": "ok thanks",
     "timestamp": "2023-05-08T14:00:00"},
]


@pytest.fixture(autouse=True)
def bm25_only(isolated_home: Path) -> None:
    """Keep CLI tests fast: no embedding model (BM25 search only)."""
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\n", encoding="utf-8")


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_ingest_json_summary_and_idempotent(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "conv.jsonl", TURNS)
    runner = CliRunner()
    result = runner.invoke(cli, ["memory", "ingest", str(path), "--user", "caroline", "--session", "s1", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["turns"] == 5 and data["archived"] == 5
    assert data["gated"] == 5  # bulk ingest sends every turn to the extractor (ingest_gate_threshold 0)
    assert data["extracted"] >= 2 and data["added"] >= 2
    assert set(data) >= {"turns", "gated", "extracted", "added", "updated", "superseded", "noop"}
    assert data["user"] == "caroline" and data["session"] == "s1"

    listing = runner.invoke(cli, ["memory", "search", "support group", "--user", "caroline", "--json"])
    assert listing.exit_code == 0, listing.output
    assert "support group" in listing.output and "Caroline" in listing.output

    again = runner.invoke(cli, ["memory", "ingest", str(path), "--user", "caroline", "--session", "s1"])
    assert again.exit_code == 0, again.output
    assert "turns 5" in again.output and "added 0" in again.output and "0 raw turns archived" in again.output


def test_ingest_bad_line_is_a_clean_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(TURNS[0]) + "\n" + '{"id": "x", "role": "user"}\n', encoding="utf-8")
    result = CliRunner().invoke(cli, ["memory", "ingest", str(path), "--user", "u"])
    assert result.exit_code == 1
    assert "bad.jsonl line 2: missing 'content'" in result.output
    assert "Traceback" not in result.output
