"""Search that can say nothing, at the size the target names: 20 nonsense queries over a 1k store
return nothing, and a real query still finds its memory first. The store and the queries of
``benchmarks/search_floor_bench.py`` (975 synthetic memories, 25 planted ones), the real MiniLM
embedder, a real SQLite file, through :func:`dexai_memory.providers.relevance.search` (the function
behind ``dexai memory search``, ``/api/search`` and the panel's box) with the default floor."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.search_floor_bench import NONSENSE, PLANTED, USER, store_memories
from dexai_memory.config import load_settings
from dexai_memory.embeddings import Embedder
from dexai_memory.providers import relevance
from dexai_memory.providers.native import NativeProvider


@pytest.mark.slow
async def test_twenty_nonsense_queries_over_a_1k_store_return_nothing(tmp_path: Path, embedder: Embedder) -> None:
    floor = relevance.min_similarity(load_settings())
    async with NativeProvider(tmp_path / "memory.db", embedder=embedder) as provider:
        memories = store_memories()
        assert len(memories) == 1000 and len(NONSENSE) == 20
        await provider.add_many(memories, batch=500)
        said = {q: await relevance.search(provider, q, user_id=USER, floor=floor) for q in NONSENSE}
        assert {q: [r.memory.content for r in found] for q, found in said.items() if found} == {}
        wifi = dict((q, m) for m, q in PLANTED)["what is the wifi name"]
        found = await relevance.search(provider, "what is the wifi name", user_id=USER, floor=floor)
        assert found and found[0].memory.content == wifi
