"""Local API benchmark (issue 16): what the panel waits for, per endpoint, over real HTTP.

A real uvicorn on 127.0.0.1 (:class:`dexai_memory.api.server.ApiServer`, as the
daemon serves it) over a native SQLite store with the configured embedder
(ONNX MiniLM: search and assembly embed the query), holding N synthetic
memories of one user (``benchmarks/synthetic.py``) added through the
provider. An httpx client with the bearer token times, per request:
``GET /api/facts`` (the panel's load: every current memory by category),
``GET /api/search``, ``POST /api/context/assemble`` (budget 2000, signals),
``PATCH /api/memories/{id}`` (an inline edit), a pin then unpin, ``GET
.../history`` and ``GET /api/conflicts``. Client and server share one event
loop, so the figures include the client's side (a browser adds its own).
Sizes: 150 (the lifecycle cap on durable facts) and 1,000. ``--quick``: 150
memories, 10 requests per endpoint.
"""

from __future__ import annotations

import asyncio
import dataclasses
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import arg_parser, format_table, latency_stats, run_main, say, write_result
from benchmarks.synthetic import memories, queries
from dexai_memory.api.server import ApiServer
from dexai_memory.config import load_settings
from dexai_memory.providers import make_provider

NAME = "panel"
USER = "bench-user"


async def measure(size: int, repeats: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="dexai-panel-bench-") as tmp:
        settings = load_settings(home=Path(tmp))
        settings.home.mkdir(parents=True, exist_ok=True)
        async with make_provider(settings) as provider:
            say(f"storing {size} memories (with vectors)...")
            stored = await provider.add_many(list(memories(size, user_id=USER)))
            ids = [m.id for m in stored]
            server = ApiServer(dataclasses.replace(settings), provider, USER)
            assert await server.start(0) and server.port is not None
            token = (settings.home / "api-token").read_text().strip()
            timings: dict[str, list[float]] = {}
            asks = queries(repeats)
            try:
                async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}",
                                             headers={"Authorization": f"Bearer {token}"}) as client:
                    async def timed(name: str, method: str, path: str, **kw: Any) -> None:
                        start = time.perf_counter()
                        response = await client.request(method, path, **kw)
                        timings.setdefault(name, []).append((time.perf_counter() - start) * 1000)
                        response.raise_for_status()

                    await timed("warm-up", "GET", "/api/facts")
                    timings.pop("warm-up")
                    for n in range(repeats):
                        target = ids[(n * 7919) % len(ids)]
                        await timed("facts", "GET", "/api/facts")
                        await timed("search", "GET", "/api/search", params={"q": asks[n], "limit": 50})
                        await timed("assemble", "POST", "/api/context/assemble",
                                    json={"budget": 2000, "signals": {"query": asks[n], "activity": "debugging"}})
                        await timed("edit", "PATCH", f"/api/memories/{target}", json={"importance": 1 + n % 10})
                        await timed("pin+unpin", "POST", f"/api/memories/{target}/pin")
                        await timed("pin+unpin", "POST", f"/api/memories/{target}/unpin")
                        await timed("history", "GET", f"/api/memories/{target}/history")
                        await timed("conflicts", "GET", "/api/conflicts")
            finally:
                await server.aclose()
    return {name: latency_stats(ms) for name, ms in timings.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser(NAME, __doc__ or NAME)
    args = parser.parse_args(argv)
    sizes = [150] if args.quick else [150, 1000]
    repeats = 10 if args.quick else 40
    results = {}
    for size in sizes:
        results[str(size)] = asyncio.run(measure(size, repeats))
    endpoints = list(next(iter(results.values())))
    rows = [[f"{e}", *(f"{results[str(s)][e]['p50_ms']} / {results[str(s)][e]['p95_ms']}" for s in sizes)]
            for e in endpoints]
    print(format_table(["endpoint", *(f"{s} memories p50 / p95 ms" for s in sizes)], rows,
                       title="Local API latency over HTTP on 127.0.0.1"))
    summary = {f"{e.replace('+', '_')}_p95_ms_{s}": results[str(s)][e]["p95_ms"] for s in sizes for e in endpoints}
    path = write_result(NAME, quick=args.quick, params={"sizes": sizes, "repeats": repeats, "user": USER},
                        summary=summary, results=results, out_dir=args.out)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    run_main(main)
