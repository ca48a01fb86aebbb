"""When a superseding note is a contradiction to record, and whether it resolves on its own.

A SUPERSEDE is a contradiction between the old memory (a) and the note (b).
Where the provider keeps contradictions (its
:attr:`~dexai_memory.providers.base.MemoryProvider.contradiction_log`) it is
recorded: resolved ``b_wins`` automatically when the note is sure enough
(confidence at least :data:`AUTO_RESOLVE_CONFIDENCE`) and the classifier was
sure it is a change, else left open with both memories current; an
:class:`Unsure` ADD ("a change or a second value?") is recorded open too, for review (``dexai memory conflicts``,
:mod:`dexai_memory.lifecycle.contradictions`). A backend that keeps none
always lets the newer statement win.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ..models import Contradiction, Memory, UpdateDecision

if TYPE_CHECKING:
    from ..providers.base import MemoryProvider

#: Least confidence of a contradicting note for supersession to resolve the contradiction on its own.
AUTO_RESOLVE_CONFIDENCE = 0.6


@dataclass(frozen=True, slots=True)
class Unsure(UpdateDecision):
    """An ADD that may be a change of the memory it names (``memory_id``): the classifier cannot tell
    a change from a second value. The note is added, both stay current, and the contradiction is
    recorded open for review (``dexai memory conflicts``) where the provider keeps contradictions."""


def left_open(provider: MemoryProvider, note: Memory) -> bool:
    """Whether a SUPERSEDE by ``note`` keeps both memories and leaves the contradiction open."""
    return provider.contradiction_log is not None and note.confidence < AUTO_RESOLVE_CONFIDENCE


async def record(provider: MemoryProvider, old: Memory, new: Memory, *, reason: str, at: datetime,
                 resolved: bool) -> None:
    """Record that ``new`` contradicts ``old`` (resolved ``b_wins`` when ``resolved``); no-op where
    the provider keeps no contradictions."""
    log = provider.contradiction_log
    if log is None:
        return
    if resolved:
        await log.add(Contradiction(new.user_id, old.id, new.id, reason=reason, detected_at=at, resolution="b_wins",
                                    resolved_at=at, auto=True, note="the newer statement replaced the older one"))
    else:
        await log.add(Contradiction(new.user_id, old.id, new.id, reason=reason, detected_at=at))
