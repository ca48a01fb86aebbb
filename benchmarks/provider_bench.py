"""Provider benchmark (issue 6): add and search latency at 1k memories, per provider.

For each provider (native SQLite, Mem0 local, Zep through the fake v4 server)
one user gets ``n`` synthetic memories, each stored with one ``add()`` call
(the embedding is included: native and Mem0 embed in-process, the fake Zep
server embeds server-side with the same model), then ``q`` auto-recall style
queries run through ``search(limit=10)``. Reported: add p50/p95 (ms), adds/s,
search p50/p95 (ms), and the failover wrapper's overhead on Mem0.

The Zep figures measure our provider + the real ``zep-cloud`` SDK + HTTP on
127.0.0.1 + the fake server's brute-force search; they are NOT Zep Cloud
latencies (add a network round trip and Zep's own processing for those).

``--quick``: 200 memories, 20 queries.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import synthetic
from benchmarks.common import arg_parser, format_table, latency_stats, run_main, say, write_result
from dexai_memory.embeddings import Embedder, OnnxMiniLMEmbedder
from dexai_memory.providers.base import MemoryProvider

Factory = Callable[[Path, Embedder], MemoryProvider]


def native_factory(tmp: Path, embedder: Embedder) -> MemoryProvider:
    from dexai_memory.providers.native import NativeProvider

    return NativeProvider(tmp / "native.db", embedder=embedder)


def mem0_factory(tmp: Path, embedder: Embedder) -> MemoryProvider:
    from dexai_memory.providers.mem0 import Mem0Provider

    return Mem0Provider(tmp / "mem0", embedder=embedder)


def zep_factory(tmp: Path, embedder: Embedder) -> MemoryProvider:
    from dexai_memory.providers.zep import ZepProvider
    from testing.fakezep import FakeZepServer

    server = FakeZepServer(embed=embedder.embed_batch).start()
    provider = ZepProvider(api_key="bench", base_url=server.base_url, max_retries=0)
    provider.on_close(server.stop)
    return provider


def failover_mem0_factory(tmp: Path, embedder: Embedder) -> MemoryProvider:
    from dexai_memory.providers.fallback import FailoverProvider

    return FailoverProvider(mem0_factory(tmp, embedder), native_factory(tmp, embedder), log_path=tmp / "replay.db")


FACTORIES: dict[str, Factory] = {
    "native": native_factory,
    "mem0": mem0_factory,
    "zep (fake server)": zep_factory,
    "mem0 + failover": failover_mem0_factory,
}


async def bench_provider(factory: Factory, embedder: Embedder, n: int, queries: Sequence[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="dexai-provider-bench-") as tmp:
        provider = factory(Path(tmp), embedder)
        async with provider:
            await provider.search("warm up", user_id="bench-user")
            add_ms = []
            start = time.perf_counter()
            for memory in synthetic.memories(n):
                t = time.perf_counter()
                await provider.add(memory)
                add_ms.append((time.perf_counter() - t) * 1000)
            total_s = time.perf_counter() - start
            search_ms, hits = [], 0
            for query in queries:
                t = time.perf_counter()
                results = await provider.search(query, user_id="bench-user", limit=10)
                search_ms.append((time.perf_counter() - t) * 1000)
                hits += bool(results)
        return {"add": latency_stats(add_ms), "adds_per_s": round(n / total_s, 1),
                "search": latency_stats(search_ms), "queries_with_hits": hits}


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser("provider_bench", __doc__ or "")
    parser.add_argument("--providers", nargs="*", default=None, help=f"subset of: {', '.join(FACTORIES)}")
    args = parser.parse_args(argv)
    n, q = (200, 20) if args.quick else (1000, 100)
    embedder = OnnxMiniLMEmbedder()
    queries = synthetic.queries(q)
    names = args.providers or list(FACTORIES)
    results: dict[str, Any] = {}
    for name in names:
        say(f"{name}: {n} adds, {q} searches ...")
        try:
            results[name] = asyncio.run(bench_provider(FACTORIES[name], embedder, n, queries))
        except ImportError as exc:  # an optional extra is not installed: report it, bench the others
            say(f"  skipped: {exc}")
            results[name] = {"skipped": str(exc)}
    rows = [(name, r["add"]["p50_ms"], r["add"]["p95_ms"], r["adds_per_s"], r["search"]["p50_ms"],
             r["search"]["p95_ms"]) for name, r in results.items() if "skipped" not in r]
    print(format_table(["provider", "add p50 ms", "add p95 ms", "adds/s", "search p50 ms", "search p95 ms"], rows,
                       title=f"Providers at {n} memories, {q} queries (limit 10), one user"))
    summary: dict[str, Any] = {}
    for name, r in results.items():
        key = name.split(" ")[0] if name != "mem0 + failover" else "mem0_failover"
        summary[f"{key}_add_p50_ms"] = None if "skipped" in r else r["add"]["p50_ms"]
        summary[f"{key}_search_p50_ms"] = None if "skipped" in r else r["search"]["p50_ms"]
        summary[f"{key}_search_p95_ms"] = None if "skipped" in r else r["search"]["p95_ms"]
    path = write_result("providers", quick=args.quick, params={"memories": n, "queries": q, "limit": 10,
                                                               "embedder": embedder.model_id},
                        summary=summary, results=results, out_dir=args.out)
    say(f"wrote {path}")
    return 0


if __name__ == "__main__":
    run_main(main)
