"""The prefetch benchmark's quick mode runs the hook's own prefetch on the labelled corpus and
writes well-formed JSON (figures are not asserted beyond their range)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.prefetch_bench import CORPUS, corpus_memories, main
from dexai_memory.models import MemoryType


def test_prefetch_bench_quick(tmp_path: Path, capsys: object) -> None:
    assert main(["--quick", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "prefetch_bench.quick.json").read_text())
    scores, held_out = data["results"]["scores"]["bm25"], data["results"]["scores"]["bm25_held_out"]
    assert scores["events"] + held_out["events"] == data["params"]["events"] > 20 and held_out["events"] > 0
    assert 0 <= scores["precision"] <= 1 and 0 <= scores["recall"] <= 1
    assert scores["prefetched"] > 0 and scores["tokens_per_event"] > 0
    assert {"bm25_precision", "bm25_recall", "bm25_tokens_per_event"} <= set(data["summary"])


def test_corpus_labels_name_known_memories() -> None:
    corpus = json.loads(CORPUS.read_text())
    ids = {m.id for m in corpus_memories(corpus)}
    assert any(m.type is MemoryType.EPISODE for m in corpus_memories(corpus))
    for session in corpus["sessions"]:
        for event in session["events"]:
            assert set(event["needed"]) <= ids, event
