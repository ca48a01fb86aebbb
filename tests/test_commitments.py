"""The native commitments table shares the provider's connection: its writes must take the write lock,
or a commitment written while another task's transaction is open joins that transaction and goes
with its rollback."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from dexai_memory.commitments import NativeCommitmentStore
from dexai_memory.models import Commitment
from dexai_memory.providers.native import NativeProvider


async def test_a_commitment_written_during_another_tasks_failed_transaction_is_kept(tmp_path: Path) -> None:
    async with NativeProvider(tmp_path / "memory.db", embedder=None) as provider:
        store = NativeCommitmentStore(provider)
        opened = asyncio.Event()

        async def failing_transaction() -> None:
            with pytest.raises(RuntimeError):
                async with provider.database.transaction() as conn:
                    await conn.execute("CREATE TABLE scratch (x)")
                    opened.set()
                    await asyncio.sleep(0.2)  # the commitment is written meanwhile
                    raise RuntimeError("this transaction fails")

        task = asyncio.create_task(failing_transaction())
        await opened.wait()
        added = await store.add(Commitment(what="send the report to Priya"), user_id="sam")
        await task
        kept = await store.list(user_id="sam")
        assert [c.id for c in kept] == [added.id] and kept[0].what == "send the report to Priya"
        closed = await store.set_status(added.id, "done", user_id="sam")
        assert closed.status == "done" and await store.list(user_id="sam") == []
