"""One "machine" of the many-machines test (``tests/providers/test_postgres_failover.py``).

``python -m tests.postgres_machine NAME N``, with ``DEXAI_MEMORY_HOME`` (this
machine's data directory, whose ``memory.yaml`` selects the postgres provider)
and ``DEXAI_POSTGRES_DSN`` set: builds the provider as the daemon does
(:func:`dexai_memory.providers.make_provider`: postgres behind the failover
wrapper over this machine's native store) and stores N memories, one at a
time, each through ``apply_decision`` (a memory and its ADD event), printing
``wrote I`` after each. Then it recovers until the replay log is empty
(bounded) and prints one JSON line: ``{"pending": ..., "primary_up": ...}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from dexai_memory.config import load_settings
from dexai_memory.models import Memory, UpdateAction, UpdateDecision
from dexai_memory.providers import make_provider
from dexai_memory.providers.fallback import FailoverProvider
from dexai_memory.supersession.apply import apply_decision


async def main(name: str, n: int) -> None:
    provider = make_provider(load_settings())
    assert isinstance(provider, FailoverProvider)
    provider.recheck_seconds = 1.5  # the daemon's health monitor calls recover(); here a write does, this often
    async with provider:
        for i in range(n):
            note = Memory(f"{name} decided detail number {i} of the outage drill", user_id=name, project="drill",
                          id=f"m_{name}_{i:04d}")
            await apply_decision(provider, UpdateDecision(UpdateAction.ADD, None, "new"), note)
            print(f"wrote {i}", flush=True)
            await asyncio.sleep(0.02)
        deadline = time.monotonic() + 60
        while await provider.pending_replay() and time.monotonic() < deadline:
            await provider.recover()
            await asyncio.sleep(0.2)
        print(json.dumps({"pending": await provider.pending_replay(), "primary_up": provider.primary_up}),
              flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
