"""Where contradictions are kept: the :class:`ContradictionLog` storage interface
(a, b, detected_at, resolution, note).

A provider that keeps them sets :attr:`MemoryProvider.contradiction_log
<dexai_memory.providers.base.MemoryProvider.contradiction_log>`; the native
provider's is the ``contradictions`` table
(:class:`~dexai_memory.providers.native.contradictions.NativeContradictionLog`).
When one is written and how it is resolved on its own is policy:
:mod:`dexai_memory.supersession.contradictions`; reviewing and resolving them
by hand is :mod:`dexai_memory.lifecycle.contradictions`.
"""

from __future__ import annotations

import abc
import builtins
from datetime import datetime

from ..models import Contradiction


class ContradictionLog(abc.ABC):
    """Contradictions of every user, each call scoped by ``user_id``."""

    @abc.abstractmethod
    async def add(self, contradiction: Contradiction) -> Contradiction:
        """Store ``contradiction``; returns it with its ``id``."""

    @abc.abstractmethod
    async def get(self, contradiction_id: int, *, user_id: str) -> Contradiction:
        """One contradiction; raises :class:`~dexai_memory.errors.MemoryNotFound` when unknown."""

    @abc.abstractmethod
    async def list(self, *, user_id: str, open_only: bool = True, limit: int = 100) -> builtins.list[Contradiction]:
        """Contradictions of ``user_id``, newest first (only open ones unless ``open_only`` is false)."""

    @abc.abstractmethod
    async def resolve(self, contradiction_id: int, *, user_id: str, resolution: str, note: str | None,
                      at: datetime) -> Contradiction:
        """Record how it was resolved; returns it updated."""
