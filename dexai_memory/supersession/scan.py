"""The background contradiction scan: current memories the supersession rules read as contradicting.

A contradiction is found when a statement is written (:mod:`.apply`), against the few
memories search returns for it. Two current memories can still contradict: the older one
was pinned or the newer came from a tool (both kept by rule), search missed the older one,
a model classifier answered ADD, the memories came in by an import or were edited since.
:func:`scan_contradictions` runs at consolidation and looks for them with the same policy,
not a second one:

* the candidates of each memory are found as bulk ingest finds them
  (:class:`~.candidates.CandidateIndex`: the same subject and attribute, or informative words
  in common), among the *older* current memories of its project;
* each pair is decided by the offline rules (:class:`~.rules.OfflineClassifier`) behind the
  meaning guard (:func:`~.rules.guard_meaning`), as a new statement would be; the storage
  rules (pinned memories, tool output) are not applied, since they decide what is written,
  not what contradicts;
* a SUPERSEDE, or an :class:`~.contradictions.Unsure` ADD ("a change or a second value?"),
  is a contradiction: recorded **open** in the provider's contradiction log
  (:func:`~.contradictions.record`), both memories left current, for review in
  ``dexai memory conflicts`` and the panel. Nothing is superseded or resolved here.

A pair already in the log (open or resolved, either way round) is not recorded again. A
backend that keeps no contradictions is not scanned.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING

from ..models import Memory, SearchFilters, UpdateAction, utcnow
from . import contradictions
from .candidates import CandidateIndex
from .rules import OfflineClassifier, guard_meaning

if TYPE_CHECKING:
    from ..providers.base import MemoryProvider

logger = logging.getLogger(__name__)

#: Older memories each memory is compared with (as ``supersession.comparison_top_k``).
SCAN_TOP_K = 10
#: What a recorded contradiction's reason starts with.
SCAN_REASON = "found by the consolidation scan"


def _when(m: Memory) -> datetime:
    return m.valid_from or m.created_at


async def scan_contradictions(provider: MemoryProvider, user_id: str, *, dry_run: bool = False,
                              now: datetime | None = None, top_k: int = SCAN_TOP_K) -> int:
    """Record the contradictions among ``user_id``'s current memories not recorded yet (see the module
    docstring); returns how many were (or, in a dry run, would be) recorded."""
    log = provider.contradiction_log
    if log is None:
        return 0
    now = now or utcnow()
    known = {frozenset((c.memory_a, c.memory_b)) for c in await log.list(user_id=user_id, open_only=False,
                                                                         limit=10_000_000)}
    memories = sorted((m for m in await provider.list(user_id=user_id, filters=SearchFilters(), limit=1_000_000)
                       if CandidateIndex.indexable(m)), key=lambda m: (_when(m), m.id))
    index, rules = CandidateIndex(), OfflineClassifier()
    found = 0
    for newer in memories:
        older = [m for m in index.candidates(newer.content, user_id=user_id, top_k=top_k)
                 if m.project == newer.project and frozenset((m.id, newer.id)) not in known]
        index.add(newer)
        if not older:
            continue
        decisions = guard_meaning(await rules.classify(newer.content, older), newer.content, older)
        by_id = {m.id: m for m in older}
        for d in decisions:
            old = by_id.get(d.memory_id or "")
            if old is None or not (d.action is UpdateAction.SUPERSEDE or isinstance(d, contradictions.Unsure)):
                continue
            known.add(frozenset((old.id, newer.id)))
            found += 1
            if not dry_run:
                await contradictions.record(provider, old, newer, reason=f"{SCAN_REASON}: {d.reason}", at=now,
                                            resolved=False)
    if found and not dry_run:
        logger.info("the contradiction scan recorded %d open contradictions of %s", found, user_id)
    return found
