"""The memory panel in a real headless Chromium (the system's, /usr/bin/chromium; never a
downloaded browser), driven by Playwright against a real ``dexai panel`` process on
127.0.0.1. Every action is checked against the SQLite database afterwards. The run also
takes the README's screenshots (docs/images/panel-*.png, with DEXAI_UPDATE_SCREENSHOTS=1)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from dexai_memory.agent_tools.tools import remember
from dexai_memory.config import load_settings
from dexai_memory.models import Memory, SearchFilters, UpdateAction, UpdateDecision
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.apply import apply_decision

CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[2]
#: Where the screenshots go: the README's images with DEXAI_UPDATE_SCREENSHOTS=1, else a scratch folder
#: (a test run must not rewrite tracked files).
SHOTS = (REPO / "docs" / "images" if os.environ.get("DEXAI_UPDATE_SCREENSHOTS") == "1"
         else Path(tempfile.gettempdir()) / "dexai-panel-screenshots")
SHOTS.mkdir(parents=True, exist_ok=True)
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium: install Debian's chromium package "
                                                     "(.ci/run does: apt-get install -y chromium)"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")


@dataclass
class Panel:
    """The running ``dexai panel``: its base URL, token and data directory."""

    base: str
    token: str
    home: Path

    def url(self, user: str) -> str:
        return f"{self.base}/?token={self.token}&user={user}"

    def store(self, fn: Any) -> Any:
        """``await fn(provider)`` on the panel's database (another connection, as another process would)."""

        async def go() -> Any:
            async with NativeProvider(load_settings(home=self.home).db_path, embedder=None) as p:
                return await fn(p)

        # Playwright's sync API runs an event loop in this thread: the store is read from another
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(lambda: asyncio.run(go())).result()

    def current(self, user: str) -> list[Memory]:
        async def read(p: NativeProvider) -> list[Memory]:
            return await p.list(user_id=user, filters=SearchFilters(), limit=1000)

        found: list[Memory] = self.store(read)
        return found

    def get(self, user: str, memory_id: str) -> Memory:
        async def read(p: NativeProvider) -> Memory:
            return await p.get(memory_id, user_id=user, include_deleted=True)

        found: Memory = self.store(read)
        return found

    def seed(self, user: str, *items: tuple[str, str], pinned: int = 0) -> list[str]:
        """Remember ``(text, category)`` items for ``user`` as the panel would; pin the first ``pinned``."""

        async def go(p: NativeProvider) -> list[str]:
            ids = []
            for n, (text, category) in enumerate(items):
                result = await remember(p, text, category, user_id=user, confidence=0.6 + 0.05 * (n % 5), via="panel")
                assert result.memory is not None, result.reason
                if n < pinned:
                    await p.pin(result.memory.id, user_id=user, pinned=True)
                ids.append(result.memory.id)
            return ids

        ids: list[str] = self.store(go)
        return ids


@pytest.fixture(scope="module")
def panel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Panel]:
    home = tmp_path_factory.mktemp("panel-home")
    SHOTS.mkdir(parents=True, exist_ok=True)
    (home / "memory.yaml").write_text("embedding:\n  backend: none\n")
    env = {**os.environ, "DEXAI_MEMORY_HOME": str(home), "DEXAI_DAEMON_AUTOSTART": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "dexai_memory.cli.main", "panel", "--port", "0", "--no-open",
                             "--user", "nobody"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        parts = urlsplit(url)
        yield Panel(f"http://127.0.0.1:{parts.port}", parts.query.removeprefix("token="), home)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 820})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    context.close()
    assert not errors, errors


def open_panel(page: Any, panel: Panel, user: str) -> None:
    page.goto(panel.url(user))
    page.wait_for_selector("body[data-ready]")
    assert "token=" not in page.url  # taken out of the address bar


def card(page: Any, memory_id: str) -> Any:
    return page.locator(f'.card[data-id="{memory_id}"]')


def settle(page: Any) -> None:
    """Wait until the page's fetches are answered."""
    page.wait_for_load_state("networkidle")


def contents(panel: Panel, user: str) -> set[str]:
    return {m.content for m in panel.current(user)}


