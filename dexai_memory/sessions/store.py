"""The Claude Agent SDK's session store, backed by our data directory: :class:`SessionStore`.

``ClaudeAgentOptions(session_store=SessionStore.open(settings))`` mirrors every
transcript line of an Agent SDK session into ``<data dir>/sessions.db``
(SQLite, WAL), so a session can be resumed on another machine or after the
local transcript is gone (``resume=...`` with the same store), listed and
deleted (``dexai sessions list | show | delete``).

What it keeps, per session:

- the entries, in append order, each appended once: an entry's ``uuid`` is its
  idempotency key (the SDK retries failed batches); entries without one are
  appended as they come. Subagent transcripts live under their ``subpath``
  and go with the session when it is deleted;
- the SDK's incremental summary (:func:`claude_agent_sdk.fold_session_summary`),
  so listing needs no transcript read;
- tool statistics (calls by tool, failures: a ``tool_result`` with
  ``is_error``) and token usage (input, cache and output tokens of each
  assistant message, counted once per message id);
- its ``system_state`` (the last workspace, git branch, model and permission mode the
  transcript shows) and its ``last_known_environment`` (that workspace, the time of the
  last entry, Claude Code's version, the platform, and a ``system_snapshot`` of the
  machine's load and the workspace disk's use, read when the batch is appended): the
  latest value of each field wins, a batch without one keeps the earlier value;
- the session's tasks (the design's ``active_tasks``): each item of the latest
  ``TodoWrite`` list (pending, running for ``in_progress``, completed) and
  each subagent started with the ``Task`` / ``Agent`` tool (running until its
  result comes back, then completed or failed). Task pruning runs on every
  append: running and pending tasks are kept, finished ones for
  :data:`FINISHED_TASK_TTL_MS` (24 hours) after they finished, then removed.

Every string of every entry is redacted before it is stored (:func:`redact_entry`: ``<private>``
text and secrets never reach ``sessions.db``; ids and signatures are kept as they are).

Appends are atomic (one ``BEGIN IMMEDIATE`` transaction each), so concurrent
writers never interleave a batch or lose a summary fold. The store is
duck-typed to the SDK's ``SessionStore`` protocol; nothing here imports the
SDK except the summary fold, at append time.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..datadir import ensure_home, private_file
from ..extraction.usage import Usage
from ..text.redaction import redact

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["FINISHED_TASK_TTL_MS", "SessionInfo", "SessionStore", "Task", "ToolStats"]

#: How long a finished (completed or failed) task is kept after it finished: 24 hours.
FINISHED_TASK_TTL_MS = 24 * 3600 * 1000
#: Task statuses: ``pending`` and ``running`` are kept, the finished ones pruned after the TTL.
TASK_STATUSES = ("pending", "running", "completed", "failed")
_TODO_STATUS = {"pending": "pending", "in_progress": "running", "completed": "completed"}
#: Tools that start a subagent (a task running until its result).
SUBAGENT_TOOLS = frozenset({"Task", "Agent"})

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    project_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    subpath TEXT NOT NULL DEFAULT '',
    uuid TEXT,
    body TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS entries_uuid ON entries(project_key, session_id, subpath, uuid)
    WHERE uuid IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_session ON entries(project_key, session_id, subpath, seq);
CREATE TABLE IF NOT EXISTS sessions (
    project_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    mtime INTEGER NOT NULL,
    summary TEXT,
    PRIMARY KEY (project_key, session_id)
);
CREATE TABLE IF NOT EXISTS tool_calls (
    project_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    tool_use_id TEXT NOT NULL,
    name TEXT NOT NULL,
    failed INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (project_key, session_id, tool_use_id)
);
CREATE TABLE IF NOT EXISTS tasks (
    project_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    description TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (project_key, session_id, task_id)
);
CREATE TABLE IF NOT EXISTS environment (
    project_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    system_state TEXT NOT NULL,
    environment TEXT NOT NULL,
    PRIMARY KEY (project_key, session_id)
);
CREATE TABLE IF NOT EXISTS usage (
    project_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    PRIMARY KEY (project_key, session_id, message_id)
);
"""


@dataclass(frozen=True)
class ToolStats:
    """Tool calls of a session: total, by tool, and how many failed."""

    total_calls: int = 0
    by_tool: Mapping[str, int] = field(default_factory=dict)
    failures: int = 0


