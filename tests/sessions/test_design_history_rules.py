"""compact_history applies every rule that matches in one call (real SQLite, offline extractor)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dexai_memory.config import load_settings
from dexai_memory.extraction.offline import OfflineExtractor
from dexai_memory.extraction.summarizer import OfflineSummarizer
from dexai_memory.pipeline import Pipeline
from dexai_memory.providers.native import NativeProvider
from dexai_memory.sessions.history import SUMMARY_PREFIX, _tokens, compact_history


def huge(n: int, words: int = 200) -> list[dict[str, Any]]:
    """``n`` alternating messages of ``words`` words each (~4 tokens a word of this kind)."""
    return [{"role": "user" if i % 2 == 0 else "assistant",
             "content": f"message {i}: " + " ".join(f"w{i}x{j}" for j in range(words))} for i in range(n)]


async def test_sixty_huge_messages_end_under_the_token_limit(tmp_path: Path, embedder: Any) -> None:
    # the design's limits scaled down 20 times (100,000 tokens -> 5,000) so extraction stays quick
    messages = huge(60)
    assert _tokens(messages[-30:]) > 5_000  # what one cut (the count rule alone) would leave
    async with NativeProvider(tmp_path / "memory.db", embedder=embedder) as provider:
        pipeline = Pipeline(provider, load_settings(), extractor=OfflineExtractor())
        result = await compact_history(messages, memory=pipeline, user_id="dana", summarizer=OfflineSummarizer(),
                                       session_id="loop-huge", max_tokens=5_000)
    assert result.folded > 30  # both rules ran in this one call
    assert _tokens(result.messages[1:]) <= 5_000
    assert result.messages[0]["role"] == "user"
    assert result.messages[0]["content"][0]["text"].startswith(SUMMARY_PREFIX)
    assert result.messages[1:] == messages[result.folded + 1:]


async def test_one_message_over_the_limit_alone_is_kept(tmp_path: Path, embedder: Any) -> None:
    messages = huge(3, words=3_000)
    async with NativeProvider(tmp_path / "memory.db", embedder=embedder) as provider:
        pipeline = Pipeline(provider, load_settings(), extractor=OfflineExtractor())
        result = await compact_history(messages, memory=pipeline, user_id="dana", summarizer=OfflineSummarizer(),
                                       max_tokens=5_000)
    assert result.folded == 2 and len(result.messages) == 1  # the last user message stays, however big
