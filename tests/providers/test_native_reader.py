"""The command hook's read-only reader reads the native store as the provider does."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from dexai_memory.models import Memory, MemoryType, SearchFilters, Tier, utcnow
from dexai_memory.providers.native import NativeProvider
from dexai_memory.providers.native.reader import SqliteReader
from dexai_memory.recall.source import run_now

U = "alice"
FILTERS = [
    SearchFilters(),
    SearchFilters(project="p"),
    SearchFilters(pinned=True),
    SearchFilters(tiers=(Tier.L1,)),
    SearchFilters(types=(MemoryType.COMMITMENT,)),
    SearchFilters(types=(MemoryType.SNAPSHOT,), session_id="s1"),
    SearchFilters(types=(MemoryType.PREFERENCE,), min_importance=6),
    SearchFilters(include_archived=True),
]


@pytest.fixture
async def store(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    now = utcnow()
    async with NativeProvider(path) as p:  # no embedder: search is BM25 only, like the reader's
        await p.add_many([
            Memory(content="Alice prefers green tea in the morning", user_id=U, type=MemoryType.PREFERENCE,
                   importance=7, created_at=now),
            Memory(content="Alice's sister lives in Lisbon", user_id=U, importance=6, created_at=now, project="p"),
            Memory(content="Call the dentist on Friday", user_id=U, type=MemoryType.COMMITMENT, pinned=True,
                   created_at=now - timedelta(days=1)),
            Memory(content="The tea shop in Lisbon closes at six", user_id=U, tier=Tier.L1, archived=True),
            Memory(content="Working on the parser; last action: tokenizer tests", user_id=U,
                   type=MemoryType.SNAPSHOT, session_id="s1"),
            Memory(content="Old raw turn about tea and Lisbon", user_id=U, type=MemoryType.TRANSCRIPT),
            Memory(content="Bob drinks coffee in Lisbon", user_id="bob"),
        ])
        gone = Memory(content="Alice used to drink black tea", user_id=U)
        await p.add(gone)
        await p.delete(gone.id, user_id=U)
    return path


async def test_reader_lists_and_searches_like_the_provider(store: Path) -> None:
    async with NativeProvider(store) as p:
        with SqliteReader(store) as reader:
            for f in FILTERS:
                assert [m.id for m in await reader.list(user_id=U, filters=f, limit=10)] == \
                       [m.id for m in await p.list(user_id=U, filters=f, limit=10)], f
            assert await reader.list(user_id=U, limit=10) == await p.list(user_id=U, limit=10)
            for query in ("tea in Lisbon", "Alice's sister", "dentist", "the and of", "café"):
                for f in (SearchFilters(), SearchFilters(project="p"), SearchFilters(types=(MemoryType.TRANSCRIPT,))):
                    ours = await reader.search(query, user_id=U, filters=f, limit=5)
                    theirs = await p.search(query, user_id=U, filters=f, limit=5)
                    assert [(r.memory, r.bm25_rank) for r in ours] == [(r.memory, r.bm25_rank) for r in theirs]
                    assert [r.score for r in ours] == [61.0 / (60 + r.bm25_rank) for r in ours if r.bm25_rank]


async def test_reader_of_a_missing_or_foreign_file_reads_empty(tmp_path: Path) -> None:
    assert await SqliteReader(tmp_path / "none.db").list(user_id=U) == []
    other = tmp_path / "other.db"
    import sqlite3

    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with SqliteReader(other) as reader:
        assert await reader.search("tea", user_id=U) == []


def test_run_now_runs_a_coroutine_that_never_waits(store: Path) -> None:
    with SqliteReader(store) as reader:
        found = run_now(reader.search("dentist", user_id=U))
    assert [r.memory.content for r in found] == ["Call the dentist on Friday"]

    async def waits() -> None:
        await asyncio.sleep(0)

    with pytest.raises(RuntimeError, match="waited"):
        run_now(waits())


def test_the_fallback_loads_no_event_loop_or_heavy_module(store: Path, isolated_home: Path) -> None:
    """Recall without a daemon runs the daemon's recall code on the reader, without asyncio."""
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.db").write_bytes(store.read_bytes())
    code = (
        "import io, json, sys\n"
        "from dexai_memory.hooks.client import run\n"
        "outs = []\n"
        "for ev, p in [('session-start', {'source': 'startup', 'session_id': 'x'}),\n"
        "              ('user-prompt-submit', {'prompt': 'where does my sister live?', 'session_id': 'y'})]:\n"
        "    out = io.StringIO()\n"
        "    run(ev, io.StringIO(json.dumps(p)), out)\n"
        "    outs.append(out.getvalue())\n"
        "heavy = ('asyncio', 'aiosqlite', 'sqlean', 'numpy', 'onnxruntime')\n"
        "print(json.dumps([outs, sorted(m for m in sys.modules if m.split('.')[0] in heavy)]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                          env={**os.environ, "DEXAI_MEMORY_HOME": str(isolated_home), "DEXAI_MEMORY_USER": U})
    outs, loaded = json.loads(proc.stdout)
    assert loaded == []
    assert "green tea" in outs[0] and "sister lives in Lisbon" in outs[1]
