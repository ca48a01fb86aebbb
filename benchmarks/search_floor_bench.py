"""Search that can say nothing: the relevance floor of ``dexai memory search`` on a 1k store.

The store is 975 synthetic memories (:mod:`benchmarks.synthetic`) and 25
hand-written ones (:data:`PLANTED`), each the target of one hand-written
query (:data:`REAL`): some share a word with their target, some are
paraphrases sharing none ("can I have dairy" for "lactose intolerant"), and
several compete with synthetic memories on a common word ("marathon",
"favourite", "learn"). :data:`NONSENSE` is 20 queries nothing in the store is
about (made-up words, placeholders, a nonsense phrase of real words).

Measured, through :func:`dexai_memory.providers.relevance.search` (the function
behind the CLI, the API and the panel) with the floor in force:

* nonsense queries that return nothing (target: 20 / 20);
* real queries whose target is the first result (target: >= 90 %), and
  whose target is kept at all;
* the signals behind the floor: the best similarity of each nonsense query,
  whether any of its results had a keyword hit, and each target's
  similarity and keyword hit;
* the same counts for a sweep of floors, so the default's margin shows.

``--embedder static`` measures the static table (``static-minilm``) instead of
MiniLM. ``--quick``: the same store and queries (they are small already). The
figures and what they mean: ``benchmarks/README.md``, search_floor_bench.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import synthetic
from benchmarks.common import arg_parser, format_table, run_main, say, write_result
from dexai_memory.embeddings import Embedder, OnnxMiniLMEmbedder, StaticMiniLMEmbedder
from dexai_memory.models import Memory, MemoryType, SearchResult
from dexai_memory.providers import relevance
from dexai_memory.providers.native.provider import NativeProvider

NAME = "search_floor_bench"
USER = "bench-user"
STORE_SIZE = 1000
LIMIT = 10
SWEEP = (0.0, 0.3, 0.35, 0.38, 0.4, 0.42, 0.45, 0.5, 0.55, 0.6, 0.65)

#: (memory, the query written for it). Queries marked in comments share no word with their target.
PLANTED: list[tuple[str, str]] = [
    ("Robin's passport expires on 14 March 2027.", "when does my passport expire"),
    ("The staging database password rotates every 90 days.", "how often is the staging password rotated"),
    ("Robin is lactose intolerant and drinks soy milk.", "can I have dairy"),  # no shared word
    ("Our landlord Mr. Pemberton wants the rent by the 3rd of each month.", "when is the rent due"),
    ("The office wifi network is called Bluebird-5G.", "what is the wifi name"),
    ("Robin's car is a green 2014 Volvo V70.", "what car do I drive"),
    ("The CI pipeline fails when the Node version is below 18.", "why does the build break"),  # no shared word
    ("Robin plays the cello in a community orchestra on Thursdays.", "what instrument do I play"),
    ("The quarterly tax payment is due on 15 January.", "quarterly tax deadline"),
    ("Robin is afraid of heights and avoids ladders.", "what phobia do I have"),  # no shared word
    ("The team's standup is at 9:15 every weekday on Zoom.", "what time is standup"),
    ("Robin's blood type is O negative.", "blood type"),
    ("The garage door code is 4471.", "garage code"),
    ("Robin wants to run the Berlin marathon in 2026.", "which marathon am I training for"),
    ("Robin's daughter Ella starts kindergarten in September.", "when does Ella start school"),
    ("The API rate limit is 600 requests per minute per key.", "how many requests per minute can we make"),
    ("Robin hates cilantro; it tastes like soap to them.", "herbs I dislike"),  # no shared word
    ("Our wedding anniversary is on 22 June.", "anniversary date"),
    ("Robin keeps the spare house key under the blue flower pot.", "where is the spare key"),
    ("The production server runs Ubuntu 22.04 on Hetzner.", "which operating system does prod use"),  # no shared word
    ("Robin's favourite author is Ursula K. Le Guin.", "who is my favourite writer"),
    ("Robin takes vitamin D every morning in winter.", "supplements I take"),  # "take": a stemmed match
    ("The insurance policy number is HX-29-3381.", "insurance policy number"),
    ("Robin learned to sail in Croatia in 2019.", "where did I learn sailing"),
    ("The kitchen renovation budget is 12,000 euros.", "how much can we spend on the kitchen"),
]
REAL = [q for _, q in PLANTED]
NONSENSE = [
    "xyzzy", "qwertyuiop", "flibbertigibbet", "zorp glorp blarg", "lorem ipsum dolor sit amet",
    "asdf jkl semicolon", "plugh", "frobnicate the quux", "gribble snarf", "wibble wobble",
    "kwyjibo", "blorptastic", "ffffff", "zzz zzz", "hjkl", "snozzberry", "grault garply waldo",
    "foo bar baz", "crumpet ziggurat oscillation", "purple monkey dishwasher",
]


def store_memories() -> list[Memory]:
    """The 1k store: synthetic memories, the planted targets spread among them."""
    filler = list(synthetic.memories(STORE_SIZE - len(PLANTED), user_id=USER))
    out: list[Memory] = []
    step = len(filler) // len(PLANTED)
    for i, (content, _) in enumerate(PLANTED):
        out.extend(filler[i * step:(i + 1) * step])
        out.append(Memory(content=content, user_id=USER, type=MemoryType.FACT, importance=5))
    out.extend(filler[len(PLANTED) * step:])
    return out


def _signals(results: Sequence[SearchResult]) -> dict[str, Any]:
    sims = [r.similarity for r in results if r.similarity is not None]
    return {"best_similarity": round(max(sims), 3) if sims else None,
            "keyword_hits": sum(r.bm25_rank is not None for r in results)}


async def measure(embedder: Embedder, floor: float) -> dict[str, Any]:
    """Build the store in a temporary file and run every query (raw and through the floor)."""
    with tempfile.TemporaryDirectory() as tmp:
        async with NativeProvider(Path(tmp) / "memory.db", embedder=embedder) as provider:
            memories = store_memories()
            await provider.add_many(memories, batch=500)
            target_ids = {q: m.id for m, (_, q) in zip([m for m in memories if m.content in dict(PLANTED)],
                                                           PLANTED, strict=True)}
            nonsense, real = [], []
            for q in NONSENSE:
                raw = await provider.search(q, user_id=USER, limit=LIMIT * 2)
                kept = await relevance.search(provider, q, user_id=USER, limit=LIMIT, floor=floor)
                nonsense.append({"query": q, "returned": len(kept), **_signals(raw),
                                 "raw": [(r.bm25_rank is not None, r.similarity) for r in raw]})
            for q in REAL:
                raw = await provider.search(q, user_id=USER, limit=LIMIT * 2)
                kept = await relevance.search(provider, q, user_id=USER, limit=LIMIT, floor=floor)
                target = next((r for r in raw if r.memory.id == target_ids[q]), None)
                real.append({
                    "query": q, "returned": len(kept),
                    "target_rank": next((i for i, r in enumerate(kept, 1) if r.memory.id == target_ids[q]), None),
                    "target_similarity": round(target.similarity, 3) if target and target.similarity else None,
                    "target_keyword_hit": bool(target and target.bm25_rank is not None),
                    "raw": [(r.bm25_rank is not None, r.similarity, r.memory.id == target_ids[q]) for r in raw],
                })
    return {"nonsense": nonsense, "real": real}


def sweep(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Nonsense silenced and targets first / kept at each floor of :data:`SWEEP` (from the raw results)."""
    rows = []
    for floor in SWEEP:
        def passes(keyword: bool, sim: float | None, floor: float = floor) -> bool:
            return floor <= 0 or keyword or sim is None or sim >= floor
        silent = sum(not any(passes(k, s) for k, s in row["raw"]) for row in data["nonsense"])
        first = kept = 0
        for row in data["real"]:
            survivors = [t for k, s, t in row["raw"] if passes(k, s)]
            first += bool(survivors) and survivors[0]
            kept += any(survivors[:LIMIT])
        rows.append({"floor": floor, "nonsense_silent": silent, "real_first": first, "real_kept": kept})
    return rows


