"""Memory providers: one ABC (:mod:`.base`), one backend per module.

* :mod:`.native` - SQLite (FTS5 + sqlite-vec), the default.
* :mod:`.mem0` / :mod:`.zep` - external services (optional extras).

:func:`make_provider` builds the one the settings select.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import MemoryProvider

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["MemoryProvider", "make_provider"]


def make_provider(settings: Settings) -> MemoryProvider:
    """The provider ``storage.provider`` selects (not started: use ``async with``)."""
    name = settings.storage.provider
    if name == "native":
        from .native import NativeProvider

        return NativeProvider.from_settings(settings)
    if name == "mem0":
        from .mem0 import Mem0Provider  # type: ignore[import-not-found]

        return Mem0Provider.from_settings(settings)  # type: ignore[no-any-return]
    if name == "zep":
        from .zep import ZepProvider  # type: ignore[import-not-found]

        return ZepProvider.from_settings(settings)  # type: ignore[no-any-return]
    raise ValueError(f"unknown provider {name!r}")
