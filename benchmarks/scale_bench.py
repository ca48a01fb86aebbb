"""Cost that grows gently (issue 15, part 4): recall latency, ingest rate, database size and
daemon memory from 1k to 1M memories, for one user and for many users of 10k each.

Each size runs in a fresh subprocess (so its memory figure is its own):

* the database: ``benchmarks/standin.py`` (synthetic memories, stand-in vectors
  with MiniLM's id and spread; built once and cached in the benchmarks' cache directory);
  its build rate through ``NativeProvider.add_many`` is the bulk **ingest rate**
  (stand-in vectors: the embedder's own cost is ``vectors_bench``'s subject), and
  the rate of adding 500 more memories to the full store one ``add`` at a time
  (the daemon's warm path) is measured too;
* **recall latency**: ``auto_recall`` (what UserPromptSubmit injects, through
  the same code as the hooks: hybrid search, ranking, block) for 100 cold-start
  prompts of the user (of random users among the first 10 for the multi-user
  store), with the real MiniLM query embedding, after the ANN graph (above
  ``search.ann_threshold``) is built; the graph's build time is reported, and
  whether it was restored from the copy an earlier run saved (kept beside the
  cached store, ``<store>.db.ann``); the **first recall** of the user (reading
  their vectors) and, for many users, of every other user (all of them are
  loaded before the memory figure);
* above ``search.bm25_prune_threshold``: BM25 alone with and without the
  store's common words (latency, share of the exact top hits kept);
* **ANN recall@10** against exact KNN on the same vectors and queries, where the
  graph is used (and on the real MiniLM vectors of the 10k search_bench store,
  with the threshold forced to 0, so the graph's quality is measured on real data);
* **database size** (file + WAL) and **daemon memory** (resident set of the
  process holding the provider, the embedder and the loaded vectors);
* **peer**: BM25 over the same texts with ``bm25s`` (the LoCoMo baseline's
  library), query latency in the same run.

Targets (issue 15): recall p95 <= 15 ms at 10k, <= 40 ms at 100k; near flat
above. ``--quick``: 1k and 10k, one user. Default: 1k, 10k, 100k, and 10 users
x 10k. ``--full``: adds 1M for one user and 100 users x 10k (the builds take
tens of minutes and ~2 GB of disk each on 2 cores).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import synthetic
from benchmarks.common import REPO_ROOT, arg_parser, format_table, latency_stats, say, write_result

NAME = "scale"
TARGETS_MS = {10_000: 15.0, 100_000: 40.0}
QUERIES = 100


def rss_mb() -> float:
    """This process's resident set (MB), from /proc (Linux) or getrusage's peak elsewhere."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def db_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())


def recall_at_10(index: Any, user: str, vectors: Sequence[Any]) -> float | None:
    """Mean overlap of the ANN top 10 with the exact top 10 (None when the user has no graph)."""
    users = index._users.get(user)
    if users is None or users.ann is None:
        return None
    hits = []
    for v in vectors:
        ann = {r for r, _ in users.ann_knn(v, 10)[:10]}
        exact = {r for r, _ in users.knn(v, 10)}
        hits.append(len(ann & exact) / max(1, len(exact)))
    return round(sum(hits) / len(hits), 4)


