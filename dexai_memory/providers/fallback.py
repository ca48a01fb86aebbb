"""Provider failover: an external provider backed by the native one.

:class:`FailoverProvider` forwards every call to the external (primary)
provider while it is up. When the primary raises :class:`ProviderUnavailable`
(or fails its health check) the wrapper switches to the native provider:

* writes go to the native provider and are appended to a **replay log** (a
  small SQLite file) before the call returns, so an accepted write survives a
  crash;
* reads are answered from the native provider (degraded: memories that live
  only in the primary are not seen until it is back);
* a write the native provider cannot carry out alone (an update or delete of
  a memory that exists only in the primary) raises ProviderUnavailable, so the
  caller keeps it (the extraction queue retries) instead of it being lost.

:meth:`FailoverProvider.recover` (called by the daemon's health monitor, and
before any call once ``recheck_seconds`` have passed) checks the primary and
replays the log in order, deleting each entry only after the primary took it.
Replay is idempotent: an add whose id already exists counts as done.
"""

from __future__ import annotations

import asyncio
import builtins
import dataclasses
import json
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from ..errors import InvalidMemory, MemoryNotFound, MissingExtra, ProviderUnavailable
from ..models import HealthStatus, Memory, MemoryEvent, SearchFilters, SearchResult, as_utc
from .base import MemoryProvider

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: Seconds between automatic recovery attempts while the primary is down.
DEFAULT_RECHECK_SECONDS = 30.0

_SCHEMA = """CREATE TABLE IF NOT EXISTS replay_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    op TEXT NOT NULL,
    user_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    logged_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
)"""


