"""The front ends in the agent: they translate, the daemon's executor decides.

- :mod:`.client`: the plugin's command hook when ``curl`` cannot reach the daemon: starts
  it, waits within the event's budget, or queues the event for it to replay;
- :mod:`.sdk`: Claude Agent SDK callbacks (:func:`memory_hooks`) on a daemon in the same
  process, or over the socket.

This package's ``__init__`` imports nothing: a command hook pays only for what it uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

__all__ = ["memory_hooks"]

if TYPE_CHECKING:  # pragma: no cover
    from .sdk import memory_hooks


__getattr__ = lazy_exports(__name__, {"memory_hooks": "sdk"})
