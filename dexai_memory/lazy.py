"""Lazy re-exports for a package's ``__init__``: a name loads from its module on first use.

The command hook imports packages (``dexai_memory``, ``hooks``, ``providers``...) on
every event and must not pay for what it does not use, so their ``__init__``
files re-export names through :func:`lazy_exports` instead of importing them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


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
