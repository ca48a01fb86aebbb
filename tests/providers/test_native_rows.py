"""Reading a row of ``memories`` back: a row as the store writes it is taken as it is, and gives
exactly the memory the validating constructor gives; anything else is validated as before."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

import pytest

from dexai_memory.errors import InvalidMemory
from dexai_memory.models import Memory, MemoryType, Tier
from dexai_memory.providers.native.schema import COLUMNS, _as_written, memory_params, row_to_memory


def validated(row: tuple[object, ...]) -> Memory:
    """What :class:`Memory` makes of ``row`` (the path every row took before)."""
    data = dict(zip(COLUMNS, row, strict=True))
    data["source_ids"] = tuple(json.loads(data["source_ids"] or "[]"))
    data["metadata"] = json.loads(data["metadata"] or "{}")
    for flag in ("archived", "pinned", "deleted"):
        data[flag] = bool(data[flag])
    return Memory(**data)


def memories(n: int) -> list[Memory]:
    rng = random.Random(7)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    out = []
    for i in range(n):
        at = start + timedelta(minutes=rng.randrange(10**6), microseconds=rng.randrange(10**6))
        out.append(Memory(
            content=f"memory {i}: the staging server is s{i}.example.com", user_id=rng.choice(["alice", "bob"]),
            project=rng.choice([None, "mobius"]), type=rng.choice(list(MemoryType)), importance=rng.randint(1, 10),
            confidence=rng.choice([0.0, 0.35, 0.8, 1.0]), tier=rng.choice(list(Tier)),
            source_ids=tuple(f"t{j}" for j in range(rng.randrange(3))), session_id=rng.choice([None, "s1"]),
            created_at=at, updated_at=rng.choice([None, at + timedelta(hours=1)]),
            valid_from=rng.choice([None, at - timedelta(days=1)]), valid_until=rng.choice([None, at + timedelta(days=9)]),
            superseded_by=rng.choice([None, "m_x"]), superseded_at=rng.choice([None, at + timedelta(days=2)]),
            archived=rng.random() < 0.1, pinned=rng.random() < 0.1, retrieval_count=rng.randrange(5),
            citation_count=rng.randrange(3), ignore_count=rng.randrange(3),
            last_accessed=rng.choice([None, at + timedelta(days=3)]),
            metadata=rng.choice([{}, {"source": "remember_tool", "category": "goal", "n": [1, 2]}])))
    return out


def test_rows_as_written_read_back_exactly_as_validated() -> None:
    for m in memories(500):
        row = memory_params(m)
        fast = row_to_memory(row)
        assert fast == validated(row) == m
        assert all(getattr(fast, f) == getattr(m, f) for f in COLUMNS)
        assert fast.created_at.tzinfo is not None and fast.valid_from is not None


@pytest.mark.parametrize("change", [
    {"type": "fact"}, {"tier": "l2"}, {"content": "  padded  "}, {"importance": 5.0},
    {"created_at": "2025-03-01T10:00:00"}, {"updated_at": "2025-03-01T10:00:00+02:00"},
    {"source_ids": "[1, 2]"},
])
def test_other_forms_are_validated_as_before(change: dict[str, object]) -> None:
    """Rows from older versions, imports or hand edits: the validating constructor decides."""
    row = dict(zip(COLUMNS, memory_params(memories(1)[0]), strict=True))
    row.update(change)
    values = tuple(row[c] for c in COLUMNS)
    decoded = {**row, "source_ids": tuple(json.loads(str(row["source_ids"]))), "metadata": {}}
    assert _as_written(decoded) is None
    assert row_to_memory(values) == validated(values)


@pytest.mark.parametrize("change", [{"type": "NOTATYPE"}, {"importance": 11}, {"content": "   "}, {"user_id": ""}])
def test_a_damaged_row_still_raises(change: dict[str, object]) -> None:
    row = dict(zip(COLUMNS, memory_params(memories(1)[0]), strict=True))
    row.update(change)
    with pytest.raises(InvalidMemory):
        row_to_memory(tuple(row[c] for c in COLUMNS))
