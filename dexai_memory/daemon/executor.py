"""The one event executor: a :class:`~dexai_memory.daemon.event.HookEvent` in, one answer out.

Every front end only translates and calls :meth:`EventExecutor.handle` in the daemon: the
plugin's command hook (``curl`` on the daemon's socket, or the Python client), the opt-in
http hooks, and the Agent SDK callbacks. The same executor answers ``recall`` for the CLI,
the MCP ``recall`` tool and the panel's API (:meth:`EventExecutor.recall`), so every door
shows the same block for the same prompt and store.

What each event does
====================
``session-start``
    startup/resume/clear: inject the L1 block (profile, commitments due soon, last session state;
    once, on a new store, the offer to learn past sessions); resume skips it when everything in it
    is still in the conversation. compact: re-inject the post-compaction block (filled by priority;
    the last prompts and the task snapshot kept in the compaction marker, and the user's
    ``/compact <instructions>`` quoted after it) and clear it.
``user-prompt-submit``
    The prompt is recorded first (redacted, for Stop to queue), so a failing recall loses nothing.
    Marker still set (SessionStart(compact) did not run): re-inject and clear it. Otherwise
    auto-recall for the prompt, plus a reflection hint when the prompt is a correction, a
    preference or an explicit request.
``pre-compact``
    Back up the transcript, store a task snapshot, write the compaction marker, get every queued
    turn extracted before the summary replaces the conversation, and record the stretch since the
    last compaction as an episode; answers the compaction instructions (plain text).
``post-tool-use``
    Queue the tool result for extraction when it passes the gate, and answer with what is known
    about the file, failing command or branch the tool touched (PostToolUseFailure: the prefetch only).
``stop``
    Queue the turn (the prompts recorded by UserPromptSubmit, and the reply). Safe async: an async
    Stop queues only the prompts received before it, SessionEnd catches up a turn whose Stop never came.
    Count what the reply used of the injected memories (citations), and what it did not use of its
    prompt's recall block (ignores: :mod:`dexai_memory.lifecycle.usage`).
``session-end``
    Catch up the last turn; store the final working-state snapshot (the next session's "last
    session state"); record the episode; get the queue extracted; schedule consolidation when
    enough new notes accumulated; drop the session's state file and its recent turns.

An event replayed from the durable queue (it came while no daemon answered) does its
capture and bookkeeping; its answer is read by nobody, so it skips recall.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import DexaiMemoryError
from ..limits import clip_strings
from ..models import Turn, utcnow
from ..recall.ranking import RecallResult, auto_recall
from ..recall.reinjection import (
    MAX_COMPACT_INSTRUCTIONS,
    reinjection_query,
    with_compact_instructions,
)
from .actions import HookActions
from .catch_up import TranscriptPrompt, missing_prompts, prompt_key, prompt_text, transcript_prompts
from .event import HookEvent, empty_answer
from .history_offer import history_offer
from .session_state import (
    AWAITING,
    MAX_TOOL_TEXT,
    backup_transcript,
    clear_marker,
    compaction_instructions,
    forget_pending,
    load_session,
    memory_disabled,
    pending_prompts,
    project_key,
    prune_state,
    read_marker,
    read_transcript,
    recent_prompts,
    recent_texts,
    redact_for_state,
    remember_injected,
    safe_id,
    session_file,
    snapshot_text,
    text_of,
    transcript_file,
    turn_id,
    write_marker,
)

if TYPE_CHECKING:
    from ..capture.gate import GateResult
    from ..capture.queue import ExtractionQueue
    from ..capture.recent import RecentTurns
    from ..config import Settings
    from ..providers.base import MemoryProvider

logger = logging.getLogger(__name__)

#: Session state key: the session's block (SessionStart's, or the first prompt's) was injected.
STARTED = "started"
#: Session state key: when the session's first block was injected (what the user says later:
#: recall.standing; after a compaction, what the new block left out of it is offered again).
BLOCK_AT = "block_at"
#: Our own memory tools (plugin MCP server, Agent SDK server): their results are memory already.
OWN_TOOL_PREFIXES = ("mcp__plugin_dexai-memory_", "mcp__dexai_memory__")


def context_output(event: str, text: str) -> dict[str, Any]:
    """A hook answer that adds ``text`` to the model's context ({} when there is nothing)."""
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}} if text else {}