@dataclass(frozen=True)
class Task:
    """One task of a session: a to-do item or a subagent; times in ms since the epoch."""

    task_id: str
    description: str
    status: str
    created_at: int
    updated_at: int

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.task_id, "description": self.description, "status": self.status,
                "created_at": self.created_at, "updated_at": self.updated_at}


@dataclass(frozen=True)
class SessionInfo:
    """One stored session, for ``dexai sessions``."""

    project_key: str
    session_id: str
    mtime: int
    entries: int
    first_prompt: str | None
    tools: ToolStats
    input_tokens: int
    output_tokens: int
    tasks: tuple[Task, ...] = ()
    #: ``{"last_workspace", "git_branch", "model", "permission_mode"}`` as far as known.
    system_state: Mapping[str, Any] = field(default_factory=dict)
    #: ``{"workspace", "last_update" (ms), "version", "platform", "system_snapshot"}`` as far as known.
    environment: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"project_key": self.project_key, "session_id": self.session_id, "mtime": self.mtime,
                "entries": self.entries, "first_prompt": self.first_prompt,
                "tool_stats": {"total_calls": self.tools.total_calls, "by_tool": dict(self.tools.by_tool),
                               "failures": self.tools.failures},
                "token_usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                                "total_tokens": self.input_tokens + self.output_tokens},
                "active_tasks": [t.as_dict() for t in self.tasks], "system_state": dict(self.system_state),
                "last_known_environment": dict(self.environment)}


def _now_ms() -> int:
    return int(time.time() * 1000)