def main(argv: Sequence[str] | None) -> int:
    parser = arg_parser(NAME, __doc__.splitlines()[0])
    parser.add_argument("--embedder", choices=("minilm", "static"), default="minilm")
    args = parser.parse_args(argv)
    backend = "onnx-minilm" if args.embedder == "minilm" else "static-minilm"
    embedder: Embedder = OnnxMiniLMEmbedder() if args.embedder == "minilm" else StaticMiniLMEmbedder()
    floor = relevance.RELATED_SIMILARITY[backend]
    say(f"{NAME}: {STORE_SIZE} memories, {len(NONSENSE)} nonsense and {len(REAL)} real queries, {backend}")
    data = asyncio.run(measure(embedder, floor))
    return _report(args, backend, floor, data)


def _report(args: Any, backend: str, floor: float, data: dict[str, Any]) -> int:
    nonsense, real = data["nonsense"], data["real"]
    silent = sum(r["returned"] == 0 for r in nonsense)
    first = sum(r["target_rank"] == 1 for r in real)
    kept = sum(r["target_rank"] is not None for r in real)
    print(format_table(["nonsense query", "returned", "best similarity", "keyword hits"],
                       [(r["query"], r["returned"], r["best_similarity"], r["keyword_hits"]) for r in nonsense],
                       title=f"Nonsense ({backend}, floor {floor})"))
    print()
    print(format_table(["real query", "returned", "target rank", "target similarity", "keyword hit"],
                       [(r["query"], r["returned"], r["target_rank"], r["target_similarity"],
                         r["target_keyword_hit"]) for r in real], title="Real queries"))
    summary = {
        "embedder": backend, "floor": floor,
        "nonsense_silent": silent, "nonsense_total": len(nonsense),
        "real_target_first_pct": round(100 * first / len(real), 1),
        "real_target_kept_pct": round(100 * kept / len(real), 1),
        "nonsense_best_similarity_max": max(r["best_similarity"] or 0 for r in nonsense),
        "real_target_similarity_min_without_keyword": min(
            (r["target_similarity"] for r in real if not r["target_keyword_hit"] and r["target_similarity"]),
            default=None),
    }
    floors = sweep(data)
    print()
    print(format_table(["floor", "nonsense silent", "real first", "real kept"],
                       [(r["floor"], r["nonsense_silent"], r["real_first"], r["real_kept"]) for r in floors],
                       title=f"Floors (of {len(nonsense)} nonsense, {len(real)} real)"))
    print()
    print(format_table(list(summary), [list(summary.values())], title="Summary"))
    path = write_result(NAME, quick=args.quick, out_dir=args.out, summary=summary,
                        params={"store_size": STORE_SIZE, "limit": LIMIT, "embedder": backend, "floor": floor},
                        results={**data, "sweep": floors})
    print(f"\nnonsense returning nothing: {silent} / {len(nonsense)} (target all: "
          f"{'met' if silent == len(nonsense) else 'NOT met'}); real queries with their target first: "
          f"{first} / {len(real)} (target 90 %: {'met' if first >= 0.9 * len(real) else 'NOT met'})")
    say(f"wrote {path}")
    return 0


if __name__ == "__main__":
    run_main(main)
