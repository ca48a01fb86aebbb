"""Pins: at most ``lifecycle.max_pins`` (10) pinned memories per user.

A pinned memory is always in the injected block and never archived or
evicted, so pins are kept few ("soft cap: 10 pinned facts"). The
11th pin is refused with :class:`~dexai_memory.errors.PinLimitReached`, whose
message says how many are pinned and how to make room, instead of being
accepted and silently not shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import PinLimitReached
from ..models import Memory, SearchFilters

if TYPE_CHECKING:
    from ..providers.base import MemoryProvider

#: The default of ``lifecycle.max_pins``.
DEFAULT_MAX_PINS = 10


async def pinned_count(provider: MemoryProvider, user_id: str) -> int:
    """How many current memories of ``user_id`` are pinned (every project)."""
    return await provider.count(user_id=user_id, filters=SearchFilters(pinned=True))


async def check_room(provider: MemoryProvider, user_id: str, max_pins: int = DEFAULT_MAX_PINS) -> None:
    """Raise :class:`PinLimitReached` when ``user_id`` already has ``max_pins`` pinned memories."""
    count = await pinned_count(provider, user_id)
    if count >= max_pins:
        raise PinLimitReached(
            f"{count} memories are pinned already, the most allowed (lifecycle.max_pins = {max_pins}): unpin one "
            "first (`dexai memory unpin ID`; `dexai memory facts` marks pinned ones with *), or raise lifecycle.max_pins")


async def pin(provider: MemoryProvider, memory_id: str, *, user_id: str,
              max_pins: int = DEFAULT_MAX_PINS) -> Memory:
    """Pin ``memory_id``; raises :class:`PinLimitReached` when that would make more than ``max_pins``
    (pinning a memory that is already pinned always succeeds)."""
    memory = await provider.get(memory_id, user_id=user_id)
    if not memory.pinned:
        await check_room(provider, user_id, max_pins)
    return await provider.pin(memory_id, user_id=user_id, pinned=True)
