"""The panel's header and its Clear confirmation count alike: the memories shown, and the past
ones (superseded, archived, session notes) a clear removes with them; the header used to show
12 while Clear said 13. A real ``dexai panel`` process, a real headless Chromium, a real SQLite
store (the fixtures of tests/api/test_panel_browser.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from tests.api.test_panel_browser import CHROMIUM, Panel, open_panel
from tests.api.test_panel_browser import browser as browser  # noqa: F401  (a fixture)
from tests.api.test_panel_browser import page as page  # noqa: F401  (a fixture)
from tests.api.test_panel_browser import panel as panel  # noqa: F401  (a fixture)

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")


def supersede(panel: Panel, user: str, memory_id: str, text: str) -> None:
    env = {**os.environ, "DEXAI_MEMORY_HOME": str(panel.home), "DEXAI_DAEMON_AUTOSTART": "0"}
    subprocess.run([sys.executable, "-m", "dexai_memory.cli.main", "memory", "supersede", memory_id, text,
                    "--user", user], env=env, check=True, capture_output=True, timeout=60)


def test_header_and_clear_count_alike(page: Any, panel: Panel) -> None:  # noqa: F811
    lisbon, _ = panel.seed("count", ("Sam lives in Lisbon", "fact"), ("Never push on Fridays", "warning"))
    supersede(panel, "count", lisbon, "Sam lives in Porto")  # 2 current, 3 stored
    open_panel(page, panel, "count")
    sync_api.expect(page.locator("#pill-count")).to_have_text("2 memories (+1 past)")
    page.locator("#clear").click()
    sync_api.expect(page.locator("#clear-text")).to_have_text(
        "This will remove all 3 memories: the 2 shown and 1 past (superseded, archived or session notes).")
    page.locator("#clear-yes").click()
    sync_api.expect(page.locator("#pill-count")).to_have_text("0 memories")


def test_with_nothing_past_both_say_the_same_number(page: Any, panel: Panel) -> None:  # noqa: F811
    panel.seed("plain", ("Sam works at Acme", "fact"))
    open_panel(page, panel, "plain")
    sync_api.expect(page.locator("#pill-count")).to_have_text("1 memory")
    page.locator("#clear").click()
    sync_api.expect(page.locator("#clear-text")).to_have_text("This will remove all 1 memory.")
