"""One commitment shape: COMMITMENT memories with ``metadata["commitment"]``, on every provider.

The native store once kept a ``commitments`` table beside those memories; migration m005 folds its
rows into the memories (nothing lost) and drops it."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from dexai_memory.commitments import CommitmentStore
from dexai_memory.lifecycle.closing import open_commitments
from dexai_memory.models import Commitment, MemoryType
from dexai_memory.providers.native import migrations
from dexai_memory.providers.native.provider import NativeProvider

T0 = "2025-03-01T09:00:00.000000Z"
DUE = "2025-03-08T00:00:00.000000Z"


def make_v4_database(path: Path) -> None:
    """A store as migrations 1-4 left it: commitments in their table, one of them also in metadata."""
    conn = sqlite3.connect(path, isolation_level=None)
    migrations.current_version(conn)
    for number, name, fn in migrations.MIGRATIONS:
        if number <= 4:
            conn.executescript(f"BEGIN;\n{fn()}\nINSERT INTO schema_migrations VALUES ({number}, '{name}', '{T0}');"
                               "\nCOMMIT;")
    memory = "INSERT INTO memories (id, user_id, content, type, created_at, valid_from, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)"
    conn.execute(memory, ("m_plain", "sam", "Sam promised to send the report to Priya", "COMMITMENT", T0, T0, "{}"))
    conn.execute(memory, ("m_meta", "sam", "Sam will renew the passport", "COMMITMENT", T0, T0,
                          '{"commitment": {"what": "renew the passport", "status": "open"}}'))
    row = ("INSERT INTO commitments (id, user_id, memory_id, what, who, due_at, due_text, status, source_ids, "
           "created_at, updated_at) VALUES (?, 'sam', ?, ?, ?, ?, ?, ?, '[\"t1\"]', ?, ?)")
    conn.execute(row, ("c_1", "m_plain", "send the report to Priya", "Priya", DUE, "next week", "open", T0, None))
    conn.execute(row, ("c_2", "m_meta", "renew the passport", None, None, None, "done", T0, T0))
    conn.execute(row, ("c_3", None, "water the plants", None, None, "tomorrow", "open", T0, None))
    conn.execute(row, ("c_4", "m_erased", "call the bank", None, None, None, "open", T0, None))
    conn.close()


async def test_the_commitments_table_is_folded_into_the_memories(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    make_v4_database(db)
    async with NativeProvider(db, embedder=None) as provider:
        plain = await provider.get("m_plain", user_id="sam")
        assert plain.metadata["commitment"] == {"what": "send the report to Priya", "who": "Priya", "due_at": DUE,
                                                "due_text": "next week", "status": "open"}
        assert (await provider.get("m_meta", user_id="sam")).metadata["commitment"]["status"] == "done"
        orphan = await provider.get("m_3", user_id="sam")  # its memory id: the row id with m_ for c_
        assert orphan.type is MemoryType.COMMITMENT and orphan.content == "water the plants"
        assert orphan.metadata["commitment"]["due_text"] == "tomorrow" and orphan.source_ids == ("t1",)
        assert [r.memory.id for r in await provider.search("water plants", user_id="sam")] == ["m_3"]
        assert {m.id for m in await open_commitments(provider, "sam")} == {"m_plain", "m_3"}
        tables = {r[0] for r in await provider.db.execute_fetchall("SELECT name FROM sqlite_master")}
        assert "commitments" not in tables


async def test_a_commitment_is_read_from_its_memory_everywhere(tmp_path: Path) -> None:
    async with NativeProvider(tmp_path / "memory.db", embedder=None) as provider:
        store = CommitmentStore(provider)
        due = datetime.now(UTC) + timedelta(days=2)
        record = await store.add(Commitment(what="send the report to Priya", due_at=due), user_id="sam",
                                 source_ids=("t1",))
        assert record.id == record.memory_id
        assert [m.id for m in await open_commitments(provider, "sam")] == [record.id]
        assert [c.id for c in await store.due_soon(user_id="sam", days=7)] == [record.id]
        closed = await store.set_status(record.id, "done", user_id="sam")
        assert closed.status == "done" and await store.list(user_id="sam") == []
        assert (await provider.get(record.id, user_id="sam")).metadata["commitment"]["status"] == "done"
