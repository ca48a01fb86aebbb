"""The panel refreshes when its tab is shown again, and shows the activity feed and the
consolidation status: a real headless Chromium against a real ``dexai panel`` process, the store
changed by another connection meanwhile (as the agent's daemon would)."""

from __future__ import annotations

from typing import Any

from dexai_memory.config import load_settings
from dexai_memory.consolidation import consolidate
from dexai_memory.extraction.summarizer import OfflineSummarizer
from dexai_memory.providers.native import NativeProvider

from .test_panel_browser import Panel, browser, card, open_panel, page, panel, settle, sync_api  # noqa: F401


def test_tab_shown_again_reloads_with_activity_and_consolidation_status(page: Any, panel: Panel) -> None:  # noqa: F811
    [first] = panel.seed("tabs", ("The build server is ci-3.internal", "fact"))
    open_panel(page, panel, "tabs")
    settle(page)
    sync_api.expect(page.locator("#activity li").first).to_contain_text("The build server is ci-3.internal")
    sync_api.expect(page.locator("#consolidation")).to_contain_text("Not run yet.")
    assert card(page, first).is_visible()

    # meanwhile, elsewhere: a memory is added and consolidation runs
    [second] = panel.seed("tabs", ("Deploys happen on Thursdays only", "fact"))

    async def run(p: NativeProvider) -> Any:
        return await consolidate(p, "tabs", load_settings(home=panel.home), OfflineSummarizer())

    panel.store(run)
    assert card(page, second).count() == 0  # not shown until the panel reloads

    # the tab becomes visible again (headless Chromium's tabs are always visible: the browser's event is sent)
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    page.wait_for_selector("body[data-refreshed]")
    settle(page)
    card(page, second).wait_for()
    sync_api.expect(page.locator("#activity li").first).to_contain_text("Deploys happen on Thursdays only")
    sync_api.expect(page.locator("#consolidation")).to_contain_text("Last run")
    sync_api.expect(page.locator("#consolidation")).to_contain_text("0 merged")
