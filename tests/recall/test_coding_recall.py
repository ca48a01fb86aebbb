"""Auto-recall on an on-topic coding follow-up: the window holds tool output that shares the prompt's
words, so the follow-up is a "continuation"; it is still searched, and only a clear match is shown."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dexai_memory.config import Settings, load_settings
from dexai_memory.embeddings import Embedder
from dexai_memory.models import Memory, MemoryType
from dexai_memory.providers.native import NativeProvider
from dexai_memory.recall.ranking import CONTINUATION_FLOOR, auto_recall, needs_recall

#: The last messages of a session committing to a repository: tool output, the assistant's narration.
RECENT = [
    "commit and push the journals",
    "Running git status: 3 files changed in journals/, the pre-commit hook ran",
    "git commit -m 'Sync journals' -> [main 82226fd] Sync journals, 3 files changed",
    "I committed the journals and pushed them to origin main.",
]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return load_settings(home=tmp_path / "home")


@pytest.fixture
async def store(tmp_path: Path, embedder: Embedder) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(tmp_path / "memory.db", embedder=embedder) as p:
        await p.add(Memory(content="Never commit or push without signing: commits must be GPG-signed.", user_id="u",
                           type=MemoryType.INSIGHT, importance=8, source_ids=("s1",)))
        await p.add(Memory(content="The user's dog is named Rex.", user_id="u", source_ids=("s2",)))
        yield p


async def test_an_on_topic_follow_up_still_gets_a_clear_match(store: NativeProvider, settings: Settings) -> None:
    prompt = "commit the journals again and push"
    assert needs_recall(prompt, RECENT) == (False, "continuation")
    r = await auto_recall(store, "u", prompt, RECENT, settings)
    assert [m.memory.content for m in r.memories] == ["Never commit or push without signing: commits must be GPG-signed."]
    assert all(m.relevance >= CONTINUATION_FLOOR for m in r.memories)


async def test_an_acknowledgement_is_still_skipped(store: NativeProvider, settings: Settings) -> None:
    r = await auto_recall(store, "u", "ok", RECENT, settings)
    assert r.skipped_reason == "continuation" and not r.text


async def test_a_follow_up_with_no_clear_match_injects_nothing(store: NativeProvider, settings: Settings) -> None:
    r = await auto_recall(store, "u", "push the journals", RECENT, settings)
    assert not r.text
