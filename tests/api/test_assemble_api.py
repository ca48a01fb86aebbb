"""``POST /api/context/assemble`` through the real Starlette app, and ``dexai memory assemble``
through the real CLI entry point (issue 18)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from dexai_memory.cli.main import cli
from dexai_memory.recall.block import FENCE_TOKENS

from .conftest import USER, Api

DECISION = "In src/payments/refund.py refunds go through the ledger service, never straight to Stripe."


def seed(api: Api) -> None:
    api.add(DECISION, "fact")
    api.add("Never force-push to main", "warning")
    api.add("The orders service runs on port 8443", "fact")
    for i in range(12):
        api.add(f"The reporting job {i} exports warehouse table t{i} to the analytics bucket", "fact")


def test_assemble_answers_seed_002s_shape(api: Api) -> None:
    seed(api)
    out = api.post("/api/context/assemble", {"budget": 400, "signals": {
        "current_file": "src/payments/refund.py", "recent_errors": ["port 8443 refused"], "activity": "debugging"}})
    assert set(out) >= {"context", "token_count", "tiers"}
    assert set(out["tiers"]) == {"tier1", "tier2", "tier3", "tier4"}
    assert all(isinstance(v, int) for v in out["tiers"].values()) and isinstance(out["token_count"], int)
    assert out["token_count"] <= 400 and out["token_count"] == FENCE_TOKENS + sum(out["tiers"].values())
    assert out["activity"] == "debugging" and out["budget"] == 400
    first = out["memories"][0]
    assert (first["tier"], first["kind"]) == ("tier1", "fact: refund.py") and "refund" in out["context"]
    ids = [m["id"] for m in out["memories"]]
    assert len(ids) == len(set(ids))
    coding = api.post("/api/context/assemble", {"budget": 400, "signals": {"current_file": "src/payments/refund.py"}})
    assert out["budgets"]["tier1"] > coding["budgets"]["tier1"]  # debugging widens tier 1


def test_assemble_defaults_scope_and_errors(api: Api) -> None:
    seed(api)
    default = api.post("/api/context/assemble", {})
    assert default["budget"] == 8000 and default["token_count"] <= 8000 and default["tiers"]["tier3"] > 0
    empty = api.post("/api/context/assemble", {"budget": 500, "user_id": "nobody"})
    assert empty["context"] == "" and empty["token_count"] == 0
    assert "budget" in api.post("/api/context/assemble", {"budget": 0}, expect=400)["error"]
    assert "signals" in api.post("/api/context/assemble", {"signals": [1]}, expect=400)["error"]
    assert "recent_errors" in api.post("/api/context/assemble", {"signals": {"recent_errors": [1]}},
                                       expect=400)["error"]


def test_cli_assemble(isolated_home: Path) -> None:
    runner = CliRunner()
    added = runner.invoke(cli, ["memory", "add", DECISION, "--user", USER])
    assert added.exit_code == 0, added.output
    result = runner.invoke(cli, ["memory", "assemble", "--user", USER, "--budget", "300", "--json",
                                 "--signal", "current_file=src/payments/refund.py",
                                 "--signal", "recent_errors=a", "--signal", "recent_errors=b"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["token_count"] <= 300 and data["tiers"]["tier1"] > 0 and "refund.py" in data["context"]
    assert data["query"] == "src/payments/refund.py a b"
    text = runner.invoke(cli, ["memory", "assemble", "--user", USER, "-s", "activity=debugging"])
    assert text.exit_code == 0 and "activity debugging" in text.output and "tokens" in text.output
    bad = runner.invoke(cli, ["memory", "assemble", "--user", USER, "--signal", "no-equals-sign"])
    assert bad.exit_code != 0 and "key=value" in bad.output
