"""A worker process for the crash-safety test of the extraction queue.

``python -m tests.queue_worker HOME MODE N``: enqueues N turns (idempotently),
then processes the queue into a native store at HOME/memory.db. MODE ``slow``
prints ``STORED <turn ids>`` after each memory written and sleeps, so the test
can SIGKILL it between a batch's first writes and its ``done`` commit;
``fast`` drains the queue and prints ``DONE``; ``fast-reworded`` too, with an
extractor that words every note differently (as a model may on a retry).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from dexai_memory.capture.queue import ExtractionQueue
from dexai_memory.config import load_settings
from dexai_memory.models import ExtractedNote, Memory, MemoryType, Turn
from dexai_memory.pipeline import Pipeline
from dexai_memory.providers.native import NativeProvider
from tests.pipeline_fakes import EchoExtractor


class ReportingProvider(NativeProvider):
    """Prints each stored memory's sources, then pauses (slow mode)."""

    def __init__(self, path: Path, delay: float):
        super().__init__(path, embedder=None)
        self.delay = delay

    async def add(self, memory: Memory) -> Memory:
        stored = await super().add(memory)
        if memory.type is not MemoryType.TRANSCRIPT:
            print("STORED", ",".join(memory.source_ids), flush=True)
            await asyncio.sleep(self.delay)
        return stored


class RewordingExtractor(EchoExtractor):
    """Words every note differently from :class:`EchoExtractor` (as a model may on a second call)."""

    async def extract(self, turns: Sequence[Turn], context: Sequence[Turn | str] = ()) -> list[ExtractedNote]:
        self.calls.append(([t.id for t in turns], tuple(context)))
        return [ExtractedNote(content=f"Entry {t.id.lower()} logged", source_ids=(t.id,)) for t in turns]


def fact(i: int) -> str:
    return f"Fact w{i}x concerns w{i}y and w{i}z"


async def main(home: Path, mode: str, n: int) -> None:
    settings = load_settings(home=home)
    queue = ExtractionQueue(home / "queue.db", batch_size=5, flush_interval=0.05, max_retries=0).open()
    for i in range(n):
        queue.enqueue(Turn(id=f"T{i}", user_id="u", content=fact(i), session_id="s"))
    slow = mode == "slow"
    extractor = RewordingExtractor() if mode == "fast-reworded" else EchoExtractor(delay=0.05 if slow else 0.0)
    async with ReportingProvider(home / "memory.db", 0.15 if slow else 0.0) as provider:
        pipeline = Pipeline(provider, settings, extractor=extractor)
        pipeline.journal = queue.save_notes
        await queue.drain(pipeline.handle)
    print("DONE", pipeline.totals.to_dict(), flush=True)
    queue.close()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])))
