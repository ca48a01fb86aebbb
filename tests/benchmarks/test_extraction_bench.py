"""The extraction benchmark (issue 13): its corpus, its scoring, the offline extractor's targets, its quick mode."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.extraction_bench import CorpusError, load_corpus, run, score_row
from dexai_memory.config import DEFAULT_GATE_THRESHOLD
from dexai_memory.models import ExtractedNote, MemoryType
from tests.benchmarks.test_benchmarks_quick import run_quick


def test_the_corpus_is_labelled_and_split() -> None:
    rows = load_corpus()
    keep = [r for r in rows if r["must_keep"]]
    filler = [r for r in rows if not r["must_keep"]]
    assert len(keep) >= 200 and len(filler) >= 60
    kinds = Counter(r["kind"] for r in keep)
    assert {"instruction", "warning", "decision", "project_fact", "person", "preference", "commitment", "goal",
            "personal_fact", "appointment", "deadline"} <= set(kinds)
    heldout = Counter(r["kind"] for r in keep if r["split"] == "heldout")
    assert set(heldout) == set(kinds)  # every kind is in the held-out split
    assert 0.25 <= sum(heldout.values()) / len(keep) <= 0.35
    assert sum(1 for r in keep if r["date"]) >= 30


def test_a_malformed_corpus_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "c.jsonl"
    bad.write_text('{"id": "a", "split": "dev", "text": "Use pnpm.", "ts": "2026-03-02T09:00:00+00:00", '
                   '"must_keep": true, "kind": "instruction", "types": ["INSIGHT"], "min_importance": 7, '
                   '"key_phrases": ["npm run"], "date": null}\n', encoding="utf-8")
    with pytest.raises(CorpusError, match="key phrase 'npm run' is not in the text"):
        load_corpus(bad)


def test_scoring_needs_the_key_phrase_type_importance_and_clean_content() -> None:
    row = {"must_keep": True, "key_phrases": ["make check"], "types": ["INSIGHT"], "min_importance": 7,
           "date": None}

    def score(content: str, kind: MemoryType = MemoryType.INSIGHT, importance: int = 8) -> dict[str, object]:
        return score_row(row, [ExtractedNote(content, kind, importance)])

    assert score("Run `make check` before every push.")["kept"] is True
    assert score("The user said run `make check` before every push.")["problems"] == ["unclean"]
    assert score("Run `make check` before every push.", MemoryType.FACT)["problems"] == ["type FACT"]
    assert score("Run `make check` before every push.", importance=4)["problems"] == ["importance 4"]
    assert score("Run the checks before every push.")["problems"] == ["key phrase lost"]


def test_the_offline_extractor_meets_the_issue_13_targets() -> None:
    """Dev split (tuned on): recall >= 90 % on every kind, at most 1 note in 10 filler turns, dates >= 95 %.

    The held-out split was measured once after tuning (95.5 % recall, dates
    83.3 %: two date-only statements the gate stops, see benchmarks/README.md);
    it is guarded here against regressions, not tuned on.
    """
    rows = load_corpus()
    results = asyncio.run(run(rows, None, DEFAULT_GATE_THRESHOLD))["offline"]["summary"]
    dev, heldout = results["dev"]["overall"], results["heldout"]["overall"]
    assert dev["min_kind_recall_pct"] >= 90, results["dev"]["per_kind"]
    assert dev["filler_notes_per_turn"] <= 0.1
    assert dev["date_accuracy_pct"] >= 95
    assert heldout["recall_pct"] >= 90 and heldout["filler_notes_per_turn"] <= 0.1
    assert heldout["date_accuracy_pct"] >= 80


@pytest.mark.slow
def test_extraction_bench_quick(tmp_path: Path) -> None:
    data = run_quick("extraction_bench", tmp_path)
    assert data["benchmark"] == "extraction_bench"
    assert data["params"]["extractors"] == ["offline"]
    offline = data["results"]["offline"]
    assert set(offline["summary"]) == {"dev", "heldout", "all"}
    assert len(offline["per_turn"]) == data["params"]["rows"]
    for key in ("offline_dev_recall_pct", "offline_heldout_recall_pct", "offline_dev_date_accuracy_pct"):
        value = data["summary"][key]
        assert value is None or 0 <= value <= 100, key
    assert "offline, heldout split" in data["_stdout"]
