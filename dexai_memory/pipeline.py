"""The warm path, in one direction: turn -> redaction -> gate -> queue -> extractor
-> supersession -> provider.

* :meth:`Pipeline.admit` redacts a turn (:mod:`dexai_memory.text.redaction`) and
  scores it with the gate; the daemon queues the turns that pass.
* :meth:`Pipeline.handle` is the queue's job handler: it extracts notes from
  a batch of turns and stores each note through supersession.
* :meth:`Pipeline.store_note` is supersession: the note is compared with the
  ``supersession.comparison_top_k`` most similar valid memories of its user,
  classified, resolved to one action (Haiku with a key, the offline rules otherwise) and
  carried out by :func:`~dexai_memory.supersession.store.store_statement`, the same function
  every hand-added fact goes through, which records the decision and its reason in the
  memory's history (``dexai memory history``). A commitment is its COMMITMENT memory's
  metadata (:mod:`dexai_memory.commitments`). The daemon calls :meth:`Pipeline.handle`
  holding its write lock.
* :meth:`Pipeline.ingest` feeds a whole conversation through the same steps
  and archives every raw turn in L3 as a TRANSCRIPT memory.

Idempotency (why a replayed turn is not stored twice; see
:mod:`dexai_memory.capture.queue`): every note gets a deterministic id
(:func:`note_id`, from user, source turns and content) and is skipped if that
id exists; a note the classifier would merge into a memory whose
``source_ids`` already hold all of the note's turns is skipped too.
Transcripts get a deterministic id per (user, turn id).

The pipeline wraps the provider's embedder (when it has one) in a small
cache, so a note is embedded once for both its supersession search and its
insert, and ingest embeds a whole chunk of texts in one batch.
"""

from __future__ import annotations

import collections
import hashlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from .capture.evidence import evidence_kind, is_tool_turn
from .capture.known import ClaudeMemory
from .commitments import CommitmentStore
from .embeddings import CachedEmbedder
from .errors import InvalidMemory, MemoryNotFound
from .lifecycle.closing import close_from_turn, is_session_user
from .models import (
    TOOL_ORIGIN,
    Commitment,
    ExtractedNote,
    Memory,
    MemoryEvent,
    MemoryType,
    SearchFilters,
    Tier,
    Turn,
    UpdateAction,
    utcnow,
)
from .supersession.candidates import CandidateIndex
from .supersession.contradictions import Unsure
from .supersession.store import Decided, decide_statement, store_statement

if TYPE_CHECKING:
    from .capture.gate import Gate, GateResult
    from .capture.queue import Job
    from .config import Settings
    from .extraction.base import Extractor
    from .providers.base import MemoryProvider
    from .supersession.classifier import UpdateClassifier

logger = logging.getLogger(__name__)

#: Recent turns given to the gate (novelty) and the extractor (context).
RECENT_TURNS = 5
#: A turn's metadata key holding a dict copied into the metadata of every memory taken from the
#: turn (its notes and its L3 transcript): where the turn came from, e.g. ``{"source": "history",
#: "history_session": ...}`` for a past Claude Code session (:mod:`dexai_memory.history`).
NOTE_METADATA = "note_metadata"
#: Turns handled per ingest step (one embedding batch, one archive transaction).
INGEST_CHUNK = 200
ProgressCallback = Callable[[int], None]


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:20]


def note_id(user_id: str, source_ids: Sequence[str], content: str) -> str:
    """The deterministic memory id of a note: same user, turns and text -> same id."""
    return "m_" + _digest(user_id, ",".join(sorted(source_ids)), " ".join(content.lower().split()))


def transcript_id(user_id: str, turn_id: str) -> str:
    """The deterministic memory id of a turn's L3 transcript."""
    return "m_" + _digest(user_id, "transcript", turn_id)


@dataclass
class PipelineReport:
    """What a run of the pipeline did (``dexai memory ingest`` prints it)."""

    turns: int = 0
    gated: int = 0
    extracted: int = 0
    added: int = 0
    updated: int = 0
    superseded: int = 0
    noop: int = 0
    #: Notes skipped because they were stored before (a replayed turn).
    skipped: int = 0
    commitments: int = 0
    #: Raw turns archived in L3 (ingest).
    archived: int = 0

    def count(self, action: UpdateAction) -> None:
        name = {UpdateAction.ADD: "added", UpdateAction.UPDATE: "updated",
                UpdateAction.SUPERSEDE: "superseded", UpdateAction.NOOP: "noop"}[action]
        setattr(self, name, getattr(self, name) + 1)

    def merge(self, other: PipelineReport) -> PipelineReport:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self

    def to_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class IngestOptions:
    """How :meth:`Pipeline.ingest` admits and archives turns (see its docstring)."""

    threshold: float
    archive_evidence: bool = True
    archive_turns: bool = True


