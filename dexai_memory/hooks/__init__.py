"""The front end in the agent: Claude Code command hooks and Agent SDK callbacks.

Every hook event is handled once (:mod:`.events`); the front ends only
translate:

- :mod:`.command`: a Claude Code command hook, stdin JSON in, stdout JSON out
  (``python -m dexai_memory.hook_runtime EVENT``); talks to the daemon on its
  socket, or reads the store itself when no daemon answers.
- :mod:`.sdk`: Claude Agent SDK callbacks (:func:`memory_hooks`) on a daemon or
  provider in the same process.
- :mod:`.actions`: what the daemon does for a hook (recall, blocks, snapshots),
  also served on the daemon's socket.
- :mod:`.state`: per-session state files (identity, recent prompts, markers,
  transcript backups).
- :mod:`.flush`: drains the extraction queue inside a hook when no daemon runs.

This package's ``__init__`` imports nothing: a command hook pays only for what
it uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

__all__ = ["memory_hooks"]

if TYPE_CHECKING:  # pragma: no cover
    from .sdk import memory_hooks


__getattr__ = lazy_exports(__name__, {"memory_hooks": "sdk"})
