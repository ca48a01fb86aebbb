"""Multi-hop recall: the memories linked to a recall's first hits join its candidates.

Consolidation links memories that name the same rare entity or file, an error and its
fix, a decision and its reason (:mod:`dexai_memory.lifecycle.links`). A question often
needs both ends ("why did we pick Postgres?" finds the decision; the reason says little
the question does). :func:`linked_memories` reads the links of the :data:`LINK_SOURCES`
best-ranked hits that pass the relevance floor and brings in up to :data:`LINKS_PER_HIT`
linked memories per hit, each scored below its source (the source's score times
:data:`LINK_DISCOUNT`; its relevance at least the source's times the same), so a
linked memory never outranks the hit that brought it and is shown only when the
block's budget has room after the better-ranked ones. A linked memory already among
the hits keeps the better of its two scores (:func:`~.ranking.with_links`). Only current memories of the same
project and of the types the block shows come in.

Stdlib only, like :mod:`.ranking` (the command hook's fast path imports both); a store
that keeps no links (``capabilities.links`` false) adds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass
from typing import Any

from ..models import Memory

#: Best-ranked hits whose links are followed.
LINK_SOURCES = 5
#: Linked memories brought in per hit at most.
LINKS_PER_HIT = 3
#: A linked memory's score and relevance: at most its source's times this.
LINK_DISCOUNT = 0.9


@dataclass(frozen=True, slots=True)
class Hit:
    """A first hit of a recall: its memory, score and relevance."""

    memory: Memory
    score: float
    relevance: float


@dataclass(frozen=True, slots=True)
class Linked:
    """A memory brought in by a link, scored below the hit it is linked to (``via`` says which)."""

    memory: Memory
    score: float
    relevance: float
    via: str


def keeps_links(provider: object) -> bool:
    """Whether ``provider`` keeps links (``capabilities.links``)."""
    return bool(getattr(getattr(provider, "capabilities", None), "links", False))


async def linked_memories(provider: Any, user_id: str, hits: Sequence[Hit], *, project: str | None,
                          types: Container[Any], shows: Callable[[Memory], bool] = lambda m: True) -> list[Linked]:
    """The memories linked to ``hits`` (the first :data:`LINK_SOURCES` are followed, best first), at
    most :data:`LINKS_PER_HIT` per hit, each once with its best score (see the module docstring).
    ``types``: the memory types the block may show; ``shows``: any other test a memory must pass."""
    sources = list(hits)[:LINK_SOURCES]
    if not sources or not keeps_links(provider):
        return []
    links = await provider.links([h.memory.id for h in sources], user_id=user_id)
    hit_ids = {h.memory.id for h in sources}
    fetched: dict[str, Memory | None] = {}
    best: dict[str, Linked] = {}
    for source in sources:
        taken = 0
        for link in links:
            if source.memory.id not in (link.memory_a, link.memory_b):
                continue
            other = link.other(source.memory.id)
            if other in hit_ids:
                continue
            if other not in fetched:
                try:
                    fetched[other] = await provider.get(other, user_id=user_id)
                except LookupError:
                    fetched[other] = None
            memory = fetched[other]
            if memory is None or not memory.is_valid or memory.type not in types or not shows(memory) \
                    or (project is not None and memory.project != project):
                continue
            found = Linked(memory, source.score * LINK_DISCOUNT, source.relevance * LINK_DISCOUNT,
                           f"{link.kind} link from {source.memory.id}")
            if other not in best or best[other].score < found.score:
                best[other] = found
            taken += 1
            if taken >= LINKS_PER_HIT:
                break
    return sorted(best.values(), key=lambda x: (-x.score, x.memory.id))
