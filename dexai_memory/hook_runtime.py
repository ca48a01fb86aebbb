"""The command-hook fast path: ``dexai hook <event>`` reads hook JSON on stdin
and writes hook JSON on stdout.

Claude Code starts a new process for every hook event, so this module imports
only the standard library and the stdlib-only parts of the package (config,
models, tokens, block, recall, queue, gate, privacy): never anthropic,
claude_agent_sdk, numpy, onnxruntime, spaCy, aiosqlite or sqlean.

What each event does
====================
``session-start``
    ``source`` startup/resume/clear: inject the L1 block (profile, commitments
    due soon, last session state). ``source`` compact: re-inject the L1 block
    (plus memories relevant to the last prompt and the pre-compaction task
    snapshot) as ``additionalContext`` - the primary post-compaction path - and
    clear the compaction marker.
``user-prompt-submit``
    Marker still set (SessionStart(compact) did not run): re-inject the L1
    block and clear it (the fallback). Otherwise auto-recall for the prompt.
    The prompt is enqueued for extraction when it passes the gate.
``pre-compact``
    Back up the transcript to ``<home>/transcripts/`` (L3), ask the daemon to
    flush the queue and store a task snapshot, write the compaction marker, and
    print the custom compaction instructions as plain text (the CLI appends a
    PreCompact hook's stdout to the compaction prompt).
``post-compact``
    Nothing to inject (the CLI ignores its output); logged.
``post-tool-use``
    Enqueue the tool result when it passes the gate (secrets redacted).
``stop``
    Enqueue the assistant's last message (gated), and tell the daemon a turn ended.
``session-end``
    Ask the daemon to flush and to schedule consolidation when enough new notes
    accumulated (the daemon decides).

Recall goes to the running daemon over its Unix socket (hybrid search, warm
embedder) and falls back to BM25-only recall straight from the SQLite file
(FTS5 table ``memories_fts``) when no daemon answers within
``hooks.daemon_timeout_seconds``.

A hook never fails the agent: every error is logged to ``<home>/hooks.log``
and the hook still prints valid output and exits 0.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from .config import Settings
from .models import Memory, MemoryType, SearchResult, Tier, utcnow

logger = logging.getLogger("dexai_memory.hook_runtime")  # not __name__: "__main__" under -m

#: Event names of ``dexai hook <event>`` and the Claude Code hook event they serve.
EVENTS = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "pre-compact": "PreCompact",
    "post-compact": "PostCompact",
    "post-tool-use": "PostToolUse",
    "stop": "Stop",
    "session-end": "SessionEnd",
}
USER_ENV = "DEXAI_MEMORY_USER"
PROJECT_ENV = "DEXAI_MEMORY_PROJECT"
#: Longest transcript tail read for recent messages (bytes).
TRANSCRIPT_TAIL_BYTES = 256 * 1024
#: Recent messages used for continuation and visibility checks.
RECENT_MESSAGES = 6
#: Longest tool result text enqueued (characters).
MAX_TOOL_TEXT = 4000

# --------------------------------------------------------------------------- identity


def user_id_for(payload: dict[str, Any] | None = None) -> str:
    """``$DEXAI_MEMORY_USER``, else the login name, else 'default' (like the CLI)."""
    return os.environ.get(USER_ENV) or os.environ.get("USER") or "default"


def project_for(payload: dict[str, Any]) -> str | None:
    """Recall scope: ``$DEXAI_MEMORY_PROJECT`` if set, else None (all of the user's memories)."""
    return os.environ.get(PROJECT_ENV) or None


def project_dir(payload: dict[str, Any]) -> str:
    return str(payload.get("cwd") or os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd())


def memory_disabled(settings: Settings, payload: dict[str, Any]) -> str | None:
    """Why memory is off for this hook call (None when it is on).

    ``hooks.enabled: false``; the project directory (or its name) listed in
    ``hooks.disabled_projects``; a subagent's hook (``agent_id`` in the input)
    unless ``hooks.subagents: true``; ``$DEXAI_MEMORY_DISABLED`` set.
    """
    if not settings.hooks.enabled or os.environ.get("DEXAI_MEMORY_DISABLED"):
        return "disabled"
    cwd = project_dir(payload)
    names = {cwd, os.path.basename(cwd.rstrip("/")), os.environ.get("CLAUDE_PROJECT_DIR", "")}
    for entry in settings.hooks.disabled_projects:
        entry_path = os.path.expanduser(entry).rstrip("/")
        if entry in names or entry_path in names or (entry_path.startswith("/") and cwd.startswith(entry_path + "/")):
            return "project disabled"
    if (payload.get("agent_id") or payload.get("agent_type")) and not settings.hooks.subagents:
        return "subagent"
    return None


# --------------------------------------------------------------------------- state files


def state_dir(settings: Settings) -> Path:
    path = settings.home / "hooks"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def _safe(session_id: str | None) -> str:
    sid = session_id or "default"
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in sid)[:100]


