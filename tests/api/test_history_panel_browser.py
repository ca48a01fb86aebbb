"""The panel's "Learned from past sessions" list in a real headless Chromium: a session's
memories dropped with one click, and the toast's Undo bringing them back (checked in the store)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from dexai_memory.models import Memory, SearchFilters
from dexai_memory.providers.native import NativeProvider
from tests.api.test_panel_browser import Panel, browser, open_panel, page, panel  # noqa: F401 (fixtures)
from tests.cli.test_learn_history import write_history

USER = "hist"


def learned(panel: Panel, session: str) -> list[Memory]:  # noqa: F811
    async def read(p: NativeProvider) -> list[Memory]:
        return await p.list(user_id=USER, filters=SearchFilters(session_id=session, valid_only=False,
                                                                include_archived=True), limit=1000)

    found: list[Memory] = panel.store(read)
    return found


def test_forget_a_past_session_and_undo(panel: Panel, page: Any, tmp_path: Path) -> None:  # noqa: F811
    config = tmp_path / "claude"
    write_history(config / "projects")
    env = {**os.environ, "DEXAI_MEMORY_HOME": str(panel.home), "CLAUDE_CONFIG_DIR": str(config),
           "DEXAI_EXTRACTOR": "offline"}
    done = subprocess.run([sys.executable, "-m", "dexai_memory.cli.main", "memory", "learn-history", "--yes",
                           "--json", "--user", USER], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    before = learned(panel, "s-old")
    assert before

    open_panel(page, panel, USER)
    page.locator("#close").click()  # the list is beside the persistent context, under the sheet
    row = page.locator('#history li[data-session="s-old"]')
    row.wait_for()
    assert "/home/dana/shop" in row.inner_text() and f"{len(before)} memor" in row.inner_text()
    row.get_by_role("button", name="Forget").click()
    page.wait_for_selector('#history li[data-session="s-old"] >> text=forgotten')
    assert learned(panel, "s-old") == [] and learned(panel, "s-new")
    assert "Forgot" in page.locator("#toast-text").inner_text()
    page.locator("#toast-undo").click()
    page.locator('#history li[data-session="s-old"]').get_by_role("button", name="Forget").wait_for()
    assert sorted(m.id for m in learned(panel, "s-old")) == sorted(m.id for m in before)
