"""The token ledger and the daily budget (real files in the data directory)."""

from __future__ import annotations

import json
import threading
from datetime import date, timedelta
from pathlib import Path

import pytest

from dexai_memory.errors import ModelUnavailable
from dexai_memory.extraction.usage import DailyBudget, TokenLedger, Usage


def test_usage_counts_cache_reads_and_writes_as_input() -> None:
    usage = Usage.of({"input_tokens": 10, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 100,
                      "output_tokens": 7, "service_tier": "standard"})
    assert (usage.input_tokens, usage.output_tokens, usage.total) == (115, 7, 122)
    assert Usage.of(None) == Usage(0, 0)


def test_the_ledger_keeps_days_and_carriers_apart(tmp_path: Path) -> None:
    ledger = TokenLedger(tmp_path / "usage.json")
    today = date.today()
    ledger.charge("claude_code", Usage(100, 10))
    ledger.charge("claude_code", Usage(50, 5))
    ledger.charge("api_key", Usage(1, 1), day=today - timedelta(days=40))
    t = ledger.today()
    assert (t.input_tokens, t.output_tokens, t.calls, dict(t.by_source or {})) == (150, 15, 2, {"claude_code": 165})
    assert ledger.totals(today - timedelta(days=40)).total == 2
    assert (tmp_path / "usage.json").stat().st_mode & 0o777 == 0o600
    json.loads((tmp_path / "usage.json").read_text())  # plain JSON a person can read


def test_concurrent_charges_are_all_counted(tmp_path: Path) -> None:
    ledger = TokenLedger(tmp_path / "usage.json")
    threads = [threading.Thread(target=lambda: [ledger.charge("x", Usage(1, 0)) for _ in range(20)])
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ledger.today().input_tokens == 80 and ledger.today().calls == 80


def test_a_broken_ledger_is_replaced_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "usage.json").write_text("{not json")
    ledger = TokenLedger(tmp_path / "usage.json")
    assert ledger.today().total == 0
    ledger.charge("x", Usage(3, 4))
    assert ledger.today().total == 7


def test_the_budget_stops_model_calls_once_spent(tmp_path: Path) -> None:
    budget = DailyBudget(TokenLedger(tmp_path / "usage.json"), 100)
    budget.check()
    budget.charge("claude_code", Usage(90, 20))
    assert budget.left() == 0
    with pytest.raises(ModelUnavailable, match="daily_token_budget"):
        budget.check()
    unlimited = DailyBudget(TokenLedger(tmp_path / "usage.json"), 0)
    unlimited.check()
    assert unlimited.left() is None and unlimited.status()["today"]["total_tokens"] == 110
