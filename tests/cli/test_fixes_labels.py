"""Facts about the user are not labelled "Project facts": the persistent context the SessionStart
hook injects titles them "Facts", as the panel and ``dexai memory facts`` do. A real daemon
(``dexai daemon start``), the real hook command and a real SQLite store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexai_memory.recall.persistent import PLURALS, TITLES


def dexai(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dexai_memory.cli.main", *args], input=stdin, capture_output=True,
                          text=True, env=os.environ.copy(), timeout=120, check=False)


@pytest.fixture
def daemon(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("DEXAI_MEMORY_USER", "sam")
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\ndaemon:\n  api_port: 0\n  http_port: 0\n")
    for text, category in (("My name is Sam and I live in Lisbon", "fact"), ("Never force-push to main", "warning")):
        assert dexai("memory", "facts", "add", text, "-c", category).returncode == 0
    started = dexai("daemon", "start")
    assert started.returncode == 0, started.stderr
    try:
        yield
    finally:
        dexai("daemon", "stop")


def test_the_session_start_block_titles_them_facts(daemon: None, tmp_path: Path) -> None:
    event = {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "SessionStart", "source": "startup",
             "transcript_path": str(tmp_path / "none.jsonl")}
    out = dexai("hook", "session-start", stdin=json.dumps(event))
    block = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Facts:\n- My name is Sam and I live in Lisbon" in block
    assert "Project facts" not in block and "project facts" not in block
    listed = json.loads(dexai("memory", "facts", "--json").stdout)["categories"]
    assert [m["content"] for m in listed["fact"]] == ["My name is Sam and I live in Lisbon"]


def test_no_label_says_project_facts() -> None:
    assert TITLES["project_fact"] == "Facts:" and PLURALS["project_fact"] == "facts"
    panel = Path(__file__).parents[2] / "dexai_memory" / "panel" / "static" / "panel.js"
    assert "Project facts" not in panel.read_text()
