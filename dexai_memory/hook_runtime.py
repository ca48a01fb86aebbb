"""Entry point of the command hooks, kept for installed plugins.

The plugin's launcher (``hooks/dexai-hook``) runs ``python -m
dexai_memory.hook_runtime EVENT`` when it cannot reach the daemon with ``curl``;
the client itself is :mod:`dexai_memory.hooks.client`.
"""

from __future__ import annotations

import sys

from .hooks.client import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