# --------------------------------------------------------------------------- tests
def test_add_from_the_composer_auto_classified(page: Any, panel: Panel) -> None:
    open_panel(page, panel, "add")
    assert page.locator("#empty").is_visible()
    page.get_by_label("Remember something").fill("I prefer dark mode in every editor")
    page.keyboard.press("Enter")
    page.locator('.group[data-category="preference"] .card').wait_for()
    sync_api.expect(page.locator("#pill-count")).to_have_text("1 memory")
    [m] = panel.current("add")
    assert (m.content, m.metadata["category"], m.confidence) == ("I prefer dark mode in every editor", "preference", 0.6)
    assert page.locator("#toast-text").inner_text().startswith("Remembered (Preference)")
    page.get_by_label("Remember something").fill("My goal this quarter is to ship the memory panel")
    page.keyboard.press("Enter")
    goal = page.locator('.group[data-category="goal"] .card')
    goal.wait_for()
    goal.hover()
    goal.get_by_role("button", name="Mark done: My goal this quarter is to ship the memory panel").click()
    goal.wait_for(state="detached")
    [closed] = [m for m in panel.store(lambda p: p.list(user_id="add", filters=SearchFilters(valid_only=False)))
                if m.metadata.get("category") == "goal"]
    assert closed.metadata["commitment"]["status"] == "done"
    assert [m.content for m in panel.current("add")] == ["I prefer dark mode in every editor"]


def test_inline_edit_enter_saves_and_escape_cancels(page: Any, panel: Panel) -> None:
    [mid] = panel.seed("inline", ("Sam lives in Lisbon", "fact"))
    open_panel(page, panel, "inline")
    card(page, mid).locator(".text").click()
    field = card(page, mid).locator("input.inline")
    field.fill("Sam lives in Berlin")
    field.press("Escape")
    assert card(page, mid).locator(".text").inner_text() == "Sam lives in Lisbon"
    assert panel.get("inline", mid).content == "Sam lives in Lisbon"
    card(page, mid).locator(".text").click()
    field.fill("Sam lives in Porto")
    field.press("Enter")
    sync_api.expect(card(page, mid).locator(".text")).to_have_text("Sam lives in Porto")
    assert panel.get("inline", mid).content == "Sam lives in Porto"


def test_full_edit_with_category(page: Any, panel: Panel) -> None:
    [mid] = panel.seed("full", ("Run the linter before each commit", "fact"))
    open_panel(page, panel, "full")
    card(page, mid).locator(".text").dblclick()
    editor = card(page, mid).locator(".full-editor")
    editor.get_by_label("Statement").fill("Always run the linter before each commit")
    editor.get_by_label("Category").select_option("instruction")
    editor.get_by_role("button", name="Save").click()
    page.locator(f'.group[data-category="instruction"] .card[data-id="{mid}"]').wait_for()
    stored = panel.get("full", mid)
    assert stored.content == "Always run the linter before each commit"
    assert stored.metadata["category"] == "instruction" and stored.type.value == "INSIGHT"
    assert [e.action for e in panel.store(lambda p: p.events(mid, user_id="full"))][-1] == "EDIT"


def test_pin_on_hover_and_the_eleventh_is_refused(page: Any, panel: Panel) -> None:
    ids = panel.seed("pins", *((f"Service number {n} listens on port {8000 + n}", "fact") for n in range(11)),
                     pinned=10)
    open_panel(page, panel, "pins")
    eleventh = card(page, ids[10])
    eleventh.hover()
    eleventh.get_by_role("button", name="Pin Service number 10").click()
    error = page.locator("#error")
    error.wait_for()
    assert "10 memories are pinned already" in error.inner_text()
    assert not panel.get("pins", ids[10]).pinned
    first = card(page, ids[0])
    first.hover()
    first.get_by_role("button", name="Unpin Service number 0").click()
    page.wait_for_selector(f'.card[data-id="{ids[0]}"]:not(.pinned)')
    eleventh.hover()
    eleventh.get_by_role("button", name="Pin Service number 10").click()
    page.wait_for_selector(f'.card[data-id="{ids[10]}"].pinned')
    assert panel.get("pins", ids[10]).pinned and not panel.get("pins", ids[0]).pinned
    assert sum(m.pinned for m in panel.current("pins")) == 10


def test_delete_at_once_and_undo_from_the_toast(page: Any, panel: Panel) -> None:
    keep, gone = panel.seed("delete", ("Sam owns a cat named Miso", "fact"), ("Sam drinks green tea", "preference"))
    open_panel(page, panel, "delete")
    card(page, gone).hover()
    card(page, gone).get_by_role("button", name="Delete Sam drinks green tea").click()
    card(page, gone).wait_for(state="detached")
    assert panel.get("delete", gone).deleted and contents(panel, "delete") == {"Sam owns a cat named Miso"}
    toast = page.locator("#toast")
    assert toast.is_visible() and toast.inner_text().startswith("Memory deleted")
    page.get_by_role("button", name="Undo").click()
    card(page, gone).wait_for()
    assert not panel.get("delete", gone).deleted and len(panel.current("delete")) == 2
    assert keep


