"""The hook events, written once for every front end.

Claude Code command hooks (:mod:`dexai_memory.hooks.command`, a new process per
event) and Claude Agent SDK callbacks (:mod:`dexai_memory.hooks.sdk`, in process)
both call :func:`handle`. What differs between them is only *where the memory
work goes*, a :class:`HookBackend`:

* the command backend asks the daemon over its socket, starts one when none
  answers, and falls back to the SQLite file (keyword recall, the queue file,
  extraction inline at PreCompact / SessionEnd);
* the in-process backend calls a running ``MemoryDaemon`` or a provider
  directly.

What each event does
====================
``session-start``
    startup/resume/clear: inject the L1 block (profile, commitments due soon,
    last session state); resume skips it when everything in it is still in
    the conversation. compact: re-inject the post-compaction block (filled by
    priority; the last prompts and the task snapshot kept in the compaction
    marker) and clear the marker - the primary post-compaction path.
``user-prompt-submit``
    Marker still set (SessionStart(compact) did not run): re-inject and clear
    it (the fallback). Otherwise auto-recall for the prompt. A reflection hint
    ("the user just stated a preference: consider ``remember``") is added when
    the prompt is a correction, a preference or an explicit request.
``pre-compact``
    Back up the transcript, store a task snapshot, write the compaction marker,
    and get every queued turn extracted before the summary replaces the
    conversation; the stretch since the last compaction becomes an episode
    (:mod:`dexai_memory.capture.episodes`); returns the compaction instructions (plain text).
``post-tool-use``
    Queue the tool result for extraction when it passes the gate, and answer with what is
    known about the file, failing command or branch the tool touched (the file-aware
    prefetch, :mod:`dexai_memory.hooks.prefetch`; PostToolUseFailure runs this event too,
    prefetch only).
``stop``
    Queue the turn (the prompt kept by UserPromptSubmit, and the reply). Synchronous in the
    plugin, but safe async: ``claude -p`` kills an async hook when it exits, and SessionEnd
    queues a turn whose Stop did not finish (:func:`catch_up_turn`).
``session-end``
    Queue the last turn if its Stop did not finish; record the episode of the session (or of
    its stretch since the last compaction);
    get the queue extracted; consolidation is scheduled when enough new notes
    accumulated; the session's state file is removed.

Stdlib only (command hooks import it).
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Sequence
from typing import Any, NamedTuple

from ..config import Settings
from ..models import utcnow
from .state import (
    EVENTS,
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
    turn_id,
)

logger = logging.getLogger("dexai_memory.hooks.events")


class Block(NamedTuple):
    """Text to inject and the ids of the memories in it."""

    text: str
    memory_ids: tuple[str, ...] = ()


class HookBackend(abc.ABC):
    """Where the events' memory work goes. Every method may raise; :func:`handle`'s callers
    turn any error into a no-op answer."""

    settings: Settings

    @abc.abstractmethod
    def l1(self, *, user_id: str, query: str | None, recent: Sequence[str], project: str | None,
           session_id: str | None, snapshot: str | None, after_compaction: bool) -> Block:
        """The L1 block (``after_compaction``: the post-compaction block filled by priority)."""

    @abc.abstractmethod
    def recall(self, *, user_id: str, prompt: str, recent: Sequence[str], project: str | None,
               exclude_ids: Sequence[str]) -> Block:
        """Auto-recall for ``prompt`` (an empty block when recall is skipped)."""

    @abc.abstractmethod
    def submit(self, turn: dict[str, Any], context: Sequence[str]) -> bool:
        """Redact and gate ``turn`` (a :class:`~dexai_memory.models.Turn` dict); queue it durably
        when it passes. True when queued."""

    @abc.abstractmethod
    def pre_compact(self, *, user_id: str, session_id: str | None, snapshot: str | None, trigger: str | None,
                    transcript_backup: str | None, project: str | None) -> dict[str, Any]:
        """Extract every queued turn, archive the transcript backup, store the task snapshot."""

    @abc.abstractmethod
    def session_end(self, *, user_id: str, session_id: str | None) -> dict[str, Any]:
        """Get the queue extracted (now or by a daemon) and schedule consolidation if due."""

    def turn_end(self, *, user_id: str, session_id: str | None, reply: str = "",  # noqa: B027 - optional
                 injected: Sequence[str] = ()) -> None:
        """A turn ended (a daemon may start extracting at once, and count which of the ``injected``
        memories the ``reply`` used: :mod:`dexai_memory.lifecycle.usage`)."""

    def prefetch(self, *, user_id: str, items: Sequence[Any], project: str | None, local: str | None,
                 exclude_ids: Sequence[str], max_tokens: int, max_items: int) -> Block:
        """What is known about ``items`` (:class:`~dexai_memory.recall.prefetch.PrefetchItem`), see
        :func:`dexai_memory.recall.prefetch.prefetch`. This default finds nothing."""
        return Block("")

    def episode(self, *, user_id: str, episode: dict[str, Any], project: str | None) -> dict[str, Any]:
        """Store (or update) an episode (:class:`~dexai_memory.capture.episodes.Episode` as a dict).
        Returns ``id`` and ``created``. This default stores nothing."""
        return {}


class HookContext(NamedTuple):  # NamedTuples: a dataclass costs ~1 ms to define in every hook process
    """One front end's settings, backend and identity. ``project`` scopes recall (None: all of
    the user's memories); captured turns are stored under ``project`` or, when it is None,
    :func:`~dexai_memory.hooks.state.project_key` of the session's directory."""

    settings: Settings
    backend: HookBackend
    user_id: str
    project: str | None = None
    source: str = "claude-code"
    #: an async command hook (hooks.json ``"async": true``): nobody waits for its answer, and the
    #: branch prefetch of ``git checkout``/``git switch`` is left to the synchronous entry
    background: bool = False

    def capture_project(self, payload: dict[str, Any]) -> str:
        return self.project or project_key(payload)


