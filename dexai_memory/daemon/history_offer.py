"""The one-time offer to learn from past sessions, said at the first SessionStart after install.

A new user's store is empty while Claude Code keeps months of their sessions on disk. Nothing
is ever read from them silently: when the store is new (under :data:`NEW_STORE` memories),
nothing was learned from history yet and the session's own projects folder holds other
transcripts, the SessionStart block ends with a note asking the agent to tell the user once
that ``dexai memory learn-history`` can learn them (the plugin puts ``dexai`` on the Bash
tool's PATH). The offer is recorded in the user's
:class:`~dexai_memory.capture.history_log.HistoryLog`, so it is made once.

The transcripts are counted where Claude Code keeps this session's (the parent of the hook
input's ``transcript_path``), never in the daemon's own home directory: the daemon may serve
another account's sessions.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from ..capture.history_log import HistoryLog, transcript_files
from .session_state import transcript_file

if TYPE_CHECKING:
    from ..config import Settings
    from ..providers.base import MemoryProvider
    from .event import HookEvent

logger = logging.getLogger(__name__)

#: A store with fewer memories than this is new: the offer can be made.
NEW_STORE = 20


def offer_text(sessions: int, projects: int) -> str:
    """The note the SessionStart block ends with."""
    where = f"{projects} project{'s' * (projects != 1)}"
    return (f"[dexai-memory] {sessions} past Claude Code session{'s' * (sessions != 1)} ({where}) are on disk and "
            "memory has not learned from them yet. Tell the user once, briefly: running `dexai memory "
            "learn-history` shows what it would read and what it would cost, asks first, then learns their "
            "preferences and instructions from those sessions (`--dry-run` only shows).")


def _past_sessions(event: HookEvent) -> list[Path]:
    current = transcript_file(event.payload.get("transcript_path"))
    if current is None:
        return []
    path = Path(current)
    if path.parent.parent.name != "projects":
        return []
    return [p for p in transcript_files(path.parent.parent) if p.stem != event.session_id and p != path]


async def history_offer(provider: MemoryProvider, settings: Settings, event: HookEvent) -> str:
    """The offer to add to this SessionStart's block ("" when it is not to be made; never raises)."""
    try:
        log = HistoryLog(settings.home, event.user_id)
        if await asyncio.to_thread(lambda: bool(log.offered() or log.sessions())):
            return ""
        if len(await provider.list(user_id=event.user_id, limit=NEW_STORE)) >= NEW_STORE:
            return ""  # (a bounded read: counting a large store at every session start costs ms)
        past = await asyncio.to_thread(_past_sessions, event)
        if not past:
            return ""
        await asyncio.to_thread(log.record_offer, len(past))
        return offer_text(len(past), len({p.parent for p in past}))
    except Exception as exc:  # the block matters more than the offer
        logger.warning("the offer to learn past sessions was not made: %s", exc)
        return ""
