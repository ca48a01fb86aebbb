"""Supersession is decided by the offline rules on word overlap: its tests run on one native
SQLite store with no embedder (keyword candidates), and the packaged settings."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dexai_memory.config import Settings, load_settings
from dexai_memory.providers.native import NativeProvider


@pytest.fixture
async def provider(tmp_path: Path) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(tmp_path / "memory.db", embedder=None) as p:
        yield p


@pytest.fixture
def settings() -> Settings:
    return load_settings()
