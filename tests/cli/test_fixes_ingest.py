"""``dexai memory ingest``: a line may carry its session (id and date), so one file and one process
hold a whole history; a turn with empty content is skipped with a warning naming its line and
counted, never a reason to refuse the file; a progress line on a terminal (also one that reports
no width), nothing on a pipe. Real CLI (entry point and processes), real SQLite store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from dexai_memory.cli.main import cli
from tests.cli.tty import run_on_tty

U = "caroline"


@pytest.fixture(autouse=True)
def no_embedder(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\n")


def write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def dexai(*args: str) -> Result:
    return CliRunner().invoke(cli, ["memory", *args, "--user", U], catch_exceptions=False)


def transcripts(session: str) -> list[dict[str, Any]]:
    result = dexai("list", "--session", session, "--tier", "L3", "--json")
    assert result.exit_code == 0, result.output
    return list(json.loads(result.stdout))


HISTORY = [
    {"id": "D1:1", "role": "user", "speaker": "Caroline", "content": "I moved to Boston last month.",
     "session_id": "D1", "session_date": "2023-05-08"},
    {"id": "D1:2", "role": "assistant", "content": "How do you like Boston?", "session_id": "D1",
     "session_date": "2023-05-08"},
    {"id": "D2:1", "role": "user", "speaker": "Caroline", "content": "I adopted a dog called Rex.",
     "session_id": "D2", "session_date": "2023-06-12", "timestamp": "2023-06-12T18:30:00"},
    {"id": "D3:1", "role": "user", "speaker": "Caroline", "content": "Rex and I ran our first 10k.",
     "session_id": "D3", "session_date": "8:56 pm on 20 July, 2023"},
]


def test_one_file_holds_many_sessions(tmp_path: Path) -> None:
    result = dexai("ingest", str(write(tmp_path / "history.jsonl", HISTORY)), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["turns"] == 4 and summary["sessions"] == 3 and summary["skipped_lines"] == 0
    d1, d2, d3 = transcripts("D1"), transcripts("D2"), transcripts("D3")
    assert sorted(m["source_ids"][0] for m in d1) == ["D1:1", "D1:2"]
    assert [m["source_ids"] for m in d2] == [["D2:1"]] and [m["source_ids"] for m in d3] == [["D3:1"]]
    assert {m["created_at"][:10] for m in d1} == {"2023-05-08"}  # the session's date
    assert d2[0]["created_at"].startswith("2023-06-12T18:30")  # a turn's own timestamp wins
    assert d3[0]["created_at"].startswith("2023-07-20T20:56")  # LoCoMo's way of writing a date
    text = dexai("ingest", str(tmp_path / "history.jsonl")).stdout
    assert "(3 sessions)" in text  # and again adds nothing
    assert len(transcripts("D1")) == 2


def test_the_old_format_still_works(tmp_path: Path) -> None:
    lines = [{k: v for k, v in line.items() if not k.startswith("session")} for line in HISTORY]
    path = write(tmp_path / "chat.jsonl", lines)
    result = dexai("ingest", str(path))
    assert result.exit_code == 0 and "(session chat)" in result.stdout  # the file's name
    assert len(transcripts("chat")) == 4
    mixed = write(tmp_path / "mixed.jsonl", [{**lines[0], "id": "x1"}, {**HISTORY[2], "id": "x2"}])
    assert dexai("ingest", str(mixed), "--session", "s9").exit_code == 0  # --session: lines without one
    assert [m["source_ids"] for m in transcripts("s9")] == [["x1"]]
    assert [m["source_ids"] for m in transcripts("D2")] == [["x2"]]


def test_an_empty_turn_is_skipped_with_a_warning_and_counted(tmp_path: Path) -> None:
    lines = [HISTORY[0], {"id": "e1", "role": "assistant", "content": ""}, HISTORY[2],
             {"id": "e2", "role": "user", "content": "   "}, {"id": "e3", "role": "user", "content": None}]
    path = write(tmp_path / "gaps.jsonl", lines)
    result = dexai("ingest", str(path))
    assert result.exit_code == 0, result.output
    for number, turn in ((2, "e1"), (4, "e2"), (5, "e3")):
        assert f"Warning: gaps.jsonl line {number}: turn '{turn}' has empty content: skipped" in result.stderr
    assert "3 lines skipped (empty content): gaps.jsonl line 2; gaps.jsonl line 4; gaps.jsonl line 5" \
        in result.stdout
    assert "turns 2 " in result.stdout
    summary = json.loads(dexai("ingest", str(path), "--json").stdout)
    assert summary["skipped_lines"] == 3 and summary["turns"] == 2
    bad = write(tmp_path / "bad.jsonl", [HISTORY[0], {"id": "x", "role": "user"}])  # no content key at all
    refused = dexai("ingest", str(bad))
    assert refused.exit_code == 1 and "bad.jsonl line 2: missing 'content'" in refused.stderr


@pytest.mark.parametrize("columns", [100, 0], ids=["terminal", "terminal-without-width"])
def test_a_progress_line_on_a_terminal(tmp_path: Path, columns: int) -> None:
    path = write(tmp_path / "history.jsonl", HISTORY)
    code, out = run_on_tty(["memory", "ingest", str(path), "--vectors", "now", "--user", U], columns=columns)
    assert code == 0, out
    # drawn at the start and at least every 0.1 s (a run this short may end before the next draw)
    assert "ingest:   0%|" in out and "0/4 [" in out and "Ingested history.jsonl" in out


def test_nothing_but_the_summary_on_a_pipe(tmp_path: Path) -> None:
    path = write(tmp_path / "history.jsonl", HISTORY)
    done = subprocess.run([sys.executable, "-m", "dexai_memory.cli.main", "memory", "ingest", str(path),
                           "--vectors", "now", "--user", U], capture_output=True, text=True, env=os.environ.copy(),
                          timeout=120, check=True)
    assert done.stderr == "" and done.stdout.startswith("Ingested history.jsonl")
