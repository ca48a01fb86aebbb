"""One hook event, frozen and normalised: what every front end hands to the executor.

A front end (the command hook's ``curl`` or Python client, an http hook, an Agent SDK
callback) turns its input into a :class:`HookEvent` and adds nothing of its own: the
event's name (a key of :data:`~dexai_memory.daemon.session_state.EVENTS`), the hook's JSON
input as Claude Code sent it, and the few variables of the hook's environment that decide
who and where (:data:`~dexai_memory.daemon.session_state.HOOK_ENV`: the daemon's own
environment is not the session's).

Stdlib only: the command hook's client builds events too.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .session_state import EVENTS, hook_env, project_for, user_id_for

#: The names Claude Code and the Agent SDK give the events, to ours.
EVENT_NAMES = {v: k for k, v in EVENTS.items()} | {"PostToolUseFailure": "post-tool-use"}


class BadEvent(ValueError):
    """A request that is not a hook event (unknown name, input not a JSON object)."""


@dataclass(frozen=True, slots=True)
class HookEvent:
    """One hook event. ``payload``: the hook's JSON input (a session id is filled in when it has
    none); ``env``: the hook's identity variables; ``background``: an async hook (nobody waits
    for the answer); ``received``: wall-clock time the front end got it (an async Stop queues
    the prompts submitted before it); ``replayed``: queued while no daemon answered and run
    later, so nobody reads the answer."""

    name: str
    payload: Mapping[str, Any]
    env: Mapping[str, str] = field(default_factory=dict)
    source: str = "claude-code"
    background: bool = False
    received: float = field(default_factory=time.time)
    replayed: bool = False
    #: Who and where for front ends that know them already (Agent SDK: ``memory_hooks(user_id=...)``);
    #: None: from ``env``.
    user: str | None = None
    scope: str | None = None

    @property
    def user_id(self) -> str:
        return self.user or user_id_for(self.env)

    @property
    def project(self) -> str | None:
        """Recall scope (None: all of the user's memories)."""
        return self.scope or project_for(self.env)

    @property
    def session_id(self) -> str:
        return str(self.payload.get("session_id"))

    @classmethod
    def make(cls, name: str, payload: Any, *, env: Mapping[str, str] | None = None, **extra: Any) -> HookEvent:
        """Normalise: ``name`` in our form or Claude Code's (``UserPromptSubmit``), ``payload`` a
        JSON object (raises :class:`BadEvent` otherwise), ``env`` this process's when None."""
        event = EVENT_NAMES.get(name, name)
        if event not in EVENTS:
            raise BadEvent(f"unknown hook event {name!r}")
        if not isinstance(payload, Mapping):
            raise BadEvent("the hook input must be a JSON object")
        environ = hook_env() if env is None else {k: str(v) for k, v in env.items()}
        data = dict(payload)
        if not data.get("session_id"):
            # state files are per session: without an id, keep one user's state from another's
            data["session_id"] = f"no-session-{extra.get('user') or user_id_for(environ)}"
        return cls(event, data, environ, **extra)

    def to_json(self) -> dict[str, Any]:
        """The event as the socket's ``hook.event`` request carries it (:meth:`from_json`)."""
        return {"event": self.name, "payload": dict(self.payload), "env": dict(self.env), "source": self.source,
                "background": self.background, "received": self.received, "user": self.user,
                "scope": self.scope}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, replayed: bool = False) -> HookEvent:
        env = data.get("env")
        received = data.get("received")
        return cls.make(str(data.get("event") or ""), data.get("payload"),
                        env=env if isinstance(env, Mapping) else {},
                        source=str(data.get("source") or "claude-code"), background=bool(data.get("background")),
                        received=float(received) if isinstance(received, int | float) else time.time(),
                        replayed=replayed, user=data.get("user") or None, scope=data.get("scope") or None)


def empty_answer(event: str) -> dict[str, Any] | str:
    """The no-op answer of ``event`` (PreCompact answers plain text, so its no-op is "")."""
    return "" if event == "pre-compact" else {}
