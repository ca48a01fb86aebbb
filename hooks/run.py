"""Runs one launcher command in the Python ``hooks/dexai-hook`` picked.

``run.py <event> [--async]`` (the hook's JSON on stdin), ``run.py mcp``, ``run.py memory
ARGS...`` or ``run.py cli ARGS...``: runs the ``main`` of :mod:`dexai_memory.hooks.client`,
:mod:`dexai_memory.mcp_server` or the ``dexai`` CLI (``memory ARGS`` is ``dexai memory ARGS``,
``cli ARGS`` is ``dexai ARGS``: the plugin's ``bin/dexai``), with neither the current directory nor this folder on
``sys.path`` (a project must not shadow ``dexai_memory``). Started with ``-S`` (the launcher
does for ``mcp`` and hook events), it runs a lean ``site`` (:func:`lean_site`;
``DEXAI_HOOK_LEAN=0`` turns that off).

When that Python cannot import dexai-memory, memory is off for now: a hook answers a valid
no-op (``{}``; nothing for PreCompact) and says why on stderr; SessionStart starts the
one-step install in the background (``install.py``) and tells the user once. ``mcp``,
``memory`` and ``cli`` say why and exit 1.

Runs on any python3 (it runs before dexai-memory is installed): standard library only.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
#: The launcher's commands that are not hook events.
TOOLS = ("mcp", "memory", "cli")


def _entry(command: str) -> Any:
    """The ``main`` of the module that runs ``command``; None when dexai-memory cannot be imported."""
    try:
        if command == "mcp":
            from dexai_memory.mcp_server import main as mcp_main

            return mcp_main
        if command in ("memory", "cli"):
            from dexai_memory.cli.main import main as cli_main

            return cli_main
        from dexai_memory.hooks.client import main as hook_main

        return hook_main
    except ImportError:
        return None


def _tell(message: str) -> None:
    """Answer SessionStart with a message shown to the user."""
    print(json.dumps({"systemMessage": message}))


def not_installed(command: str) -> int:
    """What the launcher does when this Python has no dexai-memory (see the module docstring)."""
    why = f"{sys.executable} cannot import dexai_memory"
    if command in TOOLS:
        print(f"dexai-memory: {why}: the memory tools are unavailable. Install: pip install dexai-memory, "
              "or let the plugin install itself at the next session start (or now: "
              f"sh '{os.path.join(HERE, 'dexai-hook')}' install).", file=sys.stderr)
        return 1
    print(f"dexai-memory: memory hooks are inactive ({why})", file=sys.stderr)
    if command != "session-start":
        if command != "pre-compact":
            print("{}")
        return 0
    if os.environ.get("DEXAI_HOOK_PYTHON"):
        _tell(f"dexai-memory is off in this session: {why}. Point DEXAI_HOOK_PYTHON at a Python with "
              "dexai-memory installed, or unset it.")
    elif os.environ.get("DEXAI_AUTO_INSTALL", "1") == "0":
        _tell("dexai-memory is not installed and DEXAI_AUTO_INSTALL=0, so memory is off: pip install dexai-memory "
              "(or set DEXAI_HOOK_PYTHON).")
    else:
        import importlib.util

        spec = importlib.util.spec_from_file_location("dexai_memory_install", os.path.join(HERE, "install.py"))
        assert spec is not None and spec.loader is not None
        install = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(install)
        message = install.start_from_hook(os.path.dirname(HERE), install.data_dir())
        if message:
            _tell(message)
        else:
            print("{}")
    return 0


def lean_site() -> None:
    """``site`` without other packages' ``.pth`` files and ``sitecustomize`` (the launcher starts
    Python with ``-S`` for the MCP server and the hook client, which need only the standard
    library and this package): a CA bundle's or an import hook's ``.pth`` costs tens of
    milliseconds at every start. Site-packages folders and dexai-memory's own ``.pth`` (an
    editable install) are kept."""
    import site

    saved = site.addpackage, site.execsitecustomize, site.execusercustomize

    def ours_only(sitedir: str, name: str, known_paths: set[str] | None) -> set[str] | None:
        if name.replace("-", "_").startswith(("__editable__.dexai_memory", "dexai_memory")):
            return saved[0](sitedir, name, known_paths)  # type: ignore[no-any-return]
        return known_paths

    def skip() -> None:
        pass

    site.addpackage, site.execsitecustomize, site.execusercustomize = ours_only, skip, skip  # type: ignore[assignment]
    try:
        site.main()
    finally:
        site.addpackage, site.execsitecustomize, site.execusercustomize = saved  # type: ignore[assignment]


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: run.py <hook event> [--async] | mcp | memory ARGS... | cli ARGS...", file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    lean = bool(sys.flags.no_site) and os.environ.get("DEXAI_HOOK_LEAN", "1") != "0"
    if lean:
        lean_site()
    elif sys.flags.no_site:
        import site

        site.main()
    sys.path[:] = [p for p in sys.path if p not in ("", ".", HERE)]
    entry = _entry(command)
    if entry is None and lean:  # only a foreign .pth puts it on the path: the usual start
        import site

        site.main()
        sys.path[:] = [p for p in sys.path if p not in ("", ".", HERE)]
        entry = _entry(command)
    if entry is None:
        return not_installed(command)
    if command in ("memory", "cli"):
        sys.argv = ["dexai", *(["memory"] if command == "memory" else []), *rest]
        entry()
        return 0
    if command == "mcp":
        sys.argv = ["dexai-mcp", *rest]
        return int(entry())
    return int(entry([command, *[a for a in rest if a == "--async"][:1]]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
