"""Changes to the store made by hand (``edit``, ``pin``, ``forget``, ...), by name.

The CLI asks the running daemon for them: ``store.run`` on its socket, where the daemon (the one
writer of ``memory.db``) runs them under its write lock. With no daemon running, the same
function runs on the store in the CLI's own process
(:func:`dexai_memory.cli.common.daemon_or_local`), so both ways answer alike.

A request is ``{"op": "store.run", "name": NAME, "user_id": USER, ...arguments}``; the answer
is JSON, a memory as :meth:`~dexai_memory.models.Memory.to_dict`. Our errors (no such memory,
too many pins, an unknown resolution) travel as ``{"ok": false, "error": ...}``, and the CLI
prints them as it prints its own.

==============  ======================================================  ===========================
name            arguments                                               answer
==============  ======================================================  ===========================
edit            ``memory_id``, ``changes`` (fields), ``metadata``?      ``memory``
pin             ``memory_id`` (at most ``lifecycle.max_pins``)           ``memory``
unpin           ``memory_id``                                           ``memory``
forget          ``memory_id``, ``hard``?                                ``forgotten`` (bool)
restore         ``memory_id``                                           ``memory``
supersede       ``memory_id``, ``content``, ``reason``?                 ``memory`` (the new one)
close           ``memory_id``, ``status``, ``reason``?                  ``memory``
resolve         ``contradiction_id``, ``resolution``, ``note``?         ``conflict``
clear           ``project``?                                            ``ids`` (the cleared ones)
undo            (none)                                                  ``ids`` (the restored ones)
forget_session  ``session_id`` (every memory learned from that past    ``ids`` (the forgotten ones)
                Claude Code session, as one clear ``undo`` restores)
prune           ``dry_run``?                                            ``report``
==============  ======================================================  ===========================
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..errors import InvalidMemory

if TYPE_CHECKING:
    from ..config import Settings
    from ..providers.base import MemoryProvider

Request = dict[str, Any]
Operation = Callable[["MemoryProvider", "Settings", str, Request], Awaitable[dict[str, Any]]]


def _str(req: Request, key: str) -> str:
    value = req.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidMemory(f"{req.get('name')} needs {key}")
    return value


async def _edit(provider: MemoryProvider, settings: Settings, user: str, req: Request) -> dict[str, Any]:
    from .editing import edit

    changes, metadata = req.get("changes") or {}, req.get("metadata")
    if not isinstance(changes, dict) or (metadata is not None and not isinstance(metadata, dict)):
        raise InvalidMemory("edit takes changes and metadata as objects")
    memory = await edit(provider, _str(req, "memory_id"), user_id=user, changes=changes, metadata=metadata)
    return {"memory": memory.to_dict()}


async def _pin(provider: MemoryProvider, settings: Settings, user: str, req: Request) -> dict[str, Any]:
    from .pins import pin

    memory = await pin(provider, _str(req, "memory_id"), user_id=user, max_pins=settings.lifecycle.max_pins)
    return {"memory": memory.to_dict()}


async def _unpin(provider: MemoryProvider, settings: Settings, user: str, req: Request) -> dict[str, Any]:
    return {"memory": (await provider.pin(_str(req, "memory_id"), user_id=user, pinned=False)).to_dict()}


async def _forget(provider: MemoryProvider, settings: Settings, user: str, req: Request) -> dict[str, Any]:
    return {"forgotten": await provider.delete(_str(req, "memory_id"), user_id=user, hard=bool(req.get("hard")))}


async def _restore(provider: MemoryProvider, settings: Settings, user: str, req: Request) -> dict[str, Any]:
    memory_id = _str(req, "memory_id")
    memory = await provider.get(memory_id, user_id=user, include_deleted=True)
    if memory.deleted:
        memory = await provider.restore(memory_id, user_id=user)
    return {"memory": memory.to_dict()}


async def _supersede(provider: MemoryProvider, settings: Settings, user: str, req: Request) -> dict[str, Any]:
    from ..supersession.chain import supersede

    new = await supersede(provider, _str(req, "memory_id"), _str(req, "content"), user_id=user,
                          reason=str(req.get("reason") or "changed by hand"))
    return {"memory": new.to_dict()}


async def _close(provider: MemoryProvider, settings: Settings, user: str, req: Request) -> dict[str, Any]:
    from .closing import close

    status = _str(req, "status")
    memory = await close(provider, _str(req, "memory_id"), user_id=user, status=status,
                         reason=str(req.get("reason") or f"marked {status} by hand"))
    return {"memory": memory.to_dict()}


async def _resolve(provider: MemoryProvider, settings: Settings, user: str, req: Request) -> dict[str, Any]:
    from .contradictions import resolve

    contradiction_id = req.get("contradiction_id")
    if not isinstance(contradiction_id, int):
        raise InvalidMemory("resolve needs contradiction_id (a number)")
    note = req.get("note")
    conflict = await resolve(provider, contradiction_id, _str(req, "resolution"), user_id=user,
                             note=str(note) if note else None)
    return {"conflict": conflict.to_dict()}


async def _clear(provider: MemoryProvider, settings: Settings, user: str, req: Request) -> dict[str, Any]:
    from .clear import clear_all

    project = req.get("project")
    record = await clear_all(provider, settings.home, user, str(project) if project else None)
    return {"ids": list(record.ids)}


async def _undo(provider: MemoryProvider, settings: Settings, user: str, req: Request) -> dict[str, Any]:
    from .clear import undo_clear

    return {"ids": list((await undo_clear(provider, settings.home, user, settings.lifecycle)).ids)}


async def _forget_session(provider: MemoryProvider, settings: Settings, user: str, req: Request) -> dict[str, Any]:
    from .learned import forget_session

    return {"ids": list((await forget_session(provider, settings.home, user, _str(req, "session_id"))).ids)}


async def _prune(provider: MemoryProvider, settings: Settings, user: str, req: Request) -> dict[str, Any]:
    from .eviction import run_lifecycle

    report = await run_lifecycle(provider, user, settings.lifecycle, dry_run=bool(req.get("dry_run")))
    return {"report": report.to_dict()}


#: Every change by hand, by the name a ``store.run`` request gives.
OPERATIONS: dict[str, Operation] = {
    "edit": _edit, "pin": _pin, "unpin": _unpin, "forget": _forget, "restore": _restore,
    "supersede": _supersede, "close": _close, "resolve": _resolve, "clear": _clear, "undo": _undo,
    "prune": _prune, "forget_session": _forget_session,
}


async def run_request(provider: MemoryProvider, settings: Settings, req: Request) -> dict[str, Any]:
    """Run the ``store.run`` request ``req`` on ``provider`` (see the module docstring). Raises
    :class:`~dexai_memory.errors.DexaiMemoryError` for a bad request or what the store refuses."""
    name, user = req.get("name"), req.get("user_id")
    operation = OPERATIONS.get(name) if isinstance(name, str) else None
    if operation is None:
        raise InvalidMemory(f"unknown store operation {name!r} (known: {', '.join(sorted(OPERATIONS))})")
    if not isinstance(user, str) or not user:
        raise InvalidMemory(f"{name} needs a user_id")
    return await operation(provider, settings, user, req)
