"""Contradictions you can review: list them, and resolve them by hand.

Supersession records a contradiction on every SUPERSEDE it applies (the
provider's ``contradiction_log``, see
:mod:`dexai_memory.supersession.contradictions`): resolved
``b_wins`` on its own when the newer statement is confident enough, else left
open with both memories current. ``dexai memory conflicts`` lists them,
``dexai memory resolve ID RESOLUTION [--note]`` decides (:func:`resolve`):

* ``a_wins``: the older memory a is current again, b is superseded by it;
* ``b_wins``: b replaces a (a superseded by b);
* ``both_valid``: both are current (a brought back if b had replaced it);
* ``merged``: a new memory with the ``--note`` text (required) supersedes both.

Every change is logged in the memories' history, nothing is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import InvalidMemory, ProviderError
from ..models import RESOLUTIONS, Contradiction, Memory, MemoryEvent, Tier, utcnow
from ..supersession.chain import link

if TYPE_CHECKING:
    from ..providers.base import MemoryProvider
    from ..providers.contradictions import ContradictionLog


def log_of(provider: MemoryProvider) -> ContradictionLog:
    """The provider's contradiction log; :class:`ProviderError` when the backend keeps none."""
    if provider.contradiction_log is None:
        raise ProviderError(f"the {provider.name} provider does not keep contradictions (the native one does)")
    return provider.contradiction_log


@dataclass(frozen=True, slots=True)
class Conflict:
    """A contradiction with its two memories (None when one was erased since)."""

    contradiction: Contradiction
    a: Memory | None
    b: Memory | None
    merged: Memory | None = None

    def to_dict(self) -> dict[str, Any]:
        def brief(m: Memory | None) -> dict[str, Any] | None:
            return None if m is None else {"id": m.id, "content": m.content, "current": m.is_valid,
                                           "confidence": m.confidence, "created": m.created_at.isoformat()}

        return {**self.contradiction.to_dict(), "a": brief(self.a), "b": brief(self.b),
                **({"merged": brief(self.merged)} if self.merged else {})}


async def _memory(provider: MemoryProvider, memory_id: str, user_id: str) -> Memory | None:
    from ..errors import MemoryNotFound

    try:
        return await provider.get(memory_id, user_id=user_id)
    except MemoryNotFound:
        return None


async def conflicts(provider: MemoryProvider, user_id: str, *, include_resolved: bool = False,
                    limit: int = 100) -> list[Conflict]:
    """Contradictions of ``user_id`` with their memories, newest first (open ones only by default)."""
    out = []
    for c in await log_of(provider).list(user_id=user_id, open_only=not include_resolved, limit=limit):
        out.append(Conflict(c, await _memory(provider, c.memory_a, user_id), await _memory(provider, c.memory_b,
                                                                                            user_id)))
    return out


async def _current_again(provider: MemoryProvider, m: Memory, reason: str, now: datetime) -> None:
    if m.is_valid:
        return
    await provider.update(m.id, user_id=m.user_id, superseded_by=None, superseded_at=None, valid_until=None,
                          archived=False, tier=Tier.L2 if m.tier is Tier.L3 else m.tier)
    await provider.record_event(MemoryEvent(m.id, "REINSTATED", reason, now), user_id=m.user_id)


async def _replace(provider: MemoryProvider, old: Memory, new_id: str, reason: str, now: datetime) -> None:
    if old.superseded_by == new_id:
        return
    await link(provider, old.id, new_id, user_id=old.user_id, reason=reason, at=now)


async def resolve(provider: MemoryProvider, contradiction_id: int, resolution: str, *, user_id: str,
                  note: str | None = None, now: datetime | None = None) -> Conflict:
    """Resolve contradiction ``contradiction_id`` (see the module docstring); returns it with its memories.

    Raises :class:`InvalidMemory` for an unknown resolution, or ``merged``
    without a note (the merged statement), or when a memory was erased.
    """
    resolution = resolution.strip().lower()
    if resolution not in RESOLUTIONS:
        raise InvalidMemory(f"unknown resolution {resolution!r} (expected one of: {', '.join(RESOLUTIONS)})")
    if resolution == "merged" and not (note or "").strip():
        raise InvalidMemory("merged needs --note with the merged statement")
    now = now or utcnow()
    log = log_of(provider)
    c = await log.get(contradiction_id, user_id=user_id)
    a, b = await _memory(provider, c.memory_a, user_id), await _memory(provider, c.memory_b, user_id)
    if a is None or b is None:
        raise InvalidMemory(f"contradiction {contradiction_id}: one of its memories was erased; nothing to resolve")
    why = f"contradiction {contradiction_id} resolved {resolution} by hand" + (f": {note}" if note else "")
    merged = None
    if resolution == "a_wins":
        await _current_again(provider, a, why, now)
        await _current_again(provider, b, why, now)
        await _replace(provider, await provider.get(b.id, user_id=user_id), a.id, why, now)
    elif resolution == "b_wins":
        await _current_again(provider, b, why, now)
        await _current_again(provider, a, why, now)
        await _replace(provider, await provider.get(a.id, user_id=user_id), b.id, why, now)
    elif resolution == "both_valid":
        await _current_again(provider, a, why, now)
        await _current_again(provider, b, why, now)
    else:
        text = (note or "").strip()
        merged = await provider.add(Memory(content=text, user_id=user_id, project=b.project, type=b.type,
                                           importance=max(a.importance, b.importance),
                                           confidence=max(a.confidence, b.confidence),
                                           source_ids=tuple(dict.fromkeys(a.source_ids + b.source_ids)),
                                           metadata={**a.metadata, **b.metadata}))
        for m in (a, b):
            await _current_again(provider, m, why, now)
            await _replace(provider, await provider.get(m.id, user_id=user_id), merged.id, why, now)
    resolved = await log.resolve(contradiction_id, user_id=user_id, resolution=resolution, note=note, at=now)
    return Conflict(resolved, await provider.get(a.id, user_id=user_id), await provider.get(b.id, user_id=user_id),
                    merged)
