"""The ONNX MiniLM embedder: a batch gives every text the vector it gets alone, in input order,
however the batch is cut and sorted (texts are grouped by token count so each model call pads
little), with one thread or several."""

from __future__ import annotations

import numpy as np
import pytest

from dexai_memory.embeddings import OnnxMiniLMEmbedder

TEXTS = [
    "I moved to Lisbon in March and started a new job at a bakery near the river.",
    "ok",
    "",
    "My sister Priya prefers tea to coffee.",
    "We decided to ship the release on Friday after the changelog is done, unless the migration "
    "tests fail again on the staging database, in which case we wait until Monday and tell Sarah.",
    "ok",
    "The dog is called Biscuit.",
]


@pytest.mark.parametrize("threads", [1, 2])
def test_a_batch_matches_each_text_alone_in_input_order(threads: int) -> None:
    model = OnnxMiniLMEmbedder(batch_size=3, threads=threads)  # several model calls, sorted across them
    batch = model.embed_batch(TEXTS)
    assert batch.shape == (len(TEXTS), model.dim)
    alone = np.stack([model.embed_batch([t])[0] for t in TEXTS])
    np.testing.assert_allclose(batch, alone, atol=2e-5)
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    assert np.allclose(batch[1], batch[5])  # the same text, the same vector
    # and the vectors mean something: the closest text to a paraphrase is the right one
    query = model.embed("Which drink does Priya like?")
    assert int(np.argmax(batch @ query)) == 3


def test_an_empty_batch() -> None:
    assert OnnxMiniLMEmbedder().embed_batch([]).shape == (0, OnnxMiniLMEmbedder.dim)
