"""The native provider: one SQLite file per data directory.

- :mod:`.provider`: :class:`NativeProvider`, the :class:`~dexai_memory.providers.base.MemoryProvider` on SQLite.
- :mod:`.migrations`: the schema, as numbered migrations.
- :mod:`.vectors`: the sqlite-vec vector index.

``NativeProvider`` loads lazily, so the command hook's fast path can read the
schema helpers without importing the provider's dependencies.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["NativeProvider"]

if TYPE_CHECKING:  # pragma: no cover
    from .provider import NativeProvider


def __getattr__(name: str) -> Any:
    if name == "NativeProvider":
        return importlib.import_module(".provider", __name__).NativeProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
