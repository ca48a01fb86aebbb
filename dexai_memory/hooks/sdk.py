"""Memory hooks for the Claude Agent SDK (in-process callbacks)::

    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient
    from dexai_memory.hooks.sdk import memory_hooks

    options = ClaudeAgentOptions(hooks=memory_hooks(daemon, user_id="alice"))

The callbacks run the same events as the plugin's command hooks
(:mod:`dexai_memory.hooks.events`: one implementation for both); only the
backend differs. ``memory_hooks`` takes:

* a running ``MemoryDaemon``: recall and blocks from its provider, turns to
  its queue (redacted, then gated, by :func:`dexai_memory.capture.admit.admit`),
  PreCompact flushes its queue;
* a started provider: recall and blocks from it; turns go (admitted the same
  way) to the durable queue file and are extracted in process (offline extractor) in the background
  after each turn (Stop does not wait for it) and at PreCompact;
* :class:`~dexai_memory.config.Settings` (or nothing): exactly what the
  plugin's command hooks do (the daemon over its socket, started when none
  answers; keyword recall and inline extraction without it).

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
from collections.abc import Awaitable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from claude_agent_sdk import HookMatcher

from ..config import Settings, load_settings
from ..models import Turn
from ..providers.base import MemoryProvider
from .actions import HookActions, actions_for_daemon
from .events import Block, HookBackend, HookContext, handle
from .state import user_id_for

logger = logging.getLogger(__name__)

#: Seconds a hook callback may take before it gives up and answers ``{}``.
DEFAULT_TIMEOUT = 10.0
#: PreCompact may take longer: it flushes the extraction queue.
PRECOMPACT_TIMEOUT = 45.0

Callback = Any  # claude_agent_sdk.types.HookCallback (its input/output TypedDicts are unions)
T = TypeVar("T")

#: SDK hook event -> the shared event name (:data:`dexai_memory.hooks.state.EVENTS`).
SDK_EVENTS = {
    "UserPromptSubmit": "user-prompt-submit",
    "SessionStart": "session-start",
    "PreCompact": "pre-compact",
    "PostCompact": "post-compact",
    "PostToolUse": "post-tool-use",
    "PostToolUseFailure": "post-tool-use",  # the prefetch for a failing command (dexai_memory.hooks.prefetch)
    "Stop": "stop",
}


class InProcessBackend(HookBackend):
    """The events' work on a running ``MemoryDaemon`` or a started provider in this process.

    The events run in a worker thread (they are synchronous, shared with the
    command hooks); each call here runs its coroutine on the caller's event loop.
    """

    def __init__(self, settings: Settings, loop: asyncio.AbstractEventLoop, *, daemon: Any = None,
                 provider: MemoryProvider | None = None, timeout: float = PRECOMPACT_TIMEOUT):
        self.settings = settings
        self.loop = loop
        self.daemon = daemon
        self.timeout = timeout
        if daemon is not None:
            self.actions = actions_for_daemon(daemon)
        else:
            assert provider is not None
            self.actions = HookActions(settings, provider, flush=self._drain)

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(self.timeout)

    async def _drain(self) -> bool:
        from .flush import drain_queue

        out = await drain_queue(self.settings, self.actions.provider, self.settings.hooks.inline_flush_seconds)
        return bool(out.get("flushed"))

    def l1(self, *, user_id: str, query: str | None, recent: Sequence[str], project: str | None,
           session_id: str | None, snapshot: str | None, after_compaction: bool) -> Block:
        block = self._call(self.actions.l1(user_id=user_id, query=query, recent=recent, project=project,
                                           session_id=session_id, snapshot=snapshot,
                                           after_compaction=after_compaction))
        return Block(block.text, tuple(m.id for m in block.memories))

    def recall(self, *, user_id: str, prompt: str, recent: Sequence[str], project: str | None,
               exclude_ids: Sequence[str]) -> Block:
        result = self._call(self.actions.recall(user_id=user_id, prompt=prompt, recent=recent, project=project,
                                                exclude_ids=exclude_ids))
        return Block(result.text, tuple(result.memory_ids))

    def submit(self, turn: dict[str, Any], context: Sequence[str]) -> bool:
        if self.daemon is not None and hasattr(self.daemon, "submit_turn"):
            async def submit() -> bool:
                # the daemon admits the turn itself: capture.admit (and keeps the recent turns for novelty)
                result = self.daemon.submit_turn(Turn.from_dict(turn))
                if isinstance(result, Awaitable):
                    result = await result
                return bool(getattr(result, "passed", result))

            return self._call(submit())
        from .command import queue_turn

        return queue_turn(self.settings, turn, context)

    def pre_compact(self, *, user_id: str, session_id: str | None, snapshot: str | None, trigger: str | None,
                    transcript_backup: str | None, project: str | None) -> dict[str, Any]:
        return self._call(self.actions.pre_compact(user_id=user_id, session_id=session_id, snapshot=snapshot,
                                                   trigger=trigger, transcript_backup=transcript_backup,
                                                   project=project))

    def turn_end(self, *, user_id: str, session_id: str | None, reply: str = "",
                 injected: Sequence[str] = ()) -> None:
        # fire and forget, so the reply never waits: the daemon's end-of-turn bookkeeping
        # (consolidation when due), or extraction of the queued turns on the provider
        if reply and injected:
            asyncio.run_coroutine_threadsafe(self.actions.record_usage(
                user_id=user_id, session_id=session_id, reply=reply, injected=injected), self.loop)
        if self.daemon is not None:
            asyncio.run_coroutine_threadsafe(self.actions.session_end(user_id=user_id, session_id=session_id),
                                             self.loop)
        else:
            asyncio.run_coroutine_threadsafe(self._drain(), self.loop)

    def session_end(self, *, user_id: str, session_id: str | None) -> dict[str, Any]:
        return self._call(self.actions.session_end(user_id=user_id, session_id=session_id))

    def prefetch(self, *, user_id: str, items: Sequence[Any], project: str | None, local: str | None,
                 exclude_ids: Sequence[str], max_tokens: int, max_items: int) -> Block:
        result = self._call(self.actions.prefetch(user_id=user_id, items=items, project=project, local=local,
                                                  exclude_ids=exclude_ids, max_tokens=max_tokens,
                                                  max_items=max_items))
        return Block(result.text, result.memory_ids)

    def episode(self, *, user_id: str, episode: dict[str, Any], project: str | None) -> dict[str, Any]:
        from ..capture.episodes import Episode

        return self._call(self.actions.episode(user_id=user_id, episode=Episode.from_dict(episode), project=project))


class MemoryHooks:
    """The callbacks behind :func:`memory_hooks`; keep it to :meth:`aclose` an owned provider."""

    def __init__(self, source: Any, *, user_id: str | None = None, project: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, settings: Settings | None = None):
        self.daemon: Any = None
        self._provider: MemoryProvider | None = None
        if isinstance(source, Settings):
            self.settings = source
        elif isinstance(source, MemoryProvider):
            self.settings = settings or load_settings()
            self._provider = source
        elif hasattr(source, "provider") and hasattr(source, "settings"):
            self.daemon = source
            self.settings = source.settings
        else:
            raise TypeError("memory_hooks() takes a MemoryDaemon, a MemoryProvider or Settings")
        self.user_id = user_id or user_id_for()
        self.project = project
        self.timeout = timeout
        self._context: HookContext | None = None

    def context(self) -> HookContext:
        """The hook context (built on first use, on the running event loop)."""
        if self._context is None:
            backend: HookBackend
            if self.daemon is None and self._provider is None:
                from .command import CommandBackend

                backend = CommandBackend(self.settings)
            else:
                backend = InProcessBackend(self.settings, asyncio.get_running_loop(), daemon=self.daemon,
                                           provider=self._provider)
            self._context = HookContext(settings=self.settings, backend=backend, user_id=self.user_id,
                                        project=self.project, source="agent-sdk")
        return self._context

    async def aclose(self) -> None:
        """Nothing to close: kept for callers of earlier versions."""

    def _wrap(self, sdk_event: str, timeout: float) -> Callback:
        event = SDK_EVENTS[sdk_event]

        async def callback(input_data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
            payload = dict(input_data) if isinstance(input_data, Mapping) else {}
            try:
                ctx = self.context()
                answer = await asyncio.wait_for(asyncio.to_thread(handle, event, payload, ctx), timeout)
            except TimeoutError:
                logger.warning("%s memory hook timed out after %ss; continuing without it", sdk_event, timeout)
                return {}
            except asyncio.CancelledError:
                raise
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
    lists per event.
    """
    source = daemon_or_settings if daemon_or_settings is not None else (settings or load_settings())
    return MemoryHooks(source, user_id=user_id, project=project, timeout=timeout, settings=settings).as_dict()
