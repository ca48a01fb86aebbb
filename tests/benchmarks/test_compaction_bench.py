"""``benchmarks.compaction_bench --quick`` runs through the real Claude Code CLI and the fake
Messages API, and writes a well-formed result (its figures are not asserted: they are what
the benchmark reports, not what the test requires)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
ENVELOPE = {"benchmark", "schema", "date", "quick", "machine", "params", "summary", "results"}
ROUND_KEYS = {"round", "trigger", "survival_pct", "high_importance_pct", "block_tokens", "wall_s",
              "continued_from_summary", "present", "missing", "in_block", "outside_block"}


def test_compaction_bench_quick(tmp_path: Path) -> None:
    env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1", "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, "-m", "benchmarks.compaction_bench", "--quick", "--out", str(tmp_path)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    path = tmp_path / "compaction.quick.json"
    try:
        check_result(path, proc.stdout)
    except AssertionError as exc:  # show the run's own report with the failed check
        raise AssertionError(f"{exc}\n--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-2000:]}") from exc


def check_result(path: Path, stdout: str) -> None:
    assert str(path) in stdout
    assert "Compaction survival" in stdout
    data = json.loads(path.read_text(encoding="utf-8"))
    assert ENVELOPE <= set(data)
    assert data["benchmark"] == "compaction" and data["quick"] is True and data["schema"] == 1
    params = data["params"]
    assert params["facts"] == 5 and params["rounds"] == 2
    assert sum(params["channels"].values()) == 5 and all(params["channels"].values())
    assert len({f["token"].lower() for f in params["planted"]}) == 5
    for key, value in data["summary"].items():
        assert value is None or isinstance(value, int | float | str), key
        if isinstance(value, float):
            assert math.isfinite(value), key

    results = data["results"]
    assert set(results) == {"autostart", "own-daemon", "without"}
    for arm in results.values():
        # before any compaction every planted fact is in what the model receives
        assert arm["before_first_compaction_pct"] == 100.0
        rounds = arm["rounds"]
        assert [r["round"] for r in rounds] == [1, 2]
        assert [r["trigger"] for r in rounds] == ["manual", "auto"]
        for r in rounds:
            assert ROUND_KEYS <= set(r)
            assert r["continued_from_summary"] is True  # the compaction really happened
            assert 0.0 <= r["survival_pct"] <= 100.0
            assert sorted(r["present"] + r["missing"]) == sorted(f["key"] for f in params["planted"])
    # without dexai-memory nothing is injected, and the empty summary keeps no fact
    for r in results["without"]["rounds"]:
        assert r["block_tokens"] == [] and r["present"] == []
    # with it (both arms), the re-injected block is measured and every miss is explained
    for mode in ("autostart", "own-daemon"):
        with_arm = results[mode]
        assert all(r["block_tokens"] for r in with_arm["rounds"])
        diag = with_arm["diagnostics"]
        assert diag["daemon_ran"] is True  # the hooks started it, or the user did
        assert set(diag["facts"]) == {f["key"] for f in params["planted"]}
        missing = {(r["round"], k) for r in with_arm["rounds"] for k in r["missing"]}
        assert {(m["round"], m["fact"]) for m in diag["misses"]} == missing
        assert all(m["stage"] for m in diag["misses"])
