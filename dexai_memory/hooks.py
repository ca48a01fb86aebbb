"""Memory hooks for the Claude Agent SDK (in-process callbacks)::

    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient
    from dexai_memory.hooks import memory_hooks

    options = ClaudeAgentOptions(hooks=memory_hooks(daemon, user_id="alice"))

``memory_hooks`` takes a running ``MemoryDaemon`` (its provider, queue and
flush are used), a started provider, or :class:`~dexai_memory.config.Settings`
(a native provider is opened on first use and turns go to the durable queue
file for a daemon to process).

=====================  =========================================================
event                  what the callback does
=====================  =========================================================
UserPromptSubmit       compaction marker set: re-inject the L1 block, clear it
                       (fallback); else auto-recall -> ``additionalContext``
SessionStart(compact)  re-inject the L1 block as ``additionalContext`` (primary)
PreCompact             back up the transcript (L3), flush the queue, store a
                       task snapshot, write the compaction marker
PostCompact            nothing to inject; logged
PostToolUse            enqueue the tool result when it passes the gate
Stop                   enqueue the turn (prompt + ``last_assistant_message``),
                       then flush/schedule consolidation when enough notes
=====================  =========================================================

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
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from claude_agent_sdk import HookMatcher

from . import hook_runtime as rt
from .config import Settings, load_settings
from .hook_ops import HookActions
from .models import Turn
from .providers.base import MemoryProvider

logger = logging.getLogger(__name__)

#: Seconds a hook callback may take before it gives up and answers ``{}``.
DEFAULT_TIMEOUT = 10.0
#: PreCompact may take longer: it flushes the extraction queue.
PRECOMPACT_TIMEOUT = 45.0

Callback = Any  # claude_agent_sdk.types.HookCallback (its input/output TypedDicts are unions)


class MemoryHooks:
    """The callbacks behind :func:`memory_hooks`; keep it to :meth:`aclose` an owned provider."""

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
        elif hasattr(source, "provider") and hasattr(source, "settings"):
            self.daemon = source
            self.settings = source.settings
        else:
            raise TypeError("memory_hooks() takes a MemoryDaemon, a MemoryProvider or Settings")
        self.user_id = user_id or rt.user_id_for()
        self.project = project
        self.timeout = timeout
        self._lock = asyncio.Lock()
        self._actions: HookActions | None = None
        self._background: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------------ plumbing
    async def actions(self) -> HookActions:
        if self._actions is None:
            async with self._lock:
                if self._actions is None:
                    if self.daemon is not None:
                        from .hook_ops import actions_for_daemon

                        self._actions = actions_for_daemon(self.daemon)
                    else:
                        if self._provider is None:
                            from .providers.native import NativeProvider

                            self._provider = NativeProvider.from_settings(self.settings)
                            await self._provider.start()
                            self._owned = True
                        self._actions = HookActions(self.settings, self._provider)
        return self._actions

    async def aclose(self) -> None:
        """Close the provider opened by these hooks (not a daemon's or a given one)."""
        if self._owned and self._provider is not None:
            await self._provider.aclose()
            self._provider, self._actions, self._owned = None, None, False

    def _payload(self, data: Any) -> dict[str, Any]:
        return dict(data) if isinstance(data, Mapping) else {}

    async def _submit(self, payload: dict[str, Any], *, kind: str, role: str, text: str,
                      context: list[str] | None = None, turn_id: str | None = None,
                      metadata: dict[str, Any] | None = None) -> None:
        """Gate ``text`` and hand it to the daemon's queue (or the queue file)."""
        if self.daemon is not None and hasattr(self.daemon, "submit_turn"):
            # The daemon redacts and gates the turn itself (and keeps the recent turns for novelty).
            turn = Turn(id=turn_id or rt._turn_id(payload.get("session_id"), kind, text), user_id=self.user_id,
                        content=text, role=role, session_id=payload.get("session_id"),
                        project=os.path.basename(rt.project_dir(payload).rstrip("/")) or None,
                        metadata={"source": f"agent-sdk:{kind}", **(metadata or {})})
            result = self.daemon.submit_turn(turn)
            if asyncio.iscoroutine(result):
                await result
            return
        await asyncio.to_thread(rt.enqueue, self.settings, payload, kind=kind, role=role, text=text,
                                context=context or [], turn_id=turn_id, user_id=self.user_id, metadata=metadata)

    def _wrap(self, event: str, fn: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
              timeout: float) -> Callback:
        async def callback(input_data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
            payload = self._payload(input_data)
            off = rt.memory_disabled(self.settings, payload)
            if off:
                return {}
            try:
                return await asyncio.wait_for(fn(payload), timeout)
            except TimeoutError:
                logger.warning("%s memory hook timed out after %ss; continuing without it", event, timeout)
            except asyncio.CancelledError:
                raise
            except Exception:  # a hook never fails the agent: log and answer a no-op
                logger.exception("%s memory hook failed; continuing without it", event)
            return {}

        callback.__name__ = f"dexai_memory_{event}"
        return callback

    # ------------------------------------------------------------------ events
    async def user_prompt_submit(self, payload: dict[str, Any]) -> dict[str, Any]:
        sid = payload.get("session_id")
        prompt = str(payload.get("prompt") or "")
        recent = await asyncio.to_thread(rt.recent_texts, payload)
        act = await self.actions()
        marker = await asyncio.to_thread(rt.read_marker, self.settings, sid)
        if marker is not None:
            block = await act.l1(user_id=self.user_id, query=rt.reinjection_query(marker, {}, prompt), recent=recent,
                                 project=self.project, session_id=sid, snapshot=marker.get("snapshot"),
                                 after_compaction=True)
            rt.remember_injected(self.settings, sid, [m.id for m in block.memories], reset=True, prompt=prompt,
                                 prompt_id=payload.get("prompt_id"))
            rt.clear_marker(self.settings, sid)
            return rt._context_output("UserPromptSubmit", block.text)
        state = rt.load_session(self.settings, sid)
        result = await act.recall(user_id=self.user_id, prompt=prompt, recent=recent, project=self.project,
                                  exclude_ids=[str(i) for i in state.get("injected") or []])
        rt.remember_injected(self.settings, sid, result.memory_ids, prompt=prompt, prompt_id=payload.get("prompt_id"))
        return rt._context_output("UserPromptSubmit", result.text)

    async def session_start(self, payload: dict[str, Any]) -> dict[str, Any]:
        sid = payload.get("session_id")
        source = payload.get("source") or "startup"
        act = await self.actions()
        if source == "compact":
            marker = rt.read_marker(self.settings, sid) or {}
            query = rt.reinjection_query(marker, rt.load_session(self.settings, sid))
            block = await act.l1(user_id=self.user_id, query=query, project=self.project, session_id=sid,
                                 snapshot=marker.get("snapshot"), after_compaction=True)
            rt.remember_injected(self.settings, sid, [m.id for m in block.memories], reset=True)
            rt.clear_marker(self.settings, sid)
        else:
            block = await act.l1(user_id=self.user_id, project=self.project, session_id=sid)
            rt.remember_injected(self.settings, sid, [m.id for m in block.memories], reset=source != "resume")
        return rt._context_output("SessionStart", block.text)

    async def pre_compact(self, payload: dict[str, Any]) -> dict[str, Any]:
        sid = payload.get("session_id")
        messages = await asyncio.to_thread(rt.read_transcript, payload.get("transcript_path"))
        snapshot = rt.snapshot_text(messages)
        last_prompt = next((t for r, t in reversed(messages) if r == "user"), None) \
            or rt.load_session(self.settings, sid).get("last_prompt")
        backup = None
        try:
            backup = await asyncio.to_thread(rt.backup_transcript, self.settings, payload)
        except OSError:
            logger.exception("transcript backup failed")
        # The marker first: whatever happens next, the block is re-injected after compaction.
        rt.write_marker(self.settings, sid, {"trigger": payload.get("trigger"), "snapshot": snapshot,
                                             "last_prompt": last_prompt, "recent_prompts": rt.recent_prompts(messages),
                                             "transcript_backup": str(backup) if backup else None})
        act = await self.actions()
        await act.pre_compact(user_id=self.user_id, session_id=sid, snapshot=snapshot,
                              trigger=payload.get("trigger"), transcript_backup=str(backup) if backup else None,
                              project=self.project)
        return {}

    async def post_compact(self, payload: dict[str, Any]) -> dict[str, Any]:
        logger.info("compaction done (%s) in session %s", payload.get("trigger"), payload.get("session_id"))
        return {}

    async def post_tool_use(self, payload: dict[str, Any]) -> dict[str, Any]:
        response = payload.get("tool_response")
        text = response if isinstance(response, str) else rt._text_of(response) if isinstance(response, list) else ""
        if not text and isinstance(response, Mapping):
            text = str(response.get("stdout") or response.get("content") or response.get("result") or "")
        if text:
            tool = str(payload.get("tool_name") or "tool")
            await self._submit(payload, kind=f"tool-{payload.get('tool_use_id') or tool}", role="tool",
                               text=text[:rt.MAX_TOOL_TEXT], metadata={"tool": tool})
        return {}

    async def stop(self, payload: dict[str, Any]) -> dict[str, Any]:
        sid = payload.get("session_id")
        state = rt.load_session(self.settings, sid)
        prompt = str(state.get("last_prompt") or "")
        if prompt and state.get("queued_prompt") != prompt:
            await self._submit(payload, kind="user", role="user", text=prompt,
                               turn_id=f"{rt._safe(sid)}:user:{state['prompt_id']}" if state.get("prompt_id") else None)
            state["queued_prompt"] = prompt
            rt.save_session(self.settings, sid, state)
        message = str(payload.get("last_assistant_message") or "")
        if message:
            await self._submit(payload, kind="assistant", role="assistant", text=message,
                               context=[prompt] if prompt else [])
        if self.daemon is not None:
            act = await self.actions()
            # Fire and forget: consolidation bookkeeping must not delay the reply.
            task = asyncio.get_running_loop().create_task(act.session_end(user_id=self.user_id, session_id=sid))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        return {}

    # ------------------------------------------------------------------ the dict
    def as_dict(self) -> dict[str, list[HookMatcher]]:
        t = self.timeout
        return {
            "UserPromptSubmit": [HookMatcher(hooks=[self._wrap("UserPromptSubmit", self.user_prompt_submit, t)],
                                             timeout=t + 5)],
            "SessionStart": [HookMatcher(hooks=[self._wrap("SessionStart", self.session_start, t)], timeout=t + 5)],
            "PreCompact": [HookMatcher(hooks=[self._wrap("PreCompact", self.pre_compact, PRECOMPACT_TIMEOUT)],
                                       timeout=PRECOMPACT_TIMEOUT + 5)],
            "PostCompact": [HookMatcher(hooks=[self._wrap("PostCompact", self.post_compact, t)], timeout=t + 5)],
            "PostToolUse": [HookMatcher(hooks=[self._wrap("PostToolUse", self.post_tool_use, t)], timeout=t + 5)],
            "Stop": [HookMatcher(hooks=[self._wrap("Stop", self.stop, t)], timeout=t + 5)],
        }


def memory_hooks(daemon_or_settings: Any = None, *, user_id: str | None = None, project: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, settings: Settings | None = None) -> dict[str, list[HookMatcher]]:
    """The hooks dict for ``ClaudeAgentOptions(hooks=...)``.

    ``daemon_or_settings``: a ``MemoryDaemon``, a started ``MemoryProvider``
    (with ``settings=`` for its data directory; default: loaded from
    ``$DEXAI_MEMORY_HOME``), ``Settings``, or None (settings loaded from the
    default data directory). ``user_id`` defaults to ``$DEXAI_MEMORY_USER`` or
    ``$USER``; ``project`` scopes recall (default: all of the user's memories).
    Merge with your own hooks by extending the lists per event.
    """
    source = daemon_or_settings if daemon_or_settings is not None else (settings or load_settings())
    return MemoryHooks(source, user_id=user_id, project=project, timeout=timeout, settings=settings).as_dict()
