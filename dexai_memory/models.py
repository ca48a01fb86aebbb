"""The data model shared by every provider, the daemon and the hooks.

A :class:`Memory` is one durable statement about a user (a fact, a preference, a
commitment, ...), with its provenance (``source_ids``: the conversation turns it
came from), its validity window (``valid_from`` / ``valid_until``) and its place
in a supersession chain (``superseded_by``).
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .errors import InvalidMemory


class MemoryType(enum.StrEnum):
    """What kind of statement a memory is. Retention is configured per type."""

    FACT = "FACT"
    PREFERENCE = "PREFERENCE"
    EVENT = "EVENT"
    INSIGHT = "INSIGHT"
    RELATIONSHIP = "RELATIONSHIP"
    COMMITMENT = "COMMITMENT"
    TASK = "TASK"
    SESSION_NOTE = "SESSION_NOTE"
    #: Working state captured before compaction or at session end.
    SNAPSHOT = "SNAPSHOT"
    #: A raw conversation turn or transcript archived in L3.
    TRANSCRIPT = "TRANSCRIPT"
    #: A session (or a compacted stretch of one) told as one story: title, summary and its
    #: artifacts (files edited, commands, commits, errors fixed), see :mod:`dexai_memory.capture.episodes`.
    #: Searched only when asked for by type (prefetch, ``recall --type EPISODE``), never in the L1 block.
    EPISODE = "EPISODE"
    #: A workflow the user states or repeats: how they release, run the tests, make a fix, as steps
    #: in order ("To release: bump the version, then tag, then push the tag.").
    PROCEDURE = "PROCEDURE"
    #: A code convention the user states: naming, error handling, test layout ("Tests are named
    #: test_<unit>_<case>.", "Errors derive from DexaiError.").
    PATTERN = "PATTERN"

    @classmethod
    def parse(cls, value: str | MemoryType) -> MemoryType:
        """Parse a type name case-insensitively; raise :class:`InvalidMemory` if unknown."""
        if isinstance(value, MemoryType):
            return value
        try:
            return cls(str(value).strip().upper())
        except ValueError:
            names = ", ".join(m.value for m in cls)
            raise InvalidMemory(f"unknown memory type {value!r} (expected one of: {names})") from None


class Tier(enum.StrEnum):
    """Where a memory lives: L1 in context, L2 fast search, L3 archive."""

    L1 = "L1"
    L2 = "L2"
    L3 = "L3"

    @classmethod
    def parse(cls, value: str | Tier) -> Tier:
        """Parse a tier name case-insensitively; raise :class:`InvalidMemory` if unknown."""
        if isinstance(value, Tier):
            return value
        try:
            return cls(str(value).strip().upper())
        except ValueError:
            raise InvalidMemory(f"unknown tier {value!r} (expected L1, L2 or L3)") from None


class UpdateAction(enum.StrEnum):
    """How a new note relates to an existing memory (ADD / UPDATE / SUPERSEDE / NOOP)."""

    ADD = "ADD"
    UPDATE = "UPDATE"
    SUPERSEDE = "SUPERSEDE"
    NOOP = "NOOP"


#: Confidence of a memory added by hand (``dexai memory add``, ``dexai memory facts add``):
#: starts hand-added facts lower than extracted ones, and lets repetition raise them.
MANUAL_CONFIDENCE = 0.6
#: Most confidence an extracted memory starts with (a lower extractor confidence is kept).
EXTRACTED_CONFIDENCE = 0.75
#: What one more mention of a memory (a repeated or refined statement) adds to its confidence.
CONFIDENCE_BOOST = 0.15


#: What one more mention adds to a memory written by hand: it starts lower, and rises faster.
MANUAL_CONFIDENCE_BOOST = 0.25
#: ``metadata["source"]`` of memories written by hand (``dexai memory add`` / ``facts add``, the panel).
MANUAL_SOURCES = frozenset({"hand", "cli", "panel"})


def by_hand(memory: Memory) -> bool:
    """Whether ``memory`` was written by hand (its ``metadata["source"]`` is one of :data:`MANUAL_SOURCES`)."""
    return str((memory.metadata or {}).get("source")) in MANUAL_SOURCES


def boosted(confidence: float, *, manual: bool = False) -> float:
    """``confidence`` after one more mention: + :data:`CONFIDENCE_BOOST` (+ :data:`MANUAL_CONFIDENCE_BOOST`
    for a memory written by hand), at most 1.0."""
    return min(1.0, round(confidence + (MANUAL_CONFIDENCE_BOOST if manual else CONFIDENCE_BOOST), 4))


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def new_id() -> str:
    """A new memory id: 'm_' + 20 hex chars of a uuid4."""
    import uuid  # not at import time: uuid pulls in platform, and the command hook never makes ids

    return "m_" + uuid.uuid4().hex[:20]


def as_utc(value: datetime | str | None) -> datetime | None:
    """Convert an ISO string or datetime to an aware UTC datetime (naive = UTC)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str | datetime):
        raise InvalidMemory(f"not an ISO 8601 date/time: {value!r} (write it as a string, e.g. "
                            "\"2024-05-08T13:56:00Z\")")
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidMemory(f"not an ISO 8601 date/time: {value!r}") from None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class Memory:
    """One stored memory. Frozen: use :meth:`replace` to derive a changed copy."""

    content: str
    user_id: str
    id: str = field(default_factory=new_id)
    project: str | None = None
    type: MemoryType = MemoryType.FACT
    importance: int = 5
    confidence: float = 0.8
    mention_count: int = 1
    tier: Tier = Tier.L2
    source_ids: tuple[str, ...] = ()
    session_id: str | None = None
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    superseded_by: str | None = None
    superseded_at: datetime | None = None
    archived: bool = False
    pinned: bool = False
    deleted: bool = False
    retrieval_count: int = 0
    citation_count: int = 0
    #: Times it was in a prompt's recall block and the reply that followed did not use it.
    ignore_count: int = 0
    last_accessed: datetime | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        content = self.content.strip() if isinstance(self.content, str) else ""
        if not content:
            raise InvalidMemory("memory content must be a non-empty string")
        if not self.user_id or not isinstance(self.user_id, str):
            raise InvalidMemory("memory user_id must be a non-empty string")
        object.__setattr__(self, "content", content)
        object.__setattr__(self, "type", MemoryType.parse(self.type))
        object.__setattr__(self, "tier", Tier.parse(self.tier))
        raw: Any = self.importance
        try:
            if isinstance(raw, float) and not raw.is_integer():
                raise ValueError  # 5.7 is an error, never silently truncated to 5
            importance = int(raw)
        except (TypeError, ValueError):
            raise InvalidMemory(f"importance must be a whole number from 1 to 10, got {raw!r}") from None
        try:
            confidence = float(self.confidence)
        except (TypeError, ValueError):
            raise InvalidMemory(f"confidence must be a number from 0 to 1, got {self.confidence!r}") from None
        if not 1 <= importance <= 10:
            raise InvalidMemory(f"importance must be between 1 and 10, got {importance}")
        if not 0.0 <= confidence <= 1.0:
            raise InvalidMemory(f"confidence must be between 0 and 1, got {confidence}")
        object.__setattr__(self, "importance", importance)
        object.__setattr__(self, "confidence", confidence)
        object.__setattr__(self, "source_ids", tuple(str(s) for s in self.source_ids))
        for name in ("created_at", "updated_at", "valid_from", "valid_until", "superseded_at", "last_accessed"):
            object.__setattr__(self, name, as_utc(getattr(self, name)))
        if self.valid_from is None:
            object.__setattr__(self, "valid_from", self.created_at)
        object.__setattr__(self, "metadata", dict(self.metadata or {}))

    @property
    def is_valid(self) -> bool:
        """True while the memory is current: not superseded, expired, archived or deleted."""
        return (
            self.superseded_by is None
            and self.valid_until is None
            and not self.archived
            and not self.deleted
        )

    def valid_at(self, when: datetime) -> bool:
        """True if the memory was the current statement at ``when`` (as-of semantics)."""
        when = as_utc(when) or utcnow()
        start = self.valid_from or self.created_at
        return start <= when and (self.valid_until is None or when < self.valid_until) and not self.deleted

    def replace(self, **changes: Any) -> Memory:
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (datetimes as ISO strings, enums as names)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, datetime):
                value = value.isoformat()
            elif isinstance(value, enum.Enum):
                value = value.value
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = dict(value)
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], **overrides: Any) -> Memory:
        """Build a memory from a dict such as :meth:`to_dict` returns.

        Unknown keys raise :class:`InvalidMemory` naming them, so a typo in an
        import file is not silently dropped.
        """
        allowed = {f.name for f in dataclasses.fields(cls)}
        merged = {**data, **overrides}
        unknown = sorted(set(merged) - allowed)
        if unknown:
            raise InvalidMemory(f"unknown field(s): {', '.join(unknown)}")
        if "metadata" in merged and isinstance(merged["metadata"], str):
            merged["metadata"] = json.loads(merged["metadata"])
        if "source_ids" in merged and isinstance(merged["source_ids"], str):
            merged["source_ids"] = [merged["source_ids"]]
        try:
            return cls(**merged)
        except TypeError as exc:
            raise InvalidMemory(str(exc)) from None


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Filters for :meth:`MemoryProvider.search` and :meth:`MemoryProvider.list`.

    ``valid_only`` (default) keeps current memories only: not superseded, not
    expired, not archived. ``as_of`` instead keeps what was valid at that time
    (superseded rows included). Deleted memories are never returned.
    """

    project: str | None = None
    types: tuple[MemoryType, ...] = ()
    tiers: tuple[Tier, ...] = ()
    session_id: str | None = None
    valid_only: bool = True
    include_archived: bool = False
    as_of: datetime | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    pinned: bool | None = None
    min_importance: int | None = None

    @classmethod
    def make(
        cls,
        *,
        types: Iterable[str | MemoryType] = (),
        tiers: Iterable[str | Tier] = (),
        **kwargs: Any,
    ) -> SearchFilters:
        """Build filters, parsing type and tier names."""
        for key in ("as_of", "created_after", "created_before"):
            if key in kwargs:
                kwargs[key] = as_utc(kwargs[key])
        return cls(
            types=tuple(MemoryType.parse(t) for t in types),
            tiers=tuple(Tier.parse(t) for t in tiers),
            **kwargs,
        )


@dataclass(frozen=True, slots=True)
class SearchResult:
    """A memory found by search, with its fused score in [0, 1] and the parts of it."""

    memory: Memory
    score: float
    bm25_rank: int | None = None
    vector_rank: int | None = None
    similarity: float | None = None


@dataclass(frozen=True, slots=True)
class UpdateDecision:
    """The classification of a new note against one existing memory."""

    action: UpdateAction
    memory_id: str | None
    reason: str
    merged_content: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryEvent:
    """One entry of a memory's history: what happened, when and why."""

    memory_id: str
    action: str
    reason: str
    at: datetime
    related_id: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "memory_id": self.memory_id,
            "action": self.action,
            "reason": self.reason,
            "at": self.at.isoformat(),
            "related_id": self.related_id,
            "details": dict(self.details),
        }


