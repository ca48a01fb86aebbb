"""dexai-memory: semantic memory for Claude agents that survives compaction.

The public API. Names load lazily on first use, so importing the package (as
every command-hook process does) costs almost nothing::

    from dexai_memory import load_settings, MemoryDaemon, memory_hooks

Everything not listed in ``__all__`` is private.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_exports
from .version import __version__

_LAZY: dict[str, str] = {
    # configuration
    "Settings": "config", "load_settings": "config", "home_dir": "datadir",
    # data model
    "Memory": "models", "MemoryType": "models", "Tier": "models", "SearchFilters": "models",
    "SearchResult": "models", "Turn": "models", "UpdateAction": "models", "UpdateDecision": "models",
    # errors
    "DexaiMemoryError": "errors", "ConfigError": "errors", "StorageError": "errors", "DatabaseCorrupt": "errors",
    "MemoryNotFound": "errors", "InvalidMemory": "errors", "ProviderError": "errors", "MissingExtra": "errors",
    "ExtractionError": "errors", "QueueError": "errors",
    # providers
    "MemoryProvider": "providers.base", "make_provider": "providers", "NativeProvider": "providers.native.provider",
    # embeddings
    "Embedder": "embeddings", "make_embedder": "embeddings",
    # warm and cold path
    "Gate": "capture.gate", "Pipeline": "pipeline", "MemoryDaemon": "daemon",
    # hot path
    "auto_recall": "recall.ranking", "recall_block": "recall.ranking", "memory_hooks": "hooks.sdk",
    "memory_mcp_server": "agent_tools", "allowed_tools": "agent_tools",
    "create_with_memory": "api_compaction", "CompactingClient": "api_compaction",
    # tiered context assembly
    "assemble_context": "recall.assembly", "AssembledContext": "recall.assembly", "InvalidSignals": "errors",
}

__all__ = sorted(_LAZY) + ["__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from .agent_tools import allowed_tools, memory_mcp_server
    from .api_compaction import CompactingClient, create_with_memory
    from .capture.gate import Gate
    from .config import Settings, load_settings
    from .daemon import MemoryDaemon
    from .datadir import home_dir
    from .embeddings import Embedder, make_embedder
    from .errors import (
        ConfigError,
        DatabaseCorrupt,
        DexaiMemoryError,
        ExtractionError,
        InvalidMemory,
        InvalidSignals,
        MemoryNotFound,
        MissingExtra,
        ProviderError,
        QueueError,
        StorageError,
    )
    from .hooks.sdk import memory_hooks
    from .models import (
        Memory,
        MemoryType,
        SearchFilters,
        SearchResult,
        Tier,
        Turn,
        UpdateAction,
        UpdateDecision,
    )
    from .pipeline import Pipeline
    from .providers import make_provider
    from .providers.base import MemoryProvider
    from .providers.native.provider import NativeProvider
    from .recall.assembly import AssembledContext, assemble_context
    from .recall.ranking import auto_recall, recall_block


__getattr__ = lazy_exports(__name__, _LAZY)


def __dir__() -> list[str]:
    return __all__