def test_bulk_delete_in_manage_mode(page: Any, panel: Panel) -> None:
    a, b, c = panel.seed("bulk", ("Sam lives in Lisbon", "fact"), ("Sam works at Acme", "fact"),
                         ("Sam prefers short answers", "preference"))
    open_panel(page, panel, "bulk")
    page.get_by_role("button", name="Manage").click()
    page.get_by_label("Select Sam lives in Lisbon").check()
    page.get_by_label("Select Sam prefers short answers").check()
    sync_api.expect(page.locator("#bulk-count")).to_have_text("2 selected")
    page.get_by_role("button", name="Delete selected").click()
    card(page, a).wait_for(state="detached")
    assert contents(panel, "bulk") == {"Sam works at Acme"}
    assert panel.get("bulk", a).deleted and panel.get("bulk", c).deleted and not panel.get("bulk", b).deleted


def test_clear_all_with_the_exact_count_and_undo(page: Any, panel: Panel) -> None:
    panel.seed("clear", ("Sam lives in Lisbon", "fact"), ("Sam works at Acme", "fact"), ("Never push on Fridays", "warning"))
    open_panel(page, panel, "clear")
    page.get_by_role("button", name="Clear all memory…").click()
    sync_api.expect(page.locator("#clear-text")).to_have_text("This will remove all 3 memories.")
    page.get_by_role("button", name="Clear", exact=True).click()
    page.locator("#empty").wait_for()
    assert panel.current("clear") == []
    bar = page.locator("#clearbar")
    assert bar.is_visible() and "Memory cleared" in bar.inner_text()
    page.screenshot(path=str(SHOTS / "panel-cleared.png"))
    page.locator("#clear-undo").click()
    page.locator(".card").first.wait_for()
    sync_api.expect(page.locator("#pill-count")).to_have_text("3 memories")
    assert len(panel.current("clear")) == 3


def _contradiction(user: str) -> Any:
    async def go(p: NativeProvider) -> tuple[str, str]:
        a = await p.add(Memory(content="The team deploys on Fridays", user_id=user, confidence=0.75,
                               metadata={"category": "fact"}))
        b = await apply_decision(p, UpdateDecision(UpdateAction.SUPERSEDE, a.id, "same attribute, new value"),
                                   Memory(content="The team deploys on Tuesdays", user_id=user, confidence=0.5,
                                          metadata={"category": "fact"}))
        assert b is not None
        return a.id, b.id

    return go


def test_resolve_a_conflict(page: Any, panel: Panel) -> None:
    a, b = panel.store(_contradiction("conflict"))
    open_panel(page, panel, "conflict")
    box = page.locator(".conflict")
    assert "Fridays" in box.inner_text() and "Tuesdays" in box.inner_text()
    box.get_by_role("button", name="Keep newer").click()
    box.wait_for(state="detached")
    assert panel.get("conflict", a).superseded_by == b and panel.get("conflict", b).is_valid

    async def rows(p: NativeProvider) -> list[Any]:
        assert p.contradiction_log is not None
        return await p.contradiction_log.list(user_id="conflict", open_only=False, limit=10)

    [row] = panel.store(rows)
    assert row.resolution == "b_wins"


