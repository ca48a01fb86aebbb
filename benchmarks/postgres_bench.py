"""Postgres provider benchmark (issue 17): search and add at 10k and 100k memories, and 50 clients.

For each size, each store (``postgres``: PostgreSQL 16 + pgvector HNSW, started
here from the ``pgserver`` wheel on 127.0.0.1, the same machine; ``native``:
SQLite FTS5 + sqlite-vec, beside it in the same run) is loaded with ``n``
synthetic memories of one user (:mod:`benchmarks.synthetic`) through
``add_many`` (batches of 500), then measured:

* ``load``: rows/s of that initial load. For postgres the HNSW index is dropped
  during the load and built afterwards (``CREATE INDEX``, timed as
  ``index_build_s``): pgvector's advice for bulk loads, and an HNSW insert costs
  ~4 ms here, so keeping the index during a 100k load would take most of the run;
* ``bulk_add``: 2,000 more memories through ``add_many`` into the loaded store,
  every index maintained (postgres: HNSW insert per row): adds/s;
* ``search``: ``q`` auto-recall style queries, ``search(limit=10)``, hybrid
  (full text + vectors, fused): p50 / p95 ms;
* ``add``: ``a`` single ``add()`` calls into the loaded store: p50 / p95 ms, adds/s;
* ``concurrent``: 50 clients at once (asyncio tasks; postgres gives each its
  own pooled connection, native shares its one connection as the daemon
  does), each doing 10 operations, 9 searches to 1 add: throughput (ops/s)
  and search p50 / p95 ms under that load.

Vectors: **random unit vectors** (384-d, seeded by the text), not the MiniLM
embedder: embedding 100k texts would take most of the run on 2 cores and
measure the embedder, not the stores; both stores get the same vectors. So
the figures are the stores' costs; add ~5 ms per add and per query for
MiniLM embedding in real use.

``--million`` adds a 1M size (slow here: hours of loading on 2 shared cores;
not run by default). ``--quick``: 1k memories, 20 queries, 20 + 200 adds, 50 clients x 2 ops.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import synthetic
from benchmarks.common import arg_parser, format_table, latency_stats, run_main, say, write_result
from dexai_memory.embeddings import Embedder
from dexai_memory.models import Memory
from dexai_memory.providers.base import MemoryProvider

USER = "bench-user"
CLIENTS = 50


class RandomUnitEmbedder(Embedder):
    """A 384-d random unit vector per text, seeded by the text (same text, same vector). Not semantic."""

    dim = 384
    model_id = "random-unit-384"

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            out[i] = v / np.linalg.norm(v)
        return out


HNSW_INDEX = "CREATE INDEX ix_memories_embedding ON memories USING hnsw (embedding vector_cosine_ops)"


async def load(provider: MemoryProvider, n: int) -> dict[str, Any]:
    """The initial load (postgres: HNSW dropped during it, then built and timed)."""
    from dexai_memory.providers.postgres import PostgresProvider

    pg = provider if isinstance(provider, PostgresProvider) else None
    if pg is not None:
        async with pg.database.connection() as conn:
            await conn.execute("DROP INDEX ix_memories_embedding")
    start = time.perf_counter()
    await provider.add_many(synthetic.memories(n, user_id=USER), batch=500)  # type: ignore[call-arg]
    seconds = time.perf_counter() - start
    out: dict[str, Any] = {"memories": n, "seconds": round(seconds, 1), "rows_per_s": round(n / seconds, 1)}
    if pg is not None:
        t = time.perf_counter()
        async with pg.database.connection() as conn:
            await conn.execute("SET maintenance_work_mem = '1GB'")
            await conn.execute(HNSW_INDEX)
            await conn.execute("ANALYZE memories")
        out["index_build_s"] = round(time.perf_counter() - t, 1)
    return out


async def bulk_add(provider: MemoryProvider, n: int) -> dict[str, Any]:
    """``n`` more memories through ``add_many`` into the loaded store, every index maintained."""
    batch = [m.replace(id=f"m_bulk_{m.id}") for m in synthetic.memories(n, seed=5, user_id=USER)]
    start = time.perf_counter()
    await provider.add_many(batch, batch=500)  # type: ignore[call-arg]
    return {"memories": n, "adds_per_s": round(n / (time.perf_counter() - start), 1)}


async def searches(provider: MemoryProvider, queries: Sequence[str]) -> dict[str, Any]:
    ms = []
    for query in queries:
        t = time.perf_counter()
        await provider.search(query, user_id=USER, limit=10)
        ms.append((time.perf_counter() - t) * 1000)
    return latency_stats(ms)


async def single_adds(provider: MemoryProvider, a: int) -> dict[str, Any]:
    ms = []
    start = time.perf_counter()
    for memory in synthetic.memories(a, seed=99, user_id=USER):
        t = time.perf_counter()
        await provider.add(memory.replace(id=f"m_single_{memory.id}"))
        ms.append((time.perf_counter() - t) * 1000)
    return {**latency_stats(ms), "adds_per_s": round(a / (time.perf_counter() - start), 1)}


async def concurrent(provider: MemoryProvider, queries: Sequence[str], ops: int) -> dict[str, Any]:
    search_ms: list[float] = []
    add_ms: list[float] = []

    async def client(c: int) -> None:
        rng = random.Random(c)
        for k in range(ops):
            t = time.perf_counter()
            if k % 10 == 9:
                await provider.add(Memory(f"client {c} noted item {k} during the load test", user_id=USER))
                add_ms.append((time.perf_counter() - t) * 1000)
            else:
                await provider.search(rng.choice(queries), user_id=USER, limit=10)
                search_ms.append((time.perf_counter() - t) * 1000)

    start = time.perf_counter()
    await asyncio.gather(*(client(c) for c in range(CLIENTS)))
    seconds = time.perf_counter() - start
    return {"clients": CLIENTS, "ops": CLIENTS * ops, "ops_per_s": round(CLIENTS * ops / seconds, 1),
            "search": latency_stats(search_ms), "add": latency_stats(add_ms) if add_ms else None}


async def bench_store(name: str, provider: MemoryProvider, n: int, queries: Sequence[str], a: int,
                      ops: int, bulk: int) -> dict[str, Any]:
    async with provider:
        say(f"  {name}: loading {n} ...")
        loaded = await load(provider, n)
        say(f"  {name}: loaded {loaded}; searching ...")
        await provider.search("warm up", user_id=USER)
        out = {"load": loaded, "search": await searches(provider, queries), "add": await single_adds(provider, a),
               "bulk_add": await bulk_add(provider, bulk)}
        say(f"  {name}: {CLIENTS} clients ...")
        out["concurrent"] = await concurrent(provider, queries, ops)
        return out


async def run(sizes: Sequence[int], q: int, a: int, ops: int, bulk: int) -> dict[str, Any]:
    from dexai_memory.providers.native import NativeProvider
    from dexai_memory.providers.postgres import PostgresProvider
    from testing.postgres import LocalPostgres

    embedder = RandomUnitEmbedder()
    queries = synthetic.queries(q)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="dexai-pg-bench-") as tmp, LocalPostgres(Path(tmp) / "pg") as server:
        dsn = server.create_database("bench")
        for n in sizes:
            say(f"{n} memories:")
            pg = PostgresProvider(dsn, embedder=embedder, schema=f"bench_{n}", pool_size=CLIENTS,
                                  statement_timeout_seconds=0)
            native = NativeProvider(Path(tmp) / f"native-{n}.db", embedder=embedder)
            results[str(n)] = {"postgres": await bench_store("postgres", pg, n, queries, a, ops, bulk),
                               "native": await bench_store("native", native, n, queries, a, ops, bulk)}
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser("postgres_bench", __doc__ or "")
    parser.add_argument("--million", action="store_true", help="also 1M memories (hours here)")
    parser.add_argument("--sizes", type=int, nargs="*", default=None, help="memory counts (default 10000 100000)")
    args = parser.parse_args(argv)
    if args.quick:
        sizes, q, a, ops, bulk = [1000], 20, 20, 2, 200
    else:
        sizes, q, a, ops, bulk = args.sizes or [10_000, 100_000], 200, 200, 10, 2000
        if args.million:
            sizes = [*sizes, 1_000_000]
    results = asyncio.run(run(sizes, q, a, ops, bulk))
    rows = []
    summary: dict[str, Any] = {}
    for n, stores in results.items():
        for store, r in stores.items():
            c = r["concurrent"]
            rows.append((f"{int(n):,}", store, r["load"]["rows_per_s"], r["load"].get("index_build_s", "-"),
                         r["bulk_add"]["adds_per_s"], r["add"]["p50_ms"], r["add"]["p95_ms"],
                         r["search"]["p50_ms"], r["search"]["p95_ms"], c["ops_per_s"], c["search"]["p50_ms"],
                         c["search"]["p95_ms"]))
            key = f"{store}_{int(n) // 1000}k"
            summary.update({f"{key}_search_p50_ms": r["search"]["p50_ms"], f"{key}_search_p95_ms": r["search"]["p95_ms"],
                            f"{key}_bulk_adds_per_s": r["bulk_add"]["adds_per_s"],
                            f"{key}_add_p50_ms": r["add"]["p50_ms"], f"{key}_add_p95_ms": r["add"]["p95_ms"],
                            f"{key}_concurrent_ops_per_s": c["ops_per_s"],
                            f"{key}_concurrent_search_p95_ms": c["search"]["p95_ms"]})
    print(format_table(["memories", "store", "load rows/s", "HNSW build s", "bulk adds/s", "add p50", "add p95", "search p50", "search p95",
                        f"{CLIENTS} clients ops/s", "loaded search p50", "loaded search p95"], rows,
                       title="Postgres (pgvector HNSW) beside native (SQLite), one user, random unit vectors, ms"))
    path = write_result("postgres_bench", quick=args.quick,
                        params={"sizes": sizes, "queries": q, "single_adds": a, "clients": CLIENTS,
                                "ops_per_client": ops, "bulk_adds": bulk, "limit": 10, "vectors": RandomUnitEmbedder.model_id},
                        summary=summary, results=results, out_dir=args.out)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    run_main(main)
