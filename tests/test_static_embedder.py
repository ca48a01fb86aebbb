"""The static embedder distilled from MiniLM (dexai_memory.embeddings.StaticMiniLMEmbedder)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dexai_memory.config import EmbeddingConfig
from dexai_memory.embeddings import (
    StaticMiniLMEmbedder,
    build_static_table,
    make_embedder,
    static_table_path,
)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # the first 4,000 word pieces (the common English words are there); the full table takes ~40 s
    path = tmp_path_factory.mktemp("static") / "static-minilm.npz"
    build_static_table(path, limit=4000)
    return path


def test_build_is_deterministic(table: Path, tmp_path: Path) -> None:
    assert build_static_table(tmp_path / "a.npz", limit=300) == build_static_table(tmp_path / "b.npz", limit=300)
    with np.load(table) as data:
        assert data["rows"].dtype == np.int8
        assert data["rows"].shape == (30522, 384)
        assert not data["rows"][4000:].any()


def test_static_vectors_are_unit_length_and_semantic(table: Path) -> None:
    e = StaticMiniLMEmbedder(table, verify=False)  # a partial table: not the pinned one
    v = e.embed_batch(["the cat sat on the mat", "a cat was sitting on a mat", "the bank raised interest rates", ""])
    assert v.shape == (4, 384)
    assert np.allclose(np.linalg.norm(v[:3], axis=1), 1.0, atol=1e-5)
    assert not v[3].any()  # nothing known: a zero vector, never NaN
    assert v[0] @ v[1] > v[0] @ v[2]
    assert e.model_id != "all-MiniLM-L6-v2-onnx-int8"  # a store embedded with it is searched with it


def test_a_table_that_is_not_the_pinned_one_is_refused(table: Path) -> None:
    from dexai_memory.errors import EmbeddingError

    with pytest.raises(EmbeddingError, match="pinned sha256"):
        StaticMiniLMEmbedder(table).embed("hello")


def test_config_selects_it_and_the_table_lives_in_the_data_dir(isolated_home: Path) -> None:
    e = make_embedder(EmbeddingConfig(backend="static-minilm"))
    assert isinstance(e, StaticMiniLMEmbedder)
    assert static_table_path() == isolated_home / "models" / "static-minilm.npz"
