"""The recent turns of each session the daemon admitted: the gate's context on the plugin path.

The hooks send one turn at a time (a prompt, then the reply, at Stop), so the daemon keeps
what each session said last: the gate scores a turn's entity novelty against it (a name, path
or identifier no recent turn mentions scores higher, :mod:`dexai_memory.extraction.signals`),
and the divergence signal (:mod:`.divergence`) compares the turn's meaning with it.

Bounded: :data:`~dexai_memory.pipeline.RECENT_TURNS` turns a session, :data:`MAX_SESSIONS`
sessions (the least recently used goes first), and a session is forgotten at its SessionEnd.
Thread-safe: the daemon admits turns from worker threads. The texts are the redacted turns.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterable

#: Sessions whose recent turns are kept at once (a long-running daemon serves many sessions).
MAX_SESSIONS = 256
#: Turns kept per session (the pipeline's context window: the same five).
PER_SESSION = 5

Key = tuple[str, str | None]


class RecentTurns:
    """Per (user, session): the last ``per_session`` turn texts, oldest first."""

    def __init__(self, per_session: int = PER_SESSION, sessions: int = MAX_SESSIONS):
        self.per_session = per_session
        self.sessions = sessions
        self._turns: collections.OrderedDict[Key, collections.deque[str]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def _session(self, key: Key) -> collections.deque[str]:
        turns = self._turns.get(key)
        if turns is None:
            turns = self._turns[key] = collections.deque(maxlen=self.per_session)
            while len(self._turns) > self.sessions:
                self._turns.popitem(last=False)
        else:
            self._turns.move_to_end(key)
        return turns

    def extend(self, key: Key, texts: Iterable[str]) -> tuple[str, ...]:
        """Add ``texts`` (turns of the session the daemon did not see) and return the session's
        recent turns, oldest first."""
        with self._lock:
            turns = self._session(key)
            turns.extend(texts)
            return tuple(turns)

    def append(self, key: Key, text: str) -> None:
        """Add the turn just admitted."""
        with self._lock:
            self._session(key).append(text)

    def forget(self, key: Key) -> None:
        """Drop a session's turns (it ended)."""
        with self._lock:
            self._turns.pop(key, None)

    def __len__(self) -> int:
        """Sessions held."""
        return len(self._turns)
