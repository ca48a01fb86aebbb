"""Tiered context assembly benchmark (issue 18): latency, budget use, levels, file hits.

A native SQLite store with the configured embedder (ONNX MiniLM) holds N
synthetic memories of one user (``benchmarks/synthetic.py``) plus one
decision per 10 memories about a source file ("In src/billing/invoice_3.py
we ..."). Each request focuses on one of those files, with a synthetic
prompt as the query, a recent error every other request and activity
alternating debugging / coding. Per budget (500, 2,000, 8,000 tokens) it
reports, in the same run:

* ``assemble_context`` latency p50 / p95, forms built on the fly (before
  consolidation) and stored (after :func:`dexai_memory.consolidation.store_forms`);
* the baseline: the L1 block (:func:`dexai_memory.recall.reinjection.l1_block`,
  what ``POST /api/context/assemble`` answered before tiered assembly) for the
  same query and budget: latency, tokens, memories shown;
* budget use (token_count / budget), memories shown, the share shown at each
  level, and the *file hit rate*: how often the decision about the focused
  file is in tier 1.

``--quick``: 150 memories, 8 requests per budget. Full: 150 and 1,000, 30.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import arg_parser, format_table, latency_stats, run_main, say, write_result
from benchmarks.synthetic import memories, queries
from dexai_memory.config import load_settings
from dexai_memory.consolidation import store_forms
from dexai_memory.models import Memory, MemoryType
from dexai_memory.providers import make_provider
from dexai_memory.recall.assembly import assemble_context
from dexai_memory.recall.reinjection import l1_block

NAME = "assembly"
USER = "bench-user"
BUDGETS = (500, 2000, 8000)
MODULES = ("billing", "auth", "orders", "search", "reports", "payments", "users", "ingest")
CHOICES = ("retries go through the shared backoff helper", "amounts are stored in integer cents",
           "timestamps are normalised to UTC before comparison", "the cache is invalidated on every write",
           "errors are returned as typed results, never raised across the boundary")
ERRORS = ("TimeoutError: pool exhausted", "KeyError: 'currency'", "TypeError: NoneType has no attribute id")


def file_decisions(n: int) -> list[Memory]:
    rng = random.Random(5)
    out = []
    for i in range(n):
        path = f"src/{MODULES[i % len(MODULES)]}/{MODULES[(i * 3) % len(MODULES)]}_{i}.py"
        out.append(Memory(content=f"In {path} {rng.choice(CHOICES)}, decided after an incident in review {i}.",
                          user_id=USER, type=MemoryType.FACT, importance=7, metadata={"category": "decision",
                                                                                      "file": path}))
    return out


async def run_budget(provider: Any, settings: Any, budget: int, files: Sequence[Memory], asks: Sequence[str]
                     ) -> dict[str, Any]:
    ms: list[float] = []
    base_ms: list[float] = []
    fills, shown, base_tokens, base_shown, hits = [], [], [], [], 0
    levels: Counter[str] = Counter()
    for n, ask in enumerate(asks):
        target = files[(n * 7) % len(files)]
        signals: dict[str, Any] = {"query": ask, "current_file": target.metadata["file"],
                                   "activity": "debugging" if n % 2 else "coding"}
        if n % 2:
            signals["recent_errors"] = [ERRORS[n % len(ERRORS)]]
        start = time.perf_counter()
        result = await assemble_context(provider, USER, settings, budget=budget, signals=signals)
        ms.append((time.perf_counter() - start) * 1000)
        fills.append(result.token_count / budget)
        shown.append(len(result.placements))
        levels.update(p.level for p in result.placements)
        hits += any(p.memory_id == target.id and p.tier == "tier1" for p in result.placements)
        start = time.perf_counter()
        block = await l1_block(provider, USER, settings, query=" ".join(str(v) for v in signals.values()),
                               max_tokens=budget)
        base_ms.append((time.perf_counter() - start) * 1000)
        base_tokens.append(block.tokens)
        base_shown.append(len(block.items))
    total = sum(levels.values()) or 1
    return {"latency": latency_stats(ms), "baseline_latency": latency_stats(base_ms),
            "fill": round(sum(fills) / len(fills), 3), "shown": round(sum(shown) / len(shown), 1),
            "levels": {k: round(levels[k] / total, 3) for k in ("full", "summary", "compressed", "index")},
            "file_hit_rate": round(hits / len(asks), 3),
            "baseline_fill": round(sum(base_tokens) / len(base_tokens) / budget, 3),
            "baseline_shown": round(sum(base_shown) / len(base_shown), 1)}


async def measure(size: int, repeats: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="dexai-assembly-bench-") as tmp:
        settings = load_settings(home=Path(tmp))
        settings.home.mkdir(parents=True, exist_ok=True)
        async with make_provider(settings) as provider:
            files = file_decisions(max(4, size // 10))
            say(f"storing {size} memories + {len(files)} file decisions (with vectors)...")
            await provider.add_many([*memories(size, user_id=USER), *files])
            embedder = getattr(provider, "embedder", None)
            if embedder is not None:
                await embedder.aembed("warm up")
            asks = queries(repeats)
            out: dict[str, Any] = {}
            for phase in ("on_the_fly", "stored"):
                if phase == "stored":
                    start = time.perf_counter()
                    built = await store_forms(provider, USER)
                    out["store_forms"] = {"memories": built, "ms": round((time.perf_counter() - start) * 1000, 1)}
                await assemble_context(provider, USER, settings, budget=2000, signals={"query": "warm up"})
                out[phase] = {str(b): await run_budget(provider, settings, b, files, asks) for b in BUDGETS}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser(NAME, __doc__ or NAME)
    args = parser.parse_args(argv)
    sizes = [150] if args.quick else [150, 1000]
    repeats = 8 if args.quick else 30
    results = {str(s): asyncio.run(measure(s, repeats)) for s in sizes}
    rows = []
    for s in sizes:
        r = results[str(s)]
        for b in BUDGETS:
            fly, st = r["on_the_fly"][str(b)], r["stored"][str(b)]
            rows.append([s, b, f"{fly['latency']['p50_ms']} / {fly['latency']['p95_ms']}",
                         f"{st['latency']['p50_ms']} / {st['latency']['p95_ms']}",
                         f"{st['baseline_latency']['p50_ms']} / {st['baseline_latency']['p95_ms']}",
                         f"{st['fill']:.2f} ({st['baseline_fill']:.2f})", f"{st['shown']} ({st['baseline_shown']})",
                         " ".join(f"{k[0]}{v:.2f}" for k, v in st["levels"].items()), st["file_hit_rate"]])
    print(format_table(["memories", "budget", "assemble ms p50/p95 (forms on the fly)", "(forms stored)",
                        "baseline L1 block ms", "budget use (baseline)", "shown (baseline)",
                        "levels f/s/c/i", "file hit"], rows, title="Tiered context assembly"))
    summary: dict[str, Any] = {}
    for s in sizes:
        for b in BUDGETS:
            st = results[str(s)]["stored"][str(b)]
            summary[f"assemble_p95_ms_{s}_{b}"] = st["latency"]["p95_ms"]
            summary[f"baseline_p95_ms_{s}_{b}"] = st["baseline_latency"]["p95_ms"]
            summary[f"fill_{s}_{b}"] = st["fill"]
            summary[f"file_hit_rate_{s}_{b}"] = st["file_hit_rate"]
    path = write_result(NAME, quick=args.quick, params={"sizes": sizes, "repeats": repeats, "budgets": BUDGETS},
                        summary=summary, results=results, out_dir=args.out)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    run_main(main)
