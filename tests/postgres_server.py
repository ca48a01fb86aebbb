"""The one PostgreSQL server (with pgvector) of a test session, shared by every postgres test.

Started on first use on 127.0.0.1 in a temporary directory
(:class:`testing.postgres.LocalPostgres`, binaries from the
``pgserver`` wheel of the ``dev`` extra) and stopped when the session ends.
Each test gets its own schema (:func:`fresh_schema`), so tests never see each
other's rows and no database has to be created per test.
"""

from __future__ import annotations

import atexit
import importlib.util
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from dexai_memory.embeddings import Embedder
from testing.postgres import LocalPostgres

if TYPE_CHECKING:
    from dexai_memory.providers.postgres import PostgresProvider

_lock = threading.Lock()
_server: LocalPostgres | None = None
#: The database every test schema lives in.
DATABASE = "dexai_tests"


def available() -> bool:
    """Whether psycopg and the pgserver wheel are installed (the ``dev`` extra)."""
    return all(importlib.util.find_spec(m) is not None for m in ("psycopg", "psycopg_pool", "pgserver"))


def server() -> LocalPostgres:
    """The session's server, started on first call."""
    global _server
    with _lock:
        if _server is None:
            srv = LocalPostgres()
            srv.start()
            srv.create_database(DATABASE)
            atexit.register(srv.close)
            _server = srv
        elif not _server.running:
            _server.start()
        return _server


def dsn() -> str:
    """The DSN of the tests' database."""
    return server().dsn(DATABASE)


def fresh_schema() -> str:
    """A schema name no other test uses."""
    return "t_" + uuid.uuid4().hex[:12]


def postgres_factory(tmp: Path, embedder: Embedder) -> PostgresProvider:
    """A postgres provider on a fresh schema of the session's server (contract suite factory)."""
    from dexai_memory.providers.postgres import PostgresProvider

    return PostgresProvider(dsn(), embedder=embedder, schema=fresh_schema(), pool_size=2)
