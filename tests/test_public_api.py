"""The package's public API: every name in __all__ resolves, and importing is light."""

from __future__ import annotations

import subprocess
import sys

import dexai_memory


def test_every_public_name_resolves() -> None:
    for name in dexai_memory.__all__:
        assert getattr(dexai_memory, name) is not None, name


def test_import_is_light() -> None:
    """Command-hook processes import the package: it must not pull heavy modules."""
    code = ("import sys, dexai_memory, dexai_memory.models, dexai_memory.errors; "
            "heavy = [m for m in ('numpy', 'anthropic', 'claude_agent_sdk', 'onnxruntime', 'aiosqlite', 'spacy') "
            "if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