def marker_path(settings: Settings, session_id: str | None) -> Path:
    """The compaction marker of a session: ``<home>/hooks/compact-<session>.json``."""
    return state_dir(settings) / f"compact-{_safe(session_id)}.json"


def write_marker(settings: Settings, session_id: str | None, data: dict[str, Any]) -> Path:
    """Write the compaction marker atomically (trigger, time, snapshot, last prompt)."""
    path = marker_path(settings, session_id)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, default=str), encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_marker(settings: Settings, session_id: str | None) -> dict[str, Any] | None:
    """The marker's data, or None when no compaction is pending re-injection."""
    path = marker_path(settings, session_id)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def clear_marker(settings: Settings, session_id: str | None) -> None:
    with contextlib.suppress(FileNotFoundError):
        marker_path(settings, session_id).unlink()


def _session_file(settings: Settings, session_id: str | None) -> Path:
    return state_dir(settings) / f"session-{_safe(session_id)}.json"


def load_session(settings: Settings, session_id: str | None) -> dict[str, Any]:
    """Per-session hook state: ``injected`` memory ids, ``last_prompt``."""
    try:
        data = json.loads(_session_file(settings, session_id).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def save_session(settings: Settings, session_id: str | None, data: dict[str, Any]) -> None:
    path = _session_file(settings, session_id)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, default=str), encoding="utf-8")
    os.replace(tmp, path)


def remember_injected(settings: Settings, session_id: str | None, ids: Sequence[str], *,
                      reset: bool = False, prompt: str | None = None, prompt_id: str | None = None) -> None:
    """Record injected memory ids (``reset`` after compaction: the old injections are gone)
    and the last prompt of the session."""
    state = load_session(settings, session_id)
    if reset:
        state["injected"] = []
    injected = list(dict.fromkeys([*(state.get("injected") or []), *ids]))[-500:]
    state["injected"] = injected
    if prompt is not None:
        state["last_prompt"] = prompt[:4000]
        state["prompt_id"] = prompt_id
    save_session(settings, session_id, state)


# --------------------------------------------------------------------------- transcript


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    return ""


def read_transcript(path: str | None, *, max_bytes: int = TRANSCRIPT_TAIL_BYTES) -> list[tuple[str, str]]:
    """``(role, text)`` of the user/assistant messages at the end of a transcript JSONL."""
    if not path:
        return []
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            data = fh.read()
    except OSError:
        return []
    lines = data.split(b"\n")
    if len(data) >= max_bytes:
        lines = lines[1:]  # the first line is probably cut
    out: list[tuple[str, str]] = []
    for raw in lines:
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant") or entry.get("isMeta"):
            continue
        message = entry.get("message") or {}
        text = _text_of(message.get("content")).strip()
        if text and not text.startswith("<command-") and not text.startswith("<local-command"):
            out.append((str(message.get("role") or entry["type"]), text))
    return out


def recent_texts(payload: dict[str, Any], n: int = RECENT_MESSAGES) -> list[str]:
    return [t for _, t in read_transcript(payload.get("transcript_path"))][-n:]


