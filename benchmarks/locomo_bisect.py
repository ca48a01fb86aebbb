"""Run ``benchmarks.locomo_bench`` of another checkout, with embeddings kept on disk between runs.

For finding the commit that moved a LoCoMo figure: check a commit out in a
separate worktree (``git worktree add --detach ../bisect <commit>``), then::

    python benchmarks/locomo_bisect.py ../bisect --methods system --out /tmp/at-commit

(a script path, not ``-m``: this repository's ``benchmarks`` package must not be
imported before the checkout's). The checkout's own ``dexai_memory``,
``dexai_memory.args`` (the packaged ``memory.yaml``) and ``benchmarks`` are
imported, whatever an editable install points at, and the MiniLM embedder is
wrapped by a cache of vectors keyed by the text's SHA-256 in
``--cache`` (default ``locomo-minilm.sqlite`` in the benchmarks' cache directory,
``$DEXAI_BENCH_CACHE`` else ``${XDG_CACHE_HOME:-~/.cache}/dexai-memory/bench``). A full development-split run of the system method then takes ~4
minutes instead of ~8 (most note texts are the same from one commit to the
next). Query latency is not meaningful with the cache (queries hit it too).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sqlite3
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
#: the same directory as ``benchmarks.common.CACHE_DIR`` (not imported: see above)
DEFAULT_CACHE = Path(os.environ.get("DEXAI_BENCH_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                     / "dexai-memory" / "bench") / "locomo-minilm.sqlite"


def _import_checkout(root: Path) -> None:
    """Make ``root``'s packages the ones imported: sys.path first, and the two sub-packages the
    editable install maps elsewhere (``dexai_memory.args``, ``dexai_memory.cli``) loaded from ``root``."""
    sys.path.insert(0, str(root))
    import dexai_memory

    if not Path(dexai_memory.__file__ or "").resolve().is_relative_to(root):
        raise SystemExit(f"dexai_memory imported from {dexai_memory.__file__}, not {root}")
    for sub in ("args", "cli"):
        spec = importlib.util.spec_from_file_location(f"dexai_memory.{sub}", root / sub / "__init__.py",
                                                      submodule_search_locations=[str(root / sub)])
        if spec is None or spec.loader is None:
            raise SystemExit(f"no {sub}/ package in {root}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[f"dexai_memory.{sub}"] = module
        spec.loader.exec_module(module)


def cached_embedder(path: Path) -> Any:
    """The checkout's ONNX MiniLM embedder behind a disk cache at ``path`` (thread-safe: the pipeline
    embeds from a worker thread)."""
    import numpy as np

    from dexai_memory.embeddings import Embedder, OnnxMiniLMEmbedder

    class DiskCachedEmbedder(Embedder):
        def __init__(self, inner: Embedder):
            self.inner = inner
            self.dim = inner.dim
            self.model_id = inner.model_id
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path, timeout=60, check_same_thread=False)
            self.db.execute("CREATE TABLE IF NOT EXISTS vec (key BLOB PRIMARY KEY, v BLOB NOT NULL)")
            self.vectors: dict[str, Any] = {}
            self.lock = threading.Lock()

        @staticmethod
        def key(text: str) -> bytes:
            return hashlib.sha256(text.encode("utf-8")).digest()[:16]

        def embed_batch(self, texts: Sequence[str]) -> Any:
            with self.lock:
                texts = list(texts)
                if not texts:
                    return np.zeros((0, self.dim), np.float32)
                todo = {self.key(t): t for t in dict.fromkeys(texts) if t not in self.vectors}
                keys = list(todo)
                for start in range(0, len(keys), 500):
                    part = keys[start:start + 500]
                    rows = self.db.execute(f"SELECT key, v FROM vec WHERE key IN ({','.join('?' * len(part))})",
                                           part)
                    for key, blob in rows:
                        self.vectors[todo[key]] = np.frombuffer(blob, dtype=np.float32)
                missing = [t for t in todo.values() if t not in self.vectors]
                if missing:
                    with self.db:
                        for text, vec in zip(missing, self.inner.embed_batch(missing), strict=True):
                            self.vectors[text] = np.asarray(vec, np.float32)
                            self.db.execute("INSERT OR REPLACE INTO vec VALUES (?, ?)",
                                            (self.key(text), self.vectors[text].tobytes()))
                return np.stack([self.vectors[t] for t in texts])

    return DiskCachedEmbedder(OnnxMiniLMEmbedder())


def main(argv: Sequence[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        print("usage: python benchmarks/locomo_bisect.py CHECKOUT [--cache PATH] [locomo_bench options]")
        return 0
    root = Path(argv[0]).resolve()
    rest = list(argv[1:])
    cache = DEFAULT_CACHE
    if "--cache" in rest:
        at = rest.index("--cache")
        cache = Path(rest[at + 1])
        del rest[at:at + 2]
    _import_checkout(root)
    import benchmarks.locomo_bench as bench

    embedder = None

    def bench_embedder(name: str) -> Any:
        nonlocal embedder
        if name != "minilm":
            raise SystemExit("locomo_bisect caches the minilm embedder only")
        embedder = embedder or cached_embedder(cache)
        return embedder

    bench.bench_embedder = bench_embedder  # type: ignore[attr-defined]
    print(f"package: {sys.modules['dexai_memory'].__file__}; vectors cached in {cache}", file=sys.stderr)
    return int(bench.main(rest))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