def context_output(event: str, text: str) -> dict[str, Any]:
    """A hook answer that adds ``text`` to the model's context ({} when there is nothing)."""
    if not text:
        return {}
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def reinjection_query(marker: dict[str, Any], session: dict[str, Any], prompt: str | None = None) -> str | None:
    """The relevant section's query after compaction: the last user prompts kept in the
    compaction ``marker`` (or the session's last prompt), ``prompt``, and the snapshot."""
    from ..recall.reinjection import recall_query

    prompts = [str(p) for p in marker.get("recent_prompts") or []] \
        or [str(p) for p in (marker.get("last_prompt"), session.get("last_prompt")) if p][:1]
    if prompt:
        prompts.append(prompt)
    return recall_query(prompts, marker.get("snapshot")) or None


def _turn(ctx: HookContext, payload: dict[str, Any], *, kind: str, role: str, text: str,
          tid: str | None = None, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "id": tid or turn_id(payload.get("session_id"), kind, text),
        "user_id": ctx.user_id,
        "content": text,
        "role": role,
        "timestamp": utcnow().isoformat(),
        "session_id": payload.get("session_id"),
        "project": ctx.capture_project(payload),
        "metadata": {"source": f"{ctx.source}:{kind}", **(metadata or {})},
    }


# --------------------------------------------------------------------------- events


def on_session_start(ctx: HookContext, payload: dict[str, Any]) -> dict[str, Any]:
    settings, sid = ctx.settings, payload.get("session_id")
    source = payload.get("source") or "startup"
    if source == "compact":
        marker = read_marker(settings, sid) or {}
        query = reinjection_query(marker, load_session(settings, sid))
        block = ctx.backend.l1(user_id=ctx.user_id, query=query, recent=[], project=ctx.project, session_id=sid,
                               snapshot=marker.get("snapshot"), after_compaction=True)
        remember_injected(settings, sid, block.memory_ids, reset=True)
        clear_marker(settings, sid)
        from .prefetch import clear_state as clear_prefetch  # not on the prompt's path

        clear_prefetch(settings, sid)  # what was prefetched went with the compacted context
        return context_output("SessionStart", block.text)
    if source == "startup":
        prune_state(settings)
    block = ctx.backend.l1(user_id=ctx.user_id, query=None, recent=[], project=ctx.project, session_id=sid,
                           snapshot=None, after_compaction=False)
    if source == "resume" and set(block.memory_ids) <= set(load_session(settings, sid).get("injected") or []):
        return {}  # everything in it is still in the resumed conversation
    remember_injected(settings, sid, block.memory_ids, reset=source != "resume")
    return context_output("SessionStart", block.text)


