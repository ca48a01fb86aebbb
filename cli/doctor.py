"""``dexai memory doctor``: each check says what is wrong and how to fix it."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dexai_memory.config import Settings
from dexai_memory.errors import DexaiMemoryError


@dataclass
class Check:
    """One doctor check."""

    name: str
    ok: bool
    detail: str
    fix: str = ""


async def run_checks(settings: Settings) -> list[Check]:
    """Run every check; never raises for a failing check."""
    checks = [Check("config", True, f"loaded (data dir {settings.home}, provider {settings.storage.provider})")]
    home = settings.home
    if home.exists() and not os.access(home, os.W_OK):
        checks.append(Check("data dir", False, f"{home} is not writable", f"chmod u+w {home} or set DEXAI_MEMORY_HOME"))
    else:
        checks.append(Check("data dir", True, f"{home}" + ("" if home.exists() else " (created on first write)")))
    try:
        import sqlean
        import sqlite_vec

        conn = sqlean.connect(":memory:")
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        version = conn.execute("SELECT vec_version()").fetchone()[0]
        conn.close()
        checks.append(Check("sqlite-vec", True, f"{version} loads through sqlean {sqlean.sqlite_version}"))
    except Exception as exc:  # report whatever the loader raised
        checks.append(Check("sqlite-vec", False, f"cannot load: {exc}", "pip install --force-reinstall sqlite-vec sqlean-py"))
    if settings.embedding.backend == "none":
        checks.append(Check("embedder", True, "none: BM25-only search (embedding.backend: none)"))
    else:
        try:
            from dexai_memory.embeddings import make_embedder

            emb = make_embedder(settings.embedding)
            assert emb is not None
            vec = emb.embed("doctor check")
            checks.append(Check("embedder", True, f"{emb.model_id}, {len(vec)} dimensions"))
        except DexaiMemoryError as exc:
            checks.append(Check("embedder", False, str(exc), "pip install --force-reinstall dexai-memory, or set "
                                "embedding.backend: none for BM25-only search"))
    from dexai_memory.daemon.session_state import PROJECT_ENV, project_key

    project = project_key({"cwd": os.getcwd()})
    checks.append(Check("project", True, f"memories captured here are stored under {project!r}"
                        + (f" (${PROJECT_ENV}; recall is scoped to it)" if os.environ.get(PROJECT_ENV)
                           else " (git root or directory; recall covers all of the user's memories)")))
    checks.append(await _provider_check(settings))
    if settings.storage.provider == "postgres":
        checks.extend(await _postgres_checks(settings))
    checks.extend(_write_checks(settings))
    checks.extend(_queue_checks(settings))
    checks.extend(_extractor_checks(settings))
    return checks


def _extractor_checks(settings: Settings) -> list[Check]:
    """Which extractor runs and why (API key -> Claude Code sign-in -> offline), and the tokens it used."""
    from dexai_memory.errors import ConfigError
    from dexai_memory.extraction.factory import budget, choose_backend

    key = settings.extraction.api_key_env
    try:
        backend = choose_backend(settings)
    except ConfigError as exc:
        return [Check("extractor", False, str(exc), f"export {key}=... or set extraction.extractor: auto")]
    model = settings.extraction.extraction_model
    label = {"api_key": f"Claude Haiku ({model}) with an API key",
             "claude_code": f"Claude Haiku ({model}) through the Claude Code sign-in",
             "offline": "offline rules"}[backend.name]
    fix = "" if backend.name != "offline" else (
        f"for model extraction: export {key}=..., or sign in to Claude Code (`claude` then /login)")
    checks = [Check("extractor", True, f"{label}: {backend.reason}", fix)]
    status = budget(settings).status()
    today, month, limit = status["today"], status["month"], status["daily_budget"]
    spent = bool(limit) and today["total_tokens"] >= limit
    checks.append(Check("model tokens", not spent or backend.name == "offline",
                        f"today {today['total_tokens']:,} of {limit:,} ({today['calls']} calls), "
                        f"this month {month['total_tokens']:,}" if limit else
                        f"today {today['total_tokens']:,} (no daily limit), this month {month['total_tokens']:,}",
                        "today's budget is spent: the offline extractor answers until tomorrow; raise "
                        "extraction.daily_token_budget for more" if spent else ""))
    return checks


async def _provider_check(settings: Settings) -> Check:
    from dexai_memory.errors import DatabaseCorrupt
    from dexai_memory.providers import make_provider
    from dexai_memory.providers.native.database import Database

    name = f"provider ({settings.storage.provider})"
    try:
        async with make_provider(settings) as provider:
            status = await provider.health_check()
            database = getattr(provider, "database", None)
            if isinstance(database, Database):
                await database.check(full=True)  # every page and index, whatever the size
    except DatabaseCorrupt as exc:
        return Check(name, False, str(exc), "put a backup back: 'dexai memory backup --list', then "
                     "'dexai memory restore-backup PATH' (the damaged file is kept aside)")
    except DexaiMemoryError as exc:
        fix = ("move the file aside and put a backup back: 'dexai memory backup --list', then "
               "'dexai memory restore-backup PATH'") if "SQLite" in str(exc) else ""
        return Check(name, False, str(exc), fix)
    detail = ", ".join(f"{k} {v}" for k, v in status.details.items() if k in ("memories", "users", "schema_version",
                                                                                 "sqlite_vec", "vector_search", "vectors_pending",
                                                                                 "path"))
    return Check(name, status.healthy, detail or "healthy", "; ".join(status.problems))


async def _postgres_checks(settings: Settings) -> list[Check]:
    """The postgres provider: the connection (DSN from its environment variable, never shown with its
    password), the pgvector extension, the schema version, and writes waiting to be replayed."""
    from dexai_memory.providers.postgres.database import probe

    pg = settings.postgres
    dsn = os.environ.get(pg.dsn_env, "")
    if not dsn:
        return [Check("postgres connection", False, f"${pg.dsn_env} is not set",
                      f"export {pg.dsn_env}=postgresql://USER:PASSWORD@HOST:5432/DB")]
    try:
        info = await probe(dsn, schema=pg.schema, connect_timeout_seconds=pg.connect_timeout_seconds)
    except ImportError:
        return [Check("postgres connection", False, "psycopg is not installed",
                      "pip install 'dexai-memory[postgres]'")]
    except DexaiMemoryError as exc:
        return [Check("postgres connection", False, str(exc), "check that the server is up and reachable from here, "
                      f"and ${pg.dsn_env}; meanwhile writes go to the local store and are replayed later")]
    checks = [Check("postgres connection", True, f"{info['server']} (PostgreSQL {info['postgres']})")]
    if info["pgvector"]:
        checks.append(Check("pgvector", True, f"extension vector {info['pgvector']} installed"))
    elif info["pgvector_available"]:
        checks.append(Check("pgvector", True, f"vector {info['pgvector_available']} available; created on first start "
                            "(needs CREATE privilege)"))
    else:
        checks.append(Check("pgvector", False, "the server has no pgvector extension",
                            "install pgvector on the server (managed Postgres: enable the 'vector' extension)"))
    version, expected = info["schema_version"], info["expected_schema_version"]
    if version > expected:
        checks.append(Check("postgres schema", False, f"schema {pg.schema!r} is at version {version}, newer than this "
                            f"dexai-memory ({expected})", "upgrade dexai-memory on this machine"))
    else:
        checks.append(Check("postgres schema", True, f"{pg.schema!r} at version {version} of {expected}"
                            + ("" if version == expected else " (migrated on the next start)")))
    replay = settings.home / "replay-postgres.db"
    if replay.exists():
        with sqlite3.connect(replay) as conn:
            waiting = conn.execute("SELECT COUNT(*) FROM replay_log").fetchone()[0]
        checks.append(Check("postgres replay", True, f"{waiting} write(s) made while the server was down wait "
                            "to be replayed" if waiting else "nothing waiting to be replayed"))
    return checks


def write_probe(path: Path, *, stdlib: bool = False) -> str | None:
    """Try a real write to the SQLite file ``path`` (a table created and rolled back): None if it
    can be written, else why not (a read-only file or directory, a full disk)."""
    from dexai_memory.providers.native.driver import store_sqlite

    driver: Any = sqlite3 if stdlib else store_sqlite()
    try:
        conn = driver.connect(str(path), timeout=2.0, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("CREATE TABLE dexai_doctor_write_probe (x)")
            conn.execute("ROLLBACK")
        finally:
            conn.close()
    except driver.Error as exc:
        if "locked" in str(exc):
            return None  # another process is writing right now: writable
        return str(exc)
    return None


def _write_checks(settings: Settings) -> list[Check]:
    """The databases can be written: a read-only memory.db or queue.db (or data directory) makes every
    extraction fail while reads still work."""
    from dexai_memory.providers.native.damage import damage_reason

    out = []
    for label, path, stdlib in (("database writable", settings.db_path, False),
                                ("queue writable", settings.home / "queue.db", True)):
        if settings.storage.provider != "native" and not stdlib or not path.exists():
            continue
        if not stdlib and damage_reason(path) is not None:
            continue  # a damaged store is never written to, not even by a rolled-back probe
        problem = write_probe(path, stdlib=stdlib)
        if problem is None:
            out.append(Check(label, True, f"{path} accepts writes"))
        else:
            out.append(Check(label, False, f"{path} cannot be written ({problem}): every extraction fails",
                             f"chmod u+w {path} {path.parent}, or check the disk (df -h {path.parent})"))
    return out


#: Seconds queued turns may wait with no worker before doctor calls it a problem.
STALE_QUEUE_SECONDS = 120.0


def _queue_checks(settings: Settings) -> list[Check]:
    import time

    from dexai_memory.daemon.control import autostart_enabled, lock_held, log_path, status

    daemon = status(settings, timeout=1.0)
    if daemon.answering:
        checks = [Check("daemon", True, f"running (pid {daemon.pid}, version {daemon.version}); log {daemon.log}")]
    elif daemon.running:
        checks = [Check("daemon", True, f"starting or busy (pid {daemon.pid}); log {daemon.log}")]
    elif autostart_enabled(settings):
        checks = [Check("daemon", True, "not running; the hooks start one when needed (daemon.autostart)")]
    else:
        checks = [Check("daemon", True, "not running, autostart off: hook events wait in queue.db until a daemon "
                                        "starts; run 'dexai daemon start' (or your service)")]
    path = settings.home / "queue.db"
    if not path.exists():
        return [*checks, Check("extraction queue", True, "empty (no queue.db yet)")]
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        dead = conn.execute("SELECT COUNT(*) FROM dead_letters").fetchone()[0] if "dead_letters" in tables else 0
        pending, oldest = (conn.execute("SELECT COUNT(*), MIN(enqueued_at) FROM jobs WHERE status = 'pending'")
                           .fetchone() if "jobs" in tables else (0, None))
        events, first_event = (conn.execute("SELECT COUNT(*), MIN(received_at) FROM hook_events").fetchone()
                               if "hook_events" in tables else (0, None))
        conn.close()
    except sqlite3.Error as exc:
        return [*checks, Check("extraction queue", False, f"{path}: {exc}",
                               "move queue.db aside; pending turns in it are kept")]
    if dead:
        return [*checks, Check("extraction queue", False, f"{dead} failed extraction(s) kept as dead letters",
                               "dexai memory retry  (replays them)")]
    held = time.time() - first_event if first_event else 0.0
    if events and held > STALE_QUEUE_SECONDS and not lock_held(settings):
        return [*checks, Check("extraction queue", False, f"{events} hook event(s) waiting {held / 60:.0f} min "
                               "with no daemon to replay them", "dexai daemon start  (replays them at its start)")]
    waited = time.time() - oldest if oldest else 0.0
    if pending and waited > STALE_QUEUE_SECONDS and not lock_held(settings):
        fix = ("dexai memory retry  (extracts them now), or dexai daemon start; if the hooks cannot start it, "
               f"see {log_path(settings)}") if autostart_enabled(settings) else \
            "dexai memory retry  (extracts them now), or start the daemon (daemon.autostart is off)"
        return [*checks, Check("extraction queue", False,
                               f"{pending} turn(s) waiting {waited / 60:.0f} min with no daemon to extract them", fix)]
    if pending:
        return [*checks, Check("extraction queue", True, f"{pending} turn(s) queued, no dead letters")]
    return [*checks, Check("extraction queue", True, "empty, no dead letters")]
