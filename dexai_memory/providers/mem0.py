"""The Mem0 provider: the provider ABC on top of the open-source ``mem0ai`` library.

Mem0 runs in-process (:class:`mem0.AsyncMemory`) with local parts only:

* vector store: Qdrant in local on-disk mode (``<home>/mem0/qdrant``, no server);
* embedder: our own offline embedder (:mod:`dexai_memory.embeddings`), plugged
  in as a Mem0 ``EmbeddingBase``; Mem0 never calls a networked embedder;
* LLM: Mem0's Anthropic provider (Haiku) for :meth:`Mem0Provider.add_messages`
  when an API key is set (``mem0.infer: auto``); memories handed to
  :meth:`Mem0Provider.add` were already extracted by our pipeline and are always
  stored with ``infer=False``;
* history: Mem0's own SQLite history (``history.db``), merged into
  :meth:`Mem0Provider.events`.

Mem0 telemetry is switched off (``MEM0_TELEMETRY=False``) before ``mem0`` is
imported, and ``MEM0_DIR`` points into the data directory.

Mapping of the provider interface onto Mem0: add -> ``AsyncMemory.add(infer=False)``;
session notes -> ``add(run_id=session_id)``; search -> ``AsyncMemory.search``
with metadata filters; get/list -> ``get``/``get_all`` with a ``dx_id``
filter; content updates -> ``AsyncMemory.update`` (recorded in Mem0's
history); delete -> ``AsyncMemory.delete``. Fields Mem0 does not hold natively
(type, tier, importance, validity, supersession, provenance, ...) live in the
Mem0 metadata under ``dx_*`` keys, so filters run inside Mem0's vector store.
Supersede, classify_update and consolidate are done by the base class pipeline:
recent Mem0 releases only add and no longer update or delete on add.

Metadata-only changes (flags, counters, supersession links, events) are written
with the vector store's ``update(payload=...)`` (Qdrant ``set_payload``):
``AsyncMemory.update`` would re-embed the unchanged text and log a no-op
UPDATE for every counter bump.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import logging
import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    from ..config import Mem0Config, Settings
    from ..embeddings import Embedder

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'dexai-memory[mem0]'"
#: Types left out of search unless asked for (as in the native provider).
#: Types a search without a type filter skips (episodes: asked for by type, see MemoryType.EPISODE).
SEARCH_EXCLUDED_TYPES = (MemoryType.TRANSCRIPT.value, MemoryType.SNAPSHOT.value, MemoryType.EPISODE.value)
#: Stands for "no end" in the numeric validity fields (year 5138).
OPEN_END_TS = 1e11
#: Upper bound of one Mem0 listing (local Qdrant scrolls in one call).
MAX_LIST = 1_000_000
#: Placeholder endpoint handed to Mem0 parts that must exist but are never called.
UNUSED_ENDPOINT = "http://127.0.0.1:9/unused"


def import_mem0() -> Any:
    """Import ``mem0`` with telemetry off; raise :class:`MissingExtra` if absent."""
    os.environ["MEM0_TELEMETRY"] = "False"
    if "MEM0_DIR" not in os.environ:
        from ..datadir import home_dir

        os.environ["MEM0_DIR"] = str(home_dir() / "mem0")
    try:
        import mem0
        import mem0.memory.main as mem0_main
        from mem0.memory import telemetry
        from mem0.utils import spacy_models
    except ImportError as exc:
        raise MissingExtra(f"the mem0 provider needs the mem0ai library: {INSTALL_HINT}") from exc
    # mem0 reads MEM0_TELEMETRY when first imported; if someone imported it earlier, switch it off here too.
    telemetry.MEM0_TELEMETRY = False
    mem0_main.MEM0_TELEMETRY = False  # type: ignore[attr-defined]
    _no_spacy_download(spacy_models)
    # Mem0 warns on every start that the optional spaCy / fastembed parts are absent; we use neither.
    for name in ("mem0.utils.spacy_models", "mem0.vector_stores.qdrant", "mem0.memory.main"):
        logging.getLogger(name).setLevel(logging.ERROR)
    return mem0


def _no_spacy_download(spacy_models: Any) -> None:
    """Mem0 downloads spaCy's model at run time when spaCy is installed without it: never do that."""
    try:
        import spacy.util
    except ImportError:
        return
    if not spacy.util.is_package("en_core_web_sm"):
        spacy_models._load_failed_full = True
        spacy_models._load_failed_lemma = True


