"""The memory panel: static HTML, CSS and JavaScript (no build step), shipped in the wheel.

``dexai panel`` serves ``static/index.html`` at ``/`` and the rest under
``/static/`` (:mod:`dexai_memory.api.app`); the page takes the API token from
its URL and sends it as ``Authorization: Bearer`` with every API call.
"""

from __future__ import annotations

from pathlib import Path


def static_dir() -> Path:
    """The folder of the panel's files."""
    return Path(__file__).resolve().parent / "static"
