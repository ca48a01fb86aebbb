"""longmemeval_bench on a tiny LongMemEval-shaped haystack written here (not the real data).

Proves the parts a figure depends on: gold = ``has_answer`` turns, evidence
recall / recall_any / recall_all as defined, the dev / holdout split by
``question_id`` order, questions without evidence skipped, and the JSON output.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from benchmarks import longmemeval_bench as lme
from benchmarks.locomo_bench import Retrieved

FILLER = [
    "Can you suggest a recipe for banana bread with walnuts?",
    "Sure: mash three ripe bananas, mix with flour, sugar, eggs and chopped walnuts, bake for an hour.",
    "What is the capital of Australia?",
    "Canberra is the capital of Australia.",
]


def session(*turns: tuple[str, str, bool]) -> list[dict[str, Any]]:
    return [{"role": role, "content": text, **({"has_answer": True} if gold else {})} for role, text, gold in turns]


def instance(qid: str, qtype: str, question: str, evidence: list[dict[str, Any]]) -> dict[str, Any]:
    filler = session(*((("user" if i % 2 == 0 else "assistant"), text, False) for i, text in enumerate(FILLER)))
    return {"question_id": qid, "question_type": qtype, "question": question, "answer": "x",
            "question_date": "2023/05/30 (Tue) 10:00",
            "haystack_session_ids": ["s_a", "s_b", "s_a"],  # ids may repeat: turn ids stay distinct
            "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/20 (Sat) 18:30", "2023/05/21 (Sun) 08:00"],
            "haystack_sessions": [filler, evidence, filler],
            "answer_session_ids": ["s_b"]}


def write_data(root: Path) -> Path:
    data = root / "s"
    data.mkdir()
    items = [
        # sorted ids: a1, b2 | c3, d4_abs, e5 -> dev = a1, b2 (the file names are in another order on purpose)
        ("9_e5", instance("e5", "multi-session", "Which saxophone brand do I play?",
                          session(("user", "I play a Yamaha saxophone in a jazz band.", True)))),
        ("1_c3", instance("c3", "knowledge-update", "Where does my sister Priya live now?",
                          session(("user", "My sister Priya moved to Porto last spring.", True)))),
        ("5_a1", instance("a1", "single-session-user", "What is the name of my dog?",
                          session(("user", "My dog's name is Biscuit, a beagle.", True),
                                  ("assistant", "Biscuit is a lovely name for a beagle!", False)))),
        ("2_b2", instance("b2", "multi-session", "How many marathons did I run in May?",
                          session(("user", "I ran the Lisbon marathon in May, my third marathon.", True),
                                  ("user", "Then on the 28th I finished the Porto race too.", True)))),
        ("3_d4_abs", instance("d4_abs", "single-session-user", "What is the name of my cat?",
                              session(("user", "I do not have any pets at home.", False)))),
    ]
    for name, item in items:
        (data / f"{name}.json").write_text(json.dumps(item), encoding="utf-8")
    return data


def test_turns_gold_and_dates(tmp_path: Path) -> None:
    entry = next(e for e in lme.index(write_data(tmp_path)) if e.question_id == "b2")
    q, turns = lme.load(entry)
    assert len(turns) == 4 + 2 + 4
    assert len({t.id for t in turns}) == len(turns)  # the repeated session id does not collide
    assert q.gold == tuple(t.id for t in turns if "marathon" in t.content or "Porto" in t.content)
    assert q.asked_at == datetime(2023, 5, 30, 10, 0, tzinfo=UTC)
    first, evidence = turns[0], turns[4]
    assert first.timestamp == datetime(2023, 5, 1, 9, 0, tzinfo=UTC) and first.speaker == "User"
    assert evidence.timestamp == datetime(2023, 5, 20, 18, 30, tzinfo=UTC)
    assert [t.role for t in turns[:2]] == ["user", "assistant"]


def test_split_is_first_half_of_sorted_ids(tmp_path: Path) -> None:
    entries = lme.index(write_data(tmp_path))
    assert [e.question_id for e in lme.split(entries, "dev")] == ["a1", "b2"]
    assert [e.question_id for e in lme.split(entries, "holdout")] == ["c3", "d4_abs", "e5"]
    assert len(lme.split(entries, "all")) == 5
    with pytest.raises(ValueError):
        lme.split(entries, "test")


def test_score_recall_any_all() -> None:
    q = lme.Question("q", "multi-session", "?", "", datetime(2023, 1, 1, tzinfo=UTC), ("t1", "t2"))
    score = lme.LmeScore()
    assert score.add(q, Retrieved(["t1", "x"], "User: one", 1.0)) == 0.5
    assert score.add(q, Retrieved(["t2", "t1"], "User: two", 2.0)) == 1.0
    assert score.add(q, Retrieved(["x"], "User: three", 3.0)) == 0.0
    d = score.to_dict()
    assert d["questions"] == 3
    assert d["evidence_recall"] == 50.0
    assert d["recall_any"] == pytest.approx(66.7)
    assert d["recall_all"] == pytest.approx(33.3)
    assert "hit_rate" not in d


def test_json_output_and_scores(tmp_path: Path) -> None:
    data = write_data(tmp_path)
    out = tmp_path / "out" / "lme.json"
    assert lme.main(["--data", str(data), "--methods", "bm25", "--json", str(out), "--no-cache"]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["benchmark"] == "longmemeval.dev" and result["quick"] is False
    assert result["params"]["questions"] == ["a1", "b2"] and result["params"]["questions_in_split"] == 2
    bm25 = result["results"]["scores"]["bm25"]
    # a1: its one gold turn shares "dog" and "name" with the question; b2: the Porto turn shares no word
    assert bm25["per_type"]["single-session-user"]["evidence_recall"] == 100.0
    assert bm25["per_type"]["multi-session"] == {**bm25["per_type"]["multi-session"], "evidence_recall": 50.0,
                                                 "recall_any": 100.0, "recall_all": 0.0}
    assert bm25["overall"]["evidence_recall"] == 75.0
    assert 0 < bm25["overall"]["max_tokens"] <= 800
    assert result["summary"]["bm25_evidence_recall_pct"] == 75.0
    assert result["summary"]["bm25_recall_all_pct"] == 50.0


def test_holdout_skips_questions_without_evidence(tmp_path: Path) -> None:
    data = write_data(tmp_path)
    out = tmp_path / "holdout.json"
    assert lme.main(["--data", str(data), "--split", "holdout", "--methods", "bm25", "--json", str(out),
                     "--no-cache"]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["results"]["skipped_no_gold"] == ["d4_abs"]
    assert result["results"]["scores"]["bm25"]["overall"]["questions"] == 2


@pytest.mark.slow
def test_system_method_finds_the_evidence(tmp_path: Path) -> None:
    """The system row with the real store, embedder and recall (MiniLM, a few seconds)."""
    data = write_data(tmp_path)
    out = tmp_path / "system.json"
    assert lme.main(["--data", str(data), "--methods", "system,bm25", "--limit", "1", "--json", str(out),
                     "--no-cache"]) == 0
    scores = json.loads(out.read_text(encoding="utf-8"))["results"]["scores"]
    assert scores["system"]["overall"]["evidence_recall"] == 100.0
    assert 0 < scores["system"]["overall"]["max_tokens"] <= 800


def test_missing_data_says_where_to_get_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        lme.main(["--data", str(tmp_path / "nowhere")])
    assert "hussainzs/Memoria" in capsys.readouterr().err
