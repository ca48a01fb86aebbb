"""benchmarks/postgres_bench.py --quick runs against a real PostgreSQL and writes well-formed JSON
(no speed is asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import postgres_server
from tests.benchmarks.test_benchmarks_quick import nonneg, run_quick


@pytest.mark.slow
@pytest.mark.skipif(not postgres_server.available(), reason="needs the dev extra (psycopg, pgserver)")
def test_postgres_bench_quick(tmp_path: Path) -> None:
    data = run_quick("postgres_bench", tmp_path)
    assert data["benchmark"] == "postgres_bench"
    stores = data["results"]["1000"]
    assert set(stores) == {"postgres", "native"}
    for r in stores.values():
        assert r["search"]["n"] == 20 and 0 < r["search"]["p50_ms"] <= r["search"]["p95_ms"]
        assert r["concurrent"]["clients"] == 50 and r["concurrent"]["ops"] == 100
        assert nonneg(r["bulk_add"]["adds_per_s"]) and r["add"]["n"] == 20
    assert nonneg(stores["postgres"]["load"]["index_build_s"])
    assert "postgres" in data["_stdout"] and "native" in data["_stdout"]