#: Resolutions of a contradiction: the older memory a, the newer b, both, or a merged statement.
RESOLUTIONS = ("a_wins", "b_wins", "both_valid", "merged")


@dataclass(frozen=True, slots=True)
class Contradiction:
    """Two memories that contradict each other: ``memory_a`` (the older) and ``memory_b`` (the newer).

    ``resolution`` is None while it is open (both memories stay current until
    someone decides), else one of :data:`RESOLUTIONS`; ``auto`` when
    supersession resolved it on its own (b_wins). ``id`` is assigned by the store.
    """

    user_id: str
    memory_a: str
    memory_b: str
    reason: str = ""
    detected_at: datetime = field(default_factory=utcnow)
    resolution: str | None = None
    resolved_at: datetime | None = None
    note: str | None = None
    auto: bool = False
    id: int | None = None

    @property
    def is_open(self) -> bool:
        return self.resolution is None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "user_id": self.user_id, "memory_a": self.memory_a, "memory_b": self.memory_b,
                "reason": self.reason, "detected_at": self.detected_at.isoformat(), "resolution": self.resolution,
                "resolved_at": self.resolved_at.isoformat() if self.resolved_at else None, "note": self.note,
                "auto": self.auto}


#: Kinds of link between two memories (found at consolidation, :mod:`dexai_memory.lifecycle.links`):
#: they name the same rare entity, the same file; b fixes the error a reports; b gives the reason
#: for the decision a states.
LINK_KINDS = ("entity", "file", "fix", "reason")


