"""``dexai memory forget --hard`` asks before it erases, as ``dexai memory clear`` does: a question
on a terminal, and --yes required without one (or with --json). Real CLI, real SQLite store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.tty import run_on_tty

U = "sam"


@pytest.fixture(autouse=True)
def no_embedder(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\n")


def dexai(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dexai_memory.cli.main", *args, "--user", U],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, env=os.environ.copy(),
                          timeout=120, check=False)


def memory_ids(*extra: str) -> list[str]:
    listed = dexai("memory", "list", "--all", "--json", *extra)
    return [m["id"] for m in json.loads(listed.stdout)]


def test_hard_forget_without_a_terminal_needs_yes() -> None:
    memory_id = json.loads(dexai("memory", "add", "Sam lives in Porto", "--json").stdout)["id"]
    refused = dexai("memory", "forget", memory_id, "--hard")
    assert refused.returncode == 1
    assert f"Erase {memory_id} for good (no restore, no undo) needs confirmation: pass --yes." in refused.stderr
    refused_json = dexai("memory", "forget", memory_id, "--hard", "--json")
    assert refused_json.returncode == 1 and "pass --yes" in refused_json.stderr
    assert memory_ids() == [memory_id]
    done = dexai("memory", "forget", memory_id, "--hard", "--yes")
    assert done.returncode == 0 and f"Erased {memory_id}" in done.stdout
    assert memory_ids() == []


def test_soft_forget_needs_no_confirmation() -> None:
    memory_id = json.loads(dexai("memory", "add", "Sam lives in Porto", "--json").stdout)["id"]
    assert dexai("memory", "forget", memory_id).returncode == 0
    assert dexai("memory", "restore", memory_id).returncode == 0


def test_hard_forget_on_a_terminal_asks() -> None:
    memory_id = json.loads(dexai("memory", "add", "Sam lives in Porto", "--json").stdout)["id"]
    code, out = run_on_tty(["memory", "forget", memory_id, "--hard", "--user", U], answers="n\n")
    assert code == 1 and f"Erase {memory_id} for good (no restore, no undo)? [y/N]" in out and "Aborted" in out
    assert memory_ids() == [memory_id]
    code, out = run_on_tty(["memory", "forget", memory_id, "--hard", "--user", U], answers="y\n")
    assert code == 0 and f"Erased {memory_id}" in out
    assert memory_ids() == []


def test_help_says_so() -> None:
    out = dexai("memory", "forget", "--help").stdout
    assert "--yes is required" in " ".join(out.split())
