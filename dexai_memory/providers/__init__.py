"""Memory providers: one ABC (:mod:`.base`), one backend per module.

* :mod:`.native` - SQLite (FTS5 + sqlite-vec), the default.
* :mod:`.mem0` / :mod:`.zep` - external services (optional extras).
* :mod:`.postgres` - PostgreSQL + pgvector, one store for many machines and a team (optional extra).
* :mod:`.memory` - a dict in the process, keyword search, nothing kept: for tests and throw-away runs.

:func:`make_provider` builds the one the settings select.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from ..config import Settings
    from .base import MemoryProvider

__all__ = ["MemoryProvider", "make_provider"]


# lazy: importing this package (a provider's name, the factory) must not load every backend
__getattr__ = lazy_exports(__name__, {"MemoryProvider": "base"})


def make_provider(settings: Settings, *, failover: bool | None = None) -> MemoryProvider:
    """The provider ``storage.provider`` selects (not started: use ``async with``).

    An external provider (mem0, zep, postgres) is wrapped in a
    :class:`~.fallback.FailoverProvider` over the native one when
    ``storage.fallback_to_native`` is true (or ``failover`` says so). A missing
    optional SDK raises :class:`~dexai_memory.errors.MissingExtra` here.
    """
    name = settings.storage.provider
    from .native.provider import NativeProvider

    if name == "native":
        return NativeProvider.from_settings(settings)
    if name == "memory":
        from .memory import InMemoryProvider

        return InMemoryProvider.from_settings(settings)
    primary: MemoryProvider
    if name == "mem0":
        from .mem0 import Mem0Provider, import_mem0

        import_mem0()
        primary = Mem0Provider.from_settings(settings)
    elif name == "postgres":
        from .postgres.provider import PostgresProvider, import_psycopg

        import_psycopg()
        primary = PostgresProvider.from_settings(settings)
    elif name == "zep":
        from .zep import ZepProvider, import_zep

        import_zep()
        primary = ZepProvider.from_settings(settings)
    else:
        raise ValueError(f"unknown provider {name!r}")
    if failover if failover is not None else settings.storage.fallback_to_native:
        from .fallback import FailoverProvider

        return FailoverProvider(primary, NativeProvider.from_settings(settings),
                                log_path=settings.home / f"replay-{name}.db")
    return primary
