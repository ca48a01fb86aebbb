"""Ingest benchmark: enqueue latency and conversation ingest throughput on LoCoMo.

* **enqueue** - :meth:`ExtractionQueue.enqueue` (the daemon's in-process
  path: one indexed INSERT in WAL mode, synchronous=NORMAL) for every LoCoMo
  turn, and :func:`enqueue_turn` (a hook process's stdlib path: open the file,
  insert, close) for a sample of them; p50 / p99 in milliseconds.
* **ingest** - :meth:`Pipeline.ingest` of every conversation (each its own
  user) with the offline extractor and classifier into a fresh native store:
  gate, extraction, supersession, storage and the L3 archive of every raw
  turn; turns per second without an embedder (``embedding.backend: none``)
  and with MiniLM, vectors deferred, followed by ``fill_vectors`` (timed
  apart: the embedder is most of the cost).
* **cli** - the real ``dexai memory ingest FILE.jsonl --json`` (a subprocess,
  default configuration) on one 6,000-turn file, then
  ``dexai memory reembed --missing``; wall seconds.

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
    from dexai_memory.capture.queue import ExtractionQueue, enqueue_turn

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
    """Pipeline.ingest of each conversation (its own user). With the embedder, vectors are deferred
    (``vectors="later"``, what ``dexai memory ingest`` does for big files) and then filled with
    ``fill_vectors``, timed apart, so the two costs are visible."""
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
    out: dict[str, Any] = {}
    async with NativeProvider(home / "memory.db", embedder=embedder, search=settings.search) as provider:
        pipeline = Pipeline(provider, settings)
        start = time.perf_counter()
        for conv in convs:
            turns = conversation_turns(conv)[:limit]
            t0 = time.perf_counter()
            report = await pipeline.ingest(turns, user_id=conv.sample_id, vectors="later" if embed else "now")
            secs = time.perf_counter() - t0
            total.merge(report)
            per_conv.append({"conversation": conv.sample_id, "turns": len(turns), "seconds": round(secs, 2),
                             "turns_per_s": round(len(turns) / secs, 1), **report.to_dict()})
            say(f"  {conv.sample_id}: {len(turns)} turns in {secs:.1f}s ({'vectors deferred' if embed else 'no vectors'})")
        seconds = time.perf_counter() - start
        if embed:
            pending = await provider.pending_vectors()
            t0 = time.perf_counter()
            filled = await provider.fill_vectors()
            fill_s = time.perf_counter() - t0
            say(f"  filled {filled} vectors in {fill_s:.1f}s ({filled / fill_s:.0f} texts/s)")
            out["fill"] = {"texts": filled, "pending_before": pending, "seconds": round(fill_s, 2),
                           "texts_per_s": round(filled / fill_s, 1),
                           "turns_per_s_including_vectors": round(total.turns / (seconds + fill_s), 1)}
    out.update({"turns": total.turns, "seconds": round(seconds, 2), "turns_per_s": round(total.turns / seconds, 1),
                "report": total.to_dict(), "conversations": per_conv})
    return out


def bench_cli(convs: Sequence[Any], tmp: Path, n_turns: int) -> dict[str, Any]:
    """The real ``dexai memory ingest FILE.jsonl --json`` on one file of ``n_turns`` turns (a subprocess,
    default configuration: offline extractor, MiniLM, ``--vectors auto``), then ``reembed --missing``.

    The file is the LoCoMo dev conversations one after another, then again from the start under new
    turn ids (and new sessions) until it has ``n_turns`` turns: LoCoMo dev has only 4,124 turns.
    """
    import dataclasses
    import json
    import os
    import subprocess
    import sys

    from benchmarks.locomo import to_jsonl

    # LoCoMo turn ids ("D1:3") repeat across conversations: prefix the sample id
    base = [dataclasses.replace(t, id=f"{c.sample_id}:{t.id}") for c in convs
            for t in conversation_turns(c, user_id="bench")]
    turns = []
    lap = 0
    while len(turns) < n_turns:
        for t in base[:n_turns - len(turns)]:
            turns.append(t if lap == 0 else dataclasses.replace(t, id=f"r{lap}:{t.id}",
                                                                 session_id=f"r{lap}:{t.session_id}"))
        lap += 1
    path = to_jsonl(turns, tmp / "conversation.jsonl")
    home = tmp / "cli-home"
    env = {**os.environ, "DEXAI_MEMORY_HOME": str(home)}
    env.pop("ANTHROPIC_API_KEY", None)
    exe = [sys.executable, "-m", "dexai_memory.cli.main"]
    t0 = time.perf_counter()
    done = subprocess.run([*exe, "memory", "ingest", str(path), "--user", "bench", "--session", "s", "--json"],
                          env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"dexai memory ingest failed: {done.stderr or done.stdout}")
    ingest_s = time.perf_counter() - t0
    report = json.loads(done.stdout)
    say(f"  dexai memory ingest: {len(turns)} turns in {ingest_s:.1f}s (wall, process start included); "
        f"{report['vectors_pending']} vectors pending")
    t0 = time.perf_counter()
    filled = subprocess.run([*exe, "memory", "reembed", "--missing", "--json"], env=env, capture_output=True,
                            text=True, check=True)
    fill_s = time.perf_counter() - t0
    n_filled = json.loads(filled.stdout)["reembedded"]
    say(f"  dexai memory reembed --missing: {n_filled} vectors in {fill_s:.1f}s")
    return {"turns": len(turns), "wall_seconds": round(ingest_s, 2), "turns_per_s": round(len(turns) / ingest_s, 1),
            "report": report, "reembed_missing": {"texts": n_filled, "wall_seconds": round(fill_s, 2)},
            "wall_seconds_including_vectors": round(ingest_s + fill_s, 2)}


def main(argv: Sequence[str] | None) -> int:
    parser = arg_parser("ingest_bench", __doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--locomo", type=Path, default=LOCOMO_PATH)
    parser.add_argument("--no-vectors-only", action="store_true", help="skip the runs with the embedder")
    parser.add_argument("--cli-turns", type=int, default=None,
                        help="turns in the file given to 'dexai memory ingest' (default 6000; 600 with --quick)")
    args = parser.parse_args(argv)
    all_convs = load_conversations(args.locomo)
    convs = all_convs[:2] if args.quick else all_convs
    limit = 150 if args.quick else None
    cli_turns = args.cli_turns or (600 if args.quick else 6000)
    turns = [t for c in convs for t in conversation_turns(c)[:limit]]
    say(f"{len(convs)} conversations, {len(turns)} turns")
    with tempfile.TemporaryDirectory(prefix="dexai-ingest-") as tmp_name:
        tmp = Path(tmp_name)
        enqueue = bench_enqueue(turns, tmp, stdlib_sample=100 if args.quick else 500)
        runs = {"no_vectors": asyncio.run(bench_ingest(convs, tmp, embed=False, limit=limit))}
        cli: dict[str, Any] | None = None
        if not args.no_vectors_only:
            runs["minilm_vectors"] = asyncio.run(bench_ingest(convs, tmp, embed=True, limit=limit))
            cli = bench_cli(all_convs, tmp, cli_turns)
    rows: list[tuple[Any, ...]] = [
        ("enqueue (daemon, in-process)", enqueue["in_process"]["p50_ms"], enqueue["in_process"]["p99_ms"], None, None),
        ("enqueue (hook, stdlib, new conn.)", enqueue["stdlib_new_connection"]["p50_ms"],
         enqueue["stdlib_new_connection"]["p99_ms"], None, None),
        (f"Pipeline.ingest, no embedder ({runs['no_vectors']['turns']} turns)", None, None,
         runs["no_vectors"]["seconds"], runs["no_vectors"]["turns_per_s"]),
    ]
    if "minilm_vectors" in runs:
        r = runs["minilm_vectors"]
        rows += [(f"Pipeline.ingest, MiniLM, vectors deferred ({r['turns']} turns)", None, None, r["seconds"],
                  r["turns_per_s"]),
                 (f"  then fill_vectors ({r['fill']['texts']} texts, {r['fill']['texts_per_s']} texts/s)", None, None,
                  r["fill"]["seconds"], r["fill"]["turns_per_s_including_vectors"])]
    if cli is not None:
        rows += [(f"dexai memory ingest, one {cli['turns']}-turn file (wall)", None, None, cli["wall_seconds"],
                  cli["turns_per_s"]),
                 (f"  then dexai memory reembed --missing ({cli['reembed_missing']['texts']} texts)", None, None,
                  cli["reembed_missing"]["wall_seconds"], None)]
    print(format_table(("measure", "p50 ms", "p99 ms", "seconds", "turns/s"), rows,
                       title=f"Ingest benchmark ({len(turns)} LoCoMo turns, offline extractor)"))
    summary: dict[str, Any] = {
        "enqueue_p50_ms": enqueue["in_process"]["p50_ms"], "enqueue_p99_ms": enqueue["in_process"]["p99_ms"],
        "hook_enqueue_p50_ms": enqueue["stdlib_new_connection"]["p50_ms"],
        "hook_enqueue_p99_ms": enqueue["stdlib_new_connection"]["p99_ms"],
        "ingest_turns_per_s_no_vectors": runs["no_vectors"]["turns_per_s"],
        "ingest_turns_per_s_vectors_deferred": runs["minilm_vectors"]["turns_per_s"] if "minilm_vectors" in runs
        else None,
        "embed_texts_per_s": runs["minilm_vectors"]["fill"]["texts_per_s"] if "minilm_vectors" in runs else None,
        "turns": len(turns),
    }
    if cli is not None:
        summary.update({"cli_turns": cli["turns"], "cli_ingest_seconds": cli["wall_seconds"],
                        "cli_vectors_pending": cli["report"]["vectors_pending"],
                        "cli_reembed_missing_seconds": cli["reembed_missing"]["wall_seconds"]})
    path = write_result(NAME, quick=args.quick, params={"locomo": str(args.locomo), "turns": len(turns),
                                                          "conversations": len(convs), "extractor": "offline",
                                                          "cli_turns": cli_turns},
                        summary=summary, results={"enqueue": enqueue, "ingest": runs, "cli": cli}, out_dir=args.out)
    say(f"wrote {path}")
    return 0


if __name__ == "__main__":
    run_main(main)
