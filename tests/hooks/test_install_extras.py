"""Dependencies by use: what is left out of ``pip install dexai-memory`` is named when needed.

Each optional package is hidden from the import system (``sys.modules[name] = None``, which
makes ``import name`` fail as if it were not installed); the front end that needs it must then
raise :class:`~dexai_memory.errors.MissingExtra` naming ``pip install 'dexai-memory[EXTRA]'``.
The extras of ``pyproject.toml`` and :data:`dexai_memory.lazy.EXTRAS` are checked to agree.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from dexai_memory.errors import MissingExtra
from dexai_memory.lazy import EXTRAS, has_extra, install_hint, needs_extra

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def hide(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make ``modules`` (and the dexai-memory modules that imported them) import as if absent."""
    for name in list(sys.modules):
        if name.split(".")[0] in modules or name.startswith(("dexai_memory.hooks.sdk", "dexai_memory.agent_tools.mcp")):
            monkeypatch.delitem(sys.modules, name)
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def test_every_extra_in_lazy_is_in_pyproject() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert set(EXTRAS) <= set(extras)
    runtime = " ".join(PYPROJECT["project"]["dependencies"])
    # the SDK (its platform wheel bundles a ~380 MB Claude Code CLI) is an extra, not the runtime
    assert "claude-agent-sdk" not in runtime and "mcp>" not in runtime
    assert any(r.startswith("claude-agent-sdk") for r in extras["sdk"])
    dev = " ".join(extras["dev"])
    for extra in ("sdk", "postgres", "mem0", "zep", "ann", "bulk-int8"):  # the tests need them all
        for requirement in extras[extra]:
            assert requirement.split("[")[0].split(">")[0].split("=")[0] in dev, (extra, requirement)


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_needs_extra_names_the_pip_command(monkeypatch: pytest.MonkeyPatch, extra: str) -> None:
    module = EXTRAS[extra][0]
    hide(monkeypatch, module)
    assert not has_extra(extra)
    with pytest.raises(MissingExtra) as caught, needs_extra(extra, "this feature"):
        __import__(module)
    assert str(caught.value) == f"this feature needs {module}: pip install 'dexai-memory[{extra}]'"
    assert isinstance(caught.value, ImportError)


def test_an_import_error_of_our_own_is_not_a_missing_extra() -> None:
    with pytest.raises(ModuleNotFoundError) as caught, needs_extra("sdk", "x"):
        __import__("dexai_memory.no_such_module")
    assert not isinstance(caught.value, MissingExtra)


def test_unknown_extra_is_refused() -> None:
    with pytest.raises(ValueError, match="no extra 'nope'"):
        install_hint("nope")


def test_sdk_hooks_without_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    hide(monkeypatch, "claude_agent_sdk")
    with pytest.raises(MissingExtra, match=r"Agent SDK hooks .* pip install 'dexai-memory\[sdk\]'"):
        import dexai_memory.hooks.sdk  # noqa: F401
    monkeypatch.delitem(sys.modules, "dexai_memory.hooks.sdk", raising=False)
    import dexai_memory

    monkeypatch.delitem(vars(dexai_memory), "memory_hooks", raising=False)  # loaded by an earlier test
    with pytest.raises(MissingExtra, match=r"dexai-memory\[sdk\]"):
        dexai_memory.memory_hooks  # noqa: B018 - the public name loads on use


def test_in_process_memory_tools_without_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    hide(monkeypatch, "claude_agent_sdk", "mcp")
    from dexai_memory.agent_tools.mcp import build_mcp_server, memory_mcp_server
    from dexai_memory.providers.memory import InMemoryProvider

    with pytest.raises(MissingExtra, match=r"dexai-memory\[sdk\]"):
        memory_mcp_server(InMemoryProvider(), "alice")
    with pytest.raises(MissingExtra, match=r"dexai-memory\[sdk\]"):
        build_mcp_server(None, "dexai-memory")  # type: ignore[arg-type]


def test_sign_in_extraction_without_the_sdk_falls_back_offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from dexai_memory.config import load_settings
    from dexai_memory.extraction import claude_code
    from dexai_memory.extraction.factory import choose_backend

    cli = tmp_path / "claude"
    cli.write_text('#!/bin/sh\necho \'{"loggedIn": true, "authMethod": "claude.ai"}\'\n')
    cli.chmod(0o755)
    monkeypatch.setenv("DEXAI_CLAUDE_CODE_CLI", str(cli))
    hide(monkeypatch, "claude_agent_sdk")
    monkeypatch.setattr(claude_code, "_status_cache", {})
    backend = choose_backend(load_settings())
    assert backend.name == "offline"
    assert "pip install 'dexai-memory[sdk]'" in backend.reason


@pytest.mark.parametrize(("extra", "load"), [
    ("postgres", "dexai_memory.providers.postgres.provider:import_psycopg"),
    ("zep", "dexai_memory.providers.zep:import_zep"),
    ("mem0", "dexai_memory.providers.mem0:import_mem0"),
])
def test_providers_name_their_extra(monkeypatch: pytest.MonkeyPatch, extra: str, load: str) -> None:
    import importlib

    module, _, function = load.partition(":")
    loader = getattr(importlib.import_module(module), function)
    hide(monkeypatch, *EXTRAS[extra])
    with pytest.raises(MissingExtra, match=rf"pip install 'dexai-memory\[{extra}\]'"):
        loader()


def test_demo_without_the_sdk_names_the_extra(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['claude_agent_sdk'] = None; sys.argv = ['dexai', 'demo']\n"
            "from dexai_memory.cli.main import main; main()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**_env(), "DEXAI_CLAUDE_BINARY": ""})
    assert proc.returncode != 0
    assert "pip install 'dexai-memory[sdk]'" in proc.stdout + proc.stderr, proc.stderr[-2000:]


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "DEXAI_CLAUDE_BINARY"}
