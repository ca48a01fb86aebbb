"""The benchmarks' --quick modes run and emit well-formed JSON (no speed is asserted).

Each quick run is a real subprocess (``python -m benchmarks.NAME --quick``
from the repository root) with the real embedder and SQLite files; they take
tens of seconds on 2 cores, hence the ``slow`` mark.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dexai_memory.cli.bench import available, find_repo_root
from dexai_memory.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
ENVELOPE = {"benchmark", "schema", "date", "quick", "machine", "params", "summary", "results"}


def run_quick(module: str, out: Path, *extra: str) -> dict[str, Any]:
    env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1", "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, "-m", f"benchmarks.{module}", "--quick", "--out", str(out), *extra],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = list(out.glob("*.quick.json"))
    assert len(files) == 1, files
    assert str(files[0]) in proc.stdout  # it says where it wrote
    data = json.loads(files[0].read_text(encoding="utf-8"))
    assert ENVELOPE <= set(data)
    assert data["quick"] is True and data["schema"] == 1
    assert data["machine"]["cpus"] >= 1
    for key, value in data["summary"].items():
        assert value is None or isinstance(value, int | float | str), key
        if isinstance(value, float):
            assert math.isfinite(value), key
    data["_stdout"] = proc.stdout
    return data


def nonneg(value: Any) -> bool:
    return isinstance(value, int | float) and value >= 0


@pytest.mark.slow
def test_search_bench_quick(tmp_path: Path) -> None:
    data = run_quick("search_bench", tmp_path)
    assert data["benchmark"] == "search_bench"
    (size,) = data["results"]["sizes"]
    assert size["memories"] == 1000
    for mode in ("bm25", "hybrid"):
        assert size[mode]["n"] == 20
        assert 0 < size[mode]["p50_ms"] <= size[mode]["p95_ms"]
        assert size[mode]["mean_results"] > 0  # the synthetic queries do find memories
    for part in ("embed", "fts", "knn", "knn_raw", "fetch"):
        assert size["profile"][part]["n"] > 0
    assert size["insert_no_embedding"]["n"] == size["insert_with_embedding"]["n"] == 1000
    assert size["db_bytes"] > 0
    for key in ("hybrid_p95_ms_1k", "bm25_p95_ms_1k", "insert_with_embedding_per_s_1k", "db_mb_1k"):
        assert nonneg(data["summary"][key]), key
    assert "hybrid p95 ms" in data["_stdout"]


@pytest.mark.slow
def test_locomo_bench_quick(tmp_path: Path) -> None:
    data = run_quick("locomo_bench", tmp_path, "--misses", "1")
    assert data["params"]["conversations"] == ["conv-26"]
    assert data["params"]["questions"] == 20
    assert data["params"]["budget"] == 800
    scores = data["results"]["scores"]
    unavailable = data["results"]["unavailable"]
    for method in ("hybrid", "dense", "bm25", "bm25@5", "bm25@10", "bm25@20"):
        overall = scores[method]["overall"]
        assert overall["questions"] == 20
        assert 0 <= overall["evidence_recall"] <= 100 and 0 <= overall["hit_rate"] <= 100
        assert overall["evidence_recall"] <= overall["hit_rate"]  # a found gold turn is a hit
        assert set(scores[method]["per_category"]) <= {"multi-hop", "temporal", "open-domain", "single-hop"}
    for method in ("hybrid", "dense", "bm25"):
        assert scores[method]["overall"]["max_tokens"] <= 800
    assert scores["bm25@5"]["overall"]["mean_tokens"] < scores["bm25@20"]["overall"]["mean_tokens"]
    # the full system is measured or explicitly reported as not available, never missing silently
    if "system" in unavailable:
        assert data["summary"]["system_evidence_recall_pct"] is None
        assert "not available" in data["_stdout"]
    else:
        assert 0 <= data["summary"]["system_evidence_recall_pct"] <= 100
        assert scores["system"]["overall"]["max_tokens"] <= 800
    assert "Missed questions" in data["_stdout"]


@pytest.mark.slow
def test_latency_bench_quick(tmp_path: Path) -> None:
    other = tmp_path / "results"
    other.mkdir()
    (other / "gate.json").write_text(json.dumps({
        "benchmark": "gate", "schema": 1, "date": "2026-01-01T00:00:00+00:00", "quick": False, "machine": {},
        "params": {}, "summary": {"gate_p50_ms": 0.1, "gate_p99_ms": 0.5}, "results": {}}), encoding="utf-8")
    data = run_quick("latency_bench", tmp_path, "--results", str(other))
    (recall,) = data["results"]["recall"]
    assert recall["memories"] == 1000 and recall["n"] == 20
    assert nonneg(data["summary"]["recall_p95_ms_1k"])
    collected = data["results"]["collected"]
    assert collected["gate latency p50 (ms)"]["value"] == 0.1
    # the real daemon process answered every recall over its socket; its RSS is reported
    rss = data["results"]["daemon_rss"]
    assert rss["recalls_answered"] == rss["recalls"] == 20 and rss["rss_mb_after_recall"] > 20
    assert collected["daemon resident memory (MB)"]["value"] == rss["rss_mb_after_recall"]
    assert "daemon resident memory (MB)" not in data["results"]["missing"]
    assert "MISSING" in data["_stdout"]  # the hook figures: no hook_bench result in this directory


@pytest.mark.slow
def test_panel_bench_quick(tmp_path: Path) -> None:
    data = run_quick("panel_bench", tmp_path)
    assert data["benchmark"] == "panel" and data["params"]["sizes"] == [150]
    endpoints = data["results"]["150"]
    assert set(endpoints) == {"facts", "search", "assemble", "edit", "pin+unpin", "history", "conflicts"}
    assert all(e["n"] >= 10 and 0 < e["p50_ms"] <= e["p95_ms"] for e in endpoints.values())
    assert nonneg(data["summary"]["assemble_p95_ms_150"]) and "Local API latency" in data["_stdout"]


def test_bench_command_lists_and_rejects_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert find_repo_root() == REPO
    names = available(REPO)
    assert {"search_bench", "locomo_bench", "latency_bench"} <= set(names)
    runner = CliRunner()
    listing = runner.invoke(cli, ["bench"])
    assert listing.exit_code == 0 and "locomo_bench" in listing.output
    unknown = runner.invoke(cli, ["bench", "no_such_bench"])
    assert unknown.exit_code == 1
    assert "unknown benchmark 'no_such_bench'" in unknown.output
    assert "Traceback" not in unknown.output


def test_find_repo_root_falls_back_to_the_editable_checkout(tmp_path: Path) -> None:
    # outside any checkout, the repository next to the (editable) package is used
    assert find_repo_root(tmp_path) == REPO


@pytest.mark.slow
def test_scale_bench_quick(tmp_path: Path) -> None:
    data = run_quick("scale_bench", tmp_path)
    assert data["benchmark"] == "scale"
    runs = data["results"]
    assert {"1x1000", "1x10000"} <= set(runs)
    for run in (runs["1x1000"], runs["1x10000"]):
        assert run["recall"]["n"] == 100
        assert 0 < run["recall"]["p50_ms"] <= run["recall"]["p95_ms"]
        assert run["db_bytes"] > 0 and run["rss_mb"] > 0
        assert nonneg(run["add_one_at_a_time_per_s"])
    assert runs["1x10000"]["db_bytes"] > 5 * runs["1x1000"]["db_bytes"]


@pytest.mark.slow
def test_vectors_bench_quick(tmp_path: Path) -> None:
    data = run_quick("vectors_bench", tmp_path)
    assert data["benchmark"] == "vectors"
    for option in ("minilm", "minilm-no-transcripts", "static"):
        run = data["results"][option]
        assert run["turns"] == 150
        assert run["report"]["vectors_pending"] == 0
        assert nonneg(run["turns_per_s"])
    assert data["results"]["texts"]["distinct"] <= data["results"]["texts"]["texts"]