@dataclass(frozen=True, slots=True)
class MemoryLink:
    """A link between two memories of one user: ``memory_a`` (the older, the error, the decision)
    and ``memory_b`` (the newer, its fix, its reason), of a ``kind`` of :data:`LINK_KINDS`, with
    what they share (``reason``: "both name Sweden"). A link is stored once per (a, b, kind)."""

    user_id: str
    memory_a: str
    memory_b: str
    kind: str
    reason: str = ""
    created_at: datetime = field(default_factory=utcnow)

    def __post_init__(self) -> None:
        if self.kind not in LINK_KINDS:
            raise InvalidMemory(f"unknown link kind {self.kind!r} (expected one of: {', '.join(LINK_KINDS)})")
        if self.memory_a == self.memory_b:
            raise InvalidMemory(f"a memory cannot be linked to itself ({self.memory_a})")

    def other(self, memory_id: str) -> str:
        """The memory at the other end from ``memory_id``."""
        return self.memory_b if memory_id == self.memory_a else self.memory_a

    def to_dict(self) -> dict[str, Any]:
        return {"memory_a": self.memory_a, "memory_b": self.memory_b, "kind": self.kind, "reason": self.reason,
                "created_at": self.created_at.isoformat()}


@dataclass(frozen=True, slots=True)
class HealthStatus:
    """What :meth:`MemoryProvider.health_check` reports."""

    healthy: bool
    provider: str
    details: Mapping[str, Any] = field(default_factory=dict)
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Turn:
    """One conversation turn (or tool result) entering the warm path.

    ``id`` is the turn's stable id (a transcript uuid, a LoCoMo ``dia_id`` such as
    "D1:3"); it becomes the ``source_ids`` of every memory extracted from it and
    the idempotency key of the extraction queue.
    """

    id: str
    user_id: str
    content: str
    role: str = "user"
    speaker: str | None = None
    timestamp: datetime | None = None
    session_id: str | None = None
    project: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "user_id": self.user_id, "content": self.content, "role": self.role,
            "speaker": self.speaker, "timestamp": self.timestamp.isoformat() if self.timestamp else None,
            "session_id": self.session_id, "project": self.project, "metadata": dict(self.metadata),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Turn:
        return cls(
            id=str(data["id"]), user_id=str(data["user_id"]), content=str(data["content"]),
            role=str(data.get("role") or "user"), speaker=data.get("speaker"),
            timestamp=as_utc(data.get("timestamp")), session_id=data.get("session_id"),
            project=data.get("project"), metadata=dict(data.get("metadata") or {}),
        )


