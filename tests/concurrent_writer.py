"""A writer process for the concurrent-writes test (``tests/capture/test_concurrent_writes.py``).

``python -m tests.concurrent_writer HOME ROLE N BUSY_MS``:

* ``hook``: like a hook process, N times: enqueue a turn in ``HOME/queue.db``
  (standard library path) and store a memory in ``HOME/memory.db`` through a
  fresh native provider (a new connection each time, as a hook has);
* ``import``: store N memories in one transaction (``add_many`` in one batch,
  as ``dexai memory import`` does).

The providers use a ``busy_timeout`` of BUSY_MS milliseconds, so the locks
are met and the bounded retries do the waiting. Prints ``OK`` at the end;
any error is printed and exits 1.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from dexai_memory.capture.queue import enqueue_turn
from dexai_memory.models import Memory
from dexai_memory.providers.native import NativeProvider


async def main(home: Path, role: str, n: int, busy_ms: int) -> None:
    if role == "import":
        async with NativeProvider(home / "memory.db", busy_timeout_ms=busy_ms) as p:
            await p.add_many([Memory(content=f"imported fact number {i}", user_id="u") for i in range(n)], batch=n)
        return
    for i in range(n):
        enqueue_turn(home / "queue.db", {"id": f"{role}-{i}", "user_id": "u", "content": f"turn {i} of {role}"})
        async with NativeProvider(home / "memory.db", busy_timeout_ms=busy_ms) as p:
            await p.add(Memory(content=f"fact {i} of {role}", user_id="u"))


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
    print("OK")
