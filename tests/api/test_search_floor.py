"""The relevance floor of `/api/search` (the panel's search box), with the real MiniLM embedder: a
query nothing relates to returns nothing, a real one its hit first; the same function answers
`dexai memory search` (tests/cli/test_cli_search_floor.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from dexai_memory.api.app import build_app
from dexai_memory.config import load_settings
from dexai_memory.models import Memory, SearchResult
from dexai_memory.providers.relevance import min_similarity, relevant

from .conftest import TOKEN, USER, Api

FACTS = ["Sam's passport expires in March 2027", "The office wifi is called Bluebird",
         "Sam plays the cello on Thursdays", "Sam is afraid of heights", "The garage door code is 4471"]


@pytest.fixture
def minilm_api(isolated_home: Path) -> Iterator[Api]:
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: onnx-minilm\n")
    with TestClient(build_app(load_settings(), USER, TOKEN), base_url="http://127.0.0.1") as client:
        yield Api(client)


def test_nonsense_finds_nothing_and_a_real_query_its_hit_first(minilm_api: Api) -> None:
    ids = {text: minilm_api.add(text)["id"] for text in FACTS}
    for nonsense in ("xyzzy", "flibbertigibbet", "purple monkey dishwasher"):
        assert minilm_api.get("/api/search", params={"q": nonsense})["results"] == [], nonsense
    hits = minilm_api.get("/api/search", params={"q": "when does my passport expire"})["results"]
    assert hits and hits[0]["memory"]["id"] == ids["Sam's passport expires in March 2027"]
    hits = minilm_api.get("/api/search", params={"q": "what instrument do I play"})["results"]
    assert hits[0]["memory"]["id"] == ids["Sam plays the cello on Thursdays"]


def test_the_floor_is_the_embedders_unless_configured(tmp_path: Path) -> None:
    cfg = tmp_path / "m.yaml"
    cfg.write_text("embedding:\n  backend: onnx-minilm\n")
    assert min_similarity(load_settings(cfg)) == 0.42
    cfg.write_text("embedding:\n  backend: static-minilm\n")
    assert min_similarity(load_settings(cfg)) == 0.6
    cfg.write_text("search:\n  min_similarity: 0\n")
    assert min_similarity(load_settings(cfg)) == 0.0
    cfg.write_text("embedding:\n  backend: none\n")
    assert min_similarity(load_settings(cfg)) == 1.0  # BM25 only: a keyword is the only evidence


def test_a_keyword_or_a_close_vector_is_evidence() -> None:
    m = Memory(content="x", user_id=USER)
    keyword = SearchResult(m, 1.0, bm25_rank=1, similarity=0.1)
    close = SearchResult(m, 0.9, vector_rank=1, similarity=0.5)
    far = SearchResult(m, 0.8, vector_rank=2, similarity=0.3)
    unscored = SearchResult(m, 0.7)  # a backend reporting neither signal: kept
    assert relevant([keyword, close, far, unscored], 0.42) == [keyword, close, unscored]
    assert relevant([far], 0.0) == [far]
