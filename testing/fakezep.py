"""A small local fake of the Zep Cloud v4 API, served on 127.0.0.1 (stdlib only).

It implements the endpoints :mod:`dexai_memory.providers.zep` uses, with the
request and response shapes of the ``zep-cloud`` 4.x SDK's own models, so the
real ``AsyncZep`` client talks to it through ``base_url``:

* users: ``POST /users``, ``POST /users/lookup``, ``POST /users/list``,
  ``GET|PATCH|DELETE /users/{uuid}``, ``GET /users/{uuid}/node``;
* threads: ``POST /threads``, ``POST /threads/{uuid}/messages``,
  ``GET /threads/{uuid}/context``;
* graph edges: ``POST /graphs/{g}/edges`` (1-100 ``EdgeInput``),
  ``POST /graphs/{g}/edges/list`` (cursor pages), ``GET|PATCH|DELETE
  /graphs/{g}/edges/{uuid}``, ``POST /graphs/{g}/search/edges``;
* episodes: ``DELETE /graphs/{g}/episodes/{uuid}``.

Filters: ``property_filters`` on edge attributes (eq, ne, gt, lt, gte, lte, in,
is_null, is_not_null), ``date_filters`` on created_at / valid_at / invalid_at /
expired_at (any_of groups of all_of conditions), ``edge_types`` and
``edge_uuids``; any other filter field is answered with Zep's
``unsupported_filter`` 400. Search is hybrid like Zep's default ``rrf``
reranker: BM25 over the facts fused with cosine similarity when an ``embed``
function is given. Asynchronous operations report an already ``succeeded``
task. Errors use Zep's ``{"error": {"code", "message"}}`` body.

The server never calls an LLM: messages added to a thread are stored (and
returned by thread context) but not turned into graph facts.

Example::

    with FakeZepServer() as server:
        client = AsyncZep(api_key="test", base_url=server.base_url)
"""

from __future__ import annotations

import json
import math
import re
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["API_PREFIX", "FakeZepServer"]

API_PREFIX = "/api/v4"
_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset("a an and are as at be by did do does for from go going how i in is it of on or the to was "
                  "were what when where which who why with you your".split())
PROPERTY_OPS = frozenset({"eq", "ne", "gt", "lt", "gte", "lte", "in", "is_null", "is_not_null"})
DATE_FIELDS = frozenset({"created_at", "valid_at", "invalid_at", "expired_at"})
SEARCH_FILTER_KEYS = frozenset({"property_filters", "date_filters", "edge_types", "edge_uuids"})
Embed = Callable[[Sequence[str]], Any]