@dataclass
class WriteBehind:
    """Ingest's buffer of notes decided ADD but not yet written (see :meth:`Pipeline.store_note`)."""

    #: Memory ids known to exist (or buffered): a note with one of them is a replay.
    known_ids: set[str] = field(default_factory=set)
    #: True when ``known_ids`` holds every id of the user (no per-note existence check needed).
    prefetched: bool = False
    pending: dict[str, Memory] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    commitments: list[tuple[Commitment, Memory]] = field(default_factory=list)
    #: Word-overlap supersession candidates (offline classifier), kept current as notes are stored.
    index: CandidateIndex | None = None


def install_embedding_cache(provider: MemoryProvider, size: int = 8192) -> CachedEmbedder | None:
    """Wrap ``provider.embedder`` (if any) in a :class:`CachedEmbedder`; idempotent."""
    inner = getattr(provider, "embedder", None)
    if inner is None:
        return None
    if isinstance(inner, CachedEmbedder):
        return inner
    cached = CachedEmbedder(inner, size)
    provider.embedder = cached  # type: ignore[attr-defined]
    return cached


def _notes_by_turn(turns: Sequence[Turn], notes: Sequence[ExtractedNote]) -> dict[tuple[str, str], list[ExtractedNote]]:
    """Each turn's notes, keyed (user id, turn id): a note goes to every turn it names in
    ``source_ids`` (all the turns when it names none); a turn with no note gets an empty list."""
    out: dict[tuple[str, str], list[ExtractedNote]] = {(t.user_id, t.id): [] for t in turns}
    for note in notes:
        named = [t for t in turns if t.id in note.source_ids] or list(turns)
        for t in named:
            out[(t.user_id, t.id)].append(note)
    return out


def _caption(turn: Turn) -> str | None:
    for key in ("caption", "blip_caption"):
        value = turn.metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def note_metadata(turn: Turn) -> dict[str, Any]:
    """What ``turn`` asks to be copied into the metadata of its memories (:data:`NOTE_METADATA`)."""
    value = turn.metadata.get(NOTE_METADATA) if turn.metadata else None
    return dict(value) if isinstance(value, Mapping) else {}


def transcript_memory(turn: Turn) -> Memory:
    """The L3 TRANSCRIPT memory archiving one raw turn ("Speaker: text [image: caption]")."""
    speaker = turn.speaker or turn.role.capitalize()
    content = f"{speaker}: {turn.content}"
    caption = _caption(turn)
    if caption:
        content += f" [image: {caption}]"
    extra: dict[str, Any] = {"created_at": turn.timestamp} if turn.timestamp else {}
    meta = {k: v for k, v in turn.metadata.items() if k != NOTE_METADATA}
    return Memory(content=content, user_id=turn.user_id, id=transcript_id(turn.user_id, turn.id),
                  project=turn.project, type=MemoryType.TRANSCRIPT, tier=Tier.L3, importance=3,
                  source_ids=(turn.id,), session_id=turn.session_id,
                  metadata={"role": turn.role, "speaker": turn.speaker, **meta, **note_metadata(turn)}, **extra)