def on_user_prompt(ctx: HookContext, payload: dict[str, Any]) -> dict[str, Any]:
    from ..triggers import ReflectionHints

    settings, sid = ctx.settings, payload.get("session_id")
    prompt = str(payload.get("prompt") or "")
    recent = recent_texts(payload)
    state = load_session(settings, sid)
    hints = ReflectionHints.from_json(state.get("hints"))
    hint = hints.on_user_prompt(prompt)
    marker = read_marker(settings, sid)
    if marker is not None:
        block = ctx.backend.l1(user_id=ctx.user_id, query=reinjection_query(marker, {}, prompt), recent=recent,
                               project=ctx.project, session_id=sid, snapshot=marker.get("snapshot"),
                               after_compaction=True)
        reset = True
    else:
        block = ctx.backend.recall(user_id=ctx.user_id, prompt=prompt, recent=recent, project=ctx.project,
                                   exclude_ids=[str(i) for i in state.get("injected") or []])
        reset = False
    # the prompt is kept (redacted) for Stop to queue, off this hot path
    remember_injected(settings, sid, block.memory_ids, reset=reset, prompt=redact_for_state(prompt),
                      prompt_id=payload.get("prompt_id"), extra={"hints": hints.to_json()})
    if marker is not None:
        clear_marker(settings, sid)
    text = "\n\n".join(t for t in (block.text, hint) if t)
    return context_output("UserPromptSubmit", text)


def on_pre_compact(ctx: HookContext, payload: dict[str, Any]) -> str:
    """Checkpoint before compaction; returns the compaction instructions (plain text)."""
    from .state import write_marker

    settings, sid = ctx.settings, payload.get("session_id")
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
    # the marker first: whatever happens next, the block is re-injected after compaction
    write_marker(settings, sid, {"trigger": payload.get("trigger"), "at": utcnow().isoformat(),
                                 "snapshot": snapshot, "last_prompt": redact_for_state(last_prompt) if last_prompt else None,
                                 "recent_prompts": redact_for_state(recent_prompts(messages)),
                                 "transcript_backup": str(backup) if backup else None})
    result = ctx.backend.pre_compact(user_id=ctx.user_id, session_id=sid, snapshot=snapshot,
                                     trigger=payload.get("trigger"),
                                     transcript_backup=str(backup) if backup else None,
                                     project=ctx.capture_project(payload))
    logger.info("pre-compact checkpoint: %s", result)
    record_episode(ctx, payload)
    return compaction_instructions(settings)


def record_episode(ctx: HookContext, payload: dict[str, Any]) -> dict[str, Any]:
    """Turn the transcript's current stretch into an episode (PreCompact, SessionEnd); never raises."""
    if not ctx.settings.hooks.episodes:
        return {}
    try:
        from ..capture.episodes import episode_from_transcript
        from .state import transcript_file

        episode = episode_from_transcript(transcript_file(payload.get("transcript_path")), payload.get("session_id"))
        if episode is None:
            return {}
        out = ctx.backend.episode(user_id=ctx.user_id, episode=episode.to_dict(),
                                  project=ctx.capture_project(payload))
        logger.info("episode %s: %s", episode.id, out)
        return out
    except Exception:  # an episode is a summary: its failure must not stop the checkpoint
        logger.exception("episode not recorded")
        return {}


#: Our own memory tools (plugin MCP server, Agent SDK server): their results are memory already.
OWN_TOOL_PREFIXES = ("mcp__plugin_dexai-memory_", "mcp__dexai_memory__")


def on_post_tool_use(ctx: HookContext, payload: dict[str, Any]) -> dict[str, Any]:
    """Queue the tool result for extraction; answer with the file-aware prefetch
    (:mod:`dexai_memory.hooks.prefetch`). Also PostToolUseFailure (then only the prefetch)."""
    if str(payload.get("tool_name") or "").startswith(OWN_TOOL_PREFIXES):
        return {}  # recall output extracted again would store copies of what memory holds
    event = "PostToolUseFailure" if payload.get("hook_event_name") == "PostToolUseFailure" else "PostToolUse"
    try:
        from .prefetch import run_prefetch

        known = run_prefetch(ctx.settings, ctx.backend, payload, user_id=ctx.user_id, project=ctx.project,
                             branches=not ctx.background)
    except Exception:  # the prefetch is a hint: its failure must not lose the tool result
        logger.exception("prefetch failed")
        known = ""
    if event == "PostToolUseFailure":
        return context_output(event, known)
    response = payload.get("tool_response")
    text = response if isinstance(response, str) else text_of(response) if isinstance(response, list) else ""
    if not text and isinstance(response, dict):
        text = str(response.get("stdout") or response.get("content") or response.get("result") or "")
    if text.strip():
        tool = str(payload.get("tool_name") or "tool")
        ctx.backend.submit(_turn(ctx, payload, kind=f"tool-{payload.get('tool_use_id') or tool}", role="tool",
                                 text=text[:MAX_TOOL_TEXT], metadata={"tool": tool}), [])
    return context_output(event, known)