async def measure(n: int, users: int, ann_threshold: int | None, db: Path | None) -> dict[str, Any]:
    """One size, in this process (run by :func:`main` in a subprocess per size)."""
    import dataclasses

    from benchmarks.standin import StandInEmbedder, standin_db
    from dexai_memory.config import load_settings
    from dexai_memory.embeddings import OnnxMiniLMEmbedder
    from dexai_memory.models import Memory
    from dexai_memory.providers.native import NativeProvider
    from dexai_memory.recall.ranking import auto_recall

    base_rss = rss_mb()
    build: dict[str, Any] = {"cached": True}
    if db is None:
        db, build = await standin_db(n, users=users)
    tmp = Path(tempfile.mkdtemp(prefix="dexai-scale-"))
    try:
        home = tmp / "home"
        home.mkdir()
        shutil.copy2(db, home / "memory.db")
        graphs = db.with_name(db.name + ".ann")  # HNSW graphs saved by an earlier run of this store
        if graphs.is_dir():
            shutil.copytree(graphs, home / "memory.db.ann")
        settings = load_settings(home=home)
        if ann_threshold is not None:
            settings = dataclasses.replace(settings, search=dataclasses.replace(settings.search,
                                                                                ann_threshold=ann_threshold))
        names = ["bench-user"] if users == 1 else [f"user-{u:03d}" for u in range(users)]
        prompts = synthetic.queries(QUERIES, seed=11)
        rng = random.Random(3)
        embedder = OnnxMiniLMEmbedder()
        out: dict[str, Any] = {"n_per_user": n, "users": users, "memories": n * users, "build": build,
                               "db_bytes": db_bytes(home / "memory.db")}
        async with NativeProvider(home / "memory.db", embedder=embedder, search=settings.search) as provider:
            index = provider.vectors.index
            assert index is not None
            t0 = time.perf_counter()
            await auto_recall(provider, names[0], prompts[0], [], settings)  # loads the user's vectors
            out["first_recall_ms"] = round((time.perf_counter() - t0) * 1000, 1)
            t0 = time.perf_counter()
            ann_ready = index.uses_ann(names[0]) or index.wait_for_ann(names[0])
            out["ann"] = {"used": ann_ready, "build_seconds": round(time.perf_counter() - t0, 1) if ann_ready else None,
                          "restored_from_disk": ann_ready and index._users[names[0]].ann_restored}
            if ann_ready and not graphs.is_dir() and (home / "memory.db.ann").is_dir():
                shutil.copytree(home / "memory.db.ann", graphs)  # the next run restores it
            for q in prompts[:5]:
                await auto_recall(provider, names[0], q, [], settings)
            lat, cpu, firsts = [], [], []
            for q in prompts:
                user = names[0] if users == 1 else rng.choice(names[: min(len(names), 10)])
                if users > 1 and not index.loaded(user):
                    t0 = time.perf_counter()
                    await auto_recall(provider, user, q, [], settings)  # first query of a user loads it
                    firsts.append((time.perf_counter() - t0) * 1000)
                    index.uses_ann(user) or index.wait_for_ann(user)
                c0, t0 = time.process_time(), time.perf_counter()
                await auto_recall(provider, user, q, [], settings)
                lat.append((time.perf_counter() - t0) * 1000)
                cpu.append((time.process_time() - c0) * 1000)
            out["recall"] = {**latency_stats(lat), "cpu_p50_ms": latency_stats(cpu)["p50_ms"],
                             "cpu_p95_ms": latency_stats(cpu)["p95_ms"]}
            if users > 1:  # every other user's first recall (loading their vectors): all loaded at the end
                for i, user in enumerate(names):
                    if not index.loaded(user):
                        t0 = time.perf_counter()
                        await auto_recall(provider, user, prompts[i % len(prompts)], [], settings)
                        firsts.append((time.perf_counter() - t0) * 1000)
                out["first_recall_other_users"] = latency_stats(firsts)
                out["users_loaded"] = sum(index.loaded(u) for u in names)
            qv = embedder.embed_batch(prompts[:50])
            stand = StandInEmbedder()
            out["ann"]["recall_at_10_vs_exact_query_vectors"] = recall_at_10(index, names[0], qv)
            out["ann"]["recall_at_10_vs_exact_standin_queries"] = recall_at_10(
                index, names[0], stand.embed_batch(prompts[:50]))
            out["rss_mb"] = rss_mb()
            out["rss_mb_over_start"] = round(out["rss_mb"] - base_rss, 1)
            # the warm path at this size: 500 memories added one at a time (stand-in vectors)
            provider.embedder = stand
            fresh = [dataclasses.replace(m, id=f"new-{i}-{m.id}") for i, m in
                     enumerate(synthetic.memories(500, seed=99, user_id=names[0]))]
            t0 = time.perf_counter()
            for m in fresh:
                await provider.add(Memory(content=m.content, user_id=m.user_id, type=m.type))
            out["add_one_at_a_time_per_s"] = round(len(fresh) / (time.perf_counter() - t0), 1)
        if n * users > settings.search.bm25_prune_threshold > 0:
            out["bm25_pruning"] = await pruning_effect(home / "memory.db", names[0], prompts, settings.search)
        out["peer_bm25s"] = bm25s_peer(home / "memory.db", names[0], prompts)
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


async def pruning_effect(db: Path, user: str, prompts: Sequence[str], search: Any) -> dict[str, Any]:
    """BM25 alone (the top ``search.candidates``, what enters the fusion) with the store's common words
    left out (``search.bm25_prune_threshold``) and without: latency of each, and how many of the
    exact hits the pruned query keeps (mean share, top 10 and all)."""
    import dataclasses

    from dexai_memory.providers.native import NativeProvider

    runs: dict[str, Any] = {}
    for name, threshold in (("exact", 0), ("pruned", search.bm25_prune_threshold)):
        cfg = dataclasses.replace(search, fusion="bm25", bm25_prune_threshold=threshold)
        async with NativeProvider(db, search=cfg) as provider:
            lat, hits = [], []
            for q in prompts:
                t0 = time.perf_counter()
                found = await provider.search(q, user_id=user, limit=search.candidates)
                lat.append((time.perf_counter() - t0) * 1000)
                hits.append([r.memory.id for r in found])
            runs[name] = (latency_stats(lat), hits)
    shares = [(len(set(p) & set(e)) / len(e), len(set(p[:10]) & set(e[:10])) / len(e[:10]))
              for p, e in zip(runs["pruned"][1], runs["exact"][1], strict=True) if e]
    return {"exact": runs["exact"][0], "pruned": runs["pruned"][0],
            "kept_of_exact_top": round(sum(a for a, _ in shares) / len(shares), 3),
            "kept_of_exact_top10": round(sum(b for _, b in shares) / len(shares), 3)}


