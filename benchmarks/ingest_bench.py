"""Ingest benchmark: enqueue latency and conversation ingest throughput on LoCoMo.

* **enqueue** - :meth:`ExtractionQueue.enqueue` (the daemon's in-process
  path: one indexed INSERT in WAL mode, synchronous=NORMAL) for every LoCoMo
  turn, and :func:`enqueue_turn` (a hook process's stdlib path: open the file,
  insert, close) for a sample of them; p50 / p99 in milliseconds.
* **ingest** - :meth:`Pipeline.ingest` of every conversation (each its own
  user) with the offline extractor and classifier into a fresh native store:
  gate, extraction, supersession, storage and the L3 archive of every raw
  turn; turns per second, with the offline MiniLM embedder (the default
  configuration) and without vectors (``embedding.backend: none``).

``python -m benchmarks.ingest_bench [--quick]`` prints a table and writes
``benchmarks/results/ingest.json``.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import (
    LOCOMO_PATH,
    arg_parser,
    format_table,
    latency_stats,
    run_main,
    say,
    write_result,
)
from benchmarks.locomo import conversation_turns, load_conversations

NAME = "ingest"


def bench_enqueue(turns: Sequence[Any], tmp: Path, stdlib_sample: int) -> dict[str, Any]:
    from dexai_memory.queue import ExtractionQueue, enqueue_turn

    q = ExtractionQueue(tmp / "queue.db", max_queue_size=len(turns) + 1).open()
    times = []
    for t in turns:
        start = time.perf_counter()
        q.enqueue(t)
        times.append((time.perf_counter() - start) * 1000)
    q.close()
    hook_times = []
    for t in turns[:stdlib_sample]:
        data = t.to_dict()
        data["user_id"] = "hook"
        start = time.perf_counter()
        enqueue_turn(tmp / "queue.db", data)
        hook_times.append((time.perf_counter() - start) * 1000)
    return {"in_process": latency_stats(times), "stdlib_new_connection": latency_stats(hook_times)}


async def bench_ingest(convs: Sequence[Any], tmp: Path, *, embed: bool, limit: int | None) -> dict[str, Any]:
    from dexai_memory.config import load_settings
    from dexai_memory.embeddings import OnnxMiniLMEmbedder
    from dexai_memory.pipeline import Pipeline, PipelineReport
    from dexai_memory.providers.native import NativeProvider

    home = tmp / ("emb" if embed else "bm25")
    home.mkdir()
    config = home / "bench.yaml"
    config.write_text("extraction:\n  extractor: offline\n", encoding="utf-8")
    settings = load_settings(config, home=home)
    embedder = OnnxMiniLMEmbedder() if embed else None
    if embedder is not None:
        embedder.embed("warm up")  # model load is not ingest time
    total = PipelineReport()
    per_conv = []
    async with NativeProvider(home / "memory.db", embedder=embedder, search=settings.search) as provider:
        pipeline = Pipeline(provider, settings)
        start = time.perf_counter()
        for conv in convs:
            turns = conversation_turns(conv)[:limit]
            t0 = time.perf_counter()
            report = await pipeline.ingest(turns, user_id=conv.sample_id)
            secs = time.perf_counter() - t0
            total.merge(report)
            per_conv.append({"conversation": conv.sample_id, "turns": len(turns), "seconds": round(secs, 2),
                             "turns_per_s": round(len(turns) / secs, 1), **report.to_dict()})
            say(f"  {conv.sample_id}: {len(turns)} turns in {secs:.1f}s ({'vectors' if embed else 'no vectors'})")
        seconds = time.perf_counter() - start
    return {"turns": total.turns, "seconds": round(seconds, 2), "turns_per_s": round(total.turns / seconds, 1),
            "report": total.to_dict(), "conversations": per_conv}


def main(argv: Sequence[str] | None) -> int:
    parser = arg_parser("ingest_bench", __doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--locomo", type=Path, default=LOCOMO_PATH)
    parser.add_argument("--no-vectors-only", action="store_true", help="skip the run with the embedder")
    args = parser.parse_args(argv)
    convs = load_conversations(args.locomo)
    limit = 150 if args.quick else None
    if args.quick:
        convs = convs[:2]
    turns = [t for c in convs for t in conversation_turns(c)[:limit]]
    say(f"{len(convs)} conversations, {len(turns)} turns")
    with tempfile.TemporaryDirectory(prefix="dexai-ingest-") as tmp_name:
        tmp = Path(tmp_name)
        enqueue = bench_enqueue(turns, tmp, stdlib_sample=100 if args.quick else 500)
        runs = {"no_vectors": asyncio.run(bench_ingest(convs, tmp, embed=False, limit=limit))}
        if not args.no_vectors_only:
            runs["minilm_vectors"] = asyncio.run(bench_ingest(convs, tmp, embed=True, limit=limit))
    rows = [
        ("enqueue (daemon, in-process)", enqueue["in_process"]["p50_ms"], enqueue["in_process"]["p99_ms"], None),
        ("enqueue (hook, stdlib, new conn.)", enqueue["stdlib_new_connection"]["p50_ms"],
         enqueue["stdlib_new_connection"]["p99_ms"], None),
    ]
    for name, r in runs.items():
        rows.append((f"ingest, {name.replace('_', ' ')} ({r['turns']} turns, {r['seconds']} s)", None, None,
                     r["turns_per_s"]))
    print(format_table(("measure", "p50 ms", "p99 ms", "turns/s"), rows,
                       title=f"Ingest benchmark ({len(turns)} LoCoMo turns, offline extractor)"))
    summary: dict[str, Any] = {
        "enqueue_p50_ms": enqueue["in_process"]["p50_ms"], "enqueue_p99_ms": enqueue["in_process"]["p99_ms"],
        "hook_enqueue_p50_ms": enqueue["stdlib_new_connection"]["p50_ms"],
        "hook_enqueue_p99_ms": enqueue["stdlib_new_connection"]["p99_ms"],
        "ingest_turns_per_s_no_vectors": runs["no_vectors"]["turns_per_s"],
        "ingest_turns_per_s": runs["minilm_vectors"]["turns_per_s"] if "minilm_vectors" in runs else None,
        "turns": len(turns),
    }
    for name, r in runs.items():
        summary[f"seconds_for_6000_turns_{name}"] = round(6000 / r["turns_per_s"], 1)
    path = write_result(NAME, quick=args.quick, params={"locomo": str(args.locomo), "turns": len(turns),
                                                          "conversations": len(convs), "extractor": "offline"},
                        summary=summary, results={"enqueue": enqueue, "ingest": runs}, out_dir=args.out)
    say(f"wrote {path}")
    return 0


if __name__ == "__main__":
    run_main(main)
