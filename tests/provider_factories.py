"""Extra providers for the shared contract suite (imported by tests/conftest.py).

A provider joins ``EXTRA_FACTORIES`` only when its optional SDK imports, so the
suite still runs on a machine without the ``mem0`` / ``zep`` extras.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

from dexai_memory.embeddings import Embedder
from dexai_memory.providers.base import MemoryProvider

Factory = Callable[[Path, Embedder], MemoryProvider]
EXTRA_FACTORIES: dict[str, Factory] = {}


def mem0_factory(tmp: Path, embedder: Embedder) -> MemoryProvider:
    """A Mem0 provider on a fresh local Qdrant directory under ``tmp`` (infer=False, no key)."""
    from dexai_memory.providers.mem0 import Mem0Provider

    return Mem0Provider(tmp / "mem0", embedder=embedder)


def zep_factory(tmp: Path, embedder: Embedder) -> MemoryProvider:
    """A Zep provider whose real ``zep-cloud`` client talks to a fresh fake Zep server on 127.0.0.1.

    The server is started here and stopped when the provider is closed.
    """
    from dexai_memory.providers.zep import ZepProvider
    from testing.fakezep import FakeZepServer

    server = FakeZepServer(embed=embedder.embed_batch)
    server.start()
    provider = ZepProvider(api_key="test-key", base_url=server.base_url, max_retries=0)
    provider.on_close(server.stop)
    return provider


if importlib.util.find_spec("mem0") is not None:
    EXTRA_FACTORIES["mem0"] = mem0_factory
if importlib.util.find_spec("zep_cloud") is not None and importlib.util.find_spec("dexai_memory.providers.zep"):
    EXTRA_FACTORIES["zep"] = zep_factory


def postgres_factory(tmp: Path, embedder: Embedder) -> MemoryProvider:
    """A postgres provider on a fresh schema of the session's real PostgreSQL server (tests/postgres_server.py)."""
    from tests import postgres_server

    return postgres_server.postgres_factory(tmp, embedder)


if importlib.util.find_spec("psycopg") is not None and importlib.util.find_spec("pgserver") is not None:
    EXTRA_FACTORIES["postgres"] = postgres_factory