def backup_transcript(settings: Settings, payload: dict[str, Any]) -> Path | None:
    """Copy the transcript to ``<home>/transcripts/<session>-<time>-<trigger>.jsonl`` (L3)."""
    src = payload.get("transcript_path")
    if not src or not os.path.isfile(src):
        return None
    dest_dir = settings.home / "transcripts"
    dest_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = utcnow().strftime("%Y%m%dT%H%M%S%f")
    dest = dest_dir / f"{_safe(payload.get('session_id'))}-{stamp}-{payload.get('trigger') or 'manual'}.jsonl"
    import shutil  # only PreCompact copies files

    shutil.copy2(src, dest)
    return dest


def snapshot_text(messages: Sequence[tuple[str, str]]) -> str | None:
    """A short working-state snapshot from the transcript: the current task and last action."""
    last_user = next((t for r, t in reversed(messages) if r == "user"), None)
    last_assistant = next((t for r, t in reversed(messages) if r == "assistant"), None)
    if not last_user and not last_assistant:
        return None
    parts = []
    if last_user:
        parts.append(f"Current task: {' '.join(last_user.split())[:400]}")
    if last_assistant:
        parts.append(f"Last action: {' '.join(last_assistant.split())[:300]}")
    return " | ".join(parts)


def recent_prompts(messages: Sequence[tuple[str, str]], n: int = 3) -> list[str]:
    """The last ``n`` user prompts of the transcript, oldest first (each cut to 1,000 characters)."""
    prompts = [" ".join(t.split())[:1000] for r, t in messages if r == "user" and t.strip()]
    return prompts[-n:]


def snapshot_memory(text: str, user_id: str, session_id: str | None) -> Memory:
    return Memory(id=f"snapshot_{_safe(session_id)}", content=text, user_id=user_id, type=MemoryType.SNAPSHOT,
                  session_id=session_id, importance=6)


def compaction_instructions(settings: Settings) -> str:
    """Plain-text instructions a PreCompact command hook prints for the compaction prompt."""
    return (f"{settings.compaction.instructions} "
            "Long-term facts, preferences and commitments are kept by dexai-memory and re-injected "
            "after compaction, so the summary should focus on the current task and its state.")


# --------------------------------------------------------------------------- daemon


def daemon_request(settings: Settings, payload: dict[str, Any], timeout: float | None = None) -> dict[str, Any] | None:
    """Ask the daemon over its Unix socket; None when it is not running or too slow."""
    if not settings.socket_path.exists():
        return None
    try:
        from .ipc import ipc_request
    except ImportError:
        return None
    wait = settings.hooks.daemon_timeout_seconds if timeout is None else timeout
    try:
        reply = ipc_request(settings.socket_path, payload, wait)
    except Exception:  # any IPC failure means "no daemon": fall back, never fail the hook
        logger.warning("daemon request %s failed", payload.get("op"), exc_info=True)
        return None
    if isinstance(reply, dict) and reply.get("ok", True) and not reply.get("error"):
        return reply
    if reply is not None:
        logger.warning("daemon answered %s with an error: %s", payload.get("op"), reply.get("error"))
    return None


# --------------------------------------------------------------------------- BM25 fallback

_FALLBACK_COLUMNS = ("id", "user_id", "project", "content", "type", "importance", "confidence", "tier",
                     "source_ids", "session_id", "created_at", "pinned", "last_accessed", "metadata")


def _row_memory(row: Sequence[Any]) -> Memory:
    data = dict(zip(_FALLBACK_COLUMNS, row, strict=True))
    data["source_ids"] = tuple(json.loads(data["source_ids"] or "[]"))
    data["metadata"] = json.loads(data["metadata"] or "{}")
    data["pinned"] = bool(data["pinned"])
    return Memory(**data)


