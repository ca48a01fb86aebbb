"""Usage tracking (the design's usage tracker): which injected memories the replies used.

After each reply (the Stop hook), the memories injected into the session so
far are compared with the reply: a memory counts as **cited** when the reply
repeats its distinctive words (names, numbers, paths, rare words: at least
half of them, and at least two unless it has only one). A citation adds one
to ``citation_count`` (once per memory per session, a ``CITED`` history entry
records the session) and refreshes ``last_accessed``, so a memory the agent
keeps using does not expire (:mod:`.eviction`). A memory of the prompt's recall
block that the reply which followed did not use counts as **ignored**: one more
``ignore_count`` (no history entry, no refresh: being ignored is no reference).
The SessionStart block (profile, pins, standing instructions) is never counted
ignored: it is not chosen for the prompt. ``dexai memory get`` shows
``retrieval_count`` (times injected or recalled), ``citation_count`` (times
used) and ``ignore_count``.

Recall ranks by them (:func:`dexai_memory.recall.ranking.usage_factor`: a
bounded multiplier, ``auto_recall.usage_weight``), and the lifecycle archives
what was never retrieved nor cited (:mod:`.eviction`, ``lifecycle.unused_forget_days``).

Runs in the daemon (the executor's Stop handling, for every door) and in the
Agent SDK hooks; a command hook without a daemon records none.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import MemoryNotFound
from ..models import Memory, MemoryEvent, utcnow
from ..text.words import REQUEST_WORDS, STOP_WORDS, normalize

if TYPE_CHECKING:
    from ..providers.base import MemoryProvider

logger = logging.getLogger(__name__)

#: Words as written with their paths, versions and dotted names whole (``src/app.py``, ``v1.2``): a
#: reply that repeats a memory's path uses it, one that says "app" and "py" apart may not.
_TOKEN = re.compile(r"[^\W_][\w./:-]*[^\W_]|\d")
#: Words every memory and reply may hold, on top of the one stop list and the request words: the
#: framing of a note ("the team prefers ..., always ...").
_COMMON = STOP_WORDS | REQUEST_WORDS | frozenset(
    "whose users team team's prefers prefer always never sure every much many uses using used".split())
#: Most injected memories compared with one reply.
MAX_COMPARED = 200


def distinctive(text: str) -> set[str]:
    """The words of ``text`` that identify it: lower-cased tokens of 4+ characters, or with a digit,
    path or dot, without common words."""
    out = set()
    for token in _TOKEN.findall(text):
        word = normalize(token).rstrip(".:")
        if word in _COMMON:
            continue
        if len(word) >= 4 or any(c.isdigit() for c in word) or "/" in word:
            out.add(word)
    return out


def used_in(reply: str, memory: Memory, *, reply_words: set[str] | None = None) -> bool:
    """Whether ``reply`` uses ``memory`` (see the module docstring)."""
    mine = distinctive(memory.content)
    if not mine:
        return False
    shared = mine & (reply_words if reply_words is not None else distinctive(reply))
    return len(shared) >= min(2, len(mine)) and len(shared) >= len(mine) / 2


async def _cited_in_session(provider: MemoryProvider, memory: Memory, session_id: str | None) -> bool:
    return any(e.action == "CITED" and e.details.get("session_id") == session_id
               for e in await provider.events(memory.id, user_id=memory.user_id))


async def record_citations(provider: MemoryProvider, user_id: str, reply: str, injected_ids: Sequence[str], *,
                           session_id: str | None = None) -> list[str]:
    """Count a citation for each memory in ``injected_ids`` that ``reply`` uses (once per session);
    returns the ids counted."""
    if not reply.strip() or not injected_ids:
        return []
    words = distinctive(reply)
    now = utcnow()
    counted = []
    for memory_id in list(dict.fromkeys(injected_ids))[-MAX_COMPARED:]:
        try:
            memory = await provider.get(memory_id, user_id=user_id)
        except MemoryNotFound:
            continue
        if not used_in(reply, memory, reply_words=words) or await _cited_in_session(provider, memory, session_id):
            continue
        await provider.update(memory_id, user_id=user_id, citation_count=memory.citation_count + 1, last_accessed=now)
        await provider.record_event(MemoryEvent(memory_id, "CITED", "the reply used it", now,
                                                details={"session_id": session_id}), user_id=user_id)
        counted.append(memory_id)
    if counted:
        logger.info("%d injected memories of %s cited in a reply", len(counted), user_id)
    return counted


async def record_ignores(provider: MemoryProvider, user_id: str, reply: str, shown_ids: Sequence[str]) -> list[str]:
    """Count one ignore for each memory of ``shown_ids`` (the recall block of the prompt ``reply``
    answered) that ``reply`` does not use; returns their ids."""
    if not reply.strip() or not shown_ids:
        return []
    words = distinctive(reply)
    ignored = []
    for memory_id in list(dict.fromkeys(shown_ids))[-MAX_COMPARED:]:
        try:
            memory = await provider.get(memory_id, user_id=user_id)
        except MemoryNotFound:
            continue
        if not used_in(reply, memory, reply_words=words):
            ignored.append(memory_id)
    if ignored:
        await provider.record_retrieval(ignored, user_id=user_id, ignored=True)
    return ignored