class ReplayLog:
    """Writes accepted while the primary was down, in order (SQLite, one row per write)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = asyncio.Lock()

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=30)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(_SCHEMA)
        return conn

    def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._connect()
        try:
            with conn:
                return fn(conn)
        finally:
            conn.close()

    async def append(self, op: str, *, user_id: str, memory_id: str, payload: dict[str, Any]) -> None:
        """Record one write durably (committed before this returns)."""
        data = json.dumps(payload, default=str)
        async with self._lock:
            await asyncio.to_thread(self._run, lambda c: c.execute(
                "INSERT INTO replay_log (op, user_id, memory_id, payload) VALUES (?, ?, ?, ?)",
                (op, user_id, memory_id, data)))

    async def pending(self, limit: int = 1000) -> builtins.list[tuple[int, str, str, str, dict[str, Any]]]:
        """The oldest ``limit`` entries: (seq, op, user_id, memory_id, payload)."""
        rows = await asyncio.to_thread(self._run, lambda c: c.execute(
            "SELECT seq, op, user_id, memory_id, payload FROM replay_log ORDER BY seq LIMIT ?", (limit,)).fetchall())
        return [(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in rows]

    async def done(self, seq: int) -> None:
        """Forget an entry the primary has taken."""
        async with self._lock:
            await asyncio.to_thread(self._run, lambda c: c.execute("DELETE FROM replay_log WHERE seq = ?", (seq,)))

    async def count(self) -> int:
        return int(await asyncio.to_thread(self._run, lambda c: c.execute(
            "SELECT COUNT(*) FROM replay_log").fetchone()[0]))


class FailoverProvider(MemoryProvider):
    """``primary`` while it works, ``native`` (plus a replay log) while it does not."""

    def __init__(self, primary: MemoryProvider, native: MemoryProvider, *, log_path: str | Path,
                 recheck_seconds: float = DEFAULT_RECHECK_SECONDS):
        super().__init__()
        self.primary = primary
        self.native = native
        self.log = ReplayLog(log_path)
        self.recheck_seconds = recheck_seconds
        self.name = f"{primary.name}+native-fallback"
        # restore, users() and links are not forwarded: a failover pair promises none of them (links
        # are a cold-path index: a store without them recalls without following links)
        self.capabilities = dataclasses.replace(primary.capabilities & native.capabilities, restore=False,
                                                list_users=False, links=False)
        self.primary_up = False
        self._primary_started = False
        self._checked_at = float("-inf")
        self._recover_lock = asyncio.Lock()

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        await self.native.start()
        await self._try_start_primary()
        if self.primary_up and await self.log.count():
            await self.recover()

    async def _try_start_primary(self) -> bool:
        self._checked_at = time.monotonic()
        try:
            await self.primary.start()
        except MissingExtra:
            raise
        except ProviderUnavailable as exc:
            self._mark_down(exc)
            return False
        self._primary_started = True
        self.primary_up = True
        return True

    async def aclose(self) -> None:
        try:
            if self._primary_started:
                await self.primary.aclose()
        finally:
            await self.native.aclose()

    def _mark_down(self, exc: BaseException) -> None:
        if self.primary_up or not self._primary_started:
            logger.warning("provider %s unavailable, writing to the native provider: %s", self.primary.name, exc)
        self.primary_up = False
        self._checked_at = time.monotonic()

    # ------------------------------------------------------------------ recovery
    async def recover(self) -> int:
        """Check the primary and replay the log to it. Returns how many writes were replayed.

        Stops (primary marked down again) at the first ProviderUnavailable; the
        entries not yet replayed stay in the log.
        """
        async with self._recover_lock:
            if not self._primary_started and not await self._try_start_primary():
                return 0
            self._checked_at = time.monotonic()
            try:
                status = await self.primary.health_check()
            except ProviderUnavailable as exc:
                self._mark_down(exc)
                return 0
            if not status.healthy:
                self._mark_down(ProviderUnavailable("; ".join(status.problems) or "unhealthy"))
                return 0
            replayed = 0
            while True:
                batch = await self.log.pending()
                if not batch:
                    break
                for seq, op, user_id, memory_id, payload in batch:
                    try:
                        await self._replay(op, user_id, memory_id, payload)
                    except ProviderUnavailable as exc:
                        self._mark_down(exc)
                        return replayed
                    await self.log.done(seq)
                    replayed += 1
            if replayed:
                logger.info("replayed %s write(s) to %s", replayed, self.primary.name)
            self.primary_up = True
            return replayed

    async def _replay(self, op: str, user_id: str, memory_id: str, payload: dict[str, Any]) -> None:
        p = self.primary
        if op == "add":
            try:
                await p.add(Memory.from_dict(payload["memory"]))
            except InvalidMemory:
                logger.info("replay: memory %s already in %s", memory_id, p.name)
        elif op == "update":
            changes = _decode_changes(payload["changes"])
            try:
                await p.update(memory_id, user_id=user_id, **changes)
            except MemoryNotFound:
                logger.warning("replay: update of %s skipped, %s does not have it", memory_id, p.name)
        elif op == "delete":
            await p.delete(memory_id, user_id=user_id, hard=bool(payload.get("hard")))
        elif op == "event":
            e = payload["event"]
            await p.record_event(MemoryEvent(e["memory_id"], e["action"], e["reason"], as_utc(e["at"]),  # type: ignore[arg-type]
                                             e.get("related_id"), e.get("details") or {}), user_id=user_id)
        else:
            logger.error("replay: unknown operation %r (entry kept out of the primary)", op)

    async def _maybe_recover(self) -> None:
        if not self.primary_up and time.monotonic() - self._checked_at >= self.recheck_seconds:
            await self.recover()

    async def _primary(self, call: Callable[[], Awaitable[T]]) -> tuple[bool, T | None]:
        """Run ``call`` on the primary if it is up: (True, result), or (False, None) when it is down."""
        await self._maybe_recover()
        if not self.primary_up:
            return False, None
        try:
            return True, await call()
        except ProviderUnavailable as exc:
            self._mark_down(exc)
            return False, None

    async def pending_replay(self) -> int:
        """Writes waiting in the replay log."""
        return await self.log.count()

    # ------------------------------------------------------------------ writes
    async def add(self, memory: Memory) -> Memory:
        ok, result = await self._primary(lambda: self.primary.add(memory))
        if ok:
            return result  # type: ignore[return-value]
        stored = await self.native.add(memory)
        await self.log.append("add", user_id=memory.user_id, memory_id=memory.id, payload={"memory": memory.to_dict()})
        return stored

    async def update(self, memory_id: str, *, user_id: str, **changes: Any) -> Memory:
        ok, result = await self._primary(lambda: self.primary.update(memory_id, user_id=user_id, **changes))
        if ok:
            return result  # type: ignore[return-value]
        try:
            updated = await self.native.update(memory_id, user_id=user_id, **changes)
        except MemoryNotFound:
            raise ProviderUnavailable(f"{self.primary.name} is down and memory {memory_id} is not in the native "
                                      "store: retry when it is back") from None
        await self.log.append("update", user_id=user_id, memory_id=memory_id,
                              payload={"changes": _encode_changes(changes)})
        return updated

    async def delete(self, memory_id: str, *, user_id: str, hard: bool = False) -> bool:
        ok, result = await self._primary(lambda: self.primary.delete(memory_id, user_id=user_id, hard=hard))
        if ok:
            return bool(result)
        try:
            await self.native.get(memory_id, user_id=user_id, include_deleted=True)
        except MemoryNotFound:
            raise ProviderUnavailable(f"{self.primary.name} is down and memory {memory_id} is not in the native "
                                      "store: retry when it is back") from None
        deleted = await self.native.delete(memory_id, user_id=user_id, hard=hard)
        await self.log.append("delete", user_id=user_id, memory_id=memory_id, payload={"hard": hard})
        return deleted

    async def record_event(self, event: MemoryEvent, *, user_id: str) -> None:
        ok, _ = await self._primary(lambda: self.primary.record_event(event, user_id=user_id))
        if ok:
            return
        await self.native.record_event(event, user_id=user_id)
        await self.log.append("event", user_id=user_id, memory_id=event.memory_id, payload={"event": event.to_dict()})

    # ------------------------------------------------------------------ reads
    async def get(self, memory_id: str, *, user_id: str, include_deleted: bool = False) -> Memory:
        ok, result = await self._primary(lambda: self.primary.get(memory_id, user_id=user_id,
                                                                  include_deleted=include_deleted))
        if ok:
            return result  # type: ignore[return-value]
        try:
            return await self.native.get(memory_id, user_id=user_id, include_deleted=include_deleted)
        except MemoryNotFound:
            raise ProviderUnavailable(f"{self.primary.name} is down and memory {memory_id} is not in the native "
                                      "store") from None

    async def search(self, query: str, *, user_id: str, filters: SearchFilters | None = None,
                     limit: int = 10) -> builtins.list[SearchResult]:
        ok, result = await self._primary(lambda: self.primary.search(query, user_id=user_id, filters=filters,
                                                                     limit=limit))
        if ok:
            return result  # type: ignore[return-value]
        return await self.native.search(query, user_id=user_id, filters=filters, limit=limit)

    async def list(self, *, user_id: str, filters: SearchFilters | None = None, limit: int = 100,
                   offset: int = 0) -> builtins.list[Memory]:
        ok, result = await self._primary(lambda: self.primary.list(user_id=user_id, filters=filters, limit=limit,
                                                                   offset=offset))
        if ok:
            return result  # type: ignore[return-value]
        return await self.native.list(user_id=user_id, filters=filters, limit=limit, offset=offset)

    async def count(self, *, user_id: str, filters: SearchFilters | None = None) -> int:
        ok, result = await self._primary(lambda: self.primary.count(user_id=user_id, filters=filters))
        if ok:
            return int(result or 0)
        return await self.native.count(user_id=user_id, filters=filters)

    async def events(self, memory_id: str, *, user_id: str) -> builtins.list[MemoryEvent]:
        ok, result = await self._primary(lambda: self.primary.events(memory_id, user_id=user_id))
        if ok:
            return result  # type: ignore[return-value]
        return await self.native.events(memory_id, user_id=user_id)

    # ------------------------------------------------------------------ health
    async def health_check(self) -> HealthStatus:
        """Healthy while requests are served (by either store); the primary's state is in the details."""
        await self._maybe_recover()
        native = await self.native.health_check()
        details: dict[str, Any] = {"primary": self.primary.name, "primary_up": self.primary_up,
                                   "pending_replay": await self.log.count(), "native": dict(native.details)}
        problems = [f"native: {p}" for p in native.problems]
        if self.primary_up:
            try:
                primary = await self.primary.health_check()
            except ProviderUnavailable as exc:
                self._mark_down(exc)
            else:
                details["primary_details"] = dict(primary.details)
                if not primary.healthy:
                    self._mark_down(ProviderUnavailable("; ".join(primary.problems)))
                    details["primary_problems"] = list(primary.problems)
        details["primary_up"] = self.primary_up
        details["degraded"] = not self.primary_up
        return HealthStatus(healthy=native.healthy, provider=self.name, details=details, problems=tuple(problems))


def _encode_changes(changes: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in changes.items():
        if hasattr(value, "isoformat"):
            value = {"__dt__": value.isoformat()}
        elif isinstance(value, tuple):
            value = list(value)
        out[key] = value
    return out


def _decode_changes(changes: dict[str, Any]) -> dict[str, Any]:
    return {k: as_utc(v["__dt__"]) if isinstance(v, dict) and set(v) == {"__dt__"} else v
            for k, v in changes.items()}
