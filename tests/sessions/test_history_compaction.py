"""History compaction for Messages API loops: facts first, then the summary (real SQLite, offline extractor)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dexai_memory.config import load_settings
from dexai_memory.extraction.offline import OfflineExtractor
from dexai_memory.extraction.summarizer import OfflineSummarizer
from dexai_memory.pipeline import Pipeline
from dexai_memory.providers.native import NativeProvider
from dexai_memory.sessions.history import SUMMARY_PREFIX, compact_history


def conversation(n: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Our staging host is db-staging-7.internal and deploys go through Buildkite."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "From now on, always run make check before every push."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
    ]
    while len(messages) < n:
        messages.append({"role": "assistant" if messages[-1]["role"] == "user" else "user",
                         "content": f"step {len(messages)} of the refactor"})
    return messages


async def test_a_long_history_keeps_its_facts_and_a_summary(tmp_path: Path, embedder: Any) -> None:
    async with NativeProvider(tmp_path / "memory.db", embedder=embedder) as provider:
        pipeline = Pipeline(provider, load_settings(), extractor=OfflineExtractor())
        messages = conversation(60)
        result = await compact_history(messages, memory=pipeline, user_id="dana", summarizer=OfflineSummarizer(),
                                       session_id="loop-1")
        assert result.folded >= 30 and len(result.messages) == 60 - result.folded <= 30
        first = result.messages[0]
        assert first["role"] == "user" and first["content"][0]["text"].startswith(SUMMARY_PREFIX)
        assert result.messages[1:] == messages[result.folded + 1:]  # the rest is untouched
        stored = " ".join(m.content for m in await provider.list(user_id="dana"))
        assert "db-staging-7.internal" in stored and "make check" in stored  # extracted before being dropped
        assert result.stored and result.stored >= 2
        assert "db-staging-7.internal" in result.summary or "make check" in result.summary

        again = await compact_history(result.messages, memory=pipeline, user_id="dana",
                                      summarizer=OfflineSummarizer(), summary=result.summary)
        assert again.folded == 0 and again.messages == result.messages  # under the limits: unchanged


async def test_tokens_trigger_and_the_cut_never_splits_a_tool_call(tmp_path: Path, embedder: Any) -> None:
    async with NativeProvider(tmp_path / "memory.db", embedder=embedder) as provider:
        pipeline = Pipeline(provider, load_settings(), extractor=OfflineExtractor())
        messages = conversation(8)
        result = await compact_history(messages, memory=pipeline, user_id="dana", summarizer=OfflineSummarizer(),
                                       max_tokens=20)
        # half would cut at index 4, a tool result: the cut moves on to the next plain user message
        assert result.folded == 6 and result.messages[0]["content"][1] == {"type": "text", "text": "step 6 of the refactor"}
