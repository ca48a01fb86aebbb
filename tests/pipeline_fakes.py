"""Fakes of the extraction interfaces for the pipeline, queue and daemon tests.

They subclass the real ABCs of :mod:`dexai_memory.extraction.base`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from dexai_memory.extraction.base import Extractor, Summarizer
from dexai_memory.models import ExtractedNote, MemoryType, Turn

__all__ = ["EchoExtractor", "Extractor", "FailingExtractor", "JoinSummarizer"]


class EchoExtractor(Extractor):
    """One note per turn, its text as the content; records every call."""

    def __init__(self, delay: float = 0.0, note_type: MemoryType = MemoryType.FACT):
        self.delay = delay
        self.note_type = note_type
        self.calls: list[tuple[list[str], tuple[Turn | str, ...]]] = []

    async def extract(self, turns: Sequence[Turn], context: Sequence[Turn | str] = ()) -> list[ExtractedNote]:
        self.calls.append(([t.id for t in turns], tuple(context)))
        if self.delay:
            await asyncio.sleep(self.delay)
        return [ExtractedNote(content=t.content, type=self.note_type, importance=5, source_ids=(t.id,))
                for t in turns]


class FailingExtractor(Extractor):
    """Raises for turns whose content contains ``marker``."""

    def __init__(self, marker: str = "POISON"):
        self.marker = marker
        self.calls = 0

    async def extract(self, turns: Sequence[Turn], context: Sequence[Turn | str] = ()) -> list[ExtractedNote]:
        from dexai_memory.errors import ExtractionError

        self.calls += 1
        if any(self.marker in t.content for t in turns):
            raise ExtractionError("the model returned garbage")
        return [ExtractedNote(content=t.content, source_ids=(t.id,)) for t in turns]


class JoinSummarizer(Summarizer):
    """An extractive stand-in: "Summary: " + the sorted contents joined; records its inputs."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def summarize(self, contents: list[str]) -> str:
        self.calls.append(list(contents))
        return "Summary: " + " | ".join(sorted(contents))
