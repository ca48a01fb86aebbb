"""The bulk model: MiniLM on int8 activations for bulk embedding (``ingest`` / ``import --vectors
now``, ``reembed``, the daemon's deferred vectors). It is built once from the pinned model by the
project's own recipe, checked against that model before it is kept, rebuilt when damaged, and
replaced by the exact model (never an error) when it cannot be built."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from dexai_memory.config import load_settings
from dexai_memory.embeddings import (
    BULK_MIN_COSINE,
    BULK_MIN_MEAN_COSINE,
    MINILM_ONNX_SHA256,
    BulkMiniLMEmbedder,
    OnnxMiniLMEmbedder,
    bulk_embedder,
    ensure_bulk_model,
)

TEXTS = [
    "I moved to Lisbon in March and started a new job at a bakery near the river.",
    "My sister Priya prefers tea to coffee.",
    "The dog is called Biscuit.",
    "We ship the release on Friday unless the migration tests fail on staging.",
    "Run ruff and mypy before every commit; CI rejects warnings.",
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[logging.Handler], list[logging.Handler]]:
    """The bulk model built once for this module, with the root logger's handlers before and after."""
    path = tmp_path_factory.mktemp("models") / "minilm-int8-dynamic.onnx"
    before = list(logging.getLogger().handlers)
    ensure_bulk_model(path)
    return path, before, list(logging.getLogger().handlers)


def test_built_once_recorded_and_close_to_the_exact_model(built: tuple[Path, list, list]) -> None:
    path, before, after = built
    record = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    assert record["sha256"] == sha256(path) and record["source_sha256"] == MINILM_ONNX_SHA256
    assert record["min_cosine"] >= BULK_MIN_COSINE and record["mean_cosine"] >= BULK_MIN_MEAN_COSINE
    assert after == before  # onnxruntime's quantizer left no stderr handler on the root logger
    # a second call finds it: not rebuilt
    stamp = path.stat().st_mtime_ns
    assert ensure_bulk_model(path) == (path, record["sha256"]) and path.stat().st_mtime_ns == stamp

    bulk, exact = BulkMiniLMEmbedder(path=path, batch_size=2), OnnxMiniLMEmbedder()
    got, want = bulk.embed_batch(TEXTS), exact.embed_batch(TEXTS)
    assert bulk.quantized is True and bulk.model_id == exact.model_id and got.shape == want.shape
    assert float((got * want).sum(axis=1).min()) >= BULK_MIN_COSINE  # texts it was not checked on
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # bulk vectors are searched with exact query vectors: the right text still comes first
    assert int(np.argmax(got @ exact.embed("Which drink does Priya like?"))) == 1
    assert int(np.argmax(got @ exact.embed("what is the pet's name"))) == 2


def test_a_damaged_model_is_rebuilt(built: tuple[Path, list, list], tmp_path: Path) -> None:
    path = tmp_path / "bulk.onnx"
    shutil.copy(built[0], path)
    shutil.copy(built[0].with_suffix(".json"), path.with_suffix(".json"))
    with path.open("ab") as fh:
        fh.write(b"\0garbage")
    _, digest = ensure_bulk_model(path)
    assert sha256(path) == digest == json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))["sha256"]
    assert BulkMiniLMEmbedder(path=path).embed_batch(TEXTS[:1]).shape == (1, 384)


def test_without_onnx_bulk_work_uses_the_exact_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # as if the package were not installed
    bulk = BulkMiniLMEmbedder(path=tmp_path / "bulk.onnx")
    with caplog.at_level(logging.WARNING, logger="dexai_memory.embeddings"):
        got = bulk.embed_batch(TEXTS)
    assert bulk.quantized is False and not (tmp_path / "bulk.onnx").exists()
    assert "pip install 'dexai-memory[bulk-int8]'" in caplog.text and "exact MiniLM" in caplog.text
    np.testing.assert_allclose(got, OnnxMiniLMEmbedder().embed_batch(TEXTS), atol=2e-5)


def test_bulk_embedder_follows_the_config() -> None:
    config = load_settings().embedding
    assert config.bulk_model == "exact"  # the default: bulk work embeds like everything else
    exact = bulk_embedder(config)
    assert type(exact) is OnnxMiniLMEmbedder and exact.threads == max(1, os.cpu_count() or 1)
    int8 = dataclasses.replace(config, bulk_model="int8")
    bulk = bulk_embedder(int8)
    assert isinstance(bulk, BulkMiniLMEmbedder) and bulk.threads == max(1, os.cpu_count() or 1)
    one = bulk_embedder(int8, threads=1)
    assert isinstance(one, BulkMiniLMEmbedder) and one.threads == 1
    assert bulk_embedder(dataclasses.replace(config, backend="none")) is None
