"""``GET /api/activity`` and ``GET /api/consolidation`` through the real Starlette app on real SQLite."""

from __future__ import annotations

from .conftest import Api


def test_activity_lists_the_newest_events_first(api: Api) -> None:
    first = api.add("The build server is ci-3.internal", "fact")
    api.post(f"/api/memories/{first['id']}/pin")
    api.add("Deploys happen on Thursdays only", "fact")
    events = api.get("/api/activity")["events"]
    assert events[0]["content"] == "Deploys happen on Thursdays only" and events[0]["action"] == "ADD"
    assert [e["at"] for e in events] == sorted((e["at"] for e in events), reverse=True)
    assert {e["memory_id"] for e in events} >= {first["id"]}
    assert len(api.get("/api/activity?limit=1")["events"]) == 1


def test_consolidation_status_before_and_after_a_run(api: Api) -> None:
    before = api.get("/api/consolidation")
    assert before["enabled"] is True and before["last_run"] is None and before["next_run"] is None
    assert before["waiting"] == 0 and before["contradictions_open"] == 0
    api.post("/api/consolidate", {})
    after = api.get("/api/consolidation")
    assert after["last_run"]["merged"] == 0 and after["last_run"]["at"]
    assert after["next_run"] > after["last_run"]["at"]
    api.post("/api/consolidate", {"dry_run": True})
    assert api.get("/api/consolidation")["last_run"]["at"] == after["last_run"]["at"]  # a dry run is no run