def _ts(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def memory_payload(m: Memory) -> dict[str, Any]:
    """The ``dx_*`` metadata that stores every field of ``m`` in Mem0."""
    return {
        "dx_id": m.id,
        "dx_project": m.project,
        "dx_type": m.type.value,
        "dx_importance": m.importance,
        "dx_confidence": m.confidence,
        "dx_mention_count": m.mention_count,
        "dx_tier": m.tier.value,
        "dx_source_ids": list(m.source_ids),
        "dx_session": m.session_id,
        "dx_created": _iso(m.created_at),
        "dx_created_ts": _ts(m.created_at),
        "dx_updated": _iso(m.updated_at),
        "dx_valid_from": _iso(m.valid_from),
        "dx_valid_from_ts": _ts(m.valid_from),
        "dx_valid_until": _iso(m.valid_until),
        "dx_valid_until_ts": _ts(m.valid_until) if m.valid_until else OPEN_END_TS,
        "dx_superseded_by": m.superseded_by,
        "dx_superseded_at": _iso(m.superseded_at),
        "dx_open": m.superseded_by is None and m.valid_until is None,
        "dx_archived": m.archived,
        "dx_pinned": m.pinned,
        "dx_deleted": m.deleted,
        "dx_retrieval_count": m.retrieval_count,
        "dx_citation_count": m.citation_count,
        "dx_ignore_count": m.ignore_count,
        "dx_last_accessed": _iso(m.last_accessed),
        "dx_meta": json.dumps(dict(m.metadata), default=str),
    }


def memory_from_item(item: Mapping[str, Any], user_id: str) -> Memory:
    """Rebuild a :class:`Memory` from a Mem0 result item (``get``/``get_all``/``search``)."""
    meta = item.get("metadata") or {}
    return Memory(
        content=item.get("memory") or "", user_id=user_id, id=meta["dx_id"], project=meta.get("dx_project"),
        type=meta.get("dx_type") or MemoryType.FACT, importance=meta.get("dx_importance", 5),
        confidence=meta.get("dx_confidence", 0.8), mention_count=meta.get("dx_mention_count", 1),
        tier=Tier.parse(meta.get("dx_tier") or "L2"), source_ids=tuple(meta.get("dx_source_ids") or ()),
        session_id=meta.get("dx_session"), created_at=as_utc(meta.get("dx_created") or item.get("created_at")) or utcnow(),
        updated_at=as_utc(meta.get("dx_updated")), valid_from=as_utc(meta.get("dx_valid_from")),
        valid_until=as_utc(meta.get("dx_valid_until")), superseded_by=meta.get("dx_superseded_by"),
        superseded_at=as_utc(meta.get("dx_superseded_at")), archived=bool(meta.get("dx_archived")),
        pinned=bool(meta.get("dx_pinned")), deleted=bool(meta.get("dx_deleted")),
        retrieval_count=meta.get("dx_retrieval_count", 0), citation_count=meta.get("dx_citation_count", 0),
        ignore_count=meta.get("dx_ignore_count", 0),
        last_accessed=as_utc(meta.get("dx_last_accessed")), metadata=json.loads(meta.get("dx_meta") or "{}"),
    )


def mem0_filters(user_id: str, f: SearchFilters, *, for_search: bool = False) -> dict[str, Any]:
    """Mem0 filter dict (its enhanced operators) for ``f``, always scoped to ``user_id``."""
    out: dict[str, Any] = {"user_id": user_id, "dx_deleted": False}
    if f.project is not None:
        out["dx_project"] = f.project
    if f.types:
        out["dx_type"] = {"in": [t.value for t in f.types]}
    elif for_search:
        out["dx_type"] = {"nin": list(SEARCH_EXCLUDED_TYPES)}
    if f.tiers:
        out["dx_tier"] = {"in": [t.value for t in f.tiers]}
    if f.session_id is not None:
        out["dx_session"] = f.session_id
    if f.as_of is not None:
        moment = f.as_of.timestamp()
        out["dx_valid_from_ts"] = {"lte": moment}
        out["dx_valid_until_ts"] = {"gt": moment}
    else:
        if f.valid_only:
            out["dx_open"] = True
        if not f.include_archived:
            out["dx_archived"] = False
    created: dict[str, float] = {}
    if f.created_after is not None:
        created["gte"] = f.created_after.timestamp()
    if f.created_before is not None:
        created["lt"] = f.created_before.timestamp()
    if created:
        out["dx_created_ts"] = created
    if f.pinned is not None:
        out["dx_pinned"] = f.pinned
    if f.min_importance is not None:
        out["dx_importance"] = {"gte": f.min_importance}
    return out


def _make_embedding_adapter(embedder: Embedder) -> Any:
    """Our embedder as a Mem0 ``EmbeddingBase`` (built here: the base class comes with mem0)."""
    from mem0.configs.embeddings.base import BaseEmbedderConfig
    from mem0.embeddings.base import EmbeddingBase

    class DexaiEmbedding(EmbeddingBase):  # type: ignore[misc]
        """Mem0 embedder backed by dexai-memory's offline embedder."""

        def __init__(self) -> None:
            super().__init__(BaseEmbedderConfig(model=embedder.model_id, embedding_dims=embedder.dim))

        def embed(self, text: Any, memory_action: Any = None) -> list[float]:
            return [float(x) for x in embedder.embed(str(text))]

        def embed_batch(self, texts: Any, memory_action: Any = "add") -> list[list[float]]:
            return [[float(x) for x in row] for row in embedder.embed_batch([str(t) for t in texts])]

    return DexaiEmbedding()


class Mem0Provider(MemoryProvider):
    """Memory on a local Mem0 (``AsyncMemory``). Use ``async with Mem0Provider(path, embedder=...)``."""

    name = "mem0"
    capabilities = ProviderCapabilities(history=True, as_of=True, hard_delete=True, vector_search=True,
                                       list_users=True)
    #: Mem0 always embeds with ours (required).
    embedder: Embedder

    def __init__(self, path: str | Path, *, embedder: Embedder | None, config: Mem0Config | None = None,
                 api_key: str | None = None):
        super().__init__()
        from ..config import Mem0Config

        if embedder is None:
            raise ProviderError("the mem0 provider needs an embedder (embedding.backend must not be 'none')")
        self.path = Path(path)
        self.embedder = embedder
        self.config = config or Mem0Config()
        self.api_key = api_key
        self._mem: Any = None
        self._lock = asyncio.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> Mem0Provider:
        """A provider in ``mem0.path`` (default ``<home>/mem0``) with the configured embedder."""
        from ..embeddings import make_embedder

        path = Path(settings.mem0.path).expanduser() if settings.mem0.path else settings.home / "mem0"
        return cls(path, embedder=make_embedder(settings.embedding), config=settings.mem0,
                   api_key=os.environ.get(settings.mem0.api_key_env) or None)

    @property
    def infer_enabled(self) -> bool:
        """Whether :meth:`add_messages` lets Mem0's LLM extract facts by default."""
        if self.config.infer == "always":
            return True
        return self.config.infer == "auto" and bool(self.api_key)

    # ------------------------------------------------------------------ lifecycle
    def _build(self) -> Any:
        import_mem0()
        from mem0 import AsyncMemory
        from mem0.configs.base import MemoryConfig

        self.path.mkdir(parents=True, exist_ok=True)
        # enable_sampling_parameters=False: Mem0 would send `temperature`, which current anthropic
        # clients no longer accept for these models.
        llm: dict[str, Any] = {"model": self.config.llm_model, "api_key": self.api_key or "no-key-offline",
                               "max_tokens": 2000, "enable_sampling_parameters": False}
        if self.config.llm_base_url:
            llm["anthropic_base_url"] = self.config.llm_base_url
        elif not self.api_key:
            llm["anthropic_base_url"] = UNUSED_ENDPOINT
        config = MemoryConfig(
            vector_store={"provider": "qdrant", "config": {
                "collection_name": self.config.collection, "embedding_model_dims": self.embedder.dim,
                "path": str(self.path / "qdrant"), "on_disk": True}},
            # A stand-in that is constructed but never called: replaced by our embedder below.
            embedder={"provider": "openai", "config": {"api_key": "unused", "openai_base_url": UNUSED_ENDPOINT,
                                                       "embedding_dims": self.embedder.dim}},
            llm={"provider": "anthropic", "config": llm},
            history_db_path=str(self.path / "history.db"),
        )
        mem = AsyncMemory(config)
        mem.embedding_model = _make_embedding_adapter(self.embedder)
        return mem

    async def start(self) -> None:
        if self._mem is not None:
            return
        try:
            self._mem = await asyncio.to_thread(self._build)
        except (MissingExtra, ProviderError):
            raise
        except Exception as exc:  # qdrant/sqlite/pydantic errors while opening: the backend is unusable
            raise ProviderUnavailable(f"cannot open Mem0 store in {self.path}: {exc}") from exc

    async def aclose(self) -> None:
        if self._mem is None:
            return
        mem, self._mem = self._mem, None
        await asyncio.to_thread(self._close, mem)

    @staticmethod
    def _close(mem: Any) -> None:
        mem.close()
        # Mem0 leaves its parts' clients open: close the store and the LLM's HTTP connections.
        for part in (mem.vector_store, mem.llm):
            client = getattr(part, "client", None)
            if client is not None and callable(getattr(client, "close", None)):
                client.close()

    @property
    def mem(self) -> Any:
        if self._mem is None:
            raise ProviderError("the provider is not started: use 'async with provider:' or await start()")
        return self._mem

    # ------------------------------------------------------------------ helpers
    async def _items(self, user_id: str, filters: Mapping[str, Any], limit: int = MAX_LIST) -> list[dict[str, Any]]:
        try:
            result = await self.mem.get_all(filters={**filters, "user_id": user_id}, top_k=limit, show_expired=True)
        except ValueError as exc:
            raise ProviderError(f"Mem0 rejected the query: {exc}") from exc
        return [i for i in result["results"] if i.get("user_id") == user_id and "dx_id" in (i.get("metadata") or {})]

    async def _item(self, memory_id: str, user_id: str) -> dict[str, Any] | None:
        items = await self._items(user_id, {"dx_id": memory_id}, limit=1)
        return items[0] if items else None

    async def _set_payload(self, point_id: str, payload: Mapping[str, Any]) -> None:
        await asyncio.to_thread(self.mem.vector_store.update, vector_id=point_id, payload=dict(payload))

    # ------------------------------------------------------------------ primitives
    async def add(self, memory: Memory) -> Memory:
        async with self._lock:
            if await self._item(memory.id, memory.user_id) is not None:
                raise InvalidMemory(f"a memory with id {memory.id!r} already exists")
            payload = memory_payload(memory)
            payload["created_at"] = memory.created_at.isoformat()
            payload["dx_events"] = "[]"
            try:
                result = await self.mem.add(memory.content, user_id=memory.user_id, run_id=memory.session_id,
                                            metadata=payload, infer=False)
            except ValueError as exc:
                raise InvalidMemory(f"Mem0 refused the memory: {exc}") from exc
        if not result.get("results"):
            raise ProviderError(f"Mem0 stored nothing for memory {memory.id}")
        return memory

    async def add_messages(self, messages: Sequence[Mapping[str, str]] | str, *, user_id: str,
                           session_id: str | None = None, project: str | None = None,
                           source_ids: Sequence[str] = (), infer: bool | None = None) -> builtins.list[Memory]:
        """Let Mem0 turn raw messages into memories (``AsyncMemory.add``).

        With ``infer`` (default: :attr:`infer_enabled`) Mem0's LLM extracts the
        facts (Haiku through its Anthropic provider); without it every non-system
        message is stored as is. Returns the memories written (type FACT).
        """
        use_infer = self.infer_enabled if infer is None else infer
        msgs = [{"role": "user", "content": messages}] if isinstance(messages, str) else [dict(m) for m in messages]
        try:
            result = await self.mem.add(msgs, user_id=user_id, run_id=session_id, infer=use_infer,
                                        metadata={"dx_events": "[]", "dx_deleted": False})
        except Exception as exc:  # Mem0 raises its LLMError / provider errors: translate at the boundary
            raise ProviderError(f"Mem0 could not add the messages: {exc}") from exc
        out = []
        now = utcnow()
        for row in result.get("results", []):
            if row.get("event") != "ADD" or not row.get("memory"):
                continue
            memory = Memory(content=row["memory"], user_id=user_id, session_id=session_id, project=project,
                            source_ids=tuple(source_ids), created_at=now,
                            metadata={"mem0_id": row["id"], "mem0_infer": use_infer})
            await self._set_payload(row["id"], memory_payload(memory))
            await self.record_event(MemoryEvent(memory.id, "ADD", "extracted by Mem0" if use_infer else
                                                "stored by Mem0 (infer=False)", now), user_id=user_id)
            out.append(memory)
        return out

    async def get(self, memory_id: str, *, user_id: str, include_deleted: bool = False) -> Memory:
        item = await self._item(memory_id, user_id)
        if item is None:
            raise MemoryNotFound(f"no memory {memory_id!r} for user {user_id!r}")
        memory = memory_from_item(item, user_id)
        if memory.deleted and not include_deleted:
            raise MemoryNotFound(f"no memory {memory_id!r} for user {user_id!r}")
        return memory

    async def update(self, memory_id: str, *, user_id: str, **changes: Any) -> Memory:
        unknown = set(changes) - UPDATABLE_FIELDS
        if unknown:
            raise InvalidMemory(f"cannot update field(s): {', '.join(sorted(unknown))}")
        async with self._lock:
            item = await self._item(memory_id, user_id)
            if item is None or (item.get("metadata") or {}).get("dx_deleted"):
                raise MemoryNotFound(f"no memory {memory_id!r} for user {user_id!r}")
            current = memory_from_item(item, user_id)
            updated = current.replace(**changes, updated_at=utcnow())
            payload = memory_payload(updated)
            if updated.content != current.content:
                await self.mem.update(item["id"], text=updated.content, metadata=payload)
            else:
                await self._set_payload(item["id"], payload)
        return updated

    async def delete(self, memory_id: str, *, user_id: str, hard: bool = False) -> bool:
        item = await self._item(memory_id, user_id)
        if item is None:
            return False
        if not hard:
            if (item.get("metadata") or {}).get("dx_deleted"):
                return False
            await self._set_payload(item["id"], {"dx_deleted": True, "dx_updated": utcnow().isoformat()})
            await self.record_event(MemoryEvent(memory_id, "FORGET", "soft delete by request", utcnow()),
                                    user_id=user_id)
            return True
        await self.mem.delete(item["id"])
        await asyncio.to_thread(self._purge_history, item["id"])
        return True

    def _purge_history(self, point_id: str) -> None:
        """Erase Mem0's history rows of a hard-deleted memory (they keep its old text)."""
        db = self.mem.db
        with db._lock:
            db.connection.execute("DELETE FROM history WHERE memory_id = ?", (point_id,))
            db.connection.commit()

    async def list(self, *, user_id: str, filters: SearchFilters | None = None, limit: int = 100,
                   offset: int = 0) -> builtins.list[Memory]:
        items = await self._items(user_id, mem0_filters(user_id, filters or SearchFilters()))
        items.sort(key=lambda i: (i["metadata"].get("dx_created_ts") or 0.0, i["id"]), reverse=True)
        window = items[offset:offset + limit] if limit > 0 else items[offset:]
        return [memory_from_item(i, user_id) for i in window]

    async def count(self, *, user_id: str, filters: SearchFilters | None = None) -> int:
        return len(await self._items(user_id, mem0_filters(user_id, filters or SearchFilters())))

    async def users(self) -> builtins.list[str]:
        """Every user id with at least one memory in this Mem0 store."""
        def scan() -> set[str]:
            store = self.mem.vector_store
            found: set[str] = set()
            offset = None
            while True:
                points, offset = store.client.scroll(collection_name=store.collection_name, limit=1000,
                                                     offset=offset, with_payload=["user_id"], with_vectors=False)
                found.update(p.payload["user_id"] for p in points if p.payload and p.payload.get("user_id"))
                if offset is None:
                    return found
        return sorted(await asyncio.to_thread(scan))

    async def superseded_by(self, memory_id: str, *, user_id: str) -> builtins.list[Memory]:
        items = await self._items(user_id, {"dx_superseded_by": memory_id, "dx_deleted": False})
        return [memory_from_item(i, user_id) for i in items]

    async def search(self, query: str, *, user_id: str, filters: SearchFilters | None = None,
                     limit: int = 10) -> builtins.list[SearchResult]:
        if not query or not query.strip() or limit <= 0:
            return []
        f = mem0_filters(user_id, filters or SearchFilters(), for_search=True)
        try:
            result = await self.mem.search(query, top_k=limit, filters=f, threshold=self.config.search_threshold,
                                           show_expired=True)
        except ValueError as exc:
            raise ProviderError(f"Mem0 rejected the search: {exc}") from exc
        out = []
        for rank, item in enumerate(result["results"], 1):
            if item.get("user_id") != user_id or "dx_id" not in (item.get("metadata") or {}):
                continue
            score = min(1.0, max(0.0, float(item.get("score") or 0.0)))
            out.append(SearchResult(memory_from_item(item, user_id), round(score, 6), vector_rank=rank,
                                    similarity=score))
        return out

    # ------------------------------------------------------------------ events
    async def record_event(self, event: MemoryEvent, *, user_id: str) -> None:
        async with self._lock:
            item = await self._item(event.memory_id, user_id)
            if item is None:
                logger.warning("event %s for unknown memory %s dropped", event.action, event.memory_id)
                return
            log = json.loads(item["metadata"].get("dx_events") or "[]")
            log.append(event.to_dict())
            await self._set_payload(item["id"], {"dx_events": json.dumps(log, default=str)})

    async def events(self, memory_id: str, *, user_id: str) -> builtins.list[MemoryEvent]:
        """Our events of the memory merged with Mem0's own history rows (action ``MEM0_<EVENT>``)."""
        item = await self._item(memory_id, user_id)
        if item is None:
            return []
        out = [MemoryEvent(memory_id, f"MEM0_{row.get('event')}", "Mem0 history",
                           as_utc(row.get("updated_at") or row.get("created_at")) or utcnow(),
                           details={"before": row.get("old_memory"), "after": row.get("new_memory"),
                                    "mem0_id": item["id"]})
               for row in await self.mem.history(item["id"])]
        out += [MemoryEvent(e["memory_id"], e["action"], e["reason"], as_utc(e["at"]) or utcnow(), e.get("related_id"),
                            e.get("details") or {}) for e in json.loads(item["metadata"].get("dx_events") or "[]")]
        out.sort(key=lambda e: e.at)
        return out

    # ------------------------------------------------------------------ health
    async def health_check(self) -> HealthStatus:
        problems: builtins.list[str] = []
        details: dict[str, Any] = {"path": str(self.path), "collection": self.config.collection,
                                   "embedder": self.embedder.model_id, "vector_store": "qdrant (local, on disk)",
                                   "llm": self.config.llm_model if self.infer_enabled else "off (infer=False)"}
        try:
            details["mem0ai"] = importlib_metadata.version("mem0ai")
        except importlib_metadata.PackageNotFoundError:
            problems.append(f"mem0ai is not installed: {INSTALL_HINT}")
        if self._mem is None:
            problems.append("the provider is not started")
        else:
            try:
                info = await asyncio.to_thread(self.mem.vector_store.col_info)
                details["points"] = info.points_count
            except Exception as exc:  # any store error is a health problem, reported not raised
                problems.append(f"vector store error: {exc}")
        return HealthStatus(healthy=not problems, provider=self.name, details=details, problems=tuple(problems))
