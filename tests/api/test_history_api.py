"""``GET /api/history/sessions`` and ``DELETE /api/history/sessions/{id}``: what past sessions taught,
and dropping one session's memories at once (undoable), on a store ``learn-history`` filled."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from dexai_memory.cli.main import cli
from dexai_memory.models import SearchFilters
from tests.api.conftest import USER, Api
from tests.cli.test_learn_history import write_history


def learn(config: Path) -> None:
    write_history(config / "projects")
    out = CliRunner().invoke(cli, ["memory", "learn-history", "--yes", "--json", "--user", USER],
                             catch_exceptions=False)
    assert out.exit_code == 0, out.output


@pytest.fixture
def learned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.setenv("DEXAI_EXTRACTOR", "offline")
    learn(config)
    return config


def kept(api: Api, session: str) -> list[str]:
    async def go(provider):  # type: ignore[no-untyped-def]
        found = await provider.list(user_id=USER, filters=SearchFilters(session_id=session, valid_only=False,
                                                                         include_archived=True), limit=1000)
        return [m.id for m in found]

    return list(api.run(go))


def test_list_drop_and_undo_a_learned_session(learned: Path, api: Api) -> None:
    listed = api.get("/api/history/sessions")
    rows = {r["session_id"]: r for r in listed["sessions"]}
    assert set(rows) == {"s-old", "s-blog", "s-new"} and listed["total"] == 3
    assert [r["session_id"] for r in listed["sessions"]][0] == "s-new"  # newest first
    old = rows["s-old"]
    assert old["project"] == "/home/dana/shop" and old["prompts"] == 2 and old["memories"] >= 2
    assert old["learned_at"] and old["forgotten_at"] is None
    before = kept(api, "s-old")
    assert len(before) == old["memories"]

    dropped = api.call("DELETE", "/api/history/sessions/s-old")
    assert dropped["forgotten"] == len(before) and dropped["undo_minutes"] > 0
    assert kept(api, "s-old") == [] and kept(api, "s-new")
    rows = {r["session_id"]: r for r in api.get("/api/history/sessions")["sessions"]}
    assert rows["s-old"]["memories"] == 0 and rows["s-old"]["forgotten_at"]
    assert api.call("DELETE", "/api/history/sessions/nope", expect=404)["error"]

    assert api.post("/api/undo")["restored"] == len(before)
    assert sorted(kept(api, "s-old")) == sorted(before)
    rows = {r["session_id"]: r for r in api.get("/api/history/sessions")["sessions"]}
    assert rows["s-old"]["forgotten_at"] is None and rows["s-old"]["memories"] == len(before)
