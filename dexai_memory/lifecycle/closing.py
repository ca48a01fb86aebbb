"""Commitments and goals close: done or cancelled, by command, tool or conversation.

:func:`close` marks a COMMITMENT memory (a promise, a reminder or a goal)
``done`` or ``cancelled``: its ``metadata["commitment"]["status"]`` changes, it stops being current (``valid_until`` now,
kept for history and as-of queries), and its history says why. A closed
commitment leaves "Coming up" and a closed goal leaves the persistent context.
``dexai memory done|cancel ID`` and the ``remember`` tool (``status="done"``)
call it. A commitment reaching its due day is shown once, framed forward
(:func:`mark_due_shown`, called by the daemon after each SessionStart block).

:func:`close_from_turn` closes what the user says they did: "I sent the
report to Priya" closes the open commitment "Send the report to Priya". A
sentence counts when it reports a completed action in the first person ("I
sent ...", "we've finished ...", "... is done") without a negation, and its
words (the verb taken back to its base form, "sent" -> "send") cover at
least :data:`MATCH_OVERLAP` of the commitment's content words (at least
:data:`MIN_SHARED` shared). The pipeline runs it on every turn of a
session's user (role ``user``, no speaker name).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import InvalidMemory
from ..models import Memory, MemoryEvent, MemoryType, SearchFilters, Turn, as_utc, utcnow
from ..text.words import STOP_WORDS, split_words

if TYPE_CHECKING:
    from ..providers.base import MemoryProvider

logger = logging.getLogger(__name__)

#: What a commitment can be closed as.
CLOSED_STATUSES = ("done", "cancelled")
#: Share of a commitment's content words a completion statement must cover.
MATCH_OVERLAP = 0.6
#: Least content words a completion statement must share with the commitment.
MIN_SHARED = 2

_IRREGULAR = {
    "sent": "send", "did": "do", "done": "do", "made": "make", "wrote": "write", "written": "write", "paid": "pay",
    "bought": "buy", "gave": "give", "given": "give", "told": "tell", "took": "take", "taken": "take",
    "met": "meet", "got": "get", "built": "build", "ran": "run", "brought": "bring", "left": "leave",
    "found": "find", "sold": "sell", "spoke": "speak", "put": "put", "set": "set", "read": "read",
    "drew": "draw", "drove": "drive", "ate": "eat", "went": "go", "called": "call", "shipped": "ship",
    "submitted": "submit", "planned": "plan", "booked": "book", "emailed": "email", "finished": "finish",
    "completed": "complete", "cancelled": "cancel", "canceled": "cancel", "returned": "return",
    "renewed": "renew", "fixed": "fix", "filed": "file", "signed": "sign", "reviewed": "review",
    "updated": "update", "uploaded": "upload", "replied": "reply", "prepared": "prepare", "scheduled": "schedule",
}
#: The framing of a commitment and of its report ("the team will need to ... tomorrow", "I've finally
#: done ..."), on top of the one stop list: words both may or may not say about the same action.
_FRAMING = frozenset("already done finally must need needs shall team team's today tomorrow yesterday us user "
                     "user's".split())
_STOP = STOP_WORDS | _FRAMING
_COMPLETED = re.compile(
    r"\b(?:i|we)(?:'ve|\s+have|\s+had)?(?:\s+(?:just|already|finally|now|also))*\s+(?P<verb>[a-z]+(?:ed)?)\b"
    r"|\b(?:is|are|was|were)\s+(?:all\s+)?(?:done|finished|sent|submitted|complete|completed|booked|paid)\b"
    r"|\bdone\s+with\b",
    re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|never|haven't|hasn't|didn't|don't|won't|can't|couldn't|isn't|aren't|wasn't)\b|n't\b",
                       re.IGNORECASE)
_SENTENCES = re.compile(r"(?<=[.!?;])\s+")
#: Past forms that report no finished action of a commitment ("I promised to ...", "I needed ...").
_NOT_DONE = frozenset("""promised needed wanted planned decided agreed hoped intended expected forgot asked
wondered supposed used liked loved hated thought guessed tried meant started offered volunteered arranged
scheduled committed pledged vowed""".split())
#: Verbs that finish any commitment ("I finished the slides").
_GENERIC_DONE = frozenset({"finish", "complete", "do", "wrap", "handle", "sort", "take"})


def _base(word: str) -> str:
    """A word taken back to a rough base form: irregular past forms, then -ed / -ing / -s."""
    word = word.lower().removesuffix("'s")
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            stem = word[: -len(suffix)]
            if len(stem) > 2 and stem[-1] == stem[-2]:
                stem = stem[:-1]  # shipped -> ship
            return stem
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def words(text: str) -> set[str]:
    """Content words of ``text`` in base form."""
    return {_base(w) for w in split_words(text) if w not in _STOP and len(w) > 1} - _STOP


def completed_verb(sentence: str) -> str | None:
    """The base form of the action ``sentence`` reports finished ("I sent ..." -> "send"; "... is
    done" -> "finish"), or None when it reports none (a promise, a plan, a negation)."""
    m = _COMPLETED.search(sentence)
    if m is None or _NEGATION.search(sentence):
        return None
    verb = m.group("verb")
    if verb is None:
        return "finish"
    verb = verb.lower()
    if not (verb in _IRREGULAR or verb.endswith("ed")):
        return None
    return None if verb in _NOT_DONE else _base(verb)


def is_completion(sentence: str) -> bool:
    """Whether ``sentence`` reports something finished ("I sent ...", "... is done"), not negated."""
    return completed_verb(sentence) is not None


def what_of(m: Memory) -> str:
    """The commitment's text: ``metadata["commitment"]["what"]``, else the memory's content."""
    info = (m.metadata or {}).get("commitment")
    return str(info.get("what") or m.content) if isinstance(info, dict) else m.content


def matches(sentence: str, commitment: Memory) -> bool:
    """Whether ``sentence`` is about ``commitment``: its words cover the commitment's (see the
    module docstring), and when it reports a specific action ("sent") the commitment has it ("send")."""
    target = words(what_of(commitment)) - {"goal"}
    said = words(sentence)
    shared = target & said
    if len(shared) < MIN_SHARED or len(shared) / max(len(target), 1) < MATCH_OVERLAP:
        return False
    verb = completed_verb(sentence)
    return verb is None or verb in _GENERIC_DONE or verb in target


def _is_open(m: Memory) -> bool:
    info = (m.metadata or {}).get("commitment")
    return isinstance(info, dict) and str(info.get("status") or "open") in ("open", "pending")


async def close(provider: MemoryProvider, memory_id: str, *, user_id: str, status: str = "done",
                reason: str = "closed by request") -> Memory:
    """Mark the commitment or goal ``memory_id`` ``done`` or ``cancelled`` (see the module docstring).

    Raises :class:`InvalidMemory` for another status or a memory that is not a
    commitment, :class:`~dexai_memory.errors.MemoryNotFound` for an unknown id.
    """
    status = status.strip().lower()
    if status == "canceled":
        status = "cancelled"
    if status not in CLOSED_STATUSES:
        raise InvalidMemory(f"a commitment closes as done or cancelled, not {status!r}")
    memory = await provider.get(memory_id, user_id=user_id)
    info = (memory.metadata or {}).get("commitment")
    if memory.type is not MemoryType.COMMITMENT and not isinstance(info, dict):
        raise InvalidMemory(f"{memory_id} is a {memory.type.value}, not a commitment or goal")
    now = utcnow()
    meta = {**memory.metadata, "commitment": {**(info if isinstance(info, dict) else {"what": memory.content}),
                                              "status": status, "closed_at": now.isoformat()}}
    updated = await provider.update(memory_id, user_id=user_id, metadata=meta,
                                    valid_until=memory.valid_until or now)
    await provider.record_event(MemoryEvent(memory_id, status.upper(), reason, now), user_id=user_id)
    logger.info("commitment %s of %s %s: %s", memory_id, user_id, status, reason)
    return updated


async def open_commitments(provider: MemoryProvider, user_id: str, project: str | None = None) -> list[Memory]:
    """The current open COMMITMENT memories (goals included) of ``user_id``."""
    memories = await provider.list(user_id=user_id, filters=SearchFilters(project=project,
                                                                           types=(MemoryType.COMMITMENT,)),
                                   limit=10_000)
    return [m for m in memories if _is_open(m)]


def is_session_user(turn: Turn) -> bool:
    """A turn of the user of an assistant session (role ``user``, no speaker name)."""
    return turn.role == "user" and not turn.speaker


async def close_from_turn(provider: MemoryProvider, turn: Turn) -> list[Memory]:
    """Close the open commitments ``turn`` says are done; returns the closed ones."""
    sentences = [s for s in _SENTENCES.split(turn.content) if is_completion(s)]
    if not sentences or not is_session_user(turn):
        return []
    closed: list[Memory] = []
    for m in await open_commitments(provider, turn.user_id, turn.project):
        if turn.id in m.source_ids:
            continue  # the turn that made it does not close it
        said: Any = next((s for s in sentences if matches(s, m)), None)
        if said is not None:
            closed.append(await close(provider, m.id, user_id=turn.user_id, status="done",
                                      reason=f'the user said it is done: "{said.strip()[:200]}"'))
    return closed


async def mark_due_shown(provider: MemoryProvider, memories: Sequence[Memory], *,
                         now: datetime | None = None) -> list[str]:
    """Record that the due (today or earlier) commitments among ``memories`` (those a block just
    showed) were shown: ``metadata["commitment"]["due_shown_at"]``, so the next block leaves
    them out (:func:`~dexai_memory.recall.block.commitments_due_soon`). Returns their ids."""
    now = now or utcnow()
    marked = []
    for m in memories:
        info = (m.metadata or {}).get("commitment")
        if not isinstance(info, dict) or info.get("due_shown_at") or not info.get("due_at"):
            continue
        due = as_utc(str(info["due_at"]))
        if due is None or due.date() > now.date():
            continue
        await provider.update(m.id, user_id=m.user_id,
                              metadata={**m.metadata, "commitment": {**info, "due_shown_at": now.isoformat()}})
        marked.append(m.id)
    return marked
