"""When a superseding note is a contradiction to record, and whether it resolves on its own.

A SUPERSEDE is a contradiction between the old memory (a) and the note (b).
Where the provider keeps contradictions (its
:attr:`~dexai_memory.providers.base.MemoryProvider.contradiction_log`) it is
recorded: resolved ``b_wins`` automatically when the note is sure enough
(confidence at least :data:`AUTO_RESOLVE_CONFIDENCE`, or the same speaker reporting
a change to what they said before: "Dana said the retro moved to Teams" after
"Dana said the retro is on Zoom") and the classifier was sure it is a change, else left open with both memories current; an
:class:`Unsure` ADD ("a change or a second value?") is recorded open too, for review (``dexai memory conflicts``,
:mod:`dexai_memory.lifecycle.contradictions`). A backend that keeps none
always lets the newer statement win.
"""

from __future__ import annotations

import re
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


#: The speaker of a reported statement ("Dana said the retro is on Zoom.").
_REPORTER = re.compile(r"^(?P<who>[A-Z][\w'\-]*(?: [A-Z][\w'\-]*)?) said\b")


def reporter(memory: Memory) -> str | None:
    """Who a reported statement is from ("Dana" of "Dana said ..."), else None."""
    m = _REPORTER.match(memory.content)
    return m.group("who") if m else None


def left_open(provider: MemoryProvider, note: Memory, old: Memory | None = None) -> bool:
    """Whether a SUPERSEDE of ``old`` by ``note`` keeps both memories and leaves the contradiction
    open: the note is not sure enough, unless its speaker reported ``old`` too (they correct
    themselves)."""
    if provider.contradiction_log is None or note.confidence >= AUTO_RESOLVE_CONFIDENCE:
        return False
    return old is None or reporter(note) is None or reporter(note) != reporter(old)


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
