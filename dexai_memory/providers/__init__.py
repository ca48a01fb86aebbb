"""Memory providers: one ABC (:mod:`.base`), one backend per module.

* :mod:`.native` - SQLite (FTS5 + sqlite-vec), the default.
* :mod:`.memory` - in-memory, for tests and ephemeral agents.
* :mod:`.mem0` / :mod:`.zep` - external services (optional extras).
"""

from .base import MemoryProvider

__all__ = ["MemoryProvider"]
