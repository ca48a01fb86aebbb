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
* each memory is decided against them by the offline rules (:class:`~.rules.OfflineClassifier`)
  behind the meaning guard (:func:`~.rules.guard_meaning`) and resolved to one action
  (:func:`~.rules.resolve`: a repeat of one of them is a repeat, not a contradiction), as a
  new statement would be; the storage rules (pinned memories, tool output) are not applied,
  since they decide what is written, not what contradicts;
* a SUPERSEDE, or an :class:`~.contradictions.Unsure` ADD ("a change or a second value?"),
  is a contradiction between the memory and the older one it names: recorded **open** in
  the provider's contradiction log
  (:func:`~.contradictions.record`), both memories left current, for review in
  ``dexai memory conflicts`` and the panel. Nothing is superseded or resolved here.

A pair already in the log (open or resolved, either way round) is not recorded again, and a
memory the write path already decided against another (it replaced one, or a contradiction
with it is recorded) is not decided again: a statement changes one thing, and the rules
read a chatty one as changing several (LoCoMo's first two conversations, ingested: 48 and 67
pairs when every pair the rules read as a change was recorded, 15 and 24 with one decision
per memory, 1 and 1 with this too). A backend that keeps no contradictions is not scanned. The rules cost ~2 ms a pair (12 s
for a LoCoMo conversation's 711 notes), so consolidation decides only the memories written
or edited since a day before its last run; the first run decides them all.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ..models import Contradiction, Memory, SearchFilters, UpdateAction, utcnow
from . import contradictions
from .candidates import CandidateIndex
from .rules import OfflineClassifier, guard_meaning, resolve

if TYPE_CHECKING:
    from ..providers.base import MemoryProvider

logger = logging.getLogger(__name__)

#: Older memories each memory is compared with (consolidation passes ``supersession.comparison_top_k``).
SCAN_TOP_K = 10
#: What a recorded contradiction's reason starts with.
SCAN_REASON = "found by the consolidation scan"


def _when(m: Memory) -> datetime:
    return m.valid_from or m.created_at


async def scan_contradictions(provider: MemoryProvider, user_id: str, *, dry_run: bool = False,
                              now: datetime | None = None, top_k: int = SCAN_TOP_K,
                              since: datetime | None = None) -> int:
    """Record the contradictions among ``user_id``'s current memories not recorded yet (see the module
    docstring); returns how many were (or, in a dry run, would be) recorded. ``since``: only the
    memories written or edited since then are decided (against every older current memory); the
    others were decided by an earlier scan (None: every memory). The rules run in a thread: the
    daemon's event loop keeps answering the hooks meanwhile."""
    log = provider.contradiction_log
    if log is None:
        return 0
    now = now or utcnow()
    recorded = await log.list(user_id=user_id, open_only=False, limit=10_000_000)
    everything = await provider.list(user_id=user_id, filters=SearchFilters(valid_only=False, include_archived=True),
                                     limit=10_000_000)
    found = await asyncio.to_thread(find_contradictions, everything, recorded, user_id=user_id, top_k=top_k,
                                    since=since)
    if not dry_run:
        for old, newer, reason in found:
            await contradictions.record(provider, old, newer, reason=f"{SCAN_REASON}: {reason}", at=now,
                                        resolved=False)
        if found:
            logger.info("the contradiction scan recorded %d open contradictions of %s", len(found), user_id)
    return len(found)


def find_contradictions(everything: Sequence[Memory], recorded: Sequence[Contradiction], *, user_id: str,
                        top_k: int = SCAN_TOP_K, since: datetime | None = None) -> list[tuple[Memory, Memory, str]]:
    """(older, newer, the rules' reason) of each contradiction among the current memories of
    ``everything`` (all of a user's memories) not in ``recorded`` (see :func:`scan_contradictions`)."""
    known = {frozenset((c.memory_a, c.memory_b)) for c in recorded}
    # a statement that already replaced one (or was recorded against one) changed what the write path decided
    decided = {m.superseded_by for m in everything if m.superseded_by} | {c.memory_b for c in recorded}
    memories = sorted((m for m in everything if CandidateIndex.indexable(m)), key=lambda m: (_when(m), m.id))
    index, rules = CandidateIndex(), OfflineClassifier()
    found: list[tuple[Memory, Memory, str]] = []
    for newer in memories:
        older = [m for m in index.candidates(newer.content, user_id=user_id, top_k=top_k)
                 if m.project == newer.project and frozenset((m.id, newer.id)) not in known]
        index.add(newer)
        if not older or newer.id in decided or (since is not None and (newer.updated_at or newer.created_at) < since):
            continue
        d = resolve(guard_meaning(rules.classify_now(newer.content, older), newer.content, older))
        old = next((m for m in older if m.id == d.memory_id), None)
        if old is None or not (d.action is UpdateAction.SUPERSEDE or isinstance(d, contradictions.Unsure)):
            continue
        known.add(frozenset((old.id, newer.id)))
        found.append((old, newer, d.reason))
    return found