class SqliteReader:
    """Read-only queries on the native store with the stdlib ``sqlite3`` (FTS5, no vectors)."""

    def __init__(self, path: Path, timeout: float = 0.5):
        self.path = path
        self.conn: sqlite3.Connection | None = None
        if path.is_file():
            self.conn = sqlite3.connect(str(path), timeout=timeout)
            self.conn.execute("PRAGMA query_only = ON")
            has = self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memories'").fetchone()
            if not has:
                self.conn.close()
                self.conn = None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()

    def _where(self, user_id: str, project: str | None) -> tuple[str, list[Any]]:
        sql = ("m.user_id = ? AND m.deleted = 0 AND m.superseded_by IS NULL AND m.valid_until IS NULL "
               "AND m.archived = 0")
        params: list[Any] = [user_id]
        if project is not None:
            sql += " AND m.project = ?"
            params.append(project)
        return sql, params

    def search(self, query: str, user_id: str, project: str | None, limit: int) -> list[SearchResult]:
        """BM25 hits as :class:`SearchResult` (score = rank-based, like the provider's RRF)."""
        if self.conn is None:
            return []
        from .recall import fts_terms  # stdlib-only

        terms = fts_terms(query)
        if not terms:
            return []
        match = " OR ".join(f'"{t}"' for t in terms)
        where, params = self._where(user_id, project)
        cols = ", ".join(f"m.{c}" for c in _FALLBACK_COLUMNS)
        rows = self.conn.execute(
            f"SELECT {cols} FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
            f"WHERE memories_fts MATCH ? AND {where} AND m.type NOT IN ('TRANSCRIPT', 'SNAPSHOT') "
            f"ORDER BY bm25(memories_fts) LIMIT ?", [match, *params, limit]).fetchall()
        return [SearchResult(_row_memory(r), 61.0 / (60 + rank), bm25_rank=rank)
                for rank, r in enumerate(rows, 1)]

    def list(self, user_id: str, project: str | None, *, where: str, params: Sequence[Any] = (),
             limit: int = 10) -> list[Memory]:
        if self.conn is None:
            return []
        base, base_params = self._where(user_id, project)
        cols = ", ".join(f"m.{c}" for c in _FALLBACK_COLUMNS)
        rows = self.conn.execute(
            f"SELECT {cols} FROM memories m WHERE {base} AND {where} ORDER BY m.created_at DESC LIMIT ?",
            [*base_params, *params, limit]).fetchall()
        return [_row_memory(r) for r in rows]


def fallback_recall(settings: Settings, user_id: str, prompt: str, recent: Sequence[str], *,
                    project: str | None = None, exclude_ids: Sequence[str] = ()) -> Any:
    """Auto-recall with BM25 only, straight from the SQLite file (no daemon, no vectors)."""
    from .recall import (
        DEFAULT_POOL,
        FENCE_TOKENS,
        RecallResult,
        VisibleContext,
        needs_recall,
        rank,
        select,
    )

    t0 = time.perf_counter()
    cfg = settings.auto_recall
    if not cfg.enabled or cfg.max_memories == 0:
        return RecallResult(skipped_reason="disabled")
    go, why = needs_recall(prompt, recent, skip_on_continuation=cfg.skip_on_continuation)
    if not go:
        return RecallResult(skipped_reason=why, latency_ms=(time.perf_counter() - t0) * 1000)
    reader = SqliteReader(settings.db_path)
    try:
        results = reader.search(prompt, user_id, project, DEFAULT_POOL)
    finally:
        reader.close()
    ranked = rank(results, prompt)
    visible = VisibleContext([*recent, prompt], exclude_ids=exclude_ids)
    block, mems = select(ranked, threshold=cfg.relevance_threshold, visible=visible, max_memories=cfg.max_memories,
                         max_tokens=cfg.max_tokens,
                         section_budget=min(settings.l1_block.memories_tokens, cfg.max_tokens - FENCE_TOKENS))
    reason = None if mems else ("no results" if not results else "below threshold")
    return RecallResult(block.text, block.tokens, mems, reason, (time.perf_counter() - t0) * 1000, why, block)


