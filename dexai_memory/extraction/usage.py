"""What the models cost: :class:`TokenLedger` (tokens per day and carrier, in
``<home>/usage.json``) and :class:`DailyBudget` (``extraction.daily_token_budget``).

Every model call of extraction, update classification and consolidation is
charged with the tokens its answer reports (input, cache reads and writes
included, and output). Once today's total reaches the budget, the next call
raises :class:`~dexai_memory.errors.ModelUnavailable` and the offline
implementation answers until the day changes (local time). ``dexai memory
stats`` and ``doctor`` show today's and this month's totals.

The ledger is shared by every process of one data directory (daemon, CLI):
each charge is a read-modify-write under an exclusive ``flock``, written
atomically.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from ..datadir import PRIVATE_FILE_MODE
from ..errors import ModelUnavailable

__all__ = ["DailyBudget", "TokenLedger", "Usage", "UsageTotals"]

logger = logging.getLogger(__name__)

#: Days kept in the ledger (older ones are dropped when it is written).
KEEP_DAYS = 400


@dataclass(frozen=True)
class Usage:
    """Tokens one model call used, as the API reports them (cache reads and writes count as input)."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    @classmethod
    def of(cls, usage: Any) -> Usage:
        """From the API's ``usage`` (an object or a mapping); missing fields count 0."""
        def field(name: str) -> int:
            value = usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)
            return value if isinstance(value, int) and value > 0 else 0

        return cls(field("input_tokens") + field("cache_creation_input_tokens") + field("cache_read_input_tokens"),
                   field("output_tokens"))


@dataclass(frozen=True)
class UsageTotals:
    """Tokens and calls over a period, all carriers together and per carrier."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    by_source: Mapping[str, int] | None = None

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    def as_dict(self) -> dict[str, Any]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens, "total_tokens": self.total,
                "calls": self.calls, "by_source": dict(self.by_source or {})}


class TokenLedger:
    """Tokens used per local day and carrier (``api_key``, ``claude_code``), in a JSON file."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def in_home(cls, home: Path) -> TokenLedger:
        """The ledger of a data directory: ``<home>/usage.json``."""
        return cls(home / "usage.json")

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing drops the lock

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            logger.warning("token ledger %s is unreadable (%s): starting a new one", self.path, exc)
            return {}
        days = data.get("days") if isinstance(data, dict) else None
        return days if isinstance(days, dict) else {}

    def charge(self, source: str, usage: Usage, *, day: date | None = None) -> None:
        """Add one call's ``usage`` to ``day`` (today) under ``source``."""
        key = (day or date.today()).isoformat()
        with self._locked():
            days = self._read()
            entry = days.setdefault(key, {}).setdefault(source, {"input": 0, "output": 0, "calls": 0})
            entry["input"] = int(entry.get("input", 0)) + usage.input_tokens
            entry["output"] = int(entry.get("output", 0)) + usage.output_tokens
            entry["calls"] = int(entry.get("calls", 0)) + 1
            keep = dict(sorted(days.items())[-KEEP_DAYS:])
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"days": keep}, f, indent=1, sort_keys=True)
            os.replace(tmp, self.path)

    def totals(self, first: date, last: date | None = None) -> UsageTotals:
        """Totals from ``first`` to ``last`` (default ``first``), both included."""
        lo, hi = first.isoformat(), (last or first).isoformat()
        inp = out = calls = 0
        by: dict[str, int] = {}
        for day, sources in self._read().items():
            if not (lo <= day <= hi) or not isinstance(sources, dict):
                continue
            for source, entry in sources.items():
                if not isinstance(entry, dict):
                    continue
                i, o = int(entry.get("input", 0)), int(entry.get("output", 0))
                inp, out, calls = inp + i, out + o, calls + int(entry.get("calls", 0))
                by[source] = by.get(source, 0) + i + o
        return UsageTotals(inp, out, calls, by)

    def today(self) -> UsageTotals:
        """Today's totals (local date)."""
        return self.totals(date.today())

    def this_month(self) -> UsageTotals:
        """This calendar month's totals, today included."""
        today = date.today()
        return self.totals(today.replace(day=1), today)


class DailyBudget:
    """``limit`` tokens a day over a :class:`TokenLedger` (0: no limit, only counted)."""

    def __init__(self, ledger: TokenLedger, limit: int):
        self.ledger = ledger
        self.limit = limit

    def left(self) -> int | None:
        """Tokens left today (None without a limit)."""
        if self.limit <= 0:
            return None
        return max(0, self.limit - self.ledger.today().total)

    def check(self) -> None:
        """Raise :class:`ModelUnavailable` when today's budget is spent."""
        left = self.left()
        if left is not None and left <= 0:
            raise ModelUnavailable(f"today's token budget is spent ({self.limit:,} tokens, "
                                   "extraction.daily_token_budget); offline rules do the model's work until tomorrow")

    def charge(self, source: str, usage: Usage) -> None:
        """Count one call's tokens (a failure to write is logged, never raised: the answer is kept)."""
        try:
            self.ledger.charge(source, usage)
        except OSError as exc:
            logger.warning("could not record %d tokens in %s: %s", usage.total, self.ledger.path, exc)

    def status(self) -> dict[str, Any]:
        """Today's and this month's totals, the limit and what is left (for stats and doctor)."""
        return {"today": self.ledger.today().as_dict(), "month": self.ledger.this_month().as_dict(),
                "daily_budget": self.limit, "left_today": self.left()}
