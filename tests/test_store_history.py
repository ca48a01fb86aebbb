"""A change keeps the old value in history: "I left Initech and now work at Globex" supersedes "I
work at Initech" (the old memory stays, valid until the change), whatever the classifier answers;
an UPDATE that only adds detail rewrites in place, and ``dexai memory history`` shows the text
before. Real SQLite, the offline extractor, the daemon's real pipeline and the CLI."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from dexai_memory.cli.main import cli
from dexai_memory.config import load_settings
from dexai_memory.models import Memory, SearchFilters, UpdateAction, UpdateDecision
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.classifier import UpdateClassifier
from dexai_memory.supersession.store import store_statement
from tests.hook_daemon import handle, running_daemon

CHANGES = [
    ("I work at Initech.", "I left Initech and now work at Globex.", "Initech"),
    ("My manager is Bob.", "My manager is now Alice, Bob moved teams.", "Bob"),
    ("I live in Paris.", "I moved from Paris to Berlin last month.", "Paris"),
    ("I use vim for editing.", "I switched from vim to VS Code.", "vim"),
]


class MergingClassifier(UpdateClassifier):
    """A model-like classifier: UPDATE of the first memory, with a merged text that still names
    the old value ("works at Globex, previously Initech")."""

    def __init__(self, merged: str):
        self.merged = merged

    async def classify(self, new_fact: str, existing: Sequence[Memory]) -> list[UpdateDecision]:
        if not existing:
            return [UpdateDecision(UpdateAction.ADD, None, "nothing similar stored")]
        return [UpdateDecision(UpdateAction.UPDATE, existing[0].id, "the model merged them",
                               merged_content=self.merged)]


async def every_memory(provider: NativeProvider, user: str) -> list[Memory]:
    return await provider.list(user_id=user, limit=50, filters=SearchFilters(valid_only=False, include_archived=True))


@pytest.mark.parametrize(("before", "after", "old_value"), CHANGES, ids=[c[2] for c in CHANGES])
async def test_a_change_through_the_daemons_pipeline_keeps_the_old_value(
        before: str, after: str, old_value: str, isolated_home: Path) -> None:
    settings = load_settings(home=isolated_home)
    async with running_daemon(settings) as daemon:
        for text in (before, after):
            await handle(daemon, "user-prompt-submit", {"session_id": "s", "prompt": text})
            await handle(daemon, "stop", {"session_id": "s", "last_assistant_message": "Noted."})
            assert await daemon.flush(30)
        memories = await every_memory(daemon.provider, "alice")
        old = [m for m in memories if not m.is_valid]
        assert len(old) == 1 and old_value in old[0].content and old[0].superseded_by
        events = await daemon.provider.events(old[0].id, user_id="alice")
        assert [e.action for e in events] == ["ADD", "SUPERSEDED"]


@pytest.mark.parametrize("merged", ["The user works at Globex, previously at Initech.",
                                    "The user left Initech and now works at Globex."])
async def test_a_model_update_that_changes_a_value_is_a_supersede(merged: str, tmp_path: Path) -> None:
    async with NativeProvider(tmp_path / "memory.db", embedder=None) as provider:
        first = await provider.add(Memory("The user works at Initech.", user_id="u"))
        await store_statement(provider, Memory("The user left Initech and now works at Globex.", user_id="u"),
                              classifier=MergingClassifier(merged))
        old = await provider.get(first.id, user_id="u")
        assert old.content == "The user works at Initech." and not old.is_valid and old.superseded_by
        current = await provider.get(old.superseded_by, user_id="u")
        assert current.content == merged and current.is_valid
        events = await provider.events(old.id, user_id="u")
        assert events[-1].action == "SUPERSEDED" and "changes a value" in events[-1].reason


def test_an_update_that_adds_detail_stays_in_place_and_history_shows_the_text_before(
        isolated_home: Path) -> None:
    import asyncio

    settings = load_settings(home=isolated_home)

    async def refine() -> Memory:
        async with NativeProvider(settings.db_path, embedder=None) as provider:
            first = await provider.add(Memory("I like green tea", user_id="alice"))
            await store_statement(provider, Memory("I like green tea with honey in the morning", user_id="alice"),
                                  classifier=MergingClassifier("I like green tea with honey in the morning"))
            return await provider.get(first.id, user_id="alice")

    now = asyncio.run(refine())
    assert now.is_valid and now.content == "I like green tea with honey in the morning"
    result = CliRunner().invoke(cli, ["memory", "history", now.id, "--user", "alice"])
    assert result.exit_code == 0, result.output
    assert "UPDATE" in result.output and "was: I like green tea\n" in result.output


def test_the_cli_keeps_initech_in_history(isolated_home: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["memory", "add", "I work at Initech"]).exit_code == 0
    added = runner.invoke(cli, ["memory", "add", "I left Initech and now work at Globex"])
    assert added.exit_code == 0 and "supersedes" in added.output
    new_id = added.output.split()[1].rstrip(":")
    history = runner.invoke(cli, ["memory", "history", new_id])
    assert "I work at Initech" in history.output and "SUPERSEDED" in history.output
