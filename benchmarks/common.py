"""What every benchmark shares: timing, percentiles, tables, the JSON envelope.

Every result file written by :func:`write_result` has the same top-level keys,
so ``latency_bench`` (and CI) can read any of them:

``benchmark``
    the module name (``search_bench``);
``schema``
    :data:`SCHEMA_VERSION`;
``date``
    ISO 8601 UTC time of the run;
``quick``
    True for a ``--quick`` run (a small slice; its figures are not the headline);
``machine``
    :func:`machine_info` (CPU count, model, load average, Python, platform);
``params``
    the benchmark's parameters;
``summary``
    a flat ``{name: number | str | None}`` of the headline figures, each name
    carrying its unit (``hybrid_p95_ms_10k``, ``insert_per_s``), ``None`` when
    a figure is not available;
``results``
    the benchmark's own detailed data.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

SCHEMA_VERSION = 1
#: ``benchmarks/`` itself.
BENCH_DIR = Path(__file__).resolve().parent
#: The repository root (the directory holding ``benchmarks/``).
REPO_ROOT = BENCH_DIR.parent
#: Where result JSON files go by default.
RESULTS_DIR = BENCH_DIR / "results"
#: Environment variable naming the benchmarks' cache directory.
CACHE_ENV = "DEXAI_BENCH_CACHE"
#: Cached databases and other large derived files, kept between runs and out of the checkout
#: (a plugin install copies the checkout): ``$DEXAI_BENCH_CACHE``, else
#: ``${XDG_CACHE_HOME:-~/.cache}/dexai-memory/bench``.
CACHE_DIR = Path(os.environ.get(CACHE_ENV) or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                 / "dexai-memory" / "bench")
def shared_bench_path(env: str, *parts: str) -> Path:
    """$``env``, else ``shared/bench/<parts>`` beside the checkout (as CI lays it out).

    Third-party data fetched for development is never committed: it lives in
    ``shared/bench/`` next to the repository (``/work/shared/bench`` here).
    """
    if os.environ.get(env):
        return Path(os.environ[env])
    relative = Path("shared", "bench", *parts)
    here = Path(__file__).resolve().parent.parent
    for base in (here.parent, here, Path("/work")):
        if (base / relative).exists():
            return base / relative
    return here.parent / relative


def _locomo_path() -> Path:
    """The LoCoMo development split shared by the project ($DEXAI_LOCOMO_PATH to point elsewhere)."""
    return shared_bench_path("DEXAI_LOCOMO_PATH", "locomo", "locomo10-dev.json")


LOCOMO_PATH = _locomo_path()


# --------------------------------------------------------------------------- timing
def percentile(values: Sequence[float], pct: float) -> float:
    """The ``pct`` percentile (0-100) of ``values`` by linear interpolation (numpy's default)."""
    if not values:
        raise ValueError("percentile of an empty sequence")
    data = sorted(values)
    if len(data) == 1:
        return float(data[0])
    pos = (len(data) - 1) * pct / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return float(data[lo] + (data[hi] - data[lo]) * (pos - lo))


def latency_stats(ms: Sequence[float]) -> dict[str, float | int]:
    """p50 / p95 / p99 / mean / max of latencies in milliseconds, rounded to 0.01 ms."""
    if not ms:
        return {"n": 0}
    return {
        "n": len(ms),
        "p50_ms": round(percentile(ms, 50), 2),
        "p95_ms": round(percentile(ms, 95), 2),
        "p99_ms": round(percentile(ms, 99), 2),
        "mean_ms": round(statistics.fmean(ms), 2),
        "max_ms": round(max(ms), 2),
    }


class Stopwatch:
    """Accumulates named laps in milliseconds: ``with sw.lap("fts"): ...``."""

    def __init__(self) -> None:
        self.laps: dict[str, list[float]] = {}

    @contextmanager
    def lap(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.laps.setdefault(name, []).append((time.perf_counter() - start) * 1000.0)

    def stats(self) -> dict[str, dict[str, float | int]]:
        return {name: latency_stats(values) for name, values in self.laps.items()}


def elapsed_ms(start: float) -> float:
    """Milliseconds since ``start`` (a :func:`time.perf_counter` value)."""
    return (time.perf_counter() - start) * 1000.0


# --------------------------------------------------------------------------- machine
def machine_info() -> dict[str, Any]:
    """CPU count and model, load average, memory, Python and platform of this run."""
    info: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
    }
    try:
        info["load_avg_1m"] = round(os.getloadavg()[0], 2)
    except OSError:
        pass
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal"):
                    info["mem_total_mb"] = int(line.split()[1]) // 1024
                    break
    except OSError:
        pass
    return info


# --------------------------------------------------------------------------- output
def fmt(value: Any, digits: int = 2) -> str:
    """A table cell: numbers rounded, None as 'n/a'."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        return f"{value:,.{digits}f}"
    return str(value)


def format_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, title: str | None = None) -> str:
    """A plain-text table (GitHub-markdown compatible) of ``rows`` under ``headers``."""
    raw = [list(row) for row in rows]
    cells = [[fmt(v) for v in row] for row in raw]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    # numbers (and n/a) are right-aligned, text left-aligned
    numeric = [all(isinstance(r[i], int | float) or r[i] is None for r in raw if i < len(r)) and i > 0
               for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "| " + " | ".join(v.rjust(widths[i]) if numeric[i] else v.ljust(widths[i])
                                 for i, v in enumerate(values)) + " |"

    out = [] if title is None else [title, ""]
    out.append(line(headers))
    out.append("|" + "|".join(("-" * (w + 1) + ":") if numeric[i] else ("-" * (w + 2))
                              for i, w in enumerate(widths)) + "|")
    out.extend(line(row) for row in cells)
    return "\n".join(out)


def write_result(name: str, *, quick: bool, params: Mapping[str, Any], summary: Mapping[str, Any],
                 results: Any, out_dir: Path | None = None) -> Path:
    """Write the JSON envelope (see the module docstring) to ``out_dir/name.json``.

    The file is written to a temporary name and renamed, so a reader never sees
    half a file. A ``--quick`` run writes ``name.quick.json`` so it never
    overwrites the figures of a full run.
    """
    out_dir = Path(out_dir) if out_dir is not None else RESULTS_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": name,
        "schema": SCHEMA_VERSION,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": quick,
        "machine": machine_info(),
        "params": dict(params),
        "summary": dict(summary),
        "results": results,
    }
    path = out_dir / (f"{name}.quick.json" if quick else f"{name}.json")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def read_results(out_dir: Path | None = None) -> dict[str, dict[str, Any]]:
    """Every ``*.json`` result under ``out_dir`` (full runs preferred over quick ones), by benchmark name."""
    out_dir = Path(out_dir) if out_dir is not None else RESULTS_DIR
    found: dict[str, dict[str, Any]] = {}
    if not out_dir.is_dir():
        return found
    for path in sorted(out_dir.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if not isinstance(data, dict):
            continue
        name = str(data.get("benchmark") or path.name.split(".", 1)[0])
        data.setdefault("_path", str(path))
        previous = found.get(name)
        if previous is None or (previous.get("quick") and not data.get("quick")):
            found[name] = data
    return found


# --------------------------------------------------------------------------- CLI
def arg_parser(name: str, description: str) -> argparse.ArgumentParser:
    """An argument parser with the options every benchmark takes (--quick, --out)."""
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{name}", description=description)
    parser.add_argument("--quick", action="store_true",
                        help="run a small slice (CI mode); writes NAME.quick.json")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"directory for the JSON result (default: {RESULTS_DIR})")
    return parser


def say(*parts: Any) -> None:
    """Progress output on stderr (stdout carries the tables)."""
    print(*parts, file=sys.stderr, flush=True)


def run_main(main: Callable[[Sequence[str] | None], int]) -> None:
    """``if __name__ == "__main__": run_main(main)``."""
    raise SystemExit(main(None))
