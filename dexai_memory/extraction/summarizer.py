"""Summarizers: the abstract of a cluster of memories that consolidation stores.

:class:`OfflineSummarizer` picks the most central statements (no model);
:class:`HaikuSummarizer` asks Claude Haiku through a ``write_summary`` tool.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ExtractionError
from ..text.redaction import redact
from ..text.words import split_words
from .base import Summarizer
from .haiku import carrier
from .model_call import MalformedAnswer, ModelCall

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ["SUMMARY_SYSTEM", "WRITE_SUMMARY_TOOL", "HaikuSummarizer", "OfflineSummarizer"]

_SPACES = re.compile(r"\s+")


# --------------------------------------------------------------------------- offline summary


def _words(text: str) -> set[str]:
    """The words of ``text`` of 3+ characters, compounds split ("follow-up": "follow", "up")."""
    return {w for w in split_words(text, joiners="'") if len(w) > 2}


class OfflineSummarizer(Summarizer):
    """Extractive summary: the most central statements, near-duplicates dropped, joined."""

    def __init__(self, max_items: int = 5, max_chars: int = 700, duplicate_overlap: float = 0.7):
        self.max_items = max_items
        self.max_chars = max_chars
        self.duplicate_overlap = duplicate_overlap

    async def summarize(self, contents: list[str]) -> str:
        items = [redact(c).strip().rstrip(".") for c in contents if c and c.strip()]
        items = [c for c in items if c]
        if not items:
            raise ExtractionError("nothing to summarize")
        bags = [_words(c) for c in items]

        def centrality(i: int) -> float:
            return sum(len(bags[i] & b) / (len(bags[i] | b) or 1) for j, b in enumerate(bags) if j != i)

        order = sorted(range(len(items)), key=lambda i: (-centrality(i), i))
        chosen: list[int] = []
        for i in order:
            if any(len(bags[i] & bags[j]) / (len(bags[i] | bags[j]) or 1) >= self.duplicate_overlap for j in chosen):
                continue
            if chosen and sum(len(items[j]) + 2 for j in chosen) + len(items[i]) > self.max_chars:
                continue
            chosen.append(i)
            if len(chosen) >= self.max_items:
                break
        return "; ".join(items[i] for i in sorted(chosen)) + "."


# --------------------------------------------------------------------------- Haiku

WRITE_SUMMARY_TOOL: dict[str, Any] = {
    "name": "write_summary",
    "description": "Record the consolidated abstract.",
    "input_schema": {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]},
}

SUMMARY_SYSTEM = """You consolidate related memories into one abstract. Write 1-3 sentences in the
third person that keep every distinct fact, name, number and date; drop repetition.
Answer with write_summary."""


class HaikuSummarizer(Summarizer):
    """Consolidation abstracts by Claude Haiku with a ``write_summary`` tool."""

    def __init__(self, client: AsyncAnthropic | ModelCall, model: str = "", *, max_tokens: int = 1024):
        self._tool = carrier(client, model, max_tokens)

    async def aclose(self) -> None:
        await self._tool.aclose()

    async def summarize(self, contents: list[str]) -> str:
        items = [redact(c).strip() for c in contents if c and c.strip()]
        if not items:
            raise ExtractionError("nothing to summarize")

        def parse(data: Mapping[str, Any]) -> str:
            summary = data.get("summary")
            if not isinstance(summary, str) or len(summary.strip()) < 3:
                raise MalformedAnswer("'summary' is missing or empty")
            return redact(_SPACES.sub(" ", summary).strip())

        prompt = "MEMORIES:\n" + "\n".join(f"- {c}" for c in items)
        return await self._tool.ask(SUMMARY_SYSTEM, prompt, WRITE_SUMMARY_TOOL, parse, "consolidation summary")
