"""The memory daemon and its wiring: the one place that decides.

- :mod:`.core`: :class:`MemoryDaemon`, the queue worker, the schedule, the health monitor;
- :mod:`.executor`: the one event executor every door calls (hook events, recall);
- :mod:`.event`: a hook event, frozen and normalised; :mod:`.session_state` and
  :mod:`.prefetch_items`: the per-session state the events keep; :mod:`.actions`: what
  the events do on the store;
- :mod:`.ipc` (the Unix socket: JSON lines, and one HTTP hook event for ``curl``),
  :mod:`.ops` (the operations served on it), :mod:`.http_hooks` (the opt-in http hooks);
- :mod:`.serve`: ``dexai daemon``'s run (lock, signals, idle exit, the servers);
  :mod:`.control`: start, stop, status and the lock, from other processes.

This ``__init__`` imports nothing: the command hook's client imports the socket client and
the event from here and must not pay for the daemon.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

__all__ = ["DaemonState", "MemoryDaemon"]

if TYPE_CHECKING:  # pragma: no cover
    from .core import DaemonState, MemoryDaemon

__getattr__ = lazy_exports(__name__, {"MemoryDaemon": "core", "DaemonState": "core"})