@dataclass(frozen=True, slots=True)
class Commitment:
    """A promise or reminder: what, to/with whom, and when."""

    what: str
    who: str | None = None
    due_at: datetime | None = None
    due_text: str | None = None
    status: str = "open"


@dataclass(frozen=True, slots=True)
class ExtractedNote:
    """A durable statement an extractor found in one or more turns."""

    content: str
    type: MemoryType = MemoryType.FACT
    importance: int = 5
    confidence: float = 0.7
    source_ids: tuple[str, ...] = ()
    event_date: str | None = None
    entities: tuple[str, ...] = ()
    commitment: Commitment | None = None
    #: What kind of statement it is beyond its type ("warning", "instruction", "decision");
    #: stored as ``metadata["category"]`` like the ``remember`` tool's categories.
    category: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the extraction queue journals notes between extraction and storage)."""
        c = self.commitment
        return {"content": self.content, "type": self.type.value, "importance": self.importance,
                "confidence": self.confidence, "source_ids": list(self.source_ids), "event_date": self.event_date,
                "entities": list(self.entities), "category": self.category,
                "commitment": None if c is None else {
                    "what": c.what, "who": c.who, "due_at": c.due_at.isoformat() if c.due_at else None,
                    "due_text": c.due_text, "status": c.status}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExtractedNote:
        """The note :meth:`to_dict` wrote."""
        c = data.get("commitment")
        return cls(content=str(data["content"]), type=MemoryType.parse(data.get("type") or "FACT"),
                   importance=int(data.get("importance", 5)), confidence=float(data.get("confidence", 0.7)),
                   source_ids=tuple(data.get("source_ids") or ()), event_date=data.get("event_date"),
                   entities=tuple(data.get("entities") or ()), category=data.get("category"),
                   commitment=None if not c else Commitment(
                       what=str(c["what"]), who=c.get("who"), due_at=as_utc(c.get("due_at")),
                       due_text=c.get("due_text"), status=str(c.get("status") or "open")))

    def to_memory(self, *, user_id: str, session_id: str | None = None, project: str | None = None,
                  created_at: datetime | None = None) -> Memory:
        """The memory this note would be stored as (confidence at most :data:`EXTRACTED_CONFIDENCE`)."""
        metadata: dict[str, Any] = {}
        if self.event_date:
            metadata["event_date"] = self.event_date
        if self.entities:
            metadata["entities"] = list(self.entities)
        if self.category:
            metadata["category"] = self.category
        if self.commitment:
            metadata["commitment"] = {
                "what": self.commitment.what, "who": self.commitment.who,
                "due_at": self.commitment.due_at.isoformat() if self.commitment.due_at else None,
                "due_text": self.commitment.due_text, "status": self.commitment.status,
            }
        extra: dict[str, Any] = {"created_at": created_at} if created_at else {}
        return Memory(content=self.content, user_id=user_id, type=self.type, importance=self.importance,
                      confidence=min(self.confidence, EXTRACTED_CONFIDENCE), source_ids=self.source_ids, session_id=session_id,
                      project=project, metadata=metadata, **extra)


#: ``metadata["origin"]`` of a memory extracted from tool output (a PostToolUse result: web page, file).
TOOL_ORIGIN = "tool"
#: ``metadata["source"]`` prefixes of turns that are tool results (command hooks, SDK callbacks).
TOOL_SOURCES = ("claude-code:tool", "agent-sdk:tool")


def is_tool_origin(m: Memory) -> bool:
    """Whether ``m`` came from tool output rather than from the user or the assistant: a note the
    pipeline marked ``origin="tool"``, or a raw tool turn archived as a transcript."""
    meta = m.metadata or {}
    source = meta.get("source")
    return (meta.get("origin") == TOOL_ORIGIN or meta.get("role") == "tool"
            or (isinstance(source, str) and source.startswith(TOOL_SOURCES)))
