"""`dexai memory facts` (what `/dexai-memory:facts` runs): by category, with add, pin, remove,
prune, clear and export to Markdown, through the real click entry point on a real SQLite file."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from dexai_memory.cli.main import cli
from dexai_memory.config import load_settings
from dexai_memory.models import Memory, MemoryType, utcnow
from dexai_memory.providers.native import NativeProvider

U = "sam"


def dexai(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["memory", "facts", *args], input=input, catch_exceptions=False)


def ok(*args: str) -> Result:
    result = dexai(*args)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(autouse=True)
def no_embedder(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\n")
    monkeypatch.delenv("DEXAI_MEMORY_PROJECT", raising=False)


def add(text: str, category: str, *extra: str) -> dict[str, object]:
    out: dict[str, object] = json.loads(ok("add", text, "--category", category, "--user", U, "--json",
                                           *extra).stdout)
    return out


def test_add_by_category_and_a_repeat_raises_confidence() -> None:
    first = add("Always run make lint-all before pushing", "instruction")
    assert first["status"] == "added"
    add("Never edit proto/gen by hand", "warning")
    add("Priya owns the billing service", "person")
    again = add("Always run make lint-all before pushing", "instruction")
    assert again["status"] == "already_known"
    data = json.loads(ok("--user", U, "--json").stdout)
    assert list(data["categories"]) == ["warning", "instruction", "person"]
    [instruction] = data["categories"]["instruction"]
    assert instruction["confidence"] == pytest.approx(0.85) and instruction["mentions"] == 2  # by hand: 0.6 + 0.25
    only = ok("--user", U, "--category", "warnings").output
    assert "Never edit proto/gen" in only and "make lint-all" not in only


def test_pin_remove_and_export() -> None:
    a = add("The orders service runs on port 8443", "fact")["memory"]["id"]  # type: ignore[index]
    b = add("The user prefers pytest over unittest", "preference", "--pin")["memory"]["id"]  # type: ignore[index]
    assert "Pinned" in ok("pin", a, "--user", U).output
    shown = ok("--user", U).output
    assert f"[{a}]" in shown and "* The orders service" in shown and "* The user prefers pytest" in shown
    markdown = ok("export", "--user", U).output
    assert markdown.startswith("# What is remembered about sam")
    assert "## Fact (1)" in markdown and "## Preference (1)" in markdown
    assert "- The orders service runs on port 8443 (pinned)" in markdown
    assert "Removed" in ok("remove", b, "--user", U).output
    assert "pytest" not in ok("--user", U).output
    assert dexai("remove", "m_nope", "--user", U).exit_code == 1


def test_export_to_a_file(tmp_path: Path) -> None:
    add("The orders service runs on port 8443", "fact")
    out = tmp_path / "facts.md"
    assert "Wrote 1 facts" in ok("export", "-o", str(out), "--user", U).output
    assert "8443" in out.read_text() and (out.stat().st_mode & 0o777) == 0o600


def test_prune_lists_stale_facts_and_archives_only_when_confirmed() -> None:
    async def store() -> None:
        async with NativeProvider(load_settings().db_path, embedder=None) as p:
            await p.add(Memory(content="The old build server is jenkins-3", user_id=U,
                               created_at=utcnow() - timedelta(days=90)))
            await p.add(Memory(content="The user prefers dark mode", user_id=U, type=MemoryType.PREFERENCE))

    asyncio.run(store())
    listed = ok("prune", "--user", U).output
    assert "1 stale fact of sam" in listed and "jenkins-3" in listed and "Pass --yes" in listed
    assert "jenkins-3" in ok("--user", U).output  # nothing archived yet
    assert "Archived 1" in ok("prune", "--yes", "--user", U).output
    shown = ok("--user", U).output
    assert "jenkins-3" not in shown and "dark mode" in shown
    assert "No stale facts" in ok("prune", "--user", U).output


def test_clear_through_facts_needs_confirmation() -> None:
    add("The orders service runs on port 8443", "fact")
    refused = dexai("clear", "--user", U)
    assert refused.exit_code == 1 and "This will remove all 1 memory of sam" in refused.output
    assert "Cleared 1 memory" in ok("clear", "--yes", "--user", U).output
    assert "Nothing is remembered" in ok("--user", U).output