def on_stop(ctx: HookContext, payload: dict[str, Any]) -> dict[str, Any]:
    """Queue the turn: its prompt (kept by UserPromptSubmit) and the reply. An async command
    hook (``ctx.background``) may run beside the next prompt's UserPromptSubmit: it queues the
    prompts submitted before its process started (the next Stop queues the later ones)."""
    from .state import process_start_time

    started = process_start_time() if ctx.background else None
    close_turn(ctx, payload, str(payload.get("last_assistant_message") or ""), started=started)
    return {}


def close_turn(ctx: HookContext, payload: dict[str, Any], reply: str, *, started: float | None = None) -> int:
    """Queue the session's pending prompts (submitted before ``started``; all when None) and
    ``reply``, tell the backend the turn ended, and drop them from the session's ``pending``.
    Every turn id is deterministic, so a prompt or reply queued twice (an async Stop and
    SessionEnd's catch-up) is stored once. Returns how many prompts were queued."""
    settings, sid = ctx.settings, payload.get("session_id")
    state = load_session(settings, sid)
    mine = [p for p in pending_prompts(state) if started is None or float(p.get("at") or 0) <= started]
    for entry in mine:
        prompt = str(entry["prompt"])
        tid = f"{safe_id(sid)}:user:{entry['prompt_id']}" if entry.get("prompt_id") else None
        # raises when the queue cannot be written (disk full): the prompt stays pending, so the
        # next Stop (or SessionEnd) tries again
        ctx.backend.submit(_turn(ctx, payload, kind="user", role="user", text=prompt, tid=tid), [])
    prompt = str(mine[-1]["prompt"]) if mine else ""
    if reply.strip():
        ctx.backend.submit(_turn(ctx, payload, kind="assistant", role="assistant", text=reply),
                           [prompt] if prompt else [])
    if mine or reply.strip():
        forget_pending(settings, sid, mine)
    ctx.backend.turn_end(user_id=ctx.user_id, session_id=sid, reply=reply,
                         injected=[str(i) for i in state.get("injected") or []])
    return len(mine)


def catch_up_turn(ctx: HookContext, payload: dict[str, Any]) -> int:
    """SessionEnd: queue a turn whose Stop did not finish (an async Stop is killed when ``claude
    -p`` exits): the pending prompts and the transcript's last assistant reply. Nothing when
    every prompt was queued. Returns how many prompts it queued."""
    if not pending_prompts(load_session(ctx.settings, payload.get("session_id"))):
        return 0
    messages = read_transcript(payload.get("transcript_path"))
    reply = next((t for r, t in reversed(messages) if r == "assistant"), "")
    return close_turn(ctx, payload, reply)


def on_session_end(ctx: HookContext, payload: dict[str, Any]) -> dict[str, Any]:
    sid = payload.get("session_id")
    try:
        caught = catch_up_turn(ctx, payload)
        if caught:
            logger.info("session end: queued %s prompt(s) of a turn whose Stop did not finish", caught)
    except Exception:  # the rest of SessionEnd (the queue's extraction) must still run
        logger.exception("catching up the last turn failed")
    record_episode(ctx, payload)
    result = ctx.backend.session_end(user_id=ctx.user_id, session_id=sid)
    logger.info("session end: %s", result)
    path = session_file(ctx.settings, sid)
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    return {}


def handle(event: str, payload: dict[str, Any], ctx: HookContext) -> dict[str, Any] | str:
    """Run one hook ``event`` (a key of :data:`~dexai_memory.hooks.state.EVENTS`). Returns the
    JSON object to answer (or, for pre-compact, the plain-text compaction instructions)."""
    if not payload.get("session_id"):
        # state files are per session: without an id, keep one user's state from another's
        payload = {**payload, "session_id": f"no-session-{ctx.user_id}"}
    off = memory_disabled(ctx.settings, payload)
    if off:
        logger.debug("memory off for this hook (%s)", off)
        return "" if event == "pre-compact" else {}
    if event not in EVENTS:
        logger.warning("unknown hook event %r", event)
        return {}
    if event == "session-start":
        return on_session_start(ctx, payload)
    if event == "user-prompt-submit":
        return on_user_prompt(ctx, payload)
    if event == "pre-compact":
        return on_pre_compact(ctx, payload)
    if event == "post-tool-use":
        return on_post_tool_use(ctx, payload)
    if event == "stop":
        return on_stop(ctx, payload)
    if event == "session-end":
        return on_session_end(ctx, payload)
    return {}  # post-compact: nothing to inject