def fallback_reinjection_block(settings: Settings, user_id: str, *, query: str | None, recent: Sequence[str] = (),
                               project: str | None = None, snapshot: str | None = None,
                               session_id: str | None = None) -> Any:
    """The post-compaction block from the SQLite file: the same priority fill as the daemon's
    (:func:`dexai_memory.reinjection.fill_block`), BM25 for the relevant section."""
    from .block import commitments_due_soon
    from .recall import DEFAULT_POOL, VisibleContext
    from .reinjection import (
        BACKFILL_MIN_IMPORTANCE,
        DURABLE_TYPES,
        HIGH_IMPORTANCE,
        MAX_COMMITMENTS,
        MAX_IMPORTANT,
        MAX_PINNED,
        ReinjectionInputs,
        by_importance,
        fill_block,
        is_open,
        relevant_of,
    )

    reader = SqliteReader(settings.db_path)
    try:
        durable = ", ".join(f"'{t.value}'" for t in DURABLE_TYPES)
        pinned = by_importance(reader.list(user_id, project, where="m.pinned = 1", limit=MAX_PINNED))
        top_tier = by_importance(reader.list(user_id, project, where="m.tier = ?", params=[Tier.L1.value],
                                             limit=MAX_PINNED))
        candidates = [m for m in by_importance(reader.list(
            user_id, project, where=f"m.type IN ({durable}) AND m.importance >= ?", params=[BACKFILL_MIN_IMPORTANCE],
            limit=MAX_IMPORTANT)) if is_open(m)]
        important = [m for m in candidates if m.importance >= HIGH_IMPORTANCE]
        backfill = [m for m in candidates if m.importance < HIGH_IMPORTANCE]
        commitments = commitments_due_soon(reader.list(user_id, project, where="m.type = 'COMMITMENT'",
                                                       limit=MAX_COMMITMENTS),
                                           days=settings.l1_block.commitments_due_days)
        session = reader.list(user_id, project, where="m.type = 'SNAPSHOT'", limit=1)
        relevant: list[Memory] = []
        scores: dict[str, float] = {}
        if query:
            relevant, scores = relevant_of(reader.search(query, user_id, project, DEFAULT_POOL), query,
                                           threshold=settings.auto_recall.relevance_threshold,
                                           visible=VisibleContext(recent) if recent else None)
    finally:
        reader.close()
    if snapshot:
        session = [snapshot_memory(snapshot, user_id, session_id)]
    inputs = ReinjectionInputs(pinned, top_tier, important, session, commitments, relevant, scores, backfill)
    return fill_block(inputs, max_tokens=settings.auto_recall.max_tokens,
                      session_tokens=settings.l1_block.session_tokens)


def fallback_l1_block(settings: Settings, user_id: str, *, query: str | None, recent: Sequence[str] = (),
                      project: str | None = None, snapshot: str | None = None,
                      session_id: str | None = None, after_compaction: bool = False) -> Any:
    """The full L1 block from the SQLite file (BM25 for the relevant section);
    ``after_compaction``: :func:`fallback_reinjection_block`."""
    if after_compaction:
        return fallback_reinjection_block(settings, user_id, query=query, recent=recent, project=project,
                                          snapshot=snapshot, session_id=session_id)
    from .block import BlockInputs, budgets_of, commitments_due_soon, compose_block, profile_of
    from .recall import FENCE_TOKENS, VisibleContext, rank

    cfg = settings.l1_block
    reader = SqliteReader(settings.db_path)
    try:
        profile = profile_of([
            *reader.list(user_id, project, where="m.pinned = 1"),
            *reader.list(user_id, project, where="m.tier = ?", params=[Tier.L1.value]),
            *reader.list(user_id, project, where="m.type = 'PREFERENCE' AND m.importance >= 6"),
        ])
        commitments = commitments_due_soon(
            reader.list(user_id, project, where="m.type = 'COMMITMENT'", limit=50), days=cfg.commitments_due_days)
        session = reader.list(user_id, project, where="m.type = 'SNAPSHOT'", limit=1)
        relevant: list[Memory] = []
        scores: dict[str, float] = {}
        if query:
            visible = VisibleContext(recent)
            for r in rank(reader.search(query, user_id, project, 40), query):
                if r.relevance >= settings.auto_recall.relevance_threshold and not visible.holds(r.memory):
                    relevant.append(r.memory)
                    scores[r.memory.id] = r.score
                if len(relevant) >= settings.auto_recall.max_memories:
                    break
    finally:
        reader.close()
    if snapshot:
        session = [snapshot_memory(snapshot, user_id, session_id)]
    profile = [m for m in profile if m.type is not MemoryType.SNAPSHOT]
    inputs = BlockInputs(profile=profile, relevant=relevant, commitments=commitments, session=session, scores=scores)
    return compose_block(inputs, budgets=budgets_of(cfg), max_tokens=sum(budgets_of(cfg)) + FENCE_TOKENS)


