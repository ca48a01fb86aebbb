"""Memory hooks for the Claude Agent SDK (in-process callbacks)::

    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient
    from dexai_memory.hooks.sdk import memory_hooks

    options = ClaudeAgentOptions(hooks=memory_hooks(daemon, user_id="alice"))

A callback only translates: the SDK's hook input becomes a
:class:`~dexai_memory.daemon.event.HookEvent` and the daemon's executor
(:mod:`dexai_memory.daemon.executor`, the same one behind the plugin's command
hooks) answers it. ``memory_hooks`` takes:

* a running ``MemoryDaemon`` in this process: its executor answers, on this event loop;
* a started provider: a ``MemoryDaemon`` on it is started in this process at the
  first callback (no socket, no schedule) and answers the same way; stop it with
  :meth:`MemoryHooks.aclose`;
* :class:`~dexai_memory.config.Settings` (or nothing): the daemon of that data directory
  over its socket, started when none answers, exactly as the plugin's hooks do.

Facts (claude-agent-sdk 0.2.18x): callbacks never fire for SessionStart at
startup/resume nor for SessionEnd - use the plugin's command hooks (or
``ClaudeAgentOptions(settings=...)``) for those. PreCompact, PostCompact and
SessionEnd output may not carry ``hookSpecificOutput``, so those callbacks
return ``{}``.

A callback never fails the agent: any internal error or timeout is logged and
the callback returns ``{}`` (accepted turns are already committed to the queue).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from ..config import Settings, load_settings
from ..daemon.event import HookEvent
from ..daemon.session_state import user_id_for
from ..lazy import needs_extra
from ..providers.base import MemoryProvider

with needs_extra("sdk", "the Agent SDK hooks (dexai_memory.hooks.sdk)"):
    from claude_agent_sdk import HookMatcher

logger = logging.getLogger(__name__)

#: Seconds a hook callback may take before it gives up and answers ``{}``.
DEFAULT_TIMEOUT = 10.0
#: PreCompact may take longer: it flushes the extraction queue.
PRECOMPACT_TIMEOUT = 45.0

Callback = Any  # claude_agent_sdk.types.HookCallback (its input/output TypedDicts are unions)

#: SDK hook events this module answers (PostToolUseFailure runs post-tool-use: the prefetch for a
#: failing command).
SDK_EVENTS = ("UserPromptSubmit", "SessionStart", "PreCompact", "PostCompact", "PostToolUse",
              "PostToolUseFailure", "Stop")


class MemoryHooks:
    """The callbacks behind :func:`memory_hooks`; keep it to :meth:`aclose` a daemon it started."""

    def __init__(self, source: Any, *, user_id: str | None = None, project: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, settings: Settings | None = None):
        self.daemon: Any = None
        self._provider: MemoryProvider | None = None
        self._owned = False
        if isinstance(source, Settings):
            self.settings = source
        elif isinstance(source, MemoryProvider):
            self.settings = settings or load_settings()
            self._provider = source
        elif hasattr(source, "executor") and hasattr(source, "settings"):
            self.daemon = source
            self.settings = source.settings
        else:
            raise TypeError("memory_hooks() takes a MemoryDaemon, a MemoryProvider or Settings")
        self.user_id = user_id or user_id_for()
        self.project = project
        self.timeout = timeout
        self._starting: asyncio.Lock | None = None

    async def _local_daemon(self) -> Any:
        """The daemon answering in this process (started on the provider at first use), or None
        when events go over the socket."""
        if self.daemon is not None or self._provider is None:
            return self.daemon
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self.daemon is None:
                from ..daemon.core import MemoryDaemon

                daemon = MemoryDaemon(self.settings, self._provider, schedule=False)
                await daemon.start()
                self.daemon, self._owned = daemon, True
        return self.daemon

    async def answer(self, event: HookEvent) -> dict[str, Any] | str:
        """The executor's answer to ``event`` (in this process, or over the socket)."""
        daemon = await self._local_daemon()
        if daemon is not None:
            return await daemon.executor.handle(event)
        from .client import deliver

        return await asyncio.to_thread(deliver, self.settings, event)

    async def aclose(self) -> None:
        """Stop the daemon :func:`memory_hooks` started on a provider (the provider stays open)."""
        if self._owned and self.daemon is not None:
            await self.daemon.stop()
            self.daemon, self._owned = None, False

    def _wrap(self, sdk_event: str, timeout: float) -> Callback:
        async def callback(input_data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
            payload = dict(input_data) if isinstance(input_data, Mapping) else {}
            try:
                event = HookEvent.make(sdk_event, payload, source="agent-sdk", user=self.user_id,
                                       scope=self.project)
                answer = await asyncio.wait_for(self.answer(event), timeout)
            except TimeoutError:
                logger.warning("%s memory hook timed out after %ss; continuing without it", sdk_event, timeout)
                return {}
            except Exception:  # a hook never fails the agent: log and answer a no-op
                logger.exception("%s memory hook failed; continuing without it", sdk_event)
                return {}
            return answer if isinstance(answer, dict) else {}  # PreCompact's text is for command hooks

        callback.__name__ = f"dexai_memory_{sdk_event}"
        return callback

    def as_dict(self) -> dict[str, list[HookMatcher]]:
        """The hooks dict for ``ClaudeAgentOptions(hooks=...)``."""
        out = {}
        for sdk_event in SDK_EVENTS:
            t = PRECOMPACT_TIMEOUT if sdk_event == "PreCompact" else self.timeout
            out[sdk_event] = [HookMatcher(hooks=[self._wrap(sdk_event, t)], timeout=t + 5)]
        return out


def memory_hooks(daemon_or_settings: Any = None, *, user_id: str | None = None, project: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, settings: Settings | None = None) -> dict[str, list[HookMatcher]]:
    """The hooks dict for ``ClaudeAgentOptions(hooks=...)``.

    ``daemon_or_settings``: a ``MemoryDaemon``, a started ``MemoryProvider``
    (with ``settings=`` for its data directory; default: loaded from
    ``$DEXAI_MEMORY_HOME``), ``Settings``, or None (settings loaded from the
    default data directory). ``user_id`` defaults to ``$DEXAI_MEMORY_USER`` or
    ``$USER``; ``project`` scopes recall (default: all of the user's memories)
    and is the project captured turns are stored under (default: the git root
    or directory of the session). Merge with your own hooks by extending the
    lists per event. To stop a daemon started on a provider, build
    :class:`MemoryHooks` yourself and call its :meth:`~MemoryHooks.aclose`.
    """
    source = daemon_or_settings if daemon_or_settings is not None else (settings or load_settings())
    return MemoryHooks(source, user_id=user_id, project=project, timeout=timeout, settings=settings).as_dict()
