"""Entry point of the command hooks, kept for installed plugins.

The plugin's launcher (``hooks/dexai-hook``) runs ``python -m
dexai_memory.hook_runtime EVENT``; the hooks themselves live in
:mod:`dexai_memory.hooks` (:mod:`dexai_memory.hooks.command` for this one).
"""

from __future__ import annotations

import sys

from .hooks.command import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
