"""The local HTTP API (issue 16) on a real SQLite store, through Starlette's TestClient:
every endpoint, the token refused and accepted, bad bodies answered 4xx with a message,
and another user's id sees nothing of this user."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from dexai_memory.api.app import API_ROUTES
from dexai_memory.api.auth import load_token, token_path
from dexai_memory.config import load_settings
from dexai_memory.models import Memory, UpdateAction, UpdateDecision
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.apply import apply_decision

from .conftest import AUTH, USER, Api

OTHER = "bob"
ROUTES = sorted({(m, r.path) for r in API_ROUTES for m in (r.methods or ()) if m != "HEAD"}  # type: ignore[attr-defined]
                | {("GET", "/api/openapi.json")})


def concrete(path: str) -> str:
    return path.replace("{id}", "1")


# --------------------------------------------------------------------------- the token
@pytest.mark.parametrize(("method", "path"), ROUTES, ids=[f"{m} {p}" for m, p in ROUTES])
def test_every_endpoint_refuses_a_request_without_the_token(api: Api, method: str, path: str) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic dGVzdA=="}):
        response = api.client.request(method, concrete(path), headers=headers, json={})
        assert response.status_code == 401, (method, path, headers)
        assert "token" in response.json()["error"]


def test_the_token_is_accepted_and_the_schema_lists_every_endpoint(api: Api) -> None:
    schema = api.get("/api/openapi.json")
    assert schema["openapi"].startswith("3.") and schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    for method, path in ROUTES:
        assert method.lower() in schema["paths"][path], (method, path)
        assert schema["paths"][path][method.lower()]["summary"]


def test_the_token_is_made_once_per_install_with_mode_0600(isolated_home: Path) -> None:
    token = load_token(isolated_home)
    assert len(token) >= 32
    assert stat.S_IMODE(token_path(isolated_home).stat().st_mode) == 0o600
    assert load_token(isolated_home) == token


def test_no_cross_origin_access_and_local_hosts_only(api: Api) -> None:
    response = api.client.options("/api/facts", headers={"Origin": "https://evil.example",
                                                        "Access-Control-Request-Method": "GET"})
    assert response.status_code == 401 and not any(h.startswith("access-control") for h in response.headers)
    response = api.client.get("/api/facts", headers={**AUTH, "Origin": "https://evil.example"})
    assert response.status_code == 200 and not any(h.startswith("access-control") for h in response.headers)
    response = api.client.get("/api/facts", headers={**AUTH, "Host": "evil.example"})
    assert response.status_code == 403 and "127.0.0.1" in response.json()["error"]


def test_the_page_is_served_without_the_token_but_holds_no_data(api: Api) -> None:
    page = api.client.get("/")
    assert page.status_code == 200 and "panel.js" in page.text and "Remember something" in page.text
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert page.headers["referrer-policy"] == "no-referrer" and page.headers["x-frame-options"] == "DENY"
    assert api.client.get("/static/panel.js").status_code == 200


# --------------------------------------------------------------------------- memories
def test_add_auto_classifies_through_remember_and_lists_by_category(api: Api) -> None:
    pref = api.add("I prefer tabs over spaces")
    warn = api.add("Never force-push to main")
    fact = api.add("The orders service runs on port 8443")
    assert (pref["category"], warn["category"], fact["category"]) == ("preference", "warning", "fact")
    assert pref["confidence"] == 0.6 and pref["metadata"]["source"] == "panel"
    again = api.post("/api/memories", {"content": "I prefer tabs over spaces"})
    assert again["status"] == "already_known" and again["memory"]["id"] == pref["id"]
    chosen = api.post("/api/memories", {"content": "Priya owns billing", "category": "person"}, expect=201)
    assert chosen["memory"]["category"] == "person" and chosen["category_guessed"] is False
    facts = api.get("/api/facts")
    assert facts["count"] == 4 and facts["max_pins"] == 10 and set(facts["categories"]) == {
        "preference", "warning", "fact", "person"}
    listed = api.get("/api/memories?limit=2")["memories"]
    assert len(listed) == 2
    assert api.get(f"/api/memories/{warn['id']}")["content"] == "Never force-push to main"
    hits = api.get("/api/search?q=orders%20port")["results"]
    assert [h["memory"]["id"] for h in hits] == [fact["id"]]


def test_edit_inline_and_full_with_category_is_logged(api: Api) -> None:
    m = api.add("I prefer tabs over spaces")
    edited = api.call("PATCH", f"/api/memories/{m['id']}", json={"content": "I prefer tabs, width 4"})
    assert edited["content"] == "I prefer tabs, width 4"
    moved = api.call("PATCH", f"/api/memories/{m['id']}", json={"category": "instruction", "importance": 8})
    assert moved["category"] == "instruction" and moved["type"] == "INSIGHT" and moved["importance"] == 8
    chain = api.get(f"/api/memories/{m['id']}/history")["chain"]
    actions = [(e["action"], e["reason"]) for e in chain[-1]["events"]]
    assert actions[0][0] == "ADD" and actions[1:] == [("EDIT", "edited by hand"), ("EDIT", "edited by hand")]

    async def stored(p: Any, memory_id: str) -> Memory:
        m: Memory = await p.get(memory_id, user_id=USER)
        return m

    in_db = api.run(stored, m["id"])
    assert in_db.content == "I prefer tabs, width 4" and in_db.metadata["category"] == "instruction"


def test_pin_at_most_ten_and_the_eleventh_is_refused_with_a_message(api: Api) -> None:
    ids = [api.add(f"Project {name} uses Postgres {n}")["id"] for n, name in enumerate(
        "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda".split(), start=10)]
    for memory_id in ids[:10]:
        assert api.post(f"/api/memories/{memory_id}/pin")["pinned"] is True
    refused = api.post(f"/api/memories/{ids[10]}/pin", expect=409)
    assert "10 memories are pinned already" in refused["error"] and "unpin" in refused["error"]
    assert api.get(f"/api/memories/{ids[10]}")["pinned"] is False
    assert api.post(f"/api/memories/{ids[0]}/pin")["pinned"] is True  # pinning a pinned one is fine
    assert api.post(f"/api/memories/{ids[0]}/unpin")["pinned"] is False
    assert api.post(f"/api/memories/{ids[10]}/pin")["pinned"] is True
    assert api.get("/api/facts")["pinned"] == 10


def test_forget_restore_bulk_and_hard(api: Api) -> None:
    a, b, c = (api.add(t)["id"] for t in ("Sam lives in Lisbon", "Sam works at Acme", "Sam owns a cat"))
    assert api.call("DELETE", f"/api/memories/{a}") == {"id": a, "forgotten": True, "hard": False}
    assert api.get(f"/api/memories/{a}")["deleted"] is True
    assert api.post(f"/api/memories/{a}/restore")["deleted"] is False
    done = api.post("/api/memories/forget", {"ids": [a, b, "m_nope"]})
    assert done == {"forgotten": [a, b], "missing": ["m_nope"]}
    assert api.get("/api/facts")["count"] == 1
    back = api.post("/api/memories/restore", {"ids": [a, b]})
    assert [m["id"] for m in back["restored"]] == [a, b] and api.get("/api/facts")["count"] == 3
    api.call("DELETE", f"/api/memories/{c}?hard=true")
    assert "no memory" in api.get(f"/api/memories/{c}", expect=404)["error"]
    api.call("DELETE", f"/api/memories/{c}", expect=404)


def test_goals_and_commitments_close_done_or_cancelled(api: Api) -> None:
    goal = api.add("My goal this quarter is to ship the memory panel")
    fact = api.add("Sam lives in Lisbon")
    assert goal["category"] == "goal"
    done = api.post(f"/api/memories/{goal['id']}/done", {"reason": "shipped"})
    assert done["metadata"]["commitment"]["status"] == "done" and done["valid_until"] is not None
    assert api.get(f"/api/memories/{goal['id']}/history")["chain"][-1]["events"][-1]["action"] == "DONE"
    assert "goal" not in api.get("/api/facts")["categories"]
    assert "not a commitment" in api.post(f"/api/memories/{fact['id']}/cancel", expect=400)["error"]
    other = api.add("My goal this quarter is to learn Rust")
    assert api.post(f"/api/memories/{other['id']}/cancel")["metadata"]["commitment"]["status"] == "cancelled"


def test_clear_needs_the_exact_count_and_undo_brings_everything_back(api: Api) -> None:
    for text in ("Sam lives in Lisbon", "Sam works at Acme", "Sam owns a cat"):
        api.add(text)
    assert api.get("/api/clear")["count"] == 3
    assert "count" in api.post("/api/clear", {}, expect=400)["error"]
    assert "3 memories" in api.post("/api/clear", {"count": 2}, expect=409)["error"]
    assert api.get("/api/facts")["count"] == 3
    cleared = api.post("/api/clear", {"count": 3})
    assert cleared["cleared"] == 3 and cleared["undo_minutes"] == 60
    assert api.get("/api/facts")["count"] == 0
    assert api.post("/api/undo")["restored"] == 3
    assert api.get("/api/facts")["count"] == 3
    assert "no clear" in api.post("/api/undo", expect=409)["error"]


async def _contradiction(p: Any, old: str, new: str) -> tuple[str, str]:
    a = await p.add(Memory(content=old, user_id=USER, confidence=0.75))
    b = await apply_decision(p, UpdateDecision(UpdateAction.SUPERSEDE, a.id, "same attribute, new value"),
                               Memory(content=new, user_id=USER, confidence=0.5))
    return a.id, b.id


def test_conflicts_are_listed_and_resolved_through_the_lifecycle(api: Api) -> None:
    a, b = api.run(_contradiction, "Sam lives in Lisbon", "Sam lives in Porto")
    [row] = api.get("/api/conflicts")["conflicts"]
    assert (row["a"]["id"], row["b"]["id"], row["resolution"]) == (a, b, None)
    assert "resolution" in api.post(f"/api/contradictions/{row['id']}/resolve", {"resolution": "x"}, expect=400)["error"]
    assert "note" in api.post(f"/api/contradictions/{row['id']}/resolve", {"resolution": "merged"}, expect=400)["error"]
    api.post("/api/contradictions/999/resolve", {"resolution": "b_wins"}, expect=404)
    api.post("/api/contradictions/abc/resolve", {"resolution": "b_wins"}, expect=400)
    done = api.post(f"/api/contradictions/{row['id']}/resolve", {"resolution": "b_wins", "note": "moved"})
    assert done["resolution"] == "b_wins" and done["a"]["current"] is False and done["b"]["current"] is True
    assert api.get("/api/conflicts")["conflicts"] == []
    assert len(api.get("/api/conflicts?all=true")["conflicts"]) == 1
    assert api.get(f"/api/memories/{a}")["superseded_by"] == b


def test_consolidate_dry_run_changes_nothing(api: Api) -> None:
    api.add("Sam lives in Lisbon")
    report = api.post("/api/consolidate", {"dry_run": True})
    assert report["dry_run"] is True and report["user_id"] == USER
    assert {"merged", "superseded", "archived", "contradictions_open", "consolidation", "cleanup"} <= set(report)
    assert api.get("/api/facts")["count"] == 1
    assert "dry_run" in api.post("/api/consolidate", {"dry_run": "yes"}, expect=400)["error"]


def test_persistent_context_by_category(api: Api) -> None:
    api.add("Always run make check before pushing")
    api.add("Never force-push to main")
    section = api.get("/api/persistent")
    assert [m["content"] for m in section["categories"]["instruction"]] == ["Always run make check before pushing"]
    assert [m["content"] for m in section["categories"]["warning"]] == ["Never force-push to main"]
    assert section["text"].startswith("Persistent context:") and section["tokens"] > 0


def test_context_assemble_reports_the_block_and_its_tiers(api: Api) -> None:
    api.add("Never force-push to main")
    api.add("The orders service runs on port 8443", "fact")
    out = api.post("/api/context/assemble", {"budget": 800, "signals": {"current_file": "orders/service.py",
                                                                       "recent_errors": ["port 8443 refused"]}})
    assert set(out) >= {"context", "token_count", "tiers"} and set(out["tiers"]) == {"tier1", "tier2", "tier3", "tier4"}
    assert "Never force-push to main" in out["context"] and "8443" in out["context"]
    assert out["tiers"]["tier1"] > 0 and out["tiers"]["tier4"] == 0 and out["token_count"] <= 800
    assert out["token_count"] >= sum(out["tiers"].values())
    empty = api.post("/api/context/assemble", {"budget": 500}, params={"user_id": OTHER})
    assert empty["context"] == "" and empty["token_count"] == 0
    assert "budget" in api.post("/api/context/assemble", {"budget": 0}, expect=400)["error"]
    assert "budget" in api.post("/api/context/assemble", {"budget": "lots"}, expect=400)["error"]
    assert "signals" in api.post("/api/context/assemble", {"signals": [1]}, expect=400)["error"]


# --------------------------------------------------------------------------- bad requests
@pytest.mark.parametrize(("path", "body", "words"), [
    ("/api/memories", b"{not json", "not valid JSON"),
    ("/api/memories", b"[1, 2]", "JSON object"),
    ("/api/memories", b"", "JSON object body"),
    ("/api/memories", b'{"content": 5}', "'content' must be a string"),
    ("/api/memories", b'{"content": "  "}', "cannot be empty"),
    ("/api/memories", b'{"content": "Sam likes tea", "category": "mood"}', "unknown category"),
    ("/api/memories", b'{"content": "Sam likes tea", "pin": "yes"}', "'pin' must be true or false"),
    ("/api/memories", b'{"content": "sk-ant-api03-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}', "not stored"),
    ("/api/memories/forget", b'{"ids": []}', "non-empty list"),
    ("/api/memories/restore", b'{"ids": "m_1"}', "non-empty list"),
    ("/api/clear", b'{"count": -1}', "'count' must be at least 0"),
    ("/api/contradictions/1/resolve", b"{}", "'resolution' is required"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_bad_bodies_get_a_clear_400(api: Api, path: str, body: bytes, words: str) -> None:
    response = api.client.post(path, content=body, headers={**AUTH, "Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    assert words in response.json()["error"]


def test_bad_edits_and_queries(api: Api) -> None:
    m = api.add("Sam lives in Lisbon")
    patch = f"/api/memories/{m['id']}"
    assert "nothing to change" in api.call("PATCH", patch, 400, json={})["error"]
    assert "importance" in api.call("PATCH", patch, 400, json={"importance": 11})["error"]
    assert "confidence" in api.call("PATCH", patch, 400, json={"confidence": "high"})["error"]
    assert "q" in api.get("/api/search", expect=400)["error"]
    assert "limit" in api.get("/api/memories?limit=zero", expect=400)["error"]
    assert "MOOD" in api.get("/api/memories?type=MOOD", expect=400)["error"]
    assert "endpoint" in api.get("/api/nothing-here", expect=404)["error"]
    assert "method" in api.call("PUT", "/api/facts", 405)["error"]


# --------------------------------------------------------------------------- users
def test_another_users_id_sees_nothing_of_this_user(api: Api) -> None:
    m = api.add("Sam lives in Lisbon")["id"]
    a, _b = api.run(_contradiction, "Sam drinks tea", "Sam drinks coffee")
    q = {"user_id": OTHER}
    assert api.get("/api/facts", params=q)["count"] == 0
    assert api.get("/api/memories", params=q)["memories"] == []
    assert api.get("/api/search", params={**q, "q": "Lisbon"})["results"] == []
    assert api.get("/api/conflicts", params={**q, "all": "1"})["conflicts"] == []
    assert api.get("/api/clear", params=q)["count"] == 0
    assert all(not ms for ms in api.get("/api/persistent", params=q)["categories"].values())
    for method, path in (("GET", f"/api/memories/{m}"), ("GET", f"/api/memories/{m}/history"),
                         ("PATCH", f"/api/memories/{m}"), ("DELETE", f"/api/memories/{m}"),
                         ("POST", f"/api/memories/{m}/pin"), ("POST", f"/api/memories/{m}/unpin"),
                         ("POST", f"/api/memories/{m}/restore"), ("POST", f"/api/memories/{m}/done")):
        api.call(method, path, 404, params=q, json={"content": "Bob was here"})
    assert api.post("/api/memories/forget", {"ids": [m], "user_id": OTHER})["missing"] == [m]
    [row] = api.get("/api/conflicts")["conflicts"]
    api.post(f"/api/contradictions/{row['id']}/resolve", {"resolution": "a_wins", "user_id": OTHER}, expect=404)
    api.post("/api/clear", {"count": 0, "user_id": OTHER})
    # nothing of sam's changed
    assert api.get("/api/facts")["count"] == 3 and api.get(f"/api/memories/{m}")["content"] == "Sam lives in Lisbon"
    assert api.get(f"/api/memories/{a}")["superseded_by"] is None


def test_the_data_is_in_the_database(api: Api) -> None:
    import asyncio

    m = api.add("Sam lives in Lisbon")
    api.post(f"/api/memories/{m['id']}/pin")

    async def read() -> Memory:
        async with NativeProvider(load_settings().db_path, embedder=None) as p:
            got: Memory = await p.get(m["id"], user_id=USER)
            return got

    stored = asyncio.run(read())
    assert stored.content == "Sam lives in Lisbon" and stored.pinned


async def test_an_app_over_a_started_provider_leaves_it_open() -> None:
    """The daemon (or any host with a provider already started) can serve the same app."""
    import httpx

    from dexai_memory.api.app import build_app
    from dexai_memory.providers.memory import InMemoryProvider

    async with InMemoryProvider() as p:
        await p.add(Memory(content="Sam lives in Lisbon", user_id=USER))
        app = build_app(load_settings(), USER, "tok", provider=p)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
                response = await client.get("/api/facts", headers={"Authorization": "Bearer tok"})
        assert response.status_code == 200 and response.json()["count"] == 1
        assert await p.count(user_id=USER) == 1  # still open after the app stopped


def test_the_panels_project_is_the_default_scope(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from dexai_memory.api.app import build_app

    app = build_app(load_settings(), USER, "tok", project="shop")
    with TestClient(app, base_url="http://127.0.0.1") as client:
        h = {"Authorization": "Bearer tok"}
        added = client.post("/api/memories", json={"content": "The orders service runs on port 8443"}, headers=h)
        assert added.json()["memory"]["project"] == "shop"
        client.post("/api/memories", json={"content": "Sam lives in Lisbon", "project": "home"}, headers=h)
        assert client.get("/api/facts", headers=h).json()["count"] == 1
        assert client.get("/api/facts", params={"project": "home"}, headers=h).json()["count"] == 1
        assert client.get("/api/clear", headers=h).json() == {"count": 1, "user_id": USER, "project": "shop"}


def test_context_assemble_shows_procedures_and_conventions(api: Api) -> None:
    procedure = api.add("To release: bump the version, then tag the commit, then push the tag.", "procedure")
    convention = api.add("Tests are named test_<unit>_<case>.", "convention")
    assert (procedure["type"], convention["type"]) == ("PROCEDURE", "PATTERN")
    out = api.post("/api/context/assemble", {"budget": 600, "signals": {"task": "release 2.0"}})
    placed = {m["id"]: (m["tier"], m["kind"]) for m in out["memories"]}
    assert placed[procedure["id"]] == ("tier1", "procedure")      # the task names what it is for
    assert placed[convention["id"]] == ("tier3", "convention")    # background
    persistent = api.get("/api/persistent")
    assert "Procedures (how the user works):" in persistent["text"]
    assert "Conventions (how the code is written):" in persistent["text"]
