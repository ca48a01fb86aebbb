"""The Zep provider: the provider ABC on top of the ``zep-cloud`` 4.x SDK (``AsyncZep``).

Mapping of the provider interface onto Zep (in Zep v4 names):

* each dexai user is a Zep user (``user.create`` / ``user.lookup`` by
  ``user_id``); its graph holds the memories;
* a memory is a graph **edge** (``graph.edge.add``, ``deduplicate=False``):
  ``fact`` = content, ``name`` = ``DEXAI_<TYPE>``, ``valid_at`` = valid_from,
  ``invalid_at`` = valid_until, ``expired_at`` = superseded_at; every other
  field lives in the edge ``attributes`` under ``dx_*`` keys. Edges run from
  the user's node to one anchor node per user;
* supersession is Zep's temporal invalidation: the old fact gets
  ``invalid_at`` / ``expired_at``. The v4 API cannot patch those fields, so a
  change of validity rewrites the edge (add the new version, delete the old);
  the memory id is the ``dx_id`` attribute and survives the rewrite;
* as-of queries are Zep ``date_filters`` (valid_at <= t and invalid_at null or
  > t); other filters are ``property_filters`` on the attributes;
* search is ``graph.search_edges`` (Zep's hybrid search, ``rrf`` reranker);
* session notes are also sent to the session's thread (``thread.add_messages``)
  so Zep's own graph ingestion sees them (``zep.session_threads``);
  :meth:`ZepProvider.thread_context` returns ``thread.get_context`` (v3's
  ``thread.get_user_context``);
* history events are kept in the ``dx_events`` attribute.

Edges that Zep extracts itself (from thread messages) carry no ``dx_*``
attributes and are never returned as memories. Zep applies additions
asynchronously (a task); against Zep Cloud, a memory may become searchable a
moment after :meth:`add` returns.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import logging
import os
from collections.abc import Awaitable, Callable
from datetime import datetime
from importlib import metadata as importlib_metadata
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import InvalidMemory, MemoryNotFound, MissingExtra, ProviderError, ProviderUnavailable
from ..models import (
    HealthStatus,
    Memory,
    MemoryEvent,
    MemoryType,
    SearchFilters,
    SearchResult,
    Tier,
    as_utc,
    utcnow,
)
from .base import UPDATABLE_FIELDS, MemoryProvider
from .capabilities import ProviderCapabilities

if TYPE_CHECKING:
    from ..config import Settings

logger = logging.getLogger(__name__)
T = TypeVar("T")

INSTALL_HINT = "pip install 'dexai-memory[zep]'"
#: Types a search without a type filter skips (episodes: asked for by type, see MemoryType.EPISODE).
SEARCH_EXCLUDED_TYPES = (MemoryType.TRANSCRIPT.value, MemoryType.SNAPSHOT.value, MemoryType.EPISODE.value)
EDGE_PREFIX = "DEXAI_"
ANCHOR_NAME = "dexai-memory"
#: Fields stored in Zep's own temporal fields: changing one rewrites the edge.
TEMPORAL_FIELDS = frozenset({"valid_from", "valid_until", "superseded_at"})
PAGE = 100


def import_zep() -> Any:
    """Import ``zep_cloud``; raise :class:`MissingExtra` naming the pip command if absent."""
    try:
        import zep_cloud
    except ImportError as exc:
        raise MissingExtra(f"the zep provider needs the zep-cloud SDK: {INSTALL_HINT}") from exc
    return zep_cloud


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def edge_attributes(m: Memory) -> dict[str, Any]:
    """The ``dx_*`` attributes that hold the fields Zep has no place for."""
    return {
        "dx_id": m.id, "dx_user": m.user_id, "dx_project": m.project, "dx_type": m.type.value,
        "dx_importance": m.importance, "dx_confidence": m.confidence, "dx_mention_count": m.mention_count,
        "dx_tier": m.tier.value, "dx_source_ids": json.dumps(list(m.source_ids)), "dx_session": m.session_id,
        "dx_created": _iso(m.created_at), "dx_created_ts": m.created_at.timestamp(), "dx_updated": _iso(m.updated_at),
        "dx_superseded_by": m.superseded_by, "dx_archived": m.archived, "dx_pinned": m.pinned,
        "dx_deleted": m.deleted, "dx_retrieval_count": m.retrieval_count, "dx_citation_count": m.citation_count,
        "dx_ignore_count": m.ignore_count,
        "dx_last_accessed": _iso(m.last_accessed), "dx_meta": json.dumps(dict(m.metadata), default=str),
    }


def memory_from_edge(edge: Any, user_id: str) -> Memory:
    """Rebuild a :class:`Memory` from a Zep ``Edge``."""
    a = edge.attributes or {}
    return Memory(
        content=edge.fact or "", user_id=user_id, id=a["dx_id"], project=a.get("dx_project"),
        type=a.get("dx_type") or MemoryType.FACT, importance=a.get("dx_importance", 5),
        confidence=a.get("dx_confidence", 0.8), mention_count=a.get("dx_mention_count", 1),
        tier=Tier.parse(a.get("dx_tier") or "L2"), source_ids=tuple(json.loads(a.get("dx_source_ids") or "[]")),
        session_id=a.get("dx_session"), created_at=as_utc(a.get("dx_created") or edge.created_at) or utcnow(),
        updated_at=as_utc(a.get("dx_updated")), valid_from=as_utc(edge.valid_at),
        valid_until=as_utc(edge.invalid_at), superseded_by=a.get("dx_superseded_by"),
        superseded_at=as_utc(edge.expired_at), archived=bool(a.get("dx_archived")),
        pinned=bool(a.get("dx_pinned")), deleted=bool(a.get("dx_deleted")),
        retrieval_count=a.get("dx_retrieval_count", 0), citation_count=a.get("dx_citation_count", 0),
        ignore_count=a.get("dx_ignore_count", 0),
        last_accessed=as_utc(a.get("dx_last_accessed")), metadata=json.loads(a.get("dx_meta") or "{}"),
    )


def zep_filters(f: SearchFilters, *, for_search: bool = False) -> dict[str, Any]:
    """``EdgeSearchFilters`` / ``EdgeListFilters`` fields (plain dicts) for ``f``."""
    props: list[dict[str, Any]] = [{"property_name": "dx_deleted", "operator": "eq", "value": False}]

    def prop(name: str, op: str, value: Any = None) -> None:
        props.append({"property_name": name, "operator": op, "value": value})

    if f.project is not None:
        prop("dx_project", "eq", f.project)
    if f.types:
        prop("dx_type", "in", [t.value for t in f.types])
    elif for_search:
        for excluded in SEARCH_EXCLUDED_TYPES:
            prop("dx_type", "ne", excluded)
    if f.tiers:
        prop("dx_tier", "in", [t.value for t in f.tiers])
    if f.session_id is not None:
        prop("dx_session", "eq", f.session_id)
    out: dict[str, Any] = {}
    if f.as_of is not None:
        moment = _iso(f.as_of)
        out["date_filters"] = {"any_of": [
            {"all_of": [{"field": "valid_at", "operator": "lte", "value": moment},
                        {"field": "invalid_at", "operator": "is_null"}]},
            {"all_of": [{"field": "valid_at", "operator": "lte", "value": moment},
                        {"field": "invalid_at", "operator": "gt", "value": moment}]},
        ]}
    else:
        if f.valid_only:
            prop("dx_superseded_by", "is_null")
            out["date_filters"] = {"any_of": [{"all_of": [{"field": "invalid_at", "operator": "is_null"}]}]}
        if not f.include_archived:
            prop("dx_archived", "eq", False)
    if f.created_after is not None:
        prop("dx_created_ts", "gte", f.created_after.timestamp())
    if f.created_before is not None:
        prop("dx_created_ts", "lt", f.created_before.timestamp())
    if f.pinned is not None:
        prop("dx_pinned", "eq", f.pinned)
    if f.min_importance is not None:
        prop("dx_importance", "gte", f.min_importance)
    out["property_filters"] = [{k: v for k, v in p.items() if v is not None or k != "value"} for p in props]
    return out


class _UserGraph:
    """What the provider caches about one Zep user."""

    def __init__(self, user: Any):
        self.uuid: str = user.uuid_
        self.metadata: dict[str, Any] = dict(user.metadata or {})
        self.node_uuid: str | None = None


class ZepProvider(MemoryProvider):
    """Memory in Zep (Cloud, or any server speaking its v4 API at ``base_url``)."""

    name = "zep"
    capabilities = ProviderCapabilities(history=True, as_of=True, hard_delete=True, vector_search=True,
                                       list_users=True)

    def __init__(self, *, api_key: str | None, base_url: str | None = None, timeout: float = 10.0,
                 max_retries: int = 2, session_threads: bool = True):
        super().__init__()
        self.api_key = api_key
        self.base_url = base_url or None
        self.timeout = timeout
        self.max_retries = max_retries
        self.session_threads = session_threads
        self._client: Any = None
        self._http: Any = None
        self._users: dict[str, _UserGraph] = {}
        self._lock = asyncio.Lock()
        self._on_close: list[Callable[[], None]] = []

    @classmethod
    def from_settings(cls, settings: Settings) -> ZepProvider:
        """A provider with ``zep.*`` settings; the key comes from ``$<zep.api_key_env>``."""
        z = settings.zep
        return cls(api_key=os.environ.get(z.api_key_env) or None, base_url=z.base_url or None,
                   timeout=z.timeout_seconds, max_retries=z.max_retries, session_threads=z.session_threads)

    def on_close(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when the provider is closed (tests stop their fake server this way)."""
        self._on_close.append(callback)

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        if self._client is not None:
            return
        zep = import_zep()
        if not self.api_key:
            raise ProviderUnavailable("no Zep API key: set $ZEP_API_KEY (or zep.api_key_env)")
        import httpx

        self._http = httpx.AsyncClient(timeout=self.timeout, follow_redirects=True)
        self._client = zep.AsyncZep(api_key=self.api_key, base_url=self.base_url, timeout=self.timeout,
                                    max_retries=self.max_retries, httpx_client=self._http)

    async def aclose(self) -> None:
        http, self._http, self._client = self._http, None, None
        if http is not None:
            await http.aclose()
        callbacks, self._on_close = self._on_close, []
        for callback in callbacks:
            callback()

    @property
    def client(self) -> Any:
        if self._client is None:
            raise ProviderError("the provider is not started: use 'async with provider:' or await start()")
        return self._client

    async def _call(self, op: str, awaitable: Awaitable[T]) -> T:
        """Await a Zep call, translating SDK / transport errors at the boundary."""
        import httpx
        from zep_cloud.core.api_error import ApiError

        try:
            return await awaitable
        except ApiError as exc:
            status = exc.status_code or 0
            if status == 404:
                raise MemoryNotFound(f"Zep {op}: not found") from exc
            if status >= 500 or status in (408, 429):
                raise ProviderUnavailable(f"Zep {op} failed with HTTP {status}") from exc
            raise ProviderError(f"Zep {op} failed with HTTP {status}: {exc.body}") from exc
        except httpx.TransportError as exc:
            raise ProviderUnavailable(f"Zep {op}: cannot reach {self.base_url or 'Zep Cloud'}: {exc}") from exc

    # ------------------------------------------------------------------ users
    async def _user(self, user_id: str, *, create: bool) -> _UserGraph | None:
        cached = self._users.get(user_id)
        if cached is not None:
            return cached
        try:
            user = await self._call("user lookup", self.client.user.lookup(user_id=user_id))
        except MemoryNotFound:
            if not create:
                return None
            user = await self._call("user create", self.client.user.create(user_id=user_id))
        graph = self._users[user_id] = _UserGraph(user)
        return graph

    async def _endpoints(self, graph: _UserGraph) -> tuple[dict[str, Any], dict[str, Any]]:
        """Source (the user's node) and target (the user's dexai anchor node) of a memory edge."""
        if graph.node_uuid is None:
            node = await self._call("user node", self.client.user.get_node(graph.uuid))
            graph.node_uuid = node.uuid_
        anchor = graph.metadata.get("dexai_anchor_node")
        target = {"uuid": anchor} if anchor else {"name": ANCHOR_NAME, "labels": ["DexaiMemory"]}
        return {"uuid": graph.node_uuid}, target

    async def users(self) -> builtins.list[str]:
        """Every Zep user id of the project (each may hold memories)."""
        pager = await self._call("user list", self.client.user.list(page_size=PAGE))
        return sorted([u.user_id async for u in pager if u.user_id])

    # ------------------------------------------------------------------ edges
    async def _add_edges(self, graph: _UserGraph, memories: builtins.list[Memory]) -> None:
        from zep_cloud import EdgeInput, EdgeNodeRef

        source, target = await self._endpoints(graph)
        inputs = [EdgeInput(fact=m.content, fact_name=EDGE_PREFIX + m.type.value, attributes=edge_attributes(m)
                            | {"dx_events": "[]"}, valid_at=_iso(m.valid_from), invalid_at=_iso(m.valid_until),
                            expired_at=_iso(m.superseded_at), metadata={"dexai_id": m.id},
                            source_node=EdgeNodeRef(**source), target_node=EdgeNodeRef(**target))
                  for m in memories]
        result = await self._call("edge add", self.client.graph.edge.add(graph.uuid, edges=inputs, deduplicate=False))
        if "uuid" not in target and result.edges and result.edges[0].target_node_uuid:
            await _set_user_meta(self, graph, dexai_anchor_node=result.edges[0].target_node_uuid)

    async def _edge(self, memory_id: str, user_id: str) -> tuple[_UserGraph, Any] | None:
        graph = await self._user(user_id, create=False)
        if graph is None:
            return None
        from zep_cloud import EdgeListFilters, PropertyFilter

        flt = EdgeListFilters(property_filters=[PropertyFilter(property_name="dx_id", operator="eq", value=memory_id)])
        pager = await self._call("edge list", self.client.graph.edge.list(graph.uuid, page_size=10, filters=flt))
        edges = [e for e in (pager.items or []) if (e.attributes or {}).get("dx_id") == memory_id]
        if not edges:
            return None
        edges.sort(key=lambda e: e.created_at or "")
        return graph, edges[-1]

    async def _edges(self, user_id: str, f: SearchFilters) -> builtins.list[Any]:
        graph = await self._user(user_id, create=False)
        if graph is None:
            return []
        from zep_cloud import EdgeListFilters

        pager = await self._call("edge list", self.client.graph.edge.list(
            graph.uuid, page_size=PAGE, filters=EdgeListFilters(**zep_filters(f))))
        return [e async for e in pager if "dx_id" in (e.attributes or {})]

    # ------------------------------------------------------------------ primitives
    async def add(self, memory: Memory) -> Memory:
        async with self._lock:
            if await self._edge(memory.id, memory.user_id) is not None:
                raise InvalidMemory(f"a memory with id {memory.id!r} already exists")
            graph = await self._user(memory.user_id, create=True)
            assert graph is not None
            await self._add_edges(graph, [memory])
        return memory

    async def add_many(self, memories: Any, *, progress: Any = None) -> builtins.list[Memory]:
        """Store many memories, up to 100 edges per request (one request per user and batch)."""
        items = builtins.list(memories)
        by_user: dict[str, builtins.list[Memory]] = {}
        for m in items:
            by_user.setdefault(m.user_id, []).append(m)
        async with self._lock:
            for user_id, group in by_user.items():
                graph = await self._user(user_id, create=True)
                assert graph is not None
                for start in range(0, len(group), PAGE):
                    chunk = group[start:start + PAGE]
                    await self._add_edges(graph, chunk)
                    if progress:
                        progress(len(chunk))
        return items

    async def get(self, memory_id: str, *, user_id: str, include_deleted: bool = False) -> Memory:
        found = await self._edge(memory_id, user_id)
        if found is None:
            raise MemoryNotFound(f"no memory {memory_id!r} for user {user_id!r}")
        memory = memory_from_edge(found[1], user_id)
        if memory.deleted and not include_deleted:
            raise MemoryNotFound(f"no memory {memory_id!r} for user {user_id!r}")
        return memory

    async def update(self, memory_id: str, *, user_id: str, **changes: Any) -> Memory:
        unknown = set(changes) - UPDATABLE_FIELDS
        if unknown:
            raise InvalidMemory(f"cannot update field(s): {', '.join(sorted(unknown))}")
        async with self._lock:
            found = await self._edge(memory_id, user_id)
            if found is None or (found[1].attributes or {}).get("dx_deleted"):
                raise MemoryNotFound(f"no memory {memory_id!r} for user {user_id!r}")
            graph, edge = found
            current = memory_from_edge(edge, user_id)
            updated = current.replace(**changes, updated_at=utcnow())
            temporal = any(getattr(updated, f) != getattr(current, f) for f in TEMPORAL_FIELDS)
            if temporal:
                await self._rewrite(graph, edge, updated)
            else:
                attrs = edge_attributes(updated)
                fact = updated.content if updated.content != current.content else None
                await self._call("edge update", self.client.graph.edge.update(
                    graph.uuid, edge.uuid_, attributes=attrs, **({"fact": fact} if fact else {})))
        return updated

    async def _rewrite(self, graph: _UserGraph, edge: Any, memory: Memory) -> None:
        """Zep v4 cannot patch valid_at / invalid_at: add the new version of the edge, then drop the old."""
        events = (edge.attributes or {}).get("dx_events") or "[]"
        await self._add_edges(graph, [memory])
        found = await self._edge(memory.id, memory.user_id)
        if found is not None and found[1].uuid_ != edge.uuid_:
            await self._call("edge update", self.client.graph.edge.update(
                graph.uuid, found[1].uuid_, attributes={"dx_events": events}))
        await self._delete_edge(graph, edge)

    async def _delete_edge(self, graph: _UserGraph, edge: Any) -> None:
        await self._call("edge delete", self.client.graph.edge.delete(graph.uuid, edge.uuid_))
        for episode in edge.episode_uuids or ():  # the edge's episode keeps its text: erase it too
            try:
                await self._call("episode delete", self.client.graph.episode.delete(graph.uuid, episode))
            except MemoryNotFound:
                pass

    async def delete(self, memory_id: str, *, user_id: str, hard: bool = False) -> bool:
        found = await self._edge(memory_id, user_id)
        if found is None:
            return False
        graph, edge = found
        if not hard:
            if (edge.attributes or {}).get("dx_deleted"):
                return False
            await self._call("edge update", self.client.graph.edge.update(
                graph.uuid, edge.uuid_, attributes={"dx_deleted": True, "dx_updated": _iso(utcnow())}))
            await self.record_event(MemoryEvent(memory_id, "FORGET", "soft delete by request", utcnow()),
                                    user_id=user_id)
            return True
        async with self._lock:
            await self._delete_edge(graph, edge)
        return True

    async def list(self, *, user_id: str, filters: SearchFilters | None = None, limit: int = 100,
                   offset: int = 0) -> builtins.list[Memory]:
        edges = await self._edges(user_id, filters or SearchFilters())
        memories = [memory_from_edge(e, user_id) for e in edges]
        memories.sort(key=lambda m: (m.created_at, m.id), reverse=True)
        return memories[offset:offset + limit] if limit > 0 else memories[offset:]

    async def count(self, *, user_id: str, filters: SearchFilters | None = None) -> int:
        return len(await self._edges(user_id, filters or SearchFilters()))

    async def superseded_by(self, memory_id: str, *, user_id: str) -> builtins.list[Memory]:
        graph = await self._user(user_id, create=False)
        if graph is None:
            return []
        from zep_cloud import EdgeListFilters, PropertyFilter

        flt = EdgeListFilters(property_filters=[
            PropertyFilter(property_name="dx_superseded_by", operator="eq", value=memory_id),
            PropertyFilter(property_name="dx_deleted", operator="eq", value=False)])
        pager = await self._call("edge list", self.client.graph.edge.list(graph.uuid, page_size=PAGE, filters=flt))
        return [memory_from_edge(e, user_id) async for e in pager if "dx_id" in (e.attributes or {})]

    async def search(self, query: str, *, user_id: str, filters: SearchFilters | None = None,
                     limit: int = 10) -> builtins.list[SearchResult]:
        if not query or not query.strip() or limit <= 0:
            return []
        graph = await self._user(user_id, create=False)
        if graph is None:
            return []
        from zep_cloud import EdgeSearchFilters

        flt = EdgeSearchFilters(**zep_filters(filters or SearchFilters(), for_search=True))
        pager = await self._call("edge search", self.client.graph.search_edges(
            graph.uuid, query=query, page_size=min(limit, 50), filters=flt, reranker="rrf"))
        out = []
        for rank, edge in enumerate(pager.items or [], 1):
            if "dx_id" not in (edge.attributes or {}):
                continue
            score = min(1.0, max(0.0, float(edge.score or 0.0)))
            out.append(SearchResult(memory_from_edge(edge, user_id), round(score, 6), vector_rank=rank))
        return out[:limit]

    # ------------------------------------------------------------------ events
    async def record_event(self, event: MemoryEvent, *, user_id: str) -> None:
        async with self._lock:
            found = await self._edge(event.memory_id, user_id)
            if found is None:
                logger.warning("event %s for unknown memory %s dropped", event.action, event.memory_id)
                return
            graph, edge = found
            log = json.loads((edge.attributes or {}).get("dx_events") or "[]")
            log.append(event.to_dict())
            await self._call("edge update", self.client.graph.edge.update(
                graph.uuid, edge.uuid_, attributes={"dx_events": json.dumps(log, default=str)}))

    async def events(self, memory_id: str, *, user_id: str) -> builtins.list[MemoryEvent]:
        found = await self._edge(memory_id, user_id)
        if found is None:
            return []
        rows = json.loads((found[1].attributes or {}).get("dx_events") or "[]")
        return [MemoryEvent(r["memory_id"], r["action"], r["reason"], as_utc(r["at"]) or utcnow(),
                            r.get("related_id"), r.get("details") or {}) for r in rows]

    # ------------------------------------------------------------------ sessions and context
    async def add_session_note(self, content: str, *, user_id: str, session_id: str, importance: int = 5,
                               metadata: dict[str, Any] | None = None, source_ids: Any = (),
                               project: str | None = None) -> Memory:
        """Store the note as a memory edge and (``session_threads``) append it to the session's thread."""
        note = await super().add_session_note(content, user_id=user_id, session_id=session_id,
                                              importance=importance, metadata=metadata, source_ids=source_ids,
                                              project=project)
        if self.session_threads:
            from zep_cloud import AddMessage

            thread = await self._thread(user_id, session_id, create=True)
            assert thread is not None
            await self._call("thread add_messages", self.client.thread.add_messages(thread, messages=[
                AddMessage(role="user", name="dexai-memory", content=content,
                           metadata={"dexai_id": note.id, "type": MemoryType.SESSION_NOTE.value})]))
        return note

    async def _thread(self, user_id: str, session_id: str, *, create: bool) -> str | None:
        graph = await self._user(user_id, create=create)
        if graph is None:
            return None
        threads: dict[str, str] = dict(graph.metadata.get("dexai_threads") or {})
        if session_id in threads:
            return threads[session_id]
        if not create:
            return None
        thread = await self._call("thread create", self.client.thread.create(user_uuid=graph.uuid))
        threads[session_id] = thread.uuid_
        await _set_user_meta(self, graph, dexai_threads=threads)
        return str(thread.uuid_)

    async def thread_context(self, session_id: str, *, user_id: str) -> str:
        """Zep's own context block for a session's thread (``thread.get_context``); '' if none."""
        thread = await self._thread(user_id, session_id, create=False)
        if thread is None:
            return ""
        result = await self._call("thread context", self.client.thread.get_context(thread))
        return str(result.context or "")

    # ------------------------------------------------------------------ health
    async def health_check(self) -> HealthStatus:
        problems: builtins.list[str] = []
        details: dict[str, Any] = {"base_url": self.base_url or "Zep Cloud (SDK default)"}
        try:
            details["zep_cloud"] = importlib_metadata.version("zep-cloud")
        except importlib_metadata.PackageNotFoundError:
            problems.append(f"zep-cloud is not installed: {INSTALL_HINT}")
        if self._client is None:
            problems.append("the provider is not started (or has no API key)")
        else:
            try:
                pager = await self._call("user list", self.client.user.list(page_size=1))
                details["reachable"] = True
                details["users_on_first_page"] = len(pager.items or [])
            except ProviderError as exc:
                problems.append(str(exc))
        return HealthStatus(healthy=not problems, provider=self.name, details=details, problems=tuple(problems))


async def _set_user_meta(provider: ZepProvider, graph: _UserGraph, **values: Any) -> None:
    """Merge ``values`` into the Zep user's metadata, cached and on the server."""
    graph.metadata.update(values)
    await provider._call("user update", provider.client.user.update(graph.uuid, metadata=values))
