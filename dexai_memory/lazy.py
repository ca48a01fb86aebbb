"""Imports on use: lazy re-exports, and optional packages that name their extra when missing.

The command hook imports packages (``dexai_memory``, ``hooks``, ``providers``...) on
every event and must not pay for what it does not use, so their ``__init__``
files re-export names through :func:`lazy_exports` instead of importing them.

``pip install dexai-memory`` installs what the plugin's hooks, the daemon, the
panel, the MCP server and a library user need; the rest comes with an extra
(:data:`EXTRAS`). Every import of an optional package runs under
:func:`needs_extra`, so a missing one raises :class:`~dexai_memory.errors.MissingExtra`
naming the ``pip install 'dexai-memory[EXTRA]'`` that brings it::

    with needs_extra("sdk", "the Agent SDK hooks"):
        from claude_agent_sdk import HookMatcher
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from .errors import MissingExtra

#: The optional extras and the top-level modules each brings (pyproject.toml's
#: ``[project.optional-dependencies]``; ``dev`` holds them all, plus the test tools).
EXTRAS: dict[str, tuple[str, ...]] = {
    # the Agent SDK: its hooks (dexai_memory.hooks.sdk), in-process memory tools, the session
    # store, the extraction through a Claude Code sign-in, and `dexai demo` (its bundled CLI)
    "sdk": ("claude_agent_sdk", "mcp"),
    "postgres": ("psycopg", "psycopg_pool"),
    "mem0": ("mem0",),
    "zep": ("zep_cloud",),
    "ann": ("usearch",),
    "bulk-int8": ("onnx",),
}


def install_hint(extra: str) -> str:
    """The command that installs ``extra``: ``pip install 'dexai-memory[extra]'``."""
    if extra not in EXTRAS:
        raise ValueError(f"no extra {extra!r} (known: {', '.join(EXTRAS)})")
    return f"pip install 'dexai-memory[{extra}]'"


def _found(module: str) -> bool:
    if module in sys.modules:  # imported already, or None: blocked (``import`` then fails)
        return sys.modules[module] is not None
    return importlib.util.find_spec(module) is not None


def has_extra(extra: str) -> bool:
    """Whether every module ``extra`` brings can be imported (found, not imported)."""
    return all(_found(name) for name in EXTRAS[extra])


@contextmanager
def needs_extra(extra: str, what: str) -> Iterator[None]:
    """Run an import of an optional package: a module missing from it raises
    :class:`~dexai_memory.errors.MissingExtra` (an :class:`ImportError`) saying that ``what``
    needs it and naming :func:`install_hint`. An import error inside dexai-memory itself is
    left as it is (a bug, not a missing extra)."""
    hint = install_hint(extra)
    try:
        yield
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] == "dexai_memory":
            raise
        raise MissingExtra(f"{what} needs {exc.name or 'an optional package'}: {hint}") from exc


def lazy_exports(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``name`` is imported from the submodule
    ``where[name]`` (relative to ``package``) on first use and kept on the package;
    any other name raises :class:`AttributeError`."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