class ZepHTTPError(Exception):
    """An API error answered in Zep's error body shape."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _parse_time(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise ZepHTTPError(400, "invalid_request", f"not an RFC 3339 time: {value!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _tokens(text: str) -> list[str]:
    return [w for w in (t.lower() for t in _WORD.findall(text)) if w not in _STOP]


def _task(kind: str) -> dict[str, Any]:
    now = _now()
    return {"uuid": str(uuid.uuid4()), "type": kind, "status": "succeeded", "created_at": now,
            "started_at": now, "completed_at": now, "updated_at": now}


def _compare(op: str, have: Any, want: Any) -> bool:
    if op == "is_null":
        return have is None
    if op == "is_not_null":
        return have is not None
    if op == "in":
        return isinstance(want, list) and have in want
    if op == "eq":
        return bool(have == want)
    if op == "ne":
        return bool(have != want)
    if have is None or isinstance(have, bool) != isinstance(want, bool):
        return False
    try:
        return bool({"gt": have > want, "lt": have < want, "gte": have >= want, "lte": have <= want}[op])
    except TypeError:
        return False


class _State:
    """Everything the fake server holds, guarded by one lock."""

    def __init__(self, embed: Embed | None):
        self.lock = threading.Lock()
        self.embed = embed
        self.users: dict[str, dict[str, Any]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}
        self.threads: dict[str, dict[str, Any]] = {}
        self.messages: dict[str, list[dict[str, Any]]] = {}
        self.edges: dict[str, dict[str, dict[str, Any]]] = {}
        self.episodes: dict[str, dict[str, Any]] = {}
        self.vectors: dict[str, Any] = {}
        self.requests: list[tuple[str, str]] = []

    # ------------------------------------------------------------------ users
    def user_by_uuid(self, user_uuid: str) -> dict[str, Any]:
        user = self.users.get(user_uuid)
        if user is None:
            raise ZepHTTPError(404, "not_found", f"user {user_uuid} not found")
        return user

    def graph_of(self, graph_uuid: str) -> str:
        """Graph uuid for a graph or user uuid (a user's uuid addresses its graph)."""
        if graph_uuid in self.edges:
            return graph_uuid
        user = self.users.get(graph_uuid)
        if user is not None:
            return str(user["graph_uuid"])
        raise ZepHTTPError(404, "not_found", f"graph {graph_uuid} not found")

    def create_user(self, body: dict[str, Any]) -> dict[str, Any]:
        user_id = body.get("user_id")
        if user_id and any(u.get("user_id") == user_id for u in self.users.values()):
            raise ZepHTTPError(400, "already_exists", f"user {user_id!r} already exists")
        user_uuid, graph_uuid, node_uuid = (str(uuid.uuid4()) for _ in range(3))
        user = {"uuid": user_uuid, "graph_uuid": graph_uuid, "created_at": _now(), "user_id": user_id,
                **{k: body.get(k) for k in ("email", "first_name", "last_name", "time_zone")},
                "metadata": body.get("metadata") or {}}
        self.users[user_uuid] = user
        self.edges[graph_uuid] = {}
        self.nodes[node_uuid] = {"uuid": node_uuid, "name": user_id or user_uuid, "labels": ["User"],
                                 "graph_uuid": graph_uuid, "user_uuid": user_uuid, "created_at": _now(),
                                 "episode_uuids": [], "episode_uuids_truncated": False, "summary": ""}
        user["_node"] = node_uuid
        return user

    # ------------------------------------------------------------------ edges
    def node_for(self, graph_uuid: str, ref: dict[str, Any]) -> str:
        if ref.get("uuid"):
            if ref["uuid"] not in self.nodes:
                raise ZepHTTPError(400, "invalid_request", f"node {ref['uuid']} not found")
            return str(ref["uuid"])
        if not ref.get("name"):
            raise ZepHTTPError(400, "invalid_request", "a node reference needs a uuid or a name")
        node_uuid = str(uuid.uuid4())
        self.nodes[node_uuid] = {"uuid": node_uuid, "name": ref["name"], "labels": ref.get("labels") or [],
                                 "attributes": ref.get("attributes") or {}, "summary": ref.get("summary") or "",
                                 "graph_uuid": graph_uuid, "created_at": _now(), "episode_uuids": [],
                                 "episode_uuids_truncated": False}
        return node_uuid

    def add_edges(self, graph_uuid: str, body: dict[str, Any]) -> dict[str, Any]:
        graph = self.graph_of(graph_uuid)
        inputs = body.get("edges") or []
        if not 1 <= len(inputs) <= 100:
            raise ZepHTTPError(400, "invalid_request", "edges must hold 1 to 100 edges")
        added, texts = [], []
        for item in inputs:
            if not item.get("fact") or not item.get("fact_name"):
                raise ZepHTTPError(400, "invalid_request", "fact and fact_name are required")
            for key in ("valid_at", "invalid_at", "expired_at"):
                _parse_time(item.get(key))
            source = self.node_for(graph, item.get("source_node") or {})
            target = self.node_for(graph, item.get("target_node") or {})
            edge_uuid, episode_uuid = str(uuid.uuid4()), str(uuid.uuid4())
            self.episodes[episode_uuid] = {"uuid": episode_uuid, "graph_uuid": graph, "content": item["fact"],
                                           "metadata": item.get("metadata") or {}, "created_at": _now()}
            edge = {"uuid": edge_uuid, "graph_uuid": graph, "fact": item["fact"], "name": item["fact_name"],
                    "attributes": dict(item.get("attributes") or {}), "created_at": _now(),
                    "valid_at": item.get("valid_at"), "invalid_at": item.get("invalid_at"),
                    "expired_at": item.get("expired_at"), "episode_uuids": [episode_uuid], "scope": "entity",
                    "source_node_uuid": source, "target_node_uuid": target}
            self.edges[graph][edge_uuid] = edge
            texts.append(item["fact"])
            added.append({"uuid": edge_uuid, "fact": item["fact"], "fact_name": item["fact_name"],
                          "attributes": edge["attributes"], "metadata": item.get("metadata"),
                          "valid_at": edge["valid_at"], "invalid_at": edge["invalid_at"],
                          "expired_at": edge["expired_at"], "source_node": item.get("source_node"),
                          "target_node": item.get("target_node"), "source_node_uuid": source,
                          "target_node_uuid": target})
        if self.embed is not None:
            for row, vec in zip(added, self.embed(texts), strict=True):
                self.vectors[row["uuid"]] = vec
        return {"edges": added, "task": _task("edge_add")}

    def edge(self, graph_uuid: str, edge_uuid: str) -> dict[str, Any]:
        edge = self.edges[self.graph_of(graph_uuid)].get(edge_uuid)
        if edge is None:
            raise ZepHTTPError(404, "not_found", f"edge {edge_uuid} not found")
        return edge

    def patch_edge(self, graph_uuid: str, edge_uuid: str, body: dict[str, Any]) -> dict[str, Any]:
        edge = self.edge(graph_uuid, edge_uuid)
        for key, value in (body.get("attributes") or {}).items():
            if value is None:
                edge["attributes"].pop(key, None)
            else:
                edge["attributes"][key] = value
        if body.get("fact"):
            edge["fact"] = body["fact"]
            if self.embed is not None:
                self.vectors[edge_uuid] = self.embed([body["fact"]])[0]
        return edge

    def delete_edge(self, graph_uuid: str, edge_uuid: str) -> dict[str, Any]:
        self.edge(graph_uuid, edge_uuid)
        del self.edges[self.graph_of(graph_uuid)][edge_uuid]
        self.vectors.pop(edge_uuid, None)
        return {"task": _task("edge_delete")}

    def matching(self, graph_uuid: str, filters: dict[str, Any] | None) -> list[dict[str, Any]]:
        filters = filters or {}
        unknown = set(filters) - SEARCH_FILTER_KEYS
        if unknown:
            raise ZepHTTPError(400, "unsupported_filter", f"unsupported filter field(s): {', '.join(sorted(unknown))}")
        edges = list(self.edges[self.graph_of(graph_uuid)].values())
        if filters.get("edge_types"):
            edges = [e for e in edges if e["name"] in filters["edge_types"]]
        if filters.get("edge_uuids"):
            edges = [e for e in edges if e["uuid"] in filters["edge_uuids"]]
        for pf in filters.get("property_filters") or []:
            op = pf.get("operator")
            if op not in PROPERTY_OPS or not pf.get("property_name"):
                raise ZepHTTPError(400, "invalid_request", f"bad property filter {pf!r}")
            edges = [e for e in edges if _compare(op, e["attributes"].get(pf["property_name"]), pf.get("value"))]
        groups = (filters.get("date_filters") or {}).get("any_of") or []
        if groups:
            edges = [e for e in edges if any(self._date_group(e, g) for g in groups)]
        return edges

    @staticmethod
    def _date_group(edge: dict[str, Any], group: dict[str, Any]) -> bool:
        for cond in group.get("all_of") or []:
            field, op = cond.get("field"), cond.get("operator")
            if field not in DATE_FIELDS or op not in PROPERTY_OPS - {"in"}:
                raise ZepHTTPError(400, "invalid_request", f"bad date filter {cond!r}")
            if not _compare(op, _parse_time(edge.get(field)), _parse_time(cond.get("value"))):
                return False
        return True

    def search(self, graph_uuid: str, body: dict[str, Any], limit: int) -> list[dict[str, Any]]:
        query = str(body.get("query") or "")
        if not query.strip():
            raise ZepHTTPError(400, "invalid_request", "query must not be empty")
        reranker = body.get("reranker") or "rrf"
        if reranker != "rrf":
            raise ZepHTTPError(400, "invalid_request", f"the fake server supports the rrf reranker only, not {reranker}")
        edges = self.matching(graph_uuid, body.get("filters"))
        if not edges:
            return []
        rankings: list[list[str]] = []
        docs = {e["uuid"]: _tokens(e["fact"]) for e in edges}
        terms = set(_tokens(query))
        avg = sum(len(d) for d in docs.values()) / len(docs) or 1.0
        df = Counter(t for d in docs.values() for t in set(d))
        bm25 = {}
        for edge_uuid, doc in docs.items():
            tf = Counter(doc)
            score = sum(math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5)) * tf[t] * 2.2
                        / (tf[t] + 1.2 * (0.25 + 0.75 * len(doc) / avg)) for t in terms if tf[t])
            if score > 0:
                bm25[edge_uuid] = score
        rankings.append(sorted(bm25, key=lambda k: -bm25[k]))
        if self.embed is not None:
            qv = self.embed([query])[0]
            sims = {e["uuid"]: float(sum(a * b for a, b in zip(qv, self.vectors[e["uuid"]], strict=True)))
                    for e in edges if e["uuid"] in self.vectors}
            rankings.append(sorted(sims, key=lambda k: -sims[k]))
        fused: dict[str, float] = {}
        for ranking in rankings:
            for rank, key in enumerate(ranking, 1):
                fused[key] = fused.get(key, 0.0) + 1.0 / (60 + rank)
        best = len(rankings) / 61
        by_uuid = {e["uuid"]: e for e in edges}
        top = sorted(fused, key=lambda k: (-fused[k], k))[:limit]
        return [{**by_uuid[k], "score": round(fused[k] / best, 6)} for k in top]

    # ------------------------------------------------------------------ threads
    def thread_context(self, thread_uuid: str) -> str:
        thread = self.threads.get(thread_uuid)
        if thread is None:
            raise ZepHTTPError(404, "not_found", f"thread {thread_uuid} not found")
        recent = " ".join(m["content"] for m in self.messages[thread_uuid][-4:])
        graph = str(thread["graph_uuid"])
        facts = ([e for e in self.search(graph, {"query": recent}, 10)] if recent.strip()
                 else list(self.edges[graph].values())[:10])
        facts = [e for e in facts if not e.get("invalid_at")]
        if not facts:
            return ""
        lines = [f"  - {e['fact']} (valid from {e.get('valid_at') or e['created_at']})" for e in facts]
        return "<FACTS>\n" + "\n".join(lines) + "\n</FACTS>"


