"""What a provider declares it can do: one frozen :class:`ProviderCapabilities` per backend.

Code that depends on a backend's abilities (the contract suite, the
supersession policy, export, the cold path) reads these flags instead of
probing the provider with ``isinstance`` or ``hasattr``. A flag is a promise
the shared contract suite holds the backend to (``tests/providers``); the
README's provider table lists them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ProviderCapabilities:
    """The contract points a backend honours exactly (all False: the primitives only)."""

    #: Superseded memories stay readable with their links and events (``dexai memory history``).
    history: bool = False
    #: Validity windows answer "what was valid at T" (``--as-of``).
    as_of: bool = False
    #: ``delete(hard=True)`` erases the memory with its vectors and history.
    hard_delete: bool = False
    #: Search ranks by embeddings as well as words.
    vector_search: bool = False
    #: Search finds every memory holding the query's words (full-text index, not only vectors).
    exact_search: bool = False
    #: ``restore`` undoes a soft delete.
    restore: bool = False
    #: ``users()`` lists every user the store holds memories for (export, the cold path).
    list_users: bool = False
    #: ``add_links`` / ``links`` keep links between memories (found at consolidation, followed by recall).
    links: bool = False

    def __contains__(self, name: object) -> bool:
        """``"history" in caps``: whether the flag of that name is set (unknown names are not)."""
        return isinstance(name, str) and bool(getattr(self, name, False)) and name in self.names_all()

    def __and__(self, other: ProviderCapabilities) -> ProviderCapabilities:
        """What both honour (a failover pair promises only what either side can keep)."""
        return ProviderCapabilities(**{f: getattr(self, f) and getattr(other, f) for f in self.names_all()})

    @classmethod
    def names_all(cls) -> tuple[str, ...]:
        """Every flag's name."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def names(self) -> frozenset[str]:
        """The names of the flags that are set."""
        return frozenset(f for f in self.names_all() if getattr(self, f))