# --------------------------------------------------------------------------- enqueue


def _turn_id(session_id: str | None, kind: str, text: str) -> str:
    import hashlib  # not on UserPromptSubmit's path

    digest = hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:16]
    return f"{_safe(session_id)}:{kind}:{digest}"


def enqueue(settings: Settings, payload: dict[str, Any], *, kind: str, role: str, text: str,
            context: Sequence[str] = (), turn_id: str | None = None, user_id: str | None = None,
            metadata: dict[str, Any] | None = None) -> bool:
    """Gate ``text`` and, when it passes, commit it to ``<home>/queue.db`` (redacted). Returns
    True when a job was queued."""
    from .gate import Gate
    from .privacy import redact
    from .queue import enqueue_turn, queue_path

    if not text.strip():
        return False
    verdict = Gate(settings.extraction.gate_threshold).score(text, list(context))
    if not verdict.passed:
        return False
    turn = {
        "id": turn_id or _turn_id(payload.get("session_id"), kind, text),
        "user_id": user_id or user_id_for(payload),
        "content": redact(text),
        "role": role,
        "timestamp": utcnow().isoformat(),
        "session_id": payload.get("session_id"),
        "project": os.path.basename(project_dir(payload).rstrip("/")) or None,
        "metadata": {"source": f"claude-code:{kind}", "gate_score": verdict.score, **(metadata or {})},
    }
    queued = enqueue_turn(queue_path(settings.home), turn, context=[redact(c) for c in context[-3:]])
    if queued:
        daemon_request(settings, {"op": "queue.notify"}, timeout=0.02)
    return queued


# --------------------------------------------------------------------------- events


def _context_output(event: str, text: str) -> dict[str, Any]:
    if not text:
        return {}
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def _l1(settings: Settings, payload: dict[str, Any], *, query: str | None, recent: Sequence[str],
        snapshot: str | None, after_compaction: bool = False) -> tuple[str, list[str]]:
    """The L1 block text and its memory ids: from the daemon (hybrid) or the file (BM25).
    ``after_compaction``: the re-injection block, filled to the budget by priority."""
    user_id = user_id_for(payload)
    project = project_for(payload)
    reply = daemon_request(settings, {"op": "hook.l1_block", "user_id": user_id, "project": project,
                                      "query": query, "recent": list(recent), "snapshot": snapshot,
                                      "session_id": payload.get("session_id"), "after_compaction": after_compaction})
    if reply is not None and isinstance(reply.get("text"), str):
        return reply["text"], [str(i) for i in reply.get("memory_ids") or []]
    block = fallback_l1_block(settings, user_id, query=query, recent=recent, project=project, snapshot=snapshot,
                              session_id=payload.get("session_id"), after_compaction=after_compaction)
    return block.text, [m.id for m in block.memories]


def reinjection_query(marker: dict[str, Any], session: dict[str, Any], prompt: str | None = None) -> str | None:
    """The relevant section's query after compaction: the last user prompts kept in the
    compaction ``marker`` (or the session's last prompt), ``prompt``, and the snapshot."""
    from .reinjection import recall_query

    prompts = [str(p) for p in marker.get("recent_prompts") or []] \
        or [str(p) for p in (marker.get("last_prompt"), session.get("last_prompt")) if p][:1]
    if prompt:
        prompts.append(prompt)
    return recall_query(prompts, marker.get("snapshot")) or None


def on_session_start(settings: Settings, payload: dict[str, Any]) -> dict[str, Any]:
    sid = payload.get("session_id")
    source = payload.get("source") or "startup"
    if source == "compact":
        marker = read_marker(settings, sid) or {}
        query = reinjection_query(marker, load_session(settings, sid))
        text, ids = _l1(settings, payload, query=query, recent=[], snapshot=marker.get("snapshot"),
                        after_compaction=True)
        remember_injected(settings, sid, ids, reset=True)
        clear_marker(settings, sid)
        return _context_output("SessionStart", text)
    text, ids = _l1(settings, payload, query=None, recent=[], snapshot=None)
    if source == "resume" and set(ids) <= set(load_session(settings, sid).get("injected") or []):
        return {}  # everything in it is still in the resumed conversation
    remember_injected(settings, sid, ids, reset=source != "resume")
    return _context_output("SessionStart", text)