def bm25s_peer(db: Path, user: str, prompts: Sequence[str]) -> dict[str, Any]:
    """BM25 over the user's texts with bm25s (English stop words): query p50/p95 (ms), top 40."""
    try:
        import bm25s
    except ImportError:
        return {"skipped": "bm25s is not installed (pip install dexai-memory[bench])"}
    import sqlean

    conn = sqlean.connect(str(db))
    try:
        texts = [r[0] for r in conn.execute("SELECT content FROM memories WHERE user_id = ?", (user,))]
    finally:
        conn.close()
    retriever = bm25s.BM25()
    t0 = time.perf_counter()
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    index_s = time.perf_counter() - t0
    lat = []
    for q in prompts:
        t0 = time.perf_counter()
        tokens = bm25s.tokenize([q], stopwords="en", show_progress=False)
        if tokens.vocab:
            retriever.retrieve(tokens, k=min(40, len(texts)), show_progress=False, n_threads=0)
        lat.append((time.perf_counter() - t0) * 1000)
    return {**latency_stats(lat), "index_seconds": round(index_s, 2), "docs": len(texts)}


def run_size(n: int, users: int, ann_threshold: int | None = None, db: Path | None = None) -> dict[str, Any]:
    argv = [sys.executable, "-m", "benchmarks.scale_bench", "--one", str(n), "--users", str(users)]
    if ann_threshold is not None:
        argv += ["--ann-threshold", str(ann_threshold)]
    if db is not None:
        argv += ["--db", str(db)]
    say(f"{users} user(s) x {n:,} memories" + (f" (ann_threshold {ann_threshold})" if ann_threshold is not None
                                                else ""))
    done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    if done.returncode:
        raise RuntimeError(f"size {users}x{n} failed: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser("scale_bench", __doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--full", action="store_true", help="add 1M memories (one user) and 100 users x 10k")
    parser.add_argument("--one", type=int, default=None, help=argparse_hidden())
    parser.add_argument("--users", type=int, default=1, help=argparse_hidden())
    parser.add_argument("--ann-threshold", type=int, default=None, help=argparse_hidden())
    parser.add_argument("--db", type=Path, default=None, help=argparse_hidden())
    args = parser.parse_args(argv)
    if args.one is not None:  # one size, in this subprocess: print its JSON
        print(json.dumps(asyncio.run(measure(args.one, args.users, args.ann_threshold, args.db))))
        return 0
    plan: list[tuple[int, int]] = [(1_000, 1), (10_000, 1)]
    if not args.quick:
        plan += [(100_000, 1), (10_000, 10)]
    if args.full:
        plan += [(1_000_000, 1), (10_000, 100)]
    runs = {f"{u}x{n}": run_size(n, u) for n, u in plan}
    from benchmarks.standin import SEED_DB

    if SEED_DB.exists():  # the graph's quality on real MiniLM vectors: ANN forced at 10k
        runs["ann_on_real_minilm_10k"] = run_size(10_000, 1, ann_threshold=1, db=SEED_DB)
    rows = []
    for key, r in runs.items():
        target = TARGETS_MS.get(r["memories"]) if r["users"] == 1 and key != "ann_on_real_minilm_10k" else None
        peer = r["peer_bm25s"]
        rows.append([key, r["memories"], r["recall"]["p50_ms"], r["recall"]["p95_ms"], target,
                     r["recall"]["cpu_p95_ms"], r["ann"]["used"], r["ann"]["recall_at_10_vs_exact_query_vectors"],
                     r["build"].get("per_s"), r["add_one_at_a_time_per_s"], round(r["db_bytes"] / 2**20, 1),
                     r["rss_mb"], peer.get("p95_ms")])
    print(format_table(["store", "memories", "recall p50 ms", "recall p95 ms", "target p95", "cpu p95 ms", "ANN",
                        "ANN recall@10", "bulk ingest/s", "add/s", "DB MB", "daemon RSS MB", "bm25s p95 ms"], rows,
                       title="Scale: auto_recall (query embedding included), ingest, size, memory"))
    summary: dict[str, Any] = {}
    for key, r in runs.items():
        k = key.replace("x", "_x_")
        summary[f"recall_p95_ms_{k}"] = r["recall"]["p95_ms"]
        summary[f"db_mb_{k}"] = round(r["db_bytes"] / 2**20, 1)
        summary[f"rss_mb_{k}"] = r["rss_mb"]
        summary[f"ann_recall_at_10_{k}"] = r["ann"]["recall_at_10_vs_exact_query_vectors"]
        summary[f"bm25s_p95_ms_{k}"] = r["peer_bm25s"].get("p95_ms")
    path = write_result(NAME, quick=args.quick, params={"plan": plan, "queries": QUERIES}, summary=summary,
                        results=runs, out_dir=args.out)
    print(f"wrote {path}")
    return 0


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    raise SystemExit(main())
