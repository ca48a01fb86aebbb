"""Shared fixtures: an isolated data directory per test, and providers for the contract suite."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from dexai_memory.embeddings import Embedder, OnnxMiniLMEmbedder
from dexai_memory.providers.base import MemoryProvider
from dexai_memory.providers.memory import InMemoryProvider
from dexai_memory.providers.native import NativeProvider

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point DEXAI_MEMORY_HOME at a fresh directory, drop API keys from the environment and leave
    any Claude Code sign-in unused."""
    home = tmp_path / "dexai-home"
    monkeypatch.setenv("DEXAI_MEMORY_HOME", str(home))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ZEP_API_KEY", raising=False)
    # hooks run by tests do not start background daemons unless a test asks for it
    monkeypatch.setenv("DEXAI_DAEMON_AUTOSTART", "0")
    # no test asks a Claude Code sign-in it did not set up (a developer's own sign-in stays unused)
    monkeypatch.setenv("DEXAI_CLAUDE_CODE_CLI", "none")
    monkeypatch.delenv("DEXAI_EXTRACTOR", raising=False)
    return home


@pytest.fixture(scope="session", autouse=True)
def no_daemon_outlives_the_suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Stop every ``dexai daemon run`` serving a data directory under this run's temporary directory
    (daemons the hooks autostarted in e2e tests would otherwise idle on for 30 minutes)."""
    yield
    import signal
    import time

    base = str(tmp_path_factory.getbasetemp())
    pids = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        try:
            words = [w.decode(errors="replace") for w in (entry / "cmdline").read_bytes().split(b"\0")]
        except (OSError, ValueError):
            continue
        if entry.name.isdigit() and "daemon" in words and "--home" in words \
                and words[words.index("--home") + 1 if words.index("--home") + 1 < len(words) else 0].startswith(base):
            pids.append(int(entry.name))
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 5
        while sig == signal.SIGTERM and time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in pids):
            time.sleep(0.1)


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real offline embedder, loaded once per test session."""
    return OnnxMiniLMEmbedder()


#: Factories of providers the shared contract suite runs against. Other provider
#: modules' tests register theirs here (name -> async factory taking tmp_path, embedder).
ProviderFactory = Callable[[Path, Embedder], MemoryProvider]
PROVIDER_FACTORIES: dict[str, ProviderFactory] = {
    "native": lambda tmp, emb: NativeProvider(tmp / "memory.db", embedder=emb),
    "memory": lambda tmp, emb: InMemoryProvider(),
}


def _extra_factories() -> None:
    """Providers whose optional SDK is installed join the contract suite."""
    try:
        from tests.provider_factories import (
            EXTRA_FACTORIES,  # written by the provider modules' authors
        )
    except ImportError:
        return
    PROVIDER_FACTORIES.update(EXTRA_FACTORIES)


_extra_factories()


@pytest.fixture(params=sorted(PROVIDER_FACTORIES))
async def provider(request: pytest.FixtureRequest, tmp_path: Path, embedder: Embedder) -> AsyncIterator[MemoryProvider]:
    """Every provider under test, started; the contract suite runs once per provider."""
    instance = PROVIDER_FACTORIES[request.param](tmp_path, embedder)
    async with instance:
        yield instance


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: end-to-end tests that drive the real Claude Code CLI")