def on_user_prompt(settings: Settings, payload: dict[str, Any]) -> dict[str, Any]:
    sid = payload.get("session_id")
    prompt = str(payload.get("prompt") or "")
    recent = recent_texts(payload)
    marker = read_marker(settings, sid)
    if marker is not None:
        text, ids = _l1(settings, payload, query=reinjection_query(marker, {}, prompt), recent=recent,
                        snapshot=marker.get("snapshot"), after_compaction=True)
        remember_injected(settings, sid, ids, reset=True, prompt=prompt, prompt_id=payload.get("prompt_id"))
        clear_marker(settings, sid)
        return _context_output("UserPromptSubmit", text)
    state = load_session(settings, sid)
    exclude = [str(i) for i in state.get("injected") or []]
    user_id = user_id_for(payload)
    project = project_for(payload)
    reply = daemon_request(settings, {"op": "hook.recall", "user_id": user_id, "project": project,
                                      "prompt": prompt, "recent": recent, "exclude_ids": exclude})
    if reply is not None and isinstance(reply.get("text"), str):
        text, ids = reply["text"], [str(i) for i in reply.get("memory_ids") or []]
    else:
        result = fallback_recall(settings, user_id, prompt, recent, project=project, exclude_ids=exclude)
        text, ids = result.text, result.memory_ids
        logger.debug("fallback recall: %s memories, skipped=%s, %.1f ms", len(ids), result.skipped_reason,
                     result.latency_ms)
    remember_injected(settings, sid, ids, prompt=prompt, prompt_id=payload.get("prompt_id"))
    return _context_output("UserPromptSubmit", text)


def on_pre_compact(settings: Settings, payload: dict[str, Any]) -> str:
    """Checkpoint before compaction; returns the plain-text instructions to print."""
    sid = payload.get("session_id")
    messages = read_transcript(payload.get("transcript_path"))
    backup = None
    try:
        backup = backup_transcript(settings, payload)
    except OSError:
        logger.exception("transcript backup failed")
    snapshot = snapshot_text(messages)
    last_prompt = next((t for r, t in reversed(messages) if r == "user"), None) \
        or load_session(settings, sid).get("last_prompt")
    write_marker(settings, sid, {"trigger": payload.get("trigger"), "at": utcnow().isoformat(),
                                 "snapshot": snapshot, "last_prompt": last_prompt,
                                 "recent_prompts": recent_prompts(messages),
                                 "transcript_backup": str(backup) if backup else None})
    daemon_request(settings, {"op": "hook.pre_compact", "user_id": user_id_for(payload),
                              "session_id": sid, "snapshot": snapshot, "trigger": payload.get("trigger"),
                              "transcript_backup": str(backup) if backup else None,
                              "project": os.path.basename(project_dir(payload).rstrip("/")) or None},
                   timeout=max(settings.hooks.daemon_timeout_seconds, 10.0))
    return compaction_instructions(settings)


def on_post_tool_use(settings: Settings, payload: dict[str, Any]) -> dict[str, Any]:
    response = payload.get("tool_response")
    text = response if isinstance(response, str) else _text_of(response) if isinstance(response, list) else ""
    if not text and isinstance(response, dict):
        text = str(response.get("stdout") or response.get("content") or response.get("result") or "")
    if text:
        tool = str(payload.get("tool_name") or "tool")
        enqueue(settings, payload, kind=f"tool-{payload.get('tool_use_id') or tool}", role="tool",
                text=text[:MAX_TOOL_TEXT], metadata={"tool": tool})
    return {}


