"""What was learned from one past Claude Code session, and forgetting it at once.

``dexai memory learn-history`` (:mod:`dexai_memory.history`) marks every memory it stores with
``metadata["history_session"]`` (the session's id; the memory's ``session_id`` is the same), and
its notes and transcripts with ``metadata["source"] = "history"`` (an episode keeps its
``source``, "episode"). :func:`session_memories` finds them (current, superseded
and archived ones alike); :func:`forget_session` soft-deletes them as one clear, so
``dexai memory undo`` (``POST /api/undo``) brings them back within ``lifecycle.undo_minutes``
(:mod:`.clear`), after which the daemon's cleanup erases them. A memory a dropped one had
superseded stays superseded (undo restores the pair).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..models import Memory, SearchFilters, utcnow
from .clear import READ_LIMIT, ClearRecord, clear_ids

if TYPE_CHECKING:
    from ..providers.base import MemoryProvider

#: ``metadata["source"]`` of a memory learned from a past session.
HISTORY_SOURCE = "history"
#: ``metadata`` key naming that session.
HISTORY_SESSION = "history_session"


def is_learned(memory: Memory, session_id: str | None = None) -> bool:
    """Whether ``memory`` was learned from a past session (that one, when ``session_id`` is given)."""
    learned = (memory.metadata or {}).get(HISTORY_SESSION)
    return bool(learned) and (session_id is None or learned == session_id)


async def session_memories(provider: MemoryProvider, user_id: str, session_id: str) -> list[Memory]:
    """The memories of ``user_id`` learned from the past session ``session_id`` (not deleted ones)."""
    found = await provider.list(user_id=user_id, filters=SearchFilters(
        session_id=session_id, valid_only=False, include_archived=True), limit=READ_LIMIT)
    return [m for m in found if is_learned(m, session_id)]


async def live_sessions(provider: MemoryProvider, user_id: str) -> set[str]:
    """The sessions the live hooks stored memories from (any memory of the session not learned
    from history): ``learn-history`` leaves them out, their prompts were read already."""
    found = await provider.list(user_id=user_id, filters=SearchFilters(valid_only=False, include_archived=True),
                                limit=READ_LIMIT)
    return {m.session_id for m in found if m.session_id and not is_learned(m)}


async def forget_session(provider: MemoryProvider, home: Path, user_id: str, session_id: str) -> ClearRecord:
    """Soft-delete every memory learned from ``session_id``, undoable as a clear (see the module
    docstring). Returns the record (its ``ids``: what was forgotten; none when nothing was)."""
    memories = await session_memories(provider, user_id, session_id)
    if not memories:  # no record: an empty clear would hide an earlier one from undo
        return ClearRecord(user_id, None, utcnow(), ())
    return await clear_ids(provider, home, user_id, [m.id for m in memories])
