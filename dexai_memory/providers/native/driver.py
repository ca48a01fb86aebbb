"""The SQLite library that opens the memory database in this process.

The native store needs ``sqlean`` (a SQLite build that can load sqlite-vec); the
command hook's reader, the queue and the other small files use the stdlib
``sqlite3``, which loads faster. Two copies of SQLite must never have the same
database file open at once in one process: POSIX locks belong to the process,
so each copy takes the other's locks for its own, closing the file in one copy
drops the locks the other holds, and one copy can reset the WAL index the other
has mapped (the process dies of SIGBUS, or the file is damaged). That is what
the daemon's scheduled backup did with the stdlib beside the provider's sqlean.

So the memory database is opened through :func:`store_sqlite` only; the queue
(``queue.db``), the session store and the replay log are opened by the stdlib
only, and sqlean never opens them.
"""

from __future__ import annotations

import sys
from types import ModuleType


def store_sqlite(*, light: bool = False) -> ModuleType:
    """The DB-API module to open the memory database with: ``sqlean``.

    With ``light`` (the command hook's short-lived reader), the stdlib ``sqlite3``
    while this process has not loaded sqlean, so no sqlean connection can be
    open beside it; such a connection must be closed before the process opens
    the provider.
    """
    if light and "sqlean" not in sys.modules:
        import sqlite3

        return sqlite3
    import sqlean

    return sqlean
