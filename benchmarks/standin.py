"""Large embedded databases for latency benchmarks, without embedding every memory with MiniLM.

Embedding 100k texts with MiniLM takes ~30 min on this project's 2-core
machine, 1M texts hours. Search latency does not depend on what the stored
vectors mean, only on how many there are and how they spread (which matters to
an ANN index). :class:`StandInEmbedder` therefore gives each text a vector
mixed from two *real* MiniLM vectors of the 10k search_bench database (picked by
a hash of the text) plus a little noise: vectors with MiniLM's spread, at
numpy speed. It reports MiniLM's model id, so the store takes them as MiniLM
vectors and the query side embeds with the real model: latency figures include
the real query embedding. What such a database cannot measure is recall
quality; recall@10 of the ANN index against exact KNN is measured on the real
10k vectors (``scale_bench``) and on these stand-ins, and both are reported.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks import synthetic
from benchmarks.common import CACHE_DIR
from dexai_memory.embeddings import MINILM_DIM, Embedder, OnnxMiniLMEmbedder

#: The search_bench database whose real MiniLM vectors seed the stand-ins.
SEED_DB = CACHE_DIR / (f"search-n10000-seed7-g{synthetic.GENERATOR_VERSION}-"
                       f"{OnnxMiniLMEmbedder.model_id}.db")


def seed_vectors(path: Path = SEED_DB, *, limit: int = 10_000) -> np.ndarray:
    """Real MiniLM vectors (float32, unit length) read from a search_bench database, or
    made by embedding synthetic memories when that database is not cached."""
    if path.exists():
        import sqlean
        import sqlite_vec

        conn = sqlean.connect(str(path))
        try:
            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            rows = conn.execute("SELECT embedding FROM memories_vec LIMIT ?", (limit,)).fetchall()
        finally:
            conn.close()
        if rows:
            return np.frombuffer(b"".join(r[0] for r in rows), dtype=np.float32).reshape(len(rows), MINILM_DIM).copy()
    texts = [m.content for m in synthetic.memories(min(limit, 2_000), seed=7)]
    return OnnxMiniLMEmbedder().embed_batch(texts)


class StandInEmbedder(Embedder):
    """Deterministic stand-in vectors with MiniLM's id and spread (see the module docstring)."""

    dim = MINILM_DIM
    model_id = OnnxMiniLMEmbedder.model_id

    def __init__(self, base: np.ndarray | None = None, *, noise: float = 0.15):
        self.base = seed_vectors() if base is None else base
        self.noise = noise

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        n = len(self.base)
        for i, text in enumerate(texts):
            digest = hashlib.blake2b(text.encode(), digest_size=16).digest()
            a = int.from_bytes(digest[:4], "little") % n
            b = int.from_bytes(digest[4:8], "little") % n
            rng = np.random.default_rng(int.from_bytes(digest[8:], "little"))
            vec = self.base[a] + 0.5 * self.base[b] + self.noise * rng.standard_normal(self.dim).astype(np.float32) \
                / np.sqrt(self.dim)
            out[i] = vec / np.linalg.norm(vec)
        return out


async def standin_db(n: int, *, users: int = 1, seed: int = 7, rebuild: bool = False) -> tuple[Path, dict[str, float]]:
    """A cached database of ``n`` synthetic memories per user for ``users`` users (``bench-user``
    alone for one user, else ``user-000``...) with stand-in vectors; its path and build figures."""
    import json
    import time

    from dexai_memory.providers.native.provider import NativeProvider

    key = f"standin-n{n}-u{users}-seed{seed}-g{synthetic.GENERATOR_VERSION}"
    path, meta = CACHE_DIR / f"{key}.db", CACHE_DIR / f"{key}.json"
    if path.exists() and meta.exists() and not rebuild:
        return path, json.loads(meta.read_text(encoding="utf-8"))
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    partial = CACHE_DIR / f"{key}.partial.db"
    for p in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
        p.unlink(missing_ok=True)
    embedder = StandInEmbedder()
    start = time.perf_counter()
    async with NativeProvider(partial, embedder=embedder) as provider:
        for u in range(users):
            user = "bench-user" if users == 1 else f"user-{u:03d}"
            await provider.add_many(synthetic.memories(n, seed=seed + u, user_id=user), batch=2000)
        seconds = time.perf_counter() - start
        await provider.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    partial.replace(path)
    build = {"n": n * users, "seconds": round(seconds, 2), "per_s": round(n * users / seconds, 1)}
    meta.write_text(json.dumps(build) + "\n", encoding="utf-8")
    return path, build
