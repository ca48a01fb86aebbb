"""``benchmarks/assembly_bench.py --quick`` runs and reports every budget (no speed is asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_benchmarks_quick import run_quick


@pytest.mark.slow
def test_assembly_bench_quick(tmp_path: Path) -> None:
    data = run_quick("assembly_bench", tmp_path)
    assert data["benchmark"] == "assembly" and data["params"]["sizes"] == [150]
    for budget in ("500", "2000", "8000"):
        stored = data["results"]["150"]["stored"][budget]
        assert 0 < stored["fill"] <= 1.0 and stored["file_hit_rate"] == 1.0
        assert abs(sum(stored["levels"].values()) - 1.0) < 0.01
    assert data["results"]["150"]["store_forms"]["memories"] > 0
