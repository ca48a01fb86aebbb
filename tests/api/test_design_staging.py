"""Age-staged compression of episodes at consolidation, through ``POST /api/consolidate`` on a real
SQLite store; the prefetch still finds a compressed episode by its artifacts (``/api/context/predict``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from dexai_memory.capture.episodes import Episode
from dexai_memory.models import utcnow

from .conftest import USER, Api

NARRATIVE = "Prompt: fix the refund rounding." + " Long narrative of every step taken." * 80


def episode(n: int) -> Episode:
    return Episode(id=f"episode_{n}", session_id=f"s{n}", title=f"Refund rounding fix {n}",
                   summary=f"Fixed refund rounding {n} in src/payments/refund.py; added a regression test.",
                   compressed=f"refund_fix{n}: rounding→decimal, +test", key=f"refund_fix_{n}", full=NARRATIVE,
                   artifacts={"files": ["src/payments/refund.py"], "commands": ["pytest tests/payments"],
                              "commits": [], "errors_fixed": []})


async def add_aged(provider: Any, days: int, n: int) -> None:
    memory = episode(n).memory(USER)
    await provider.add(memory.replace(created_at=utcnow() - timedelta(days=days)))


def test_episodes_are_summarised_after_7_days_and_compressed_after_30(api: Api) -> None:
    for n, days in enumerate((2, 10, 45)):
        api.run(add_aged, days, n)
    dry = api.post("/api/consolidate", {"dry_run": True})["consolidation"]
    assert (dry["episodes_summarised"], dry["episodes_compressed"]) == (1, 1)
    assert api.get("/api/memories/episode_1")["content"] == NARRATIVE  # a dry run writes nothing

    done = api.post("/api/consolidate", {})["consolidation"]
    assert (done["episodes_summarised"], done["episodes_compressed"]) == (1, 1)
    fresh, week, month = (api.get(f"/api/memories/episode_{n}") for n in range(3))
    assert fresh["content"] == NARRATIVE and "stage" not in fresh["metadata"]
    assert week["content"] == "Refund rounding fix 1\nFixed refund rounding 1 in src/payments/refund.py; added a " \
                              "regression test." and week["metadata"]["stage"] == "summarised"
    assert month["content"] == "refund_fix2: rounding→decimal, +test | refund_fix_2"
    assert month["metadata"]["stage"] == "compressed"
    for m in (week, month):  # what recall needs is kept
        assert m["metadata"]["artifacts"]["files"] == ["src/payments/refund.py"] and m["metadata"]["forms"]["summary"]
    history = api.get("/api/memories/episode_2/history")
    assert "COMPRESSED" in str(history)

    again = api.post("/api/consolidate", {})["consolidation"]
    assert (again["episodes_summarised"], again["episodes_compressed"]) == (0, 0)  # each stage once

    predicted = api.post("/api/context/predict", {"file_opened": "src/payments/refund.py"})
    ids = {m["id"] for m in predicted["predicted_memories"]}
    assert {"episode_1", "episode_2"} <= ids  # staged episodes are still found by their artifacts