class Pipeline:
    """The warm path for one provider (see the module docstring).

    ``gate``, ``extractor`` and ``commitments`` default to the configured
    ones; tests pass fakes that subclass the same ABCs. ``classifier``
    decides supersession (:func:`~dexai_memory.supersession.store.store_statement`);
    None means the offline rules. The daemon and ``dexai memory ingest`` pass
    the configured one (:func:`~dexai_memory.extraction.factory.make_classifier`).
    """

    def __init__(self, provider: MemoryProvider, settings: Settings, *, gate: Gate | None = None,
                 extractor: Extractor | None = None, commitments: CommitmentStore | None = None,
                 classifier: UpdateClassifier | None = None):
        self.provider = provider
        self.settings = settings
        #: The supersession classifier (None: the offline rules).
        self.classifier = classifier
        self._gate = gate
        self._extractor = extractor
        self.commitments = commitments or CommitmentStore(provider)
        #: Totals over every batch :meth:`handle` processed.
        self.totals = PipelineReport()
        #: Where :meth:`handle` journals extracted notes (job id -> notes) before storing them:
        #: the queue's :meth:`~dexai_memory.capture.queue.ExtractionQueue.save_notes`. None: no journal.
        self.journal: Callable[[Mapping[int, Sequence[ExtractedNote]]], Awaitable[None]] | None = None
        #: Claude Code's own memory files (``CLAUDE.md``, the auto memory): a note they state is not stored.
        self.claude_memory = ClaudeMemory()
        install_embedding_cache(provider)

    @property
    def gate(self) -> Gate:
        if self._gate is None:
            from .capture.gate import Gate

            self._gate = Gate(self.settings.extraction.gate_threshold)
        return self._gate

    @property
    def extractor(self) -> Extractor:
        if self._extractor is None:
            from .extraction.factory import make_extractor

            self._extractor = make_extractor(self.settings)
        return self._extractor

    # ------------------------------------------------------------------ admission
    def admit(self, turn: Turn, recent: Sequence[str] = ()) -> tuple[Turn | None, GateResult]:
        """Clip and redact ``turn``, then score it (:func:`~dexai_memory.capture.admit.admit`).
        Returns (the redacted turn or None, the gate's verdict)."""
        from .capture.admit import admit

        admission = admit(turn, recent, self.gate, max_chars=self.settings.limits.max_turn_chars)
        return admission.turn, admission.verdict

    # ------------------------------------------------------------------ extraction + storage
    async def handle(self, jobs: Sequence[Job]) -> None:
        """The queue's job handler: extract and store a batch (raises to have it retried).

        Notes a job's earlier attempt journaled are reused; new extractions
        are journaled through :attr:`journal` (when set) before anything is
        stored (see :mod:`dexai_memory.capture.queue`, "Exactly once").
        """
        ids = {j.key: j.id for j in jobs}
        saved = {j.key: j.notes for j in jobs if j.notes is not None}

        async def record(extracted: Mapping[tuple[str, str], Sequence[ExtractedNote]]) -> None:
            if self.journal is not None:
                await self.journal({ids[k]: ns for k, ns in extracted.items() if k in ids})

        report = await self.process([(j.turn, j.context) for j in jobs], saved=saved, on_extracted=record)
        self.totals.merge(report)

    async def process(self, items: Sequence[tuple[Turn, Sequence[str]]], *,
                      saved: Mapping[tuple[str, str], Sequence[ExtractedNote]] | None = None,
                      on_extracted: Callable[[Mapping[tuple[str, str], Sequence[ExtractedNote]]],
                                             Awaitable[None]] | None = None) -> PipelineReport:
        """Extract notes from turns (grouped by user, session and project) and store them.

        ``saved`` maps (user id, turn id) to notes already extracted for that
        turn (reused, not extracted again); ``on_extracted`` receives the
        notes of each newly extracted turn, keyed the same way, before they
        are stored.
        """
        from .capture.admit import redact_turn

        saved = saved or {}
        report = PipelineReport(turns=len(items), gated=len(items))
        groups: dict[tuple[str, str | None, str | None], list[tuple[Turn, Sequence[str]]]] = {}
        for turn, context in items:
            # redacted on admission; again here, as the queue file is shared (see capture.admit)
            clean = redact_turn(turn)
            if clean is not None and evidence_kind(clean) is None:  # a row queued by an older version
                groups.setdefault((clean.user_id, clean.session_id, clean.project), []).append((clean, context))
        for group in groups.values():
            turns = [t for t, _ in group]
            fresh = [(t, c) for t, c in group if (t.user_id, t.id) not in saved]
            notes: list[ExtractedNote] = []
            if fresh:
                new = await self.extractor.extract([t for t, _ in fresh], context=tuple(fresh[0][1]))
                if on_extracted is not None:
                    await on_extracted(_notes_by_turn([t for t, _ in fresh], new))
                notes += new
            for t in turns:  # journaled notes of earlier attempts (a note of several turns once)
                for n in saved.get((t.user_id, t.id), ()):
                    if n not in notes:
                        notes.append(n)
            report.extracted += len(notes)
            # closed first: "I sent the report" closes the open commitment it reports done before
            # its note may replace the commitment's text; again after, for a commitment made and
            # done in this same batch
            await self.close_done(turns)
            for note in notes:
                await self.store_note(note, turns, report)
            await self.close_done(turns)
        return report

    async def close_done(self, turns: Sequence[Turn]) -> None:
        """Close the open commitments the session's user says are done ("I sent the report to
        Priya"): :func:`dexai_memory.lifecycle.closing.close_from_turn`."""
        for turn in turns:
            if is_session_user(turn):
                await close_from_turn(self.provider, turn)

    def note_memory(self, note: ExtractedNote, turns: Sequence[Turn]) -> Memory:
        """The memory a note is stored as: scoped like its turns, dated like its latest source turn.

        A note taken (even in part) from a tool result is marked ``metadata["origin"] = "tool"``
        (with ``metadata["tool"]``, the tool's name): it stays out of the profile and the other
        always-on sections until the user confirms it (:func:`dexai_memory.recall.block.always_on`).
        A note taken only from the user's own turns is marked ``origin = "user"`` (a user's
        repeat of a tool memory confirms it). The latest source turn's :data:`NOTE_METADATA` is
        copied in (where a replayed past session's note came from).
        """
        by_id = {t.id: t for t in turns}
        sources = tuple(note.source_ids) or tuple(t.id for t in turns)
        own = [by_id[s] for s in sources if s in by_id] or list(turns)
        scope = own[-1]
        stamps = [t.timestamp for t in own if t.timestamp is not None]
        memory = note.to_memory(user_id=scope.user_id, session_id=scope.session_id, project=scope.project,
                                created_at=max(stamps) if stamps else None)
        tools = [t for t in own if is_tool_turn(t)]
        if tools:
            tool = next((str(t.metadata["tool"]) for t in tools if t.metadata and t.metadata.get("tool")), None)
            memory = memory.replace(metadata={**memory.metadata, "origin": TOOL_ORIGIN,
                                              **({"tool": tool} if tool else {})})
        elif all(t.role == "user" for t in own):
            memory = memory.replace(metadata={**memory.metadata, "origin": "user"})
        if note_metadata(scope):
            memory = memory.replace(metadata={**memory.metadata, **note_metadata(scope)})
        return memory.replace(id=note_id(scope.user_id, sources, note.content), source_ids=sources)

    async def _exists(self, memory_id: str, user_id: str) -> bool:
        try:
            await self.provider.get(memory_id, user_id=user_id, include_deleted=True)
        except MemoryNotFound:
            return False
        return True

    async def decide(self, memory: Memory, pending: Sequence[Memory] = (), *,
                     index: CandidateIndex | None = None) -> Decided:
        """Supersession: the one decision for ``memory`` against its most similar valid memories
        (:func:`~dexai_memory.supersession.store.decide_statement`: found by ``provider.search``, plus
        ``pending``: notes decided but not yet written; or, with ``index``, by word overlap)."""
        return await decide_statement(self.provider, memory, classifier=self.classifier,
                                      top_k=self.settings.supersession.comparison_top_k, pending=pending,
                                      index=index, enabled=self.settings.supersession.enabled)

    async def store_note(self, note: ExtractedNote, turns: Sequence[Turn],
                         report: PipelineReport | None = None, *,
                         batch: WriteBehind | None = None) -> Memory | None:
        """Store one note through supersession; returns the memory written, or None if skipped.

        With ``batch`` (ingest), notes decided ADD are buffered and written
        together; any other decision flushes the buffer first if it concerns
        a buffered note.
        """
        report = report if report is not None else PipelineReport()
        memory = self.note_memory(note, turns)
        if self.claude_memory.says(memory.content, memory.project):
            report.skipped += 1
            logger.info("note %r not stored: Claude Code's memory files say it already", memory.content[:80])
            return None
        if batch is not None and memory.id in batch.known_ids:
            report.skipped += 1
            return None
        if (batch is None or not batch.prefetched) and await self._exists(memory.id, memory.user_id):
            report.skipped += 1
            logger.debug("note %s already stored (replayed turn): skipped", memory.id)
            return None
        index = batch.index if batch is not None else None
        # with the word index the pending notes are in it already: no per-note copy of the buffer
        pending = list(batch.pending.values()) if batch is not None and index is None else []
        decided = await self.decide(memory, pending, index=index)
        decision, target = decided.decision, decided.target
        if (target is not None and decision.action in (UpdateAction.NOOP, UpdateAction.UPDATE)
                and set(memory.source_ids) <= set(target.source_ids)):
            report.skipped += 1
            logger.debug("note from %s already merged into %s: skipped", memory.source_ids, target.id)
            return None
        if batch is not None:
            batch.known_ids.add(memory.id)
            if decision.action is UpdateAction.ADD and not isinstance(decision, Unsure):  # Unsure records a conflict
                batch.pending[memory.id] = memory
                batch.reasons[memory.id] = decision.reason
                if note.commitment is not None:
                    batch.commitments.append((note.commitment, memory))
                if index is not None:
                    index.add(memory)
                report.count(decision.action)
                return memory
            if target is not None and target.id in batch.pending:
                await self.flush_batch(batch, report)
        try:
            stored = (await store_statement(self.provider, memory, decided=decided)).memory
        except InvalidMemory as exc:  # the id exists after all (a soft-deleted note): never store it again
            report.skipped += 1
            logger.debug("note %s not stored: %s", memory.id, exc)
            return None
        report.count(decision.action)
        if index is not None:
            if decision.action is UpdateAction.SUPERSEDE and target is not None and stored is not None \
                    and stored.id != target.id:
                index.remove(target.id)
            if stored is not None:
                index.add(stored)
        logger.info("supersession %s for user %s: %s (%s)", decision.action.value, memory.user_id,
                    stored.id if stored else decision.memory_id, decision.reason)
        if note.commitment is not None and stored is not None and decision.action in (UpdateAction.ADD,
                                                                                       UpdateAction.SUPERSEDE):
            await self._track(note.commitment, stored, report)
        return stored

    async def _track(self, commitment: Commitment, memory: Memory, report: PipelineReport) -> None:
        await self.commitments.add(commitment, user_id=memory.user_id, memory_id=memory.id,
                                   source_ids=memory.source_ids, session_id=memory.session_id,
                                   project=memory.project)
        report.commitments += 1

    async def flush_batch(self, batch: WriteBehind, report: PipelineReport) -> None:
        """Write the buffered ADD notes (one batched insert), their ADD events and commitments."""
        if not batch.pending:
            return
        memories = list(batch.pending.values())
        try:
            await self.provider.add_many(memories)
        except InvalidMemory:  # an id exists after all (a soft-deleted note): add one by one, skip those
            kept = []
            for m in memories:
                try:
                    kept.append(await self.provider.add(m))
                except InvalidMemory:
                    report.skipped += 1
                    report.added -= 1
            stored_ids = {m.id for m in kept}
            batch.commitments[:] = [(c, m) for c, m in batch.commitments if m.id in stored_ids]
            memories = kept
        now = utcnow()
        by_user: dict[str, list[MemoryEvent]] = {}
        for m in memories:
            by_user.setdefault(m.user_id, []).append(MemoryEvent(m.id, "ADD", batch.reasons.get(m.id, "new"), now))
        for user, events in by_user.items():
            await self.provider.record_events(events, user_id=user)
        for commitment, m in batch.commitments:
            await self._track(commitment, m, report)
        logger.info("stored %d new notes in one batch", len(memories))
        batch.pending.clear()
        batch.reasons.clear()
        batch.commitments.clear()

    # ------------------------------------------------------------------ ingest
    def _word_candidates(self) -> bool:
        """Whether ingest finds supersession candidates by word overlap (the offline classifier)."""
        from .supersession.rules import OfflineClassifier

        return self.classifier is None or isinstance(self.classifier, OfflineClassifier)

    async def ingest(self, turns: Iterable[Turn], *, user_id: str, session_id: str | None = None,
                     project: str | None = None, progress: ProgressCallback | None = None,
                     chunk: int = INGEST_CHUNK, vectors: str = "now", threshold: float | None = None,
                     archive_evidence: bool = True, archive_turns: bool = True) -> PipelineReport:
        """Feed a conversation through the pipeline and archive every raw turn in L3.

        The gate decides which turns are extracted; all of them are archived
        (TRANSCRIPT, tier L3, source_ids=(turn id,), dated at the turn).
        Ingesting the same turns again changes nothing. ``progress(n)`` is
        called as turns are done.

        ``vectors="now"`` embeds every new memory as it is stored (the
        embedder is most of the time: ~100 texts/s on one core here);
        ``"later"`` stores them without vectors inside
        ``provider.deferred_vectors()`` (BM25 finds them at once) and leaves
        them to ``provider.fill_vectors()``.

        ``threshold`` is the gate score a turn needs to be extracted (None:
        ``extraction.ingest_gate_threshold``; a replayed Claude Code session passes the live
        ``extraction.gate_threshold``). ``archive_evidence=False`` keeps evidence (a session's
        assistant replies, tool results: :func:`~dexai_memory.capture.evidence.evidence_kind`)
        as context only: neither extracted nor archived in L3, as the live hooks keep it.
        ``archive_turns=False`` archives no turn at all (the live hooks archive none: a replayed
        prompt is extracted, and recall never shows its raw copy).
        """
        if vectors not in ("now", "later"):
            raise ValueError(f"vectors must be 'now' or 'later', not {vectors!r}")
        options = IngestOptions(self.settings.extraction.ingest_gate_threshold if threshold is None else threshold,
                                archive_evidence, archive_turns)
        if vectors == "later":
            async with self.provider.deferred_vectors():
                return await self._ingest(turns, user_id, session_id, project, progress, chunk, options, embed=False)
        return await self._ingest(turns, user_id, session_id, project, progress, chunk, options, embed=True)

    async def _ingest(self, turns: Iterable[Turn], user_id: str, session_id: str | None, project: str | None,
                      progress: ProgressCallback | None, chunk: int, options: IngestOptions, *,
                      embed: bool) -> PipelineReport:
        scoped = [Turn(id=t.id, user_id=user_id, content=t.content, role=t.role, speaker=t.speaker,
                       timestamp=t.timestamp, session_id=session_id if session_id is not None else t.session_id,
                       project=project if project is not None else t.project, metadata=t.metadata)
                  for t in turns]
        report = PipelineReport(turns=len(scoped))
        everything = await self.provider.list(user_id=user_id, filters=SearchFilters(
            valid_only=False, include_archived=True), limit=10_000_000)
        archived = {m.id for m in everything if m.type is MemoryType.TRANSCRIPT}
        batch = WriteBehind(known_ids={m.id for m in everything}, prefetched=True)
        if self._word_candidates():
            batch.index = CandidateIndex(everything)
        del everything
        recent: collections.deque[str] = collections.deque(maxlen=RECENT_TURNS)
        batch_size = self.settings.extraction.batch_size
        threshold = options.threshold
        for start in range(0, len(scoped), chunk):
            part = scoped[start:start + chunk]
            admitted: list[tuple[Turn, tuple[str, ...]]] = []
            clean_turns: list[Turn] = []
            for turn in part:
                clean, verdict = self.admit(turn, tuple(recent))
                if clean is None:
                    continue
                context_only = not options.archive_evidence and evidence_kind(clean) is not None
                if not context_only:
                    clean_turns.append(clean)
                recent.append(clean.content)
                if verdict.score >= threshold and not context_only:
                    admitted.append((clean, tuple(recent)[:-1]))
            report.gated += len(admitted)
            # extraction, in queue-sized batches
            extracted: list[tuple[ExtractedNote, list[Turn]]] = []
            for b in range(0, len(admitted), batch_size):
                group = admitted[b:b + batch_size]
                group_turns = [t for t, _ in group]
                notes = await self.extractor.extract(group_turns, context=group[0][1])
                extracted.extend((n, group_turns) for n in notes)
            report.extracted += len(extracted)
            # one embedding batch for the chunk's transcripts and notes
            fresh: dict[str, Memory] = {}  # a turn id twice in a chunk (a session's file copied) is one transcript
            for m in (transcript_memory(t) for t in clean_turns if options.archive_turns):
                if m.id not in archived:
                    fresh.setdefault(m.id, m)
            new_transcripts = list(fresh.values())
            embedder = getattr(self.provider, "embedder", None) if embed else None
            if embedder is not None:
                texts = [m.content for m in new_transcripts] if self.settings.search.embed_transcripts else []
                await embedder.aembed_batch(texts + [n.content for n, _ in extracted])
            if new_transcripts:
                await self.provider.add_many(new_transcripts)
                archived.update(m.id for m in new_transcripts)
                report.archived += len(new_transcripts)
            await self.close_done(clean_turns)  # before the notes and after them, as in process()
            for note, group_turns in extracted:
                await self.store_note(note, group_turns, report, batch=batch)
            await self.flush_batch(batch, report)
            await self.close_done(clean_turns)
            if progress:
                progress(len(part))
        logger.info("ingested %d turns for %s: %s", len(scoped), user_id, report.to_dict())
        return report