def test_search_filter_history_and_shortcut(page: Any, panel: Panel) -> None:
    ids = panel.seed("search", ("Sam lives in Lisbon", "fact"), ("Sam prefers tea to coffee", "preference"),
                     ("Never deploy on Fridays", "warning"), ("Priya owns the billing service", "person"))
    open_panel(page, panel, "search")
    page.get_by_label("Search memories").fill("Lisbon")
    sync_api.expect(page.locator(".card")).to_have_count(1)

    async def hits(p: NativeProvider) -> set[str]:
        return {r.memory.id for r in await p.search("Lisbon", user_id="search", filters=SearchFilters())}

    shown = {page.locator(".card").first.get_attribute("data-id")}
    assert shown == panel.store(hits) == {ids[0]}
    page.get_by_label("Search memories").fill("")
    sync_api.expect(page.locator(".card")).to_have_count(4)
    page.locator('.chip[data-filter="warning"]').click()
    assert page.locator(".card").count() == 1 and page.locator(".group").get_attribute("data-category") == "warning"
    warnings = [m.id for m in panel.current("search") if m.metadata.get("category") == "warning"]
    assert page.locator(".card").first.get_attribute("data-id") == warnings[0]
    page.locator('.chip[data-filter="all"]').click()
    card(page, ids[0]).hover()
    card(page, ids[0]).get_by_role("button", name="History of Sam lives in Lisbon").click()
    history = card(page, ids[0]).locator(".history")
    history.locator("ol").wait_for()
    assert "ADD" in history.inner_text()
    page.keyboard.press("Control+Shift+M")
    assert page.locator("#sheet").is_hidden()
    page.keyboard.press("Control+Shift+M")
    assert page.locator("#sheet").is_visible()


def test_the_history_box_shows_a_memorys_links(page: Any, panel: Panel) -> None:
    """The links consolidation found (here the scheduled job's function on the panel's store) are listed
    under a memory's history."""
    from dexai_memory.lifecycle.links import discover_links

    ids = panel.seed("linked", ("The nightly job fails with an out of memory error in exporter.py", "fact"),
                     ("Fixed exporter.py: rows are streamed in batches of 500 now", "fact"))
    assert panel.store(lambda p: discover_links(p, "linked")) == 2
    open_panel(page, panel, "linked")
    card(page, ids[0]).hover()
    card(page, ids[0]).get_by_role("button", name="History of The nightly job fails with an out of memory error "
                                                   "in exporter.py").click()
    links = card(page, ids[0]).locator(".history .links")
    links.wait_for()
    text = links.inner_text()
    assert "fix (a fix of this error): Fixed exporter.py" in text and "file (both name exporter.py)" in text


LABELS_JS = """() => Array.from(document.querySelectorAll('button, input, select, textarea'))
  .filter((e) => e.offsetParent !== null)
  .filter((e) => {
    const named = (e.getAttribute('aria-label') || e.textContent || '').trim()
      || (e.labels && Array.from(e.labels).some((l) => l.textContent.trim()));
    return !named;
  }).map((e) => e.outerHTML)"""


def test_every_control_is_labelled_and_cards_work_from_the_keyboard(page: Any, panel: Panel) -> None:
    [mid] = panel.seed("keys", ("Sam lives in Lisbon", "fact"))
    open_panel(page, panel, "keys")
    assert page.evaluate(LABELS_JS) == []
    page.get_by_role("button", name="Manage").click()
    assert page.evaluate(LABELS_JS) == []
    page.get_by_role("button", name="Done").click()
    card(page, mid).focus()
    page.keyboard.press("Enter")
    field = card(page, mid).locator("input.inline")
    assert field.evaluate("e => e === document.activeElement")
    field.fill("Sam lives in Madrid")
    page.keyboard.press("Enter")
    sync_api.expect(card(page, mid).locator(".text")).to_have_text("Sam lives in Madrid")
    assert panel.get("keys", mid).content == "Sam lives in Madrid"
    card(page, mid).focus()
    page.keyboard.press("Delete")
    card(page, mid).wait_for(state="detached")
    assert panel.get("keys", mid).deleted


def test_screenshots_for_the_readme(page: Any, panel: Panel) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    ids = panel.seed("shots", ("Sam prefers short, direct answers", "preference"),
                     ("The orders service runs on port 8443", "fact"),
                     ("Always run `make check` before pushing", "instruction"),
                     ("Sam prefers pytest over unittest", "preference"),
                     ("Never force-push to main", "warning"),
                     ("Ship the memory panel this quarter", "goal"),
                     ("Priya owns the billing service", "person"), pinned=2)
    panel.store(_contradiction("shots"))
    open_panel(page, panel, "shots")
    page.locator(".card").nth(6).wait_for()
    card(page, ids[3]).hover()
    page.screenshot(path=str(SHOTS / "panel.png"))
    card(page, ids[3]).locator(".text").dblclick()
    card(page, ids[3]).locator(".full-editor").wait_for()
    page.screenshot(path=str(SHOTS / "panel-editing.png"))
    open_panel(page, panel, "nobody-yet")
    page.screenshot(path=str(SHOTS / "panel-empty.png"))
    for name in ("panel.png", "panel-editing.png", "panel-empty.png"):
        assert (SHOTS / name).stat().st_size > 10_000
