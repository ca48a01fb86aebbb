"""Predictive context: what memory expects to be needed for a file opened, an error met or a
branch switched to, before anyone asks (``POST /api/context/predict``).

The same rules as the file-aware prefetch the PostToolUse hook shows
(:mod:`dexai_memory.recall.prefetch`: search proposes, named needles decide), answered as
data instead of a block: each predicted memory with the item it is about, its match
score (2 per strong needle named, 1 per weak one) and a confidence ``match / (match + 1)``
(one strong needle: 0.67, a path and a module: 0.8); the prediction's confidence is its
best memory's (0 when nothing is predicted). Memories and episodes (by their summary form)
are both predicted; each memory once, under the first item that finds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .prefetch import PrefetchItem, branch_item, candidates, error_item, file_item, line_of

if TYPE_CHECKING:
    from .source import RecallSource

__all__ = ["Prediction", "predict", "prediction_items"]


def prediction_items(*, files: Sequence[str] = (), errors: Sequence[str] = (), branch: str | None = None,
                     cwd: str | None = None) -> list[PrefetchItem]:
    """The items to predict for: each file (relative to ``cwd`` when inside it), each error, the branch."""
    found = [file_item(f, cwd) for f in files] + [error_item(e) for e in errors] + \
        ([branch_item(branch)] if branch else [])
    return [i for i in found if i is not None]


@dataclass
class Prediction:
    """The predicted memories (best first per item), their items and the overall confidence."""

    items: list[str] = field(default_factory=list)
    memories: list[dict[str, Any]] = field(default_factory=list)

    @property
    def confidence(self) -> float:
        return max((float(m["confidence"]) for m in self.memories), default=0.0)

    def to_json(self) -> dict[str, Any]:
        return {"predicted_memories": self.memories, "confidence": round(self.confidence, 2), "items": self.items}


async def predict(source: RecallSource, user_id: str, items: Sequence[PrefetchItem], *, project: str | None = None,
                  local: str | None = None, limit: int = 10) -> Prediction:
    """At most ``limit`` memories predicted for ``items`` (see the module); ``project`` filters the
    search, ``local`` leaves out other projects' memories as the prefetch does."""
    out = Prediction(items=[i.key for i in items])
    seen: set[str] = set()
    for item in items:
        for match, score, memory in await candidates(source, item, user_id=user_id, project=project, local=local):
            if memory.id in seen or len(out.memories) >= limit:
                continue
            seen.add(memory.id)
            out.memories.append({"id": memory.id, "type": memory.type.value, "content": memory.content,
                                 "line": line_of(memory), "item": item.key, "match": match,
                                 "search_score": round(score, 4), "confidence": round(match / (match + 1), 2)})
    return out