class FakeZepServer:
    """The fake Zep Cloud API on 127.0.0.1 in a daemon thread. ``base_url`` goes to ``AsyncZep``."""

    def __init__(self, *, api_key: str | None = None, embed: Embed | None = None, host: str = "127.0.0.1",
                 port: int = 0):
        self.state = _State(embed)
        self.api_key = api_key
        self._httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None
        #: When True every request is answered 503 (to test outages).
        self.down = False

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}{API_PREFIX}"

    def start(self) -> FakeZepServer:
        if self._thread is None:
            self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-zep", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> FakeZepServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    @property
    def requests(self) -> list[tuple[str, str]]:
        """(method, path) of every request served so far."""
        return list(self.state.requests)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # silence the default stderr log
                return

            def _send(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
                try:
                    if server.down:
                        raise ZepHTTPError(503, "unavailable", "the fake Zep server is down")
                    if server.api_key is not None and self.headers.get("Authorization") != f"Api-Key {server.api_key}":
                        raise ZepHTTPError(401, "unauthorized", "invalid API key")
                    if not parts.path.startswith(API_PREFIX + "/"):
                        raise ZepHTTPError(404, "not_found", f"no route {parts.path}")
                    body = json.loads(raw) if raw else {}
                    route = parts.path[len(API_PREFIX) + 1:].strip("/").split("/")
                    with server.state.lock:
                        server.state.requests.append((method, parts.path))
                        status, result = _route(server.state, method, route, body, query)
                except ZepHTTPError as exc:
                    self._send(exc.status, {"error": {"code": exc.code, "message": exc.message}})
                    return
                except json.JSONDecodeError:
                    self._send(400, {"error": {"code": "invalid_request", "message": "body is not JSON"}})
                    return
                self._send(status, result)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_PATCH(self) -> None:
                self._handle("PATCH")

            def do_DELETE(self) -> None:
                self._handle("DELETE")

        return Handler


def _public(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if not k.startswith("_")}


def _page(items: list[dict[str, Any]], query: dict[str, str], *, max_size: int = 100) -> dict[str, Any]:
    size = min(int(query.get("page_size") or 50), max_size)
    start = int(query.get("cursor") or 0)
    chunk = items[start:start + size]
    out: dict[str, Any] = {"items": chunk}
    if start + size < len(items):
        out["next_cursor"] = str(start + size)
    return out


def _route(s: _State, method: str, route: list[str], body: dict[str, Any],
           query: dict[str, str]) -> tuple[int, Any]:
    head = route[0]
    if head == "users":
        if route == ["users"] and method == "POST":
            return HTTPStatus.CREATED, _public(s.create_user(body))
        if route == ["users", "lookup"] and method == "POST":
            for user in s.users.values():
                if body.get("user_id") and user.get("user_id") == body["user_id"]:
                    return 200, _public(user)
            raise ZepHTTPError(404, "not_found", f"user {body.get('user_id')!r} not found")
        if route == ["users", "list"] and method == "POST":
            users = sorted((_public(u) for u in s.users.values()), key=lambda u: u["created_at"])
            return 200, _page(users, query)
        if len(route) == 2:
            user = s.user_by_uuid(route[1])
            if method == "GET":
                return 200, _public(user)
            if method == "PATCH":
                for key in ("email", "first_name", "last_name", "time_zone"):
                    if body.get(key) is not None:
                        user[key] = body[key]
                if body.get("metadata") is not None:
                    user["metadata"] = {**user["metadata"], **body["metadata"]}
                return 200, _public(user)
            if method == "DELETE":
                del s.users[route[1]]
                s.edges.pop(user["graph_uuid"], None)
                return 200, {"task": _task("user_delete")}
        if len(route) == 3 and route[2] == "node" and method == "GET":
            return 200, s.nodes[s.user_by_uuid(route[1])["_node"]]
    if head == "threads":
        if route == ["threads"] and method == "POST":
            user = s.user_by_uuid(str(body.get("user_uuid")))
            thread = {"uuid": str(uuid.uuid4()), "user_uuid": user["uuid"], "graph_uuid": user["graph_uuid"],
                      "created_at": _now(), "updated_at": _now()}
            s.threads[thread["uuid"]] = thread
            s.messages[thread["uuid"]] = []
            return HTTPStatus.CREATED, thread
        if len(route) == 3 and route[1] in s.threads:
            if route[2] == "messages" and method == "POST":
                stored = []
                for msg in body.get("messages") or []:
                    if not msg.get("content") or not msg.get("role"):
                        raise ZepHTTPError(400, "invalid_request", "a message needs content and role")
                    row = {"uuid": str(uuid.uuid4()), "thread_uuid": route[1], "created_at": _now(),
                           "processed": False, "reference_time": msg.get("reference_time") or _now(),
                           **{k: msg.get(k) for k in ("content", "role", "name", "metadata")}}
                    s.messages[route[1]].append(row)
                    stored.append(row)
                out: dict[str, Any] = {"messages": stored, "task": _task("message_add")}
                if body.get("return_context"):
                    out["context"] = s.thread_context(route[1])
                return 200, out
            if route[2] == "context" and method == "GET":
                return 200, {"context": s.thread_context(route[1])}
        if len(route) >= 2:
            raise ZepHTTPError(404, "not_found", f"thread {route[1]} not found")
    if head == "graphs" and len(route) >= 3:
        graph = route[1]
        if route[2] == "edges":
            if len(route) == 3 and method == "POST":
                return HTTPStatus.ACCEPTED, s.add_edges(graph, body)
            if route[3:] == ["list"] and method == "POST":
                edges = sorted(s.matching(graph, body.get("filters")), key=lambda e: e["uuid"],
                               reverse=query.get("order", "desc") == "desc")
                if query.get("order_by") in ("created_at", "valid_at"):
                    key = query["order_by"]
                    edges.sort(key=lambda e: e.get(key) or "1970-01-01T00:00:00Z",
                               reverse=query.get("order", "desc") == "desc")
                return 200, _page(edges, query)
            if len(route) == 4:
                if method == "GET":
                    return 200, s.edge(graph, route[3])
                if method == "PATCH":
                    return 200, s.patch_edge(graph, route[3], body)
                if method == "DELETE":
                    return 200, s.delete_edge(graph, route[3])
        if route[2:] == ["search", "edges"] and method == "POST":
            limit = min(int(query.get("page_size") or 10), 50)
            return 200, {"items": s.search(graph, body, limit)}
        if route[2] == "episodes" and len(route) == 4 and method == "DELETE":
            s.graph_of(graph)
            if s.episodes.pop(route[3], None) is None:
                raise ZepHTTPError(404, "not_found", f"episode {route[3]} not found")
            return 200, {"task": _task("episode_delete")}
    raise ZepHTTPError(404, "not_found", f"no route {method} /{'/'.join(route)}")
