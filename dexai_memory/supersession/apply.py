"""Carrying out one supersession decision for a note on a provider.

:func:`apply` is the entry point: the meaning guard
(:func:`~.rules.guard_meaning`) runs once more against the memory the
decision names as it is now (a decision may have been made on an older
copy, or handed in without :func:`~.decide.decide`), then
:func:`apply_decision` writes it. The rules that hold whatever the
classifier said:

* a pinned memory is never overwritten: the note is added next to it;
* a note from tool output (``metadata["origin"] == "tool"``) never rewrites
  or replaces a memory that did not come from a tool: it is added instead;
* a memory shared by another user (a project-shared memory of the postgres
  provider) changes only by its owner: the note is stored as the user's own;
* a user's note (``origin == "user"``) that repeats or refines a tool's
  memory marks it ``confirmed_by_user`` (it may then enter the profile).

What each action writes: ADD stores the note; NOOP counts one more mention
and raises confidence by :data:`~dexai_memory.models.CONFIDENCE_BOOST`;
UPDATE merges the note into the memory (content, provenance, mention count,
confidence) and only adds detail: one that changes a value is a SUPERSEDE
(:func:`keeps_history`), and the UPDATE event keeps the text before and after;
SUPERSEDE replaces the memory with the note
(:func:`~.chain.supersede`) and records the contradiction
(:mod:`.contradictions`: left open, both kept, when the note is not sure
enough or the classifier was unsure). Each action is logged in the memory's
history with its reason.

Time: the old memory stops being valid when the new statement was *said*
(:func:`said_at`: the note's ``valid_from``, its turn's timestamp), not when
it is processed, so ``--as-of`` and history are right after an ingest or an
import. A note said before the memory it contradicts (turns imported out of
order) is stored as the past: superseded by that memory from the moment it
was said.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import MemoryNotFound
from ..models import (
    Memory,
    MemoryEvent,
    UpdateAction,
    UpdateDecision,
    boosted,
    by_hand,
    is_tool_origin,
    utcnow,
)
from . import changes, contradictions
from .chain import link, supersede
from .rules import OfflineClassifier, guard_meaning
from .statements import statement_words

if TYPE_CHECKING:
    from ..providers.base import MemoryProvider

logger = logging.getLogger(__name__)


async def apply(provider: MemoryProvider, decision: UpdateDecision, note: Memory) -> Memory | None:
    """Carry out ``decision`` for ``note`` on ``provider``; returns the memory written, or None.

    The memory the decision names is read again, and an UPDATE that would drop
    one of its names, numbers or dates, or that changes a value (:func:`keeps_history`),
    is carried out as SUPERSEDE (the old memory stays in history), a NOOP that would
    drop one of the note's as ADD. Raises :class:`~dexai_memory.errors.MemoryNotFound`
    when that memory is gone.
    """
    old = None
    if decision.action is not UpdateAction.ADD and decision.memory_id is not None:
        old = await provider.get(decision.memory_id, user_id=note.user_id)
        decision = keeps_history(guard_meaning([decision], note.content, [old])[0], note, old)
    return await apply_decision(provider, decision, note, current=old)


def keeps_history(decision: UpdateDecision, note: Memory, old: Memory) -> UpdateDecision:
    """``decision`` as a SUPERSEDE when it is an UPDATE that changes a value of ``old`` rather than
    adding detail to it: the offline rules read the note (or the merged text) against the memory as
    a change ("I left Initech and now work at Globex"), and it is not a plain addition (every word
    of the memory kept, no change word added: "green tea" -> "green tea with honey" stays an
    UPDATE). An UPDATE rewrites the memory in place, the old text only in its event's details; a
    SUPERSEDE keeps the old value as a memory of its own, valid until the change, shown by
    ``dexai memory history`` and ``--as-of``. Whatever the classifier (a model may answer UPDATE
    with a merged text that still names the old value)."""
    if decision.action is not UpdateAction.UPDATE or decision.memory_id != old.id:
        return decision
    rules, before = OfflineClassifier(), statement_words(old.content)
    for text in dict.fromkeys((note.content, decision.merged_content or note.content)):
        verdict = rules.decide(text, old)
        if verdict.action is not UpdateAction.SUPERSEDE or isinstance(verdict, contradictions.Unsure):
            continue
        words = statement_words(text)
        if before <= words and not changes.marks_change(words - before):
            continue  # more detail, said as such
        return UpdateDecision(UpdateAction.SUPERSEDE, old.id, f"changes a value ({verdict.reason}): superseded, "
                              f"the old memory stays in history ({decision.reason})",
                              merged_content=decision.merged_content)
    return decision


def _storable(decision: UpdateDecision, note: Memory, old: Memory) -> UpdateDecision:
    """``decision`` turned into an ADD where a storage rule forbids changing ``old``."""
    rewrites = decision.action in (UpdateAction.UPDATE, UpdateAction.SUPERSEDE)
    if old.user_id != note.user_id and decision.action is not UpdateAction.ADD:
        return UpdateDecision(UpdateAction.ADD, None, f"memory {old.id} is shared by {old.user_id}; stored as the "
                              f"user's own instead of {decision.action.value} ({decision.reason})")
    if rewrites and is_tool_origin(note) and not is_tool_origin(old):
        return UpdateDecision(UpdateAction.ADD, None, f"tool output never rewrites or replaces memory {old.id}, "
                              f"which did not come from a tool; stored as new instead of {decision.action.value} "
                              f"({decision.reason})")
    if rewrites and old.pinned:
        reason = (f"memory {old.id} is pinned and changes only by explicit user action; stored as new instead "
                  f"of {decision.action.value} ({decision.reason})")
        logger.info("not overwriting pinned memory %s: %s", old.id, reason)
        return UpdateDecision(UpdateAction.ADD, None, reason)
    return decision


async def apply_decision(provider: MemoryProvider, decision: UpdateDecision, note: Memory, *,
                         current: Memory | None = None) -> Memory | None:
    """Write one decision for ``note`` (see the module docstring); returns the memory written, or None.

    ``current`` is the memory the decision names, as the caller has just read it
    (saves reading it again); otherwise it is read here. Prefer :func:`apply`,
    which guards the meaning first.
    """
    uid = note.user_id
    now = utcnow()
    old = None
    if decision.action is not UpdateAction.ADD and decision.memory_id is not None:
        old = current if current is not None and current.id == decision.memory_id else \
            await provider.get(decision.memory_id, user_id=uid)
        decision = _storable(decision, note, old)
    if isinstance(decision, contradictions.Unsure) and decision.memory_id is not None:
        return await _add_unsure(provider, decision, note, now)
    if decision.action is UpdateAction.ADD or decision.memory_id is None or old is None:
        stored = await provider.add(note)
        await provider.record_event(MemoryEvent(stored.id, "ADD", decision.reason, now), user_id=uid)
        return stored
    sources = tuple(dict.fromkeys(old.source_ids + note.source_ids))
    confirmed: dict[str, Any] = {}
    if is_tool_origin(old) and (note.metadata or {}).get("origin") == "user":
        # the user said it again: the tool's memory may now enter the profile
        confirmed = {"metadata": {**old.metadata, "confirmed_by_user": True}}
    if decision.action is UpdateAction.NOOP:
        updated = await provider.update(old.id, user_id=uid, mention_count=old.mention_count + 1,
                                        confidence=boosted(old.confidence, manual=by_hand(old)), source_ids=sources,
                                        importance=max(old.importance, note.importance), **confirmed)
        await provider.record_event(MemoryEvent(old.id, "NOOP", decision.reason, now,
                                                details={"duplicate": note.content}), user_id=uid)
        return updated
    if decision.action is UpdateAction.UPDATE:
        content = decision.merged_content or note.content
        updated = await provider.update(old.id, user_id=uid, content=content, source_ids=sources,
                                        mention_count=old.mention_count + 1, confidence=boosted(old.confidence, manual=by_hand(old)),
                                        importance=max(old.importance, note.importance), **confirmed)
        await provider.record_event(MemoryEvent(old.id, "UPDATE", decision.reason, now,
                                                details={"before": old.content, "after": content}), user_id=uid)
        return updated
    replacement = note.replace(source_ids=sources)
    if decision.merged_content:
        replacement = replacement.replace(content=decision.merged_content)
    said = said_at(note, now)
    if old.valid_from is not None and said < old.valid_from:
        # said before the memory it contradicts (an import or ingest out of order): the note is the past
        stored = await provider.add(replacement)
        await link(provider, stored.id, old.id, user_id=uid, reason=f"said before memory {old.id}, which "
                   f"replaces it ({decision.reason})", at=old.valid_from)
        return stored
    if contradictions.left_open(provider, note, old):
        # not sure enough to replace what is known: both stay current, the contradiction stays open
        stored = await provider.add(replacement)
        reason = (f"contradicts {old.id} but its confidence {note.confidence:.2f} is below "
                  f"{contradictions.AUTO_RESOLVE_CONFIDENCE}: both kept, contradiction left open ({decision.reason})")
        await provider.record_event(MemoryEvent(stored.id, "ADD", reason, now, related_id=old.id), user_id=uid)
        await contradictions.record(provider, old, stored, reason=decision.reason, at=now, resolved=False)
        return stored
    new = await supersede(provider, old.id, replacement, user_id=uid, reason=decision.reason, at=said)
    await contradictions.record(provider, old, new, reason=decision.reason, at=now, resolved=True)
    return new


async def _add_unsure(provider: MemoryProvider, decision: UpdateDecision, note: Memory, now: datetime) -> Memory:
    """Add ``note`` next to the memory it may change, and record the open question (:class:`~.contradictions.Unsure`)."""
    uid = note.user_id
    stored = await provider.add(note)
    await provider.record_event(MemoryEvent(stored.id, "ADD", f"maybe a change of {decision.memory_id}: both kept, "
                                            f"contradiction left open ({decision.reason})", now,
                                            related_id=decision.memory_id), user_id=uid)
    if provider.contradiction_log is not None and decision.memory_id is not None:
        try:
            old = await provider.get(decision.memory_id, user_id=uid)
        except MemoryNotFound:
            return stored
        if old.is_valid and old.user_id == uid:
            await contradictions.record(provider, old, stored, reason=decision.reason, at=now, resolved=False)
    return stored


def said_at(note: Memory, now: datetime) -> datetime:
    """When ``note`` was said: its ``valid_from`` (the turn's time for an extracted note), never after ``now``."""
    said = note.valid_from or note.created_at
    return min(said, now) if said is not None else now
