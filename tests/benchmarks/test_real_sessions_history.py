"""The learned-history arm of real_sessions_bench: its Claude Code tree and its comparison.

The arm's premise is that a session laid out for learn-history is learned under the project
the hooks see when the same session is replayed (else no learned memory could be recalled);
this checks it through learn-history's own planning code, on a small transcript in a
temporary corpus. The comparison is checked on two hand-made reports.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.real_sessions_history import by_kind, compare, lay_out
from dexai_memory.config import load_settings
from dexai_memory.history.learn import plan


def _transcript() -> bytes:
    entries = [
        {"type": "user", "cwd": "/Users/[USER]/Documents/M-Claude", "sessionId": "s-1", "promptId": "p1",
         "timestamp": "2026-10-01T09:00:00.000Z", "uuid": "u1",
         "message": {"role": "user", "content": "Always run the linter before committing in this repo."}},
        {"type": "assistant", "cwd": "/Users/[USER]", "sessionId": "s-1", "timestamp": "2026-10-01T09:00:05.000Z",
         "uuid": "u2", "message": {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]}},
    ]
    return gzip.compress(("\n".join(json.dumps(e) for e in entries) + "\n").encode())


def test_a_laid_out_session_is_learned_under_the_replay_project(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "proj").mkdir(parents=True)
    (corpus / "proj" / "s-1.jsonl.gz").write_bytes(_transcript())
    monkeypatch.setenv("DEXAI_REAL_SESSIONS_DIR", str(corpus))
    monkeypatch.delenv("DEXAI_MEMORY_PROJECT", raising=False)
    cwd = tmp_path / "projects" / "proj"
    (cwd / ".git").mkdir(parents=True)
    claude = tmp_path / "claude"
    written = lay_out({"id": "proj/s-1", "file": "proj/s-1.jsonl.gz"}, cwd, claude)
    assert written.parent.parent == claude / "projects"
    assert all(json.loads(line)["cwd"] == str(cwd) for line in written.read_text().splitlines())
    found = plan(load_settings(home=tmp_path / "home"), "u", config_dir=claude, backend="offline")
    assert [s.session_id for s in found.todo] == ["s-1"]
    assert found.todo[0].project == str(cwd)
    assert found.todo[0].prompts[0].text.startswith("Always run the linter")


def _need(item: str, kind: str, line: int, injected: bool) -> dict[str, Any]:
    return {"item": item, "kind": kind, "session": "p/s", "line": line, "in_context": injected, "stored": True,
            "stored_as_note": injected, "prompt": f"prompt {line}"}


def test_compare_lists_the_needs_one_arm_injected_and_the_other_did_not() -> None:
    live = {"summary": {"injected_when_needed_pct": 50.0, "sessions": 1},
            "needs": [_need("a", "instruction", 3, True), _need("b", "decision", 5, False)]}
    history = {"summary": {"injected_when_needed_pct": 50.0, "sessions": 1, "learn_seconds": 2.0},
               "needs": [_need("a", "instruction", 3, False), _need("b", "decision", 5, True)]}
    out = compare(live, history)
    assert out["summary_delta"] == {"injected_when_needed_pct": 0.0, "sessions": 0}
    assert [x["item"] for x in out["injected_live_only"]] == ["a"]
    assert [x["item"] for x in out["injected_history_only"]] == ["b"]
    assert out["by_kind"] == {"decision": "0/1 vs 1/1", "instruction": "1/1 vs 0/1"}
    assert by_kind(history["needs"]) == {"decision": (1, 1), "instruction": (0, 1)}