class Host(Protocol):
    """What the executor uses of the daemon that owns it (:class:`~dexai_memory.daemon.core.MemoryDaemon`)."""

    settings: Settings
    queue: ExtractionQueue
    write_lock: asyncio.Lock
    recent: RecentTurns

    @property
    def provider(self) -> MemoryProvider: ...

    def submit_turn(self, turn: Turn) -> GateResult: ...

    async def flush(self, timeout: float | None = ...) -> bool: ...  # noqa: ASYNC109 - the daemon's API

    def schedule_consolidation(self, user_id: str) -> bool: ...

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str | None = None) -> asyncio.Task[Any]: ...



class EventExecutor:
    """Runs hook events and recall on a running daemon (its provider, queue and write lock)."""

    def __init__(self, daemon: Host):
        self.daemon = daemon
        self._model: asyncio.Task[Any] | None = None
        #: Sessions whose prompts all reached the queue as far as this daemon knows: the first
        #: Stop of a session (since this daemon started) and the first after a failed event
        #: catch up from the transcript (:mod:`.catch_up`).
        self._caught_up: set[str] = set()

    @property
    def settings(self) -> Settings:
        return self.daemon.settings

    @functools.cached_property
    def actions(self) -> HookActions:
        """What the events do on the store, bound to the daemon (built once, after its start)."""
        daemon = self.daemon
        return HookActions(daemon.settings, daemon.provider, flush=daemon.flush,
                           schedule_consolidation=daemon.schedule_consolidation, spawn=daemon.spawn,
                           write_lock=daemon.write_lock)

    # ------------------------------------------------------------------ the doors' entry points
    async def handle(self, event: HookEvent) -> dict[str, Any] | str:
        """Run ``event``; returns the JSON object to answer (PreCompact: the compaction
        instructions, plain text). Raises what the store raises: the door answers a no-op."""
        event = dataclasses.replace(event, payload=clip_strings(event.payload, self.settings.limits.max_turn_chars))
        off = memory_disabled(self.settings, event.payload, event.env)
        if off:
            logger.debug("memory off for this hook (%s)", off)
            return empty_answer(event.name)
        handlers: dict[str, Callable[[HookEvent], Awaitable[dict[str, Any] | str]]] = {
            "session-start": self.on_session_start,
            "user-prompt-submit": self.on_user_prompt,
            "pre-compact": self.on_pre_compact,
            "post-tool-use": self.on_post_tool_use,
            "stop": self.on_stop,
            "session-end": self.on_session_end,
        }
        handler = handlers.get(event.name)
        if handler is None:
            return {}  # post-compact: nothing to inject
        try:
            return await handler(event)
        except BaseException:
            # what this event should have recorded may be missing: the next Stop reads the transcript
            self._caught_up.discard(event.session_id)
            raise

    async def recall(self, *, user_id: str, prompt: str, recent: Sequence[str] = (), project: str | None = None,
                     exclude_ids: Sequence[str] = (), max_memories: int | None = None,
                     max_tokens: int | None = None, as_of: datetime | None = None,
                     since: datetime | None = None) -> RecallResult:
        """What auto-recall injects for ``prompt``: the UserPromptSubmit hook, ``dexai memory
        recall``, the MCP ``recall`` tool and the panel's API all call this. ``max_memories`` / ``max_tokens``
        override ``auto_recall``'s settings for one call; ``as_of``: a look back (not a retrieval);
        ``since``: when the session's block was injected (its standing knowledge stored later joins)."""
        await self.vectors_ready()
        result = await auto_recall(self.daemon.provider, user_id, prompt, recent, self.settings, project=project,
                                   exclude_ids=exclude_ids, max_memories=max_memories, max_tokens=max_tokens,
                                   as_of=as_of, now=as_of, since=since)
        if result.memories and as_of is None:
            self.daemon.spawn(self.daemon.provider.record_retrieval(result.memory_ids, user_id=user_id),
                              "record-retrieval")
        return result

    # ------------------------------------------------------------------ the daemon's start
    async def load_model(self) -> None:
        """Load the embedding model now (the daemon's start), not at the first prompt."""
        embedder = getattr(self.daemon.provider, "embedder", None)
        if embedder is not None:
            try:
                await embedder.aembed("warm up")
            except DexaiMemoryError as exc:
                logger.error("the embedding model did not load: %s", exc)

    def warm_up(self, task: asyncio.Task[Any]) -> None:
        """``task`` (:meth:`load_model`, run by the daemon) is what :meth:`vectors_ready` waits for."""
        self._model = task

    async def vectors_ready(self) -> None:
        """Wait (at most ``daemon.cold_recall_wait_seconds``) for the embedding model the daemon
        loads at start, so the first prompt after a cold start is recalled as a warm one is."""
        task = self._model
        if task is None or task.done():
            return
        wait = self.settings.daemon.cold_recall_wait_seconds
        try:
            await asyncio.wait_for(asyncio.shield(task), wait)
        except TimeoutError:
            logger.warning("the embedding model is still loading after %.1fs: recall goes on without waiting", wait)

    async def replay_queued_events(self) -> int:
        """Run the hook events a client queued while no daemon answered (oldest first), before
        the socket serves new ones: the prompts they recorded, the turns they end, the tool
        results they carry are captured as if the daemon had been up. Returns how many ran."""
        from ..capture.queue_file import drop_event, queued_events
        from .event import BadEvent

        done = 0
        for row, data in await asyncio.to_thread(queued_events, self.daemon.queue.path):
            try:
                event = HookEvent.from_json(data, replayed=True)
            except BadEvent as exc:
                logger.warning("a queued hook event was not replayed: %s", exc)
            else:
                try:
                    await self.handle(event)
                except Exception:  # logged; the next events still run
                    logger.exception("replayed hook %s failed", event.name)
                done += 1
            await asyncio.to_thread(drop_event, self.daemon.queue.path, row)
        if done:
            logger.info("replayed %d hook event(s) queued while no daemon answered", done)
        return done

    # ------------------------------------------------------------------ events
    async def on_session_start(self, event: HookEvent) -> dict[str, Any]:
        settings, sid = self.settings, event.session_id
        source = event.payload.get("source") or "startup"
        if event.replayed:
            return {}
        if source == "compact":
            marker, session = await asyncio.to_thread(
                lambda: (read_marker(settings, sid) or {}, load_session(settings, sid)))
            block = await self.actions.l1(user_id=event.user_id, query=reinjection_query(marker, session),
                                          project=event.project, session_id=sid, snapshot=marker.get("snapshot"),
                                          after_compaction=True)
            ids = [m.id for m in block.memories]

            def after() -> None:
                from .prefetch_items import clear_state

                remember_injected(settings, sid, ids, reset=True)
                clear_marker(settings, sid)
                clear_state(settings, sid)  # what was prefetched went with the compacted context

            await asyncio.to_thread(after)
            return context_output("SessionStart", with_compact_instructions(block.text, marker))
        if source == "startup":
            await asyncio.to_thread(prune_state, settings)
        offer = await history_offer(self.daemon.provider, settings, event) if source == "startup" else ""
        block = await self.actions.l1(user_id=event.user_id, project=event.project, session_id=sid)
        ids = [m.id for m in block.memories]
        if source == "resume":
            seen = (await asyncio.to_thread(load_session, settings, sid)).get("injected") or []
            if set(ids) <= set(seen):
                await asyncio.to_thread(remember_injected, settings, sid, [], extra={STARTED: True})
                return {}  # everything in it is still in the resumed conversation
        extra = {STARTED: True, **({} if source == "resume" else {BLOCK_AT: time.time()})}
        await asyncio.to_thread(lambda: remember_injected(settings, sid, ids, reset=source != "resume", extra=extra))
        return context_output("SessionStart", "\n\n".join(t for t in (block.text, offer) if t))

    async def on_user_prompt(self, event: HookEvent) -> dict[str, Any]:
        from ..triggers import ReflectionHints

        settings, sid = self.settings, event.session_id
        prompt = str(event.payload.get("prompt") or "")

        def record() -> tuple[dict[str, Any], dict[str, Any] | None, str | None, list[str], bool]:
            # the prompt first (redacted, for Stop to queue): a failing recall must not lose it
            state = load_session(settings, sid)
            hints = ReflectionHints.from_json(state.get("hints"))
            hint = hints.on_user_prompt(prompt)
            try:
                remember_injected(settings, sid, [], prompt=redact_for_state(prompt),
                                  prompt_id=event.payload.get("prompt_id"), extra={"hints": hints.to_json()},
                                  at=event.received)
                recorded = True
            except OSError as exc:  # a full disk, a read-only data directory: queued directly below
                logger.warning("the prompt of session %s was not recorded (%s): queueing it now", sid, exc)
                recorded = False
            return state, read_marker(settings, sid), hint, recent_texts(dict(event.payload)), recorded

        state, marker, hint, recent, recorded = await asyncio.to_thread(record)
        if not recorded:
            self._caught_up.discard(sid)
            await self.queue_prompt(event, prompt)
        if event.replayed:
            return {}
        start, shown = "", []
        if marker is not None:
            block = await self.actions.l1(user_id=event.user_id, query=reinjection_query(marker, {}, prompt),
                                          recent=recent, project=event.project, session_id=sid,
                                          snapshot=marker.get("snapshot"), after_compaction=True)
            text, ids, reset = with_compact_instructions(block.text, marker), [m.id for m in block.memories], True
        else:
            started: list[str] = []
            if not state.get(STARTED):
                # no SessionStart answer reached this session (a cold start queued it for replay, it
                # timed out, or the agent has no SessionStart hook): its block comes with this prompt
                block = await self.actions.l1(user_id=event.user_id, project=event.project, session_id=sid)
                start, started = block.text, [m.id for m in block.memories]
            block_at = state.get(BLOCK_AT) if state.get(STARTED) else time.time()
            result = await self.recall(user_id=event.user_id, prompt=prompt, recent=recent, project=event.project,
                                       exclude_ids=[*(str(i) for i in state.get("injected") or []), *started],
                                       since=datetime.fromtimestamp(float(block_at), UTC) if block_at else None)
            # ``shown``: the recall block, which the reply to this prompt uses or ignores
            text, ids, reset, shown = result.text, [*started, *result.memory_ids], False, result.memory_ids

        def after() -> None:
            new = {} if state.get(STARTED) else {BLOCK_AT: time.time()}  # this block is the session's
            remember_injected(settings, sid, ids, reset=reset, extra={STARTED: True, **new}, awaiting=shown)
            if marker is not None:
                clear_marker(settings, sid)

        if ids or marker is not None or not state.get(STARTED):
            await asyncio.to_thread(after)
        return context_output("UserPromptSubmit", "\n\n".join(t for t in (start, text, hint) if t))

    async def on_pre_compact(self, event: HookEvent) -> str:
        """Checkpoint before compaction; returns the compaction instructions (plain text)."""
        settings, sid, payload = self.settings, event.session_id, dict(event.payload)

        def checkpoint() -> tuple[str | None, str | None]:
            messages = read_transcript(payload.get("transcript_path"))
            backup = None
            try:
                backup = backup_transcript(settings, payload)
            except OSError:
                logger.exception("transcript backup failed")
            snapshot = snapshot_text(messages)
            snapshot = redact_for_state(snapshot) if snapshot else None
            last_prompt = next((t for r, t in reversed(messages) if r == "user"), None) \
                or load_session(settings, sid).get("last_prompt")
            asked = str(payload.get("custom_instructions") or "").strip()[:MAX_COMPACT_INSTRUCTIONS]
            # the marker first: whatever happens next, the block is re-injected after compaction
            write_marker(settings, sid, {
                "trigger": payload.get("trigger"), "at": utcnow().isoformat(), "snapshot": snapshot,
                "last_prompt": redact_for_state(last_prompt) if last_prompt else None,
                "recent_prompts": redact_for_state(recent_prompts(messages)),
                "custom_instructions": redact_for_state(asked) if asked else None,
                "transcript_backup": str(backup) if backup else None})
            return snapshot, str(backup) if backup else None

        snapshot, backup = await asyncio.to_thread(checkpoint)
        result = await self.actions.pre_compact(user_id=event.user_id, session_id=sid, snapshot=snapshot,
                                                trigger=payload.get("trigger"), transcript_backup=backup,
                                                project=self.capture_project(event))
        logger.info("pre-compact checkpoint: %s", result)
        await self.record_episode(event)
        return compaction_instructions(settings)

    async def on_post_tool_use(self, event: HookEvent) -> dict[str, Any]:
        """Queue the tool result for extraction; answer with the file-aware prefetch."""
        payload = dict(event.payload)
        if str(payload.get("tool_name") or "").startswith(OWN_TOOL_PREFIXES):
            return {}  # recall output extracted again would store copies of what memory holds
        name = "PostToolUseFailure" if payload.get("hook_event_name") == "PostToolUseFailure" else "PostToolUse"
        known = ""
        if not event.replayed:
            try:
                known = await self.prefetch(event, branches=not event.background)
            except Exception:  # the prefetch is a hint: its failure must not lose the tool result
                logger.exception("prefetch failed")
        if name == "PostToolUseFailure":
            return context_output(name, known)
        response = payload.get("tool_response")
        text = response if isinstance(response, str) else text_of(response) if isinstance(response, list) else ""
        if not text and isinstance(response, dict):
            text = str(response.get("stdout") or response.get("content") or response.get("result") or "")
        if text.strip():
            tool = str(payload.get("tool_name") or "tool")
            await self.submit(self.turn(event, kind=f"tool-{payload.get('tool_use_id') or tool}", role="tool",
                                        text=text[:MAX_TOOL_TEXT], metadata={"tool": tool}))
        return context_output(name, known)

    async def on_stop(self, event: HookEvent) -> dict[str, Any]:
        """Queue the turn: its prompts (recorded by UserPromptSubmit) and the reply. An async
        Stop may run beside the next prompt's UserPromptSubmit: it queues the prompts received
        before it (the next Stop queues the later ones). The session's first Stop since the
        daemon started, the first after a failed event, and one whose reply follows no recorded
        prompt (its UserPromptSubmit never reached the daemon: the hook was killed or skipped before
        it could queue the event) first queue the transcript's answered prompts no hook queued."""
        reply = str(event.payload.get("last_assistant_message") or "")
        await self.close_turn(event, reply=reply, before=event.received if event.background else None,
                              catch_up=not event.replayed and event.session_id not in self._caught_up)
        return {}

    async def on_session_end(self, event: HookEvent) -> dict[str, Any]:
        try:
            caught = await self.catch_up_turn(event)
            if caught:
                logger.info("session end: queued %s prompt(s) of a turn whose Stop did not finish", caught)
        except Exception:  # the rest of SessionEnd (the queue's extraction) must still run
            logger.exception("catching up the last turn failed")
        await self.final_snapshot(event)
        await self.record_episode(event)
        self.daemon.queue.notify()

        async def extracted() -> None:  # after the answer: nobody waits for the queue at exit
            result = await self.actions.session_end(user_id=event.user_id, session_id=event.session_id)
            logger.info("session end: %s", result)

        self.daemon.spawn(extracted(), f"session-end:{event.session_id}")
        path = session_file(self.settings, event.session_id)
        await asyncio.to_thread(path.unlink, missing_ok=True)
        self._caught_up.discard(event.session_id)
        self.daemon.recent.forget((event.user_id, event.session_id))
        return {}

    # ------------------------------------------------------------------ parts of the events
    def capture_project(self, event: HookEvent) -> str:
        """The project captured memories are stored under (the scope, else the git root)."""
        return event.project or project_key(event.payload, event.env)

    def turn(self, event: HookEvent, *, kind: str, role: str, text: str, tid: str | None = None,
             metadata: dict[str, Any] | None = None) -> Turn:
        return Turn.from_dict({
            "id": tid or turn_id(event.session_id, kind, text), "user_id": event.user_id, "content": text,
            "role": role, "timestamp": utcnow().isoformat(), "session_id": event.session_id,
            "project": self.capture_project(event),
            "metadata": {"source": f"{event.source}:{kind}", **(metadata or {})}})

    async def submit(self, turn: Turn) -> bool:
        """Admit (redact, then gate) and queue ``turn`` durably; True when queued. Raises when
        the queue cannot be written (the caller keeps what it would lose)."""
        verdict = await asyncio.to_thread(self.daemon.submit_turn, turn)
        return bool(verdict.passed)

    async def close_turn(self, event: HookEvent, *, reply: str | None, before: float | None = None,
                         catch_up: bool = False) -> int:
        """Queue the session's pending prompts (received before ``before``; all when None) and
        ``reply``, count the injected memories the reply cited, and drop the prompts from the
        session's ``pending``. With ``catch_up``, first the transcript's prompts no hook queued
        (:mod:`.catch_up`; only answered ones when ``before`` is set). Turn ids are
        deterministic, so a prompt queued twice (an async Stop and SessionEnd's catch-up) is
        stored once. Returns how many prompts were queued."""
        settings, sid = self.settings, event.session_id
        state = await asyncio.to_thread(load_session, settings, sid)
        mine = [p for p in pending_prompts(state) if before is None or float(p.get("at") or 0) <= before]
        # a reply with no prompt recorded before it: that turn's UserPromptSubmit never reached us
        catch_up = catch_up or (event.name == "stop" and not mine and bool(reply and reply.strip())
                                and not event.replayed)
        handled: list[str] = []
        if catch_up:
            caught = await self.caught_up_prompts(event, state, answered_only=event.name != "session-end")
            handled = [p.key for p in caught]
        for entry in mine:
            tid = f"{safe_id(sid)}:user:{entry['prompt_id']}" if entry.get("prompt_id") else None
            # raises when the queue cannot be written (disk full): the prompt stays pending, so the
            # next Stop (or SessionEnd) tries again
            await self.submit(self.turn(event, kind="user", role="user", text=str(entry["prompt"]), tid=tid))
        reply = reply or ""  # ``shown``: the recall blocks of the prompts it answers (used or ignored)
        shown = [str(i) for i in state.get(AWAITING) or []] if reply.strip() else []
        if reply.strip():
            # its context (the prompt before it) is the daemon's recent turns of the session
            await self.submit(self.turn(event, kind="assistant", role="assistant", text=reply))
        if mine or reply.strip() or handled:
            handled += [prompt_key(str(p["prompt"])) for p in mine]
            await asyncio.to_thread(lambda: forget_pending(settings, sid, mine, handled, answered=shown))
        if catch_up:
            self._caught_up.add(sid)
        self.daemon.queue.notify()
        injected = [str(i) for i in state.get("injected") or []]
        if reply.strip() and (injected or shown):
            self.daemon.spawn(self.actions.record_usage(user_id=event.user_id, session_id=sid, reply=reply,
                                                        injected=injected, shown=shown), "record-usage")
        return len(mine)

    async def catch_up_turn(self, event: HookEvent) -> int:
        """SessionEnd: queue a turn whose Stop did not finish (the pending prompts and the
        transcript's last assistant reply) and the transcript's prompts no hook queued.
        Nothing when every prompt was queued."""
        state = await asyncio.to_thread(load_session, self.settings, event.session_id)
        if not pending_prompts(state):
            return 0 if event.replayed else len(await self.caught_up_prompts(event, state, answered_only=False))
        messages = await asyncio.to_thread(read_transcript, event.payload.get("transcript_path"))
        reply = next((t for r, t in reversed(messages) if r == "assistant"), "")
        return await self.close_turn(event, reply=reply, catch_up=not event.replayed)

    async def queue_prompt(self, event: HookEvent, prompt: str) -> bool:
        """Queue ``prompt`` at once (its state file could not be written); False when the queue
        refused it too (the transcript catch-up gets it later)."""
        text = prompt_text(prompt)
        if not text.strip():
            return False
        pid = event.payload.get("prompt_id")
        tid = f"{safe_id(event.session_id)}:user:{pid}" if pid else None
        try:
            await self.submit(self.turn(event, kind="user", role="user", text=text, tid=tid))
        except Exception as exc:  # logged: the transcript is read again at the next Stop
            logger.warning("the prompt of session %s was not queued either (%s)", event.session_id, exc)
            return False
        self.daemon.queue.notify()
        return True

    async def caught_up_prompts(self, event: HookEvent, state: dict[str, Any], *,
                                answered_only: bool) -> list[TranscriptPrompt]:
        """Queue the transcript's prompts that no hook queued (:func:`.catch_up.missing_prompts`),
        oldest first; returns them. Raises when the queue cannot be read or written (the next
        Stop tries again)."""
        sid = event.session_id
        prompts = await asyncio.to_thread(transcript_prompts, event.payload.get("transcript_path"))
        if not prompts:
            return []
        missing = await asyncio.to_thread(
            lambda: missing_prompts(prompts, session_id=sid, user_id=event.user_id, queue_db=self.daemon.queue.path,
                                    pending=pending_prompts(state), handled=state.get("handled") or [],
                                    answered_only=answered_only))
        for prompt in missing:
            tid = prompt.turn_ids(sid)[0]
            await self.submit(self.turn(event, kind="user", role="user", text=prompt.text, tid=tid))
        if missing:
            logger.warning("session %s: queued %d prompt(s) of the transcript no hook had queued", sid, len(missing))
        return missing

    async def final_snapshot(self, event: HookEvent) -> str | None:
        """SessionEnd: the session's snapshot rewritten to its state at the end (task, last action),
        shown as the next session's last state; returns its id (None: nothing to say). Never raises."""
        try:
            messages = await asyncio.to_thread(read_transcript, event.payload.get("transcript_path"))
            text = snapshot_text(messages)
            if not text:
                return None
            text = redact_for_state(f"Session ended ({event.payload.get('reason') or 'exit'}) | {text}")
            memory = await self.actions.store_snapshot(user_id=event.user_id, session_id=event.session_id,
                                                       text=text, project=self.capture_project(event))
            return memory.id
        except Exception:  # a snapshot is a convenience: SessionEnd's extraction must still run
            logger.exception("final snapshot not stored")
            return None

    async def record_episode(self, event: HookEvent) -> dict[str, Any]:
        """Turn the transcript's current stretch into an episode (PreCompact, SessionEnd); never raises."""
        if not self.settings.hooks.episodes:
            return {}
        try:
            from ..capture.episodes import episode_from_transcript

            path = transcript_file(event.payload.get("transcript_path"))
            episode = await asyncio.to_thread(episode_from_transcript, path, event.session_id)
            if episode is None:
                return {}
            out = await self.actions.episode(user_id=event.user_id, episode=episode,
                                             project=self.capture_project(event))
            logger.info("episode %s: %s", episode.id, out)
            return out
        except Exception:  # an episode is a summary: its failure must not stop the checkpoint
            logger.exception("episode not recorded")
            return {}

    async def prefetch(self, event: HookEvent, *, branches: bool) -> str:
        """What is known about the file, error or branch of a tool call (:mod:`.prefetch_items`)."""
        from .prefetch_items import run_prefetch

        async def lookup(items: Sequence[Any], **kwargs: Any) -> Any:
            return await self.actions.prefetch(user_id=event.user_id, items=items, **kwargs)

        return await run_prefetch(self.settings, lookup, dict(event.payload), project=event.project,
                                  local=self.capture_project(event), branches=branches)
