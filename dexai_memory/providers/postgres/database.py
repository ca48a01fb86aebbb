"""The Postgres server and the provider's connection pool.

:class:`Database` migrates the schema on open (one connection, under the
migration lock), then serves pooled connections (psycopg 3 async,
``psycopg_pool``), every one with ``search_path`` set to our schema (then the
one pgvector lives in), the configured ``statement_timeout`` and
``hnsw.ef_search``, and no parallel query workers; a connection broken by a server restart is replaced on
checkout. psycopg errors become ours at this boundary: an unreachable server
(or a pool that cannot hand out a connection in ``connect_timeout_seconds``)
is :class:`~dexai_memory.errors.ProviderUnavailable`, a duplicate id
:class:`~dexai_memory.errors.InvalidMemory`, anything else
:class:`~dexai_memory.errors.ProviderError`.

The connection string may hold a password: it is kept private, never logged,
and shown only through :func:`redact`.
"""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from ...errors import InvalidMemory, ProviderError, ProviderUnavailable
from . import migrations

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import AsyncConnectionPool


def redact(dsn: str) -> str:
    """``dsn`` with its password replaced by ``***`` (for messages; the DSN itself is never logged)."""
    try:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        parts = conninfo_to_dict(dsn)
    except Exception:  # an unparsable DSN: say nothing of it
        return "<unparsable connection string>"
    if parts.get("password"):
        parts["password"] = "***"
    return make_conninfo("", **{k: v for k, v in parts.items() if v is not None})


class Database:
    """The server behind one provider (see the module docstring)."""

    def __init__(self, dsn: str, *, schema: str, pool_size: int, statement_timeout_seconds: float,
                 connect_timeout_seconds: float, ef_search: int):
        self._dsn = dsn  # private: may hold a password
        self.schema = schema
        self.pool_size = pool_size
        self.statement_timeout_seconds = statement_timeout_seconds
        self.connect_timeout_seconds = connect_timeout_seconds
        self.ef_search = ef_search
        self._pool: AsyncConnectionPool | None = None

    @property
    def server(self) -> str:
        """The connection string without its password."""
        return redact(self._dsn)

    @property
    def is_open(self) -> bool:
        return self._pool is not None

    def _search_path(self, extension_schema: str | None) -> str:
        """Our schema first, then the one pgvector lives in (its ``vector`` type and operators)."""
        names = dict.fromkeys((self.schema, extension_schema or "public", "public"))
        return ",".join('"' + n.replace('"', '""') + '"' for n in names)

    def _options(self, extension_schema: str | None) -> str:
        return (f"-c search_path={self._search_path(extension_schema)} "
                f"-c statement_timeout={int(self.statement_timeout_seconds * 1000)}")

    async def open(self) -> None:
        """Migrate and open the pool. Raises ProviderUnavailable when the server cannot be reached."""
        import psycopg
        from psycopg_pool import AsyncConnectionPool, PoolTimeout

        timeout = max(1, round(self.connect_timeout_seconds))
        try:
            async with await psycopg.AsyncConnection.connect(
                    self._dsn, connect_timeout=timeout, autocommit=True, options=self._options(None)) as conn:
                await migrations.migrate(conn, self.schema)
                ext = await migrations.extension_schema(conn)
        except psycopg.OperationalError as exc:
            raise ProviderUnavailable(f"cannot reach postgres at {self.server}: {exc}") from exc

        async def configure(conn: psycopg.AsyncConnection) -> None:
            await conn.execute(f"SET hnsw.ef_search = {int(self.ef_search)}")  # type: ignore[arg-type]
            # no parallel workers: starting them costs more than a search's small scans (measured ~20 ms
            # for the exact-KNN fallback of a search even when its one-time filter skips it)
            await conn.execute("SET max_parallel_workers_per_gather = 0")

        pool = AsyncConnectionPool(self._dsn, min_size=1, max_size=self.pool_size, open=False,
                                   timeout=self.connect_timeout_seconds, configure=configure,
                                   check=AsyncConnectionPool.check_connection,
                                   kwargs={"connect_timeout": timeout, "options": self._options(ext),
                                           "autocommit": True},
                                   name="dexai-memory")
        try:
            await pool.open(wait=True, timeout=self.connect_timeout_seconds)
        except PoolTimeout as exc:
            await pool.close()
            raise ProviderUnavailable(f"cannot reach postgres at {self.server}: {exc}") from exc
        self._pool = pool

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection]:
        """A pooled connection (autocommit; ``conn.transaction()`` for more than one statement)."""
        import psycopg
        from psycopg_pool import PoolTimeout

        if self._pool is None:
            raise ProviderError("the postgres provider is not started: use 'async with provider:'")
        try:
            async with self._pool.connection() as conn:
                yield conn
        except psycopg.errors.UniqueViolation as exc:
            raise InvalidMemory(f"a memory with that id already exists: {exc.diag.message_detail or exc}") from exc
        except (PoolTimeout, psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise ProviderUnavailable(f"postgres unavailable: {exc}") from exc
        except psycopg.Error as exc:
            raise ProviderError(f"postgres error: {exc}") from exc

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[tuple[Any, ...]]:
        """The rows of one statement (an UPDATE or DELETE returns its RETURNING rows)."""
        async with self.connection() as conn:
            cur = await conn.execute(sql, params)  # type: ignore[arg-type]  # built from our own fragments
            return await cur.fetchall() if cur.description else []


async def probe(dsn: str, *, schema: str, connect_timeout_seconds: float = 5.0) -> dict[str, Any]:
    """What ``doctor`` reports, read without changing anything: the server's version, pgvector's
    (None when the extension is not installed), the schema's migration version (0 before the first
    start) and this release's. Raises ProviderUnavailable when the server cannot be reached."""
    import psycopg

    try:
        async with await psycopg.AsyncConnection.connect(
                dsn, connect_timeout=max(1, round(connect_timeout_seconds)), autocommit=True) as conn:
            row = await (await conn.execute(
                "SELECT current_setting('server_version'), "
                "(SELECT extversion FROM pg_extension WHERE extname = 'vector'), "
                "(SELECT default_version FROM pg_available_extensions WHERE name = 'vector'), "
                "to_regclass(format('%%I.schema_migrations', %s::text)) IS NOT NULL", (schema,))).fetchone()
            assert row is not None
            version = 0
            if row[3]:
                from psycopg import sql

                got = await (await conn.execute(sql.SQL("SELECT MAX(version) FROM {}.schema_migrations").format(
                    sql.Identifier(schema)))).fetchone()
                version = int(got[0] or 0) if got else 0
    except psycopg.OperationalError as exc:
        raise ProviderUnavailable(f"cannot reach postgres at {redact(dsn)}: {exc}") from exc
    return {"server": redact(dsn), "postgres": row[0], "pgvector": row[1], "pgvector_available": row[2],
            "schema_version": version, "expected_schema_version": migrations.latest_version()}