class SessionStore:
    """A session store for ``ClaudeAgentOptions(session_store=...)`` on a SQLite file (see the module)."""

    def __init__(self, path: Path):
        self.path = path
        self._ready = False

    @classmethod
    def open(cls, settings: Settings) -> SessionStore:
        """The store of a data directory: ``<home>/sessions.db``."""
        return cls(settings.home / "sessions.db")

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        if not self._ready:
            ensure_home(self.path.parent)
            private_file(self.path)
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            if not self._ready:
                db.execute("PRAGMA journal_mode=WAL")
                db.executescript(_SCHEMA)
                self._ready = True
            yield db
        finally:
            db.close()

    # ------------------------------------------------------------------ the SDK protocol

    async def append(self, key: Mapping[str, Any], entries: list[dict[str, Any]]) -> None:
        """Mirror a batch of transcript entries (atomically; a repeated ``uuid`` is stored once)."""
        await asyncio.to_thread(self._append, dict(key), entries)

    async def load(self, key: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        """The entries of ``key`` in append order, or None when it was never written."""
        return await asyncio.to_thread(self._load, dict(key))

    async def list_sessions(self, project_key: str) -> list[dict[str, Any]]:
        """Session ids and modification times (epoch ms) of ``project_key``."""
        rows = await asyncio.to_thread(self._query, "SELECT session_id, mtime FROM sessions WHERE project_key = ?",
                                       (project_key,))
        return [{"session_id": r[0], "mtime": r[1]} for r in rows]

    async def list_session_summaries(self, project_key: str) -> list[dict[str, Any]]:
        """The SDK's summaries of ``project_key``'s sessions, stamped with our mtime."""
        rows = await asyncio.to_thread(
            self._query, "SELECT session_id, mtime, summary FROM sessions WHERE project_key = ? AND summary IS NOT NULL",
            (project_key,))
        return [{**json.loads(r[2]), "session_id": r[0], "mtime": r[1]} for r in rows]

    async def delete(self, key: Mapping[str, Any]) -> None:
        """Delete a session (with its subagent transcripts), or one ``subpath`` of it."""
        await asyncio.to_thread(self._delete, dict(key))

    async def list_subkeys(self, key: Mapping[str, Any]) -> list[str]:
        """The subpaths (subagent transcripts) stored under a session."""
        rows = await asyncio.to_thread(
            self._query, "SELECT DISTINCT subpath FROM entries WHERE project_key = ? AND session_id = ? "
                         "AND subpath != ''", (key["project_key"], key["session_id"]))
        return [r[0] for r in rows]

    # ------------------------------------------------------------------ ours

    def sessions(self, project_key: str | None = None) -> list[SessionInfo]:
        """Every stored session (of ``project_key``), newest first, with its statistics."""
        where, args = ("WHERE project_key = ?", (project_key,)) if project_key else ("", ())
        rows = self._query(f"SELECT project_key, session_id FROM sessions {where} ORDER BY mtime DESC", args)
        return [info for r in rows if (info := self.info(r[1], project_key=r[0])) is not None]

    def info(self, session_id: str, *, project_key: str | None = None) -> SessionInfo | None:
        """One session's statistics (the newest of that id when ``project_key`` is not given)."""
        with self._db() as db:
            row = db.execute("SELECT project_key, mtime, summary FROM sessions WHERE session_id = ? "
                             "AND (? IS NULL OR project_key = ?) ORDER BY mtime DESC LIMIT 1",
                             (session_id, project_key, project_key)).fetchone()
            if row is None:
                return None
            pk = row[0]
            entries = db.execute("SELECT COUNT(*) FROM entries WHERE project_key = ? AND session_id = ?",
                                 (pk, session_id)).fetchone()[0]
            by_tool = dict(db.execute("SELECT name, COUNT(*) FROM tool_calls WHERE project_key = ? AND session_id = ? "
                                      "GROUP BY name ORDER BY name", (pk, session_id)).fetchall())
            failures = db.execute("SELECT COUNT(*) FROM tool_calls WHERE project_key = ? AND session_id = ? "
                                  "AND failed", (pk, session_id)).fetchone()[0]
            tokens = db.execute("SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0) FROM usage "
                                "WHERE project_key = ? AND session_id = ?", (pk, session_id)).fetchone()
            tasks = tuple(Task(*r) for r in db.execute(
                "SELECT task_id, description, status, created_at, updated_at FROM tasks WHERE project_key = ? "
                "AND session_id = ? AND (status IN ('pending', 'running') OR updated_at >= ?) ORDER BY created_at, "
                "rowid", (pk, session_id, _now_ms() - FINISHED_TASK_TTL_MS)))
            env = db.execute("SELECT system_state, environment FROM environment WHERE project_key = ? "
                             "AND session_id = ?", (pk, session_id)).fetchone()
        data = (json.loads(row[2]).get("data") or {}) if row[2] else {}
        first = data.get("first_prompt") or data.get("command_fallback")
        return SessionInfo(pk, session_id, row[1], entries, first if isinstance(first, str) else None,
                           ToolStats(sum(by_tool.values()), by_tool, failures), tokens[0], tokens[1], tasks,
                           json.loads(env[0]) if env else {}, json.loads(env[1]) if env else {})

    def remove(self, session_id: str, *, project_key: str | None = None) -> int:
        """Delete a session by id (in every project unless ``project_key``); returns entries deleted."""
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            args = (session_id, project_key, project_key)
            clause = "session_id = ? AND (? IS NULL OR project_key = ?)"
            count = db.execute(f"SELECT COUNT(*) FROM entries WHERE {clause}", args).fetchone()[0]
            for table in TABLES:
                db.execute(f"DELETE FROM {table} WHERE {clause}", args)
            db.execute("COMMIT")
        return int(count)

    # ------------------------------------------------------------------ implementation

    def _query(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._db() as db:
            return db.execute(sql, args).fetchall()

    def _append(self, key: dict[str, Any], entries: list[dict[str, Any]]) -> None:
        pk, sid, sub = key["project_key"], key["session_id"], key.get("subpath") or ""
        entries = [redact_entry(e) for e in entries]  # <private> text and secrets never reach sessions.db
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                for entry in entries:
                    uuid = entry.get("uuid") if isinstance(entry.get("uuid"), str) else None
                    added = db.execute("INSERT OR IGNORE INTO entries (project_key, session_id, subpath, uuid, body) "
                                       "VALUES (?, ?, ?, ?, ?)", (pk, sid, sub, uuid, json.dumps(entry))).rowcount
                    if added:  # a retried entry is counted once
                        _count(db, pk, sid, entry)
                mtime = _now_ms()
                prune_tasks(db, mtime)
                _remember_environment(db, pk, sid, entries, mtime)
                summary = None
                if not sub:
                    row = db.execute("SELECT summary FROM sessions WHERE project_key = ? AND session_id = ?",
                                     (pk, sid)).fetchone()
                    from claude_agent_sdk import fold_session_summary

                    prev = json.loads(row[0]) if row and row[0] else None
                    folded = dict(fold_session_summary(prev, key, entries))  # type: ignore[arg-type]
                    folded["mtime"] = mtime
                    summary = json.dumps(folded)
                db.execute("INSERT INTO sessions (project_key, session_id, mtime, summary) VALUES (?, ?, ?, ?) "
                           "ON CONFLICT (project_key, session_id) DO UPDATE SET mtime = excluded.mtime, "
                           "summary = COALESCE(excluded.summary, sessions.summary)", (pk, sid, mtime, summary))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def _load(self, key: dict[str, Any]) -> list[dict[str, Any]] | None:
        rows = self._query("SELECT body FROM entries WHERE project_key = ? AND session_id = ? AND subpath = ? "
                           "ORDER BY seq", (key["project_key"], key["session_id"], key.get("subpath") or ""))
        return [json.loads(r[0]) for r in rows] if rows else None

    def _delete(self, key: dict[str, Any]) -> None:
        pk, sid, sub = key["project_key"], key["session_id"], key.get("subpath")
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            if sub:
                db.execute("DELETE FROM entries WHERE project_key = ? AND session_id = ? AND subpath = ?",
                           (pk, sid, sub))
            else:
                for table in TABLES:
                    db.execute(f"DELETE FROM {table} WHERE project_key = ? AND session_id = ?", (pk, sid))
            db.execute("COMMIT")


#: The tables holding a session's rows.
TABLES = ("entries", "sessions", "tool_calls", "usage", "tasks", "environment")


#: Keys whose values are identifiers or opaque signatures, not text: kept as they are (a resumed
#: session needs its uuids, and a thinking block's signature is checked by the API).
_OPAQUE_KEYS = frozenset({"uuid", "parentUuid", "leafUuid", "sessionId", "session_id", "id", "tool_use_id",
                          "requestId", "request_id", "signature", "timestamp", "type", "model", "role"})


def redact_entry(value: Any) -> Any:
    """A transcript entry with every string in it, however nested, through
    :func:`~dexai_memory.text.redaction.redact`, but the values of :data:`_OPAQUE_KEYS`."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_entry(v) for v in value]
    if isinstance(value, dict):
        return {k: v if k in _OPAQUE_KEYS and isinstance(v, str) else redact_entry(v) for k, v in value.items()}
    return value


def prune_tasks(db: sqlite3.Connection, now_ms: int) -> int:
    """Task pruning: delete finished tasks (of every session) that finished over 24 hours ago."""
    return db.execute("DELETE FROM tasks WHERE status NOT IN ('pending', 'running') AND updated_at < ?",
                      (now_ms - FINISHED_TASK_TTL_MS,)).rowcount


def _set_task(db: sqlite3.Connection, pk: str, sid: str, task_id: str, description: str, status: str) -> None:
    """Insert a task or move it to ``status`` (``updated_at`` changes only when the status does)."""
    now = _now_ms()
    db.execute("INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project_key, session_id, task_id) "
               "DO UPDATE SET updated_at = CASE WHEN tasks.status = excluded.status THEN tasks.updated_at "
               "ELSE excluded.updated_at END, status = excluded.status",
               (pk, sid, task_id, description[:300], status, now, now))


def _tasks_of(db: sqlite3.Connection, pk: str, sid: str, block: Mapping[str, Any]) -> None:
    """The tasks a ``tool_use`` block starts or lists (``TodoWrite`` replaces the to-do items)."""
    name, data = block.get("name"), block.get("input")
    data = data if isinstance(data, Mapping) else {}
    if name == "TodoWrite" and isinstance(data.get("todos"), list):
        listed = set()
        for todo in data["todos"]:
            if isinstance(todo, Mapping) and isinstance(todo.get("content"), str) and todo["content"].strip():
                task_id = "todo:" + todo["content"].strip()[:200]
                listed.add(task_id)
                _set_task(db, pk, sid, task_id, todo["content"].strip(),
                          _TODO_STATUS.get(str(todo.get("status")), "pending"))
        for (task_id,) in db.execute("SELECT task_id FROM tasks WHERE project_key = ? AND session_id = ? AND "
                                     "task_id LIKE 'todo:%' AND status IN ('pending', 'running')", (pk, sid)).fetchall():
            if task_id not in listed:  # dropped from the list unfinished: it will not run
                db.execute("DELETE FROM tasks WHERE project_key = ? AND session_id = ? AND task_id = ?",
                           (pk, sid, task_id))
    elif name in SUBAGENT_TOOLS and isinstance(block.get("id"), str):
        text = data.get("description") or data.get("prompt") or name
        _set_task(db, pk, sid, block["id"], str(text).strip(), "running")


def _count(db: sqlite3.Connection, pk: str, sid: str, entry: Mapping[str, Any]) -> None:
    """Tool calls, tool failures, tasks and token usage of one transcript entry."""
    message = entry.get("message")
    if not isinstance(message, Mapping):
        return
    content = message.get("content")
    blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
    if entry.get("type") == "assistant":
        for block in blocks:
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                db.execute("INSERT OR IGNORE INTO tool_calls (project_key, session_id, tool_use_id, name) "
                           "VALUES (?, ?, ?, ?)", (pk, sid, block["id"], str(block.get("name") or "?")))
            if block.get("type") == "tool_use":
                _tasks_of(db, pk, sid, block)
        usage = message.get("usage")
        if isinstance(usage, Mapping) and isinstance(message.get("id"), str):
            tokens = Usage.of(usage)
            db.execute("INSERT OR REPLACE INTO usage VALUES (?, ?, ?, ?, ?)",
                       (pk, sid, message["id"], tokens.input_tokens, tokens.output_tokens))
    elif entry.get("type") == "user":
        for block in blocks:
            if block.get("type") != "tool_result" or not isinstance(block.get("tool_use_id"), str):
                continue
            if block.get("is_error"):
                db.execute("UPDATE tool_calls SET failed = 1 WHERE project_key = ? AND session_id = ? "
                           "AND tool_use_id = ?", (pk, sid, block["tool_use_id"]))
            db.execute("UPDATE tasks SET status = ?, updated_at = ? WHERE project_key = ? AND session_id = ? AND "
                       "task_id = ? AND status = 'running'",
                       ("failed" if block.get("is_error") else "completed", _now_ms(), pk, sid, block["tool_use_id"]))


#: Entry fields that say where and how the session runs: (entry key, section, field).
_STATE_FIELDS = (("cwd", "system_state", "last_workspace"), ("gitBranch", "system_state", "git_branch"),
                 ("permissionMode", "system_state", "permission_mode"), ("cwd", "environment", "workspace"),
                 ("version", "environment", "version"))


def system_snapshot(workspace: str | None) -> dict[str, Any]:
    """What the machine looks like now: its 1-minute load average and the use (percent) of the
    disk holding ``workspace``, each left out when it cannot be read here."""
    import os
    import shutil

    out: dict[str, Any] = {}
    try:
        out["load_average_1m"] = round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):  # not on every platform
        pass
    if workspace and os.path.isdir(workspace):
        try:
            disk = shutil.disk_usage(workspace)
            out["disk_usage_percent"] = round(100 * disk.used / disk.total, 1) if disk.total else None
        except OSError:
            pass
    return out


def _remember_environment(db: sqlite3.Connection, pk: str, sid: str, entries: list[dict[str, Any]],
                          now_ms: int) -> None:
    """Fold a batch's ``cwd`` / ``gitBranch`` / ``permissionMode`` / ``version`` and the last
    assistant message's model into the session's system state and last known environment."""
    import platform

    found: dict[str, dict[str, Any]] = {"system_state": {}, "environment": {}}
    for entry in entries:
        for key, section, name in _STATE_FIELDS:
            if isinstance(entry.get(key), str) and entry[key]:
                found[section][name] = entry[key]
        message = entry.get("message")
        if entry.get("type") == "assistant" and isinstance(message, Mapping) and isinstance(message.get("model"), str):
            found["system_state"]["model"] = message["model"]
    if not found["system_state"] and not found["environment"]:
        return
    row = db.execute("SELECT system_state, environment FROM environment WHERE project_key = ? AND session_id = ?",
                     (pk, sid)).fetchone()
    state = {**(json.loads(row[0]) if row else {}), **found["system_state"]}
    env = {**(json.loads(row[1]) if row else {}), **found["environment"]}
    env.update(last_update=now_ms, platform=platform.platform(terse=True),
               system_snapshot=system_snapshot(env.get("workspace")))
    db.execute("INSERT OR REPLACE INTO environment VALUES (?, ?, ?, ?)",
               (pk, sid, json.dumps(state), json.dumps(env)))
