"""Links and the contradiction scan through the panel's API: ``POST /api/consolidate`` finds them,
``GET /api/memories/{id}`` shows a memory's links, ``GET /api/consolidation`` counts the last run."""

from __future__ import annotations

from .conftest import Api


def test_consolidate_links_memories_and_the_memory_view_shows_them(api: Api) -> None:
    error = api.add("The nightly job fails with an out of memory error in exporter.py")
    fix = api.add("Fixed exporter.py: rows are streamed in batches of 500 now")
    assert api.get(f"/api/memories/{error['id']}")["links"] == []
    done = api.post("/api/consolidate", {})["consolidation"]
    assert done["links_found"] == 2 and done["contradictions_found"] == 0
    links = api.get(f"/api/memories/{error['id']}")["links"]
    assert {(k["kind"], k["direction"], k["other_id"]) for k in links} == {("fix", "to", fix["id"]),
                                                                          ("file", "to", fix["id"])}
    assert all(k["other"]["content"] == fix["content"] and k["other"]["current"] for k in links)
    assert {k["direction"] for k in api.get(f"/api/memories/{fix['id']}")["links"]} == {"from"}
    last = api.get("/api/consolidation")["last_run"]
    assert last["links_found"] == 2 and last["contradictions_found"] == 0
