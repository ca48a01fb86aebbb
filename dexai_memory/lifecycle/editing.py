"""Edit a memory in place, by hand: ``dexai memory edit``, the panel and the local API.

The change is applied to the stored memory and logged in its history as an
``EDIT`` event naming the fields that changed (the metadata excepted), so the
panel's history shows it next to supersessions. To record that something
changed over time instead (the old statement kept valid until now), use
:func:`~dexai_memory.supersession.chain.supersede`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InvalidMemory
from ..models import Memory, MemoryEvent, utcnow

if TYPE_CHECKING:
    from ..providers.base import MemoryProvider
    from ..supersession.store import Stored

#: Fields an edit by hand may change.
EDITABLE = ("content", "type", "importance", "confidence", "tier")
#: The reason an edit by hand is logged with.
EDIT_REASON = "edited by hand"


def parse_settings(items: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict; :class:`InvalidMemory` for one without ``=`` or a key."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidMemory(f"--set expects KEY=VALUE, got {item!r}")
        out[key] = value
    return out


async def edit(provider: MemoryProvider, memory_id: str, *, user_id: str, changes: Mapping[str, Any],
               metadata: Mapping[str, Any] | None = None, reason: str = EDIT_REASON) -> Memory:
    """Change ``memory_id`` of ``user_id`` in place and log an ``EDIT`` event; returns it changed.

    ``changes`` holds fields of :data:`EDITABLE`; ``metadata`` keys are merged
    into the memory's metadata (a value of None removes the key). Raises
    :class:`InvalidMemory` when there is nothing to change or a field is not
    editable, :class:`~dexai_memory.errors.MemoryNotFound` for an unknown id.
    """
    unknown = sorted(set(changes) - set(EDITABLE))
    if unknown:
        raise InvalidMemory(f"cannot edit {', '.join(unknown)} (editable: {', '.join(EDITABLE)})")
    if not changes and not metadata:
        raise InvalidMemory("nothing to change")
    if "content" in changes and not str(changes["content"] or "").strip():
        raise InvalidMemory("the content cannot be empty")
    before = await provider.get(memory_id, user_id=user_id)
    fields: dict[str, Any] = dict(changes)
    if metadata:
        md = dict(before.metadata)
        for key, value in metadata.items():
            if value is None:
                md.pop(key, None)
            else:
                md[key] = value
        fields["metadata"] = md
    after = await provider.update(memory_id, user_id=user_id, **fields)
    await provider.record_event(MemoryEvent(memory_id, "EDIT", reason, utcnow(),
                                            details={k: str(v) for k, v in changes.items()}), user_id=user_id)
    return after


async def add_by_hand(provider: MemoryProvider, memory: Memory, *, top_k: int, enabled: bool = True,
                      pin: bool = False, max_pins: int = 10) -> Stored:
    """Store ``memory`` written by hand (``dexai memory add``) through the same supersession as
    every statement (:func:`~dexai_memory.supersession.store.store_statement`): a repeat is
    counted, a change replaces the older statement. ``pin`` pins what was written (the pin
    limit is checked first: :class:`~dexai_memory.errors.InvalidMemory` when full)."""
    from ..supersession.store import Stored, store_statement
    from .pins import check_room
    from .pins import pin as pin_memory

    if pin:
        await check_room(provider, memory.user_id, max_pins)
    if "source" not in memory.metadata:  # written by hand: a repetition raises it faster (models.by_hand)
        memory = memory.replace(metadata={**memory.metadata, "source": "hand"})
    done = await store_statement(provider, memory, top_k=top_k, enabled=enabled)
    if pin and done.memory is not None and not done.memory.pinned:
        return Stored(done.decision, done.target, await pin_memory(provider, done.memory.id, user_id=memory.user_id,
                                                                    max_pins=max_pins))
    return done
