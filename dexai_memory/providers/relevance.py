"""Search a person reads: the provider's ranking, less what nothing relates to the query.

``dexai memory search``, ``GET /api/search`` and the panel's search box (which
calls the API) all answer through :func:`search`, so the three agree. The
provider's hybrid search always returns its ``limit`` best candidates, however
unrelated: vector search has a nearest neighbour for any string, so "xyzzy"
found ten memories. :func:`search` keeps the provider's order and drops a
result that neither retriever has evidence for:

* a **keyword hit**: BM25 matched a word of the query in it (``bm25_rank``);
* or a **close vector**: its cosine similarity to the query is at least the
  floor (``similarity >= min_similarity``).

A result the provider reports neither signal for (a backend that gives a score
only) is kept: there is nothing to judge it by.

The floor is ``search.min_similarity``, or by default the embedder's own
(:data:`RELATED_SIMILARITY`): cosine scales differ between models. Measured
by ``benchmarks/search_floor_bench.py`` on 1,000 memories: with MiniLM, the
best match of 20 nonsense queries ("xyzzy", "purple monkey dishwasher") scored
at most 0.37 and none had a keyword hit; 20 of 25 real queries share a word
with their target. What the floor cannot tell from nonsense is a paraphrase
sharing no word with its target whose similarity is as low as nonsense's
("what phobia do I have" -> "afraid of heights": 0.25): MiniLM itself ranks
most of those wrong. The static table (``static-minilm``) scores everything
higher (nonsense up to 0.56).

The auto-recall of the hooks ranks and cuts with its own thresholds
(:mod:`dexai_memory.recall`) and calls the provider directly.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Settings
    from ..models import SearchFilters, SearchResult
    from .base import MemoryProvider

__all__ = ["RELATED_SIMILARITY", "min_similarity", "relevant", "search"]

#: The cosine similarity from which a vector-only hit counts as related, per ``embedding.backend``
#: (measured: see the module docstring). BM25 only ("none"): no vector evidence exists.
RELATED_SIMILARITY: dict[str, float] = {
    "onnx-minilm": 0.42,
    "sentence-transformers": 0.42,  # the same MiniLM model, unquantised
    "static-minilm": 0.6,
    "none": 1.0,
}

#: Candidates asked of the provider per result wanted, so a result dropped by the floor leaves
#: room for one ranked below it.
_OVERFETCH = 2


def min_similarity(settings: Settings) -> float:
    """The floor in force: ``search.min_similarity``, else the embedder's :data:`RELATED_SIMILARITY`."""
    configured = settings.search.min_similarity
    if configured is not None:
        return configured
    return RELATED_SIMILARITY.get(settings.embedding.backend, RELATED_SIMILARITY["onnx-minilm"])


def relevant(results: Iterable[SearchResult], floor: float) -> list[SearchResult]:
    """Those of ``results`` with a keyword hit or a similarity of at least ``floor``, in order
    (``floor`` 0 keeps every one)."""
    return [r for r in results
            if floor <= 0 or r.bm25_rank is not None or (r.similarity is None or r.similarity >= floor)]


async def search(provider: MemoryProvider, query: str, *, user_id: str, filters: SearchFilters | None = None,
                 limit: int = 10, floor: float) -> list[SearchResult]:
    """The best ``limit`` memories of ``user_id`` for ``query`` that something relates to it, best
    first (the provider's order); empty when nothing does. ``floor``: :func:`min_similarity`."""
    query = query.strip()
    if not query or limit <= 0:
        return []
    found = await provider.search(query, user_id=user_id, filters=filters,
                                  limit=limit if floor <= 0 else min(limit * _OVERFETCH, 2000))
    return relevant(found, floor)[:limit]