def on_stop(settings: Settings, payload: dict[str, Any]) -> dict[str, Any]:
    """Enqueue the turn: the prompt (kept by UserPromptSubmit, off its hot path) and the reply."""
    sid = payload.get("session_id")
    state = load_session(settings, sid)
    prompt = str(state.get("last_prompt") or "")
    if prompt and state.get("queued_prompt") != prompt:
        enqueue(settings, payload, kind="user", role="user", text=prompt,
                turn_id=f"{_safe(sid)}:user:{state['prompt_id']}" if state.get("prompt_id") else None)
        state["queued_prompt"] = prompt
        save_session(settings, sid, state)
    message = str(payload.get("last_assistant_message") or "")
    if message:
        enqueue(settings, payload, kind="assistant", role="assistant", text=message,
                context=[prompt] if prompt else [])
    daemon_request(settings, {"op": "hook.turn_end", "user_id": user_id_for(payload), "session_id": sid},
                   timeout=0.05)
    return {}


def on_session_end(settings: Settings, payload: dict[str, Any]) -> dict[str, Any]:
    daemon_request(settings, {"op": "hook.session_end", "user_id": user_id_for(payload),
                              "session_id": payload.get("session_id")}, timeout=1.0)
    return {}


def handle(event: str, payload: dict[str, Any], settings: Settings) -> dict[str, Any] | str:
    """Run one hook event. Returns the JSON object (or, for PreCompact, the plain text) to print."""
    off = memory_disabled(settings, payload)
    if off:
        logger.debug("memory off for this hook (%s)", off)
        return "" if event == "pre-compact" else {}
    if event == "session-start":
        return on_session_start(settings, payload)
    if event == "user-prompt-submit":
        return on_user_prompt(settings, payload)
    if event == "pre-compact":
        return on_pre_compact(settings, payload)
    if event == "post-tool-use":
        return on_post_tool_use(settings, payload)
    if event == "stop":
        return on_stop(settings, payload)
    if event == "session-end":
        return on_session_end(settings, payload)
    return {}


def _setup_logging(home: Path) -> None:
    root = logging.getLogger("dexai_memory")
    if root.handlers:
        return
    level = logging.DEBUG if os.environ.get("DEXAI_MEMORY_HOOK_DEBUG") else logging.WARNING
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        handler: logging.Handler = logging.FileHandler(home / "hooks.log", encoding="utf-8")
    except OSError:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"))
    root.addHandler(handler)
    root.setLevel(level)


def fast_settings() -> Settings:
    """Settings for a hook process without parsing the packaged YAML (~50 ms of pure-Python
    YAML): the dataclass defaults equal the packaged ``memory.yaml`` (a test keeps them equal),
    so only ``<home>/memory.yaml`` is read, when it exists, with the same validation."""
    from . import config

    home = config.home_dir()
    user_file = home / "memory.yaml"
    if not user_file.is_file():
        return Settings(home=home)
    return config._build(Settings, config._read_yaml(user_file), "", str(user_file),  # noqa: SLF001
                         Settings(home=home))


def run(event: str, stdin: IO[str], stdout: IO[str]) -> int:
    """Read the hook JSON from ``stdin``, handle ``event``, write the answer to ``stdout``.

    Always returns 0 and always writes valid output (``{}`` when anything
    failed): a hook must never break the agent.
    """
    from .config import home_dir

    _setup_logging(home_dir())
    answer: dict[str, Any] | str = "" if event == "pre-compact" else {}
    try:
        raw = stdin.read()
        payload = json.loads(raw) if raw.strip() else {}
        if not isinstance(payload, dict):
            payload = {}
        if event not in EVENTS:
            logger.warning("unknown hook event %r", event)
        else:
            answer = handle(event, payload, fast_settings())
    except Exception:  # a hook never fails the agent: log and answer a no-op
        logger.exception("hook %s failed", event)
        if event == "pre-compact":
            with contextlib.suppress(Exception):
                answer = compaction_instructions(Settings())
    if isinstance(answer, str):
        if answer:
            stdout.write(answer + "\n")
    else:
        stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
    stdout.flush()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dexai_memory.hook_runtime <event>``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        sys.stderr.write(f"usage: python -m dexai_memory.hook_runtime <{'|'.join(EVENTS)}>\n")
        return 2
    return run(args[0], sys.stdin, sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
