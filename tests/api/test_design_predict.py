"""``POST /api/context/predict`` through the real Starlette app on a real SQLite store."""

from __future__ import annotations

from .conftest import Api

DECISION = "In src/payments/refund.py refunds go through the ledger service, never straight to Stripe."


def test_a_file_opened_predicts_what_names_it(api: Api) -> None:
    refund = api.add(DECISION, "fact")
    api.add("The orders service runs on port 8443", "fact")
    api.add("LedgerTimeoutError means the ledger service is restarting; retry after 30 seconds", "fact")
    out = api.post("/api/context/predict", {"file_opened": "src/payments/refund.py"})
    assert set(out) == {"predicted_memories", "confidence", "items"}
    assert [m["id"] for m in out["predicted_memories"]] == [refund["id"]]
    first = out["predicted_memories"][0]
    assert first["item"] == "file:src/payments/refund.py" and first["match"] >= 2
    assert 0.6 <= first["confidence"] == out["confidence"] < 1

    both = api.post("/api/context/predict", {"current_file": "/repo/src/payments/refund.py", "cwd": "/repo",
                                              "recent_errors": ["LedgerTimeoutError: no answer in 5s"]})
    assert len(both["predicted_memories"]) == 2 and len(both["items"]) == 2

    nothing = api.post("/api/context/predict", {"file_opened": "docs/unrelated.md"})
    assert nothing["predicted_memories"] == [] and nothing["confidence"] == 0


def test_bad_signals_are_400(api: Api) -> None:
    api.post("/api/context/predict", {}, expect=400)
    api.post("/api/context/predict", {"file_opened": 3}, expect=400)
    api.post("/api/context/predict", {"branch": ["a"]}, expect=400)
