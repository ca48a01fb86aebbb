"""An approximate nearest-neighbour (HNSW) index over one user's vectors, for large stores.

Exact KNN over the in-memory matrix (:mod:`.vectors`) reads every vector on
each query: ~1 ms at 10k memories but ~15-20 ms at 100k on this project's
2-core machine (memory bandwidth), more under load. Above
``search.ann_threshold`` vectors, a user's KNN is served by a usearch HNSW
graph instead (half-precision vectors, cosine), ~0.3 ms at 100k; its
candidates are rescored with the exact float32 vectors, so the similarities
reported are exact and only *which* candidates are found is approximate
(recall@10 against exact KNN: ``benchmarks/scale_bench.py``).

usearch is optional (``pip install dexai-memory[ann]``): without it every
search stays exact. The graph is built in a background thread the first time a
user's vectors pass the threshold (a few seconds per 10k vectors on 2 cores);
searches stay exact until it is ready. The graph is then saved beside the
database (:meth:`AnnIndex.save`, ``<database>.ann/``), and the next process
restores it in seconds instead of rebuilding it (189 s at 1M vectors),
adding and removing the rowids that changed meanwhile (a vector re-made
under the same rowid keeps its old place in the graph: only which
candidates are found can suffer, never the similarities reported).

usearch's SIMD library (numkong) and onnxruntime must load in that order
(the other order crashes the process while importing onnxruntime, seen with
usearch 2.26 / onnxruntime 1.32), so :func:`available` imports onnxruntime
first when it is installed.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

#: Graph degree and the candidate list lengths while building and searching (usearch's names).
CONNECTIVITY = 16
EXPANSION_ADD = 64
EXPANSION_SEARCH = 256
#: Above this many neighbours asked for, the caller should search exactly (the graph's beam is bounded).
MAX_K = 1024

_usearch: Any = None


def available() -> bool:
    """Whether usearch can be imported (it is then kept loaded)."""
    global _usearch
    if _usearch is None:
        with contextlib.suppress(ImportError):
            importlib.import_module("onnxruntime")  # first: see the module docstring
        try:
            _usearch = importlib.import_module("usearch.index")
        except ImportError:
            _usearch = False
    return bool(_usearch)


class AnnIndex:
    """A usearch HNSW graph keyed by SQLite rowid (cosine, float16 storage)."""

    def __init__(self, dim: int):
        if not available():
            raise RuntimeError("usearch is not installed: pip install dexai-memory[ann]")
        self.dim = dim
        self._index = _usearch.Index(ndim=dim, metric="cos", dtype="f16", connectivity=CONNECTIVITY,
                                     expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH)

    def __len__(self) -> int:
        return len(self._index)

    def keys(self) -> np.ndarray:
        """The rowids in the graph."""
        return np.asarray(self._index.keys, dtype=np.int64)

    def save(self, path: Path) -> None:
        """Write the graph to ``path`` (mode 0600; written aside, then renamed into place)."""
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        self._index.save(str(partial))
        os.chmod(partial, 0o600)
        os.replace(partial, path)

    @classmethod
    def restore(cls, path: Path, dim: int) -> AnnIndex | None:
        """The graph saved at ``path`` by :meth:`save`, or None (missing, unreadable or another size)."""
        if not path.is_file() or not available():
            return None
        try:
            index = _usearch.Index.restore(str(path))
        except Exception:  # noqa: BLE001 - a damaged cache file: rebuilt from the vectors
            logger.warning("ANN index %s is unreadable: rebuilding it", path)
            return None
        if index is None or index.ndim != dim:
            return None
        index.expansion_add, index.expansion_search = EXPANSION_ADD, EXPANSION_SEARCH
        graph = cls.__new__(cls)
        graph.dim, graph._index = dim, index
        return graph

    def add(self, rowids: np.ndarray, vectors: np.ndarray, *, threads: int = 1) -> None:
        """Insert (or replace) vectors by rowid (blocking; seconds per 10k vectors)."""
        if not len(rowids):
            return
        keys = np.asarray(rowids, dtype=np.uint64)
        present = [k for k in keys.tolist() if self._index.contains(k)]
        if present:
            self._index.remove(present)
        self._index.add(keys, np.ascontiguousarray(vectors, dtype=np.float32), threads=threads)

    def remove(self, rowid: int) -> None:
        """Forget one rowid (no-op if absent)."""
        if self._index.contains(rowid):
            self._index.remove(rowid)

    def search(self, query: np.ndarray, k: int) -> np.ndarray:
        """The rowids of about the ``k`` nearest vectors, nearest first."""
        if len(self._index) == 0 or k <= 0:
            return np.zeros(0, dtype=np.int64)
        k = min(k, len(self._index))
        if self._index.expansion_search < k:
            self._index.expansion_search = k
        matches = self._index.search(np.asarray(query, dtype=np.float32), k)
        return np.asarray(matches.keys, dtype=np.int64)
