"""The cold path: consolidation (L2 clusters -> one L3 abstract) and retention cleanup.

Both run on the daemon's schedule and on
demand (``dexai memory consolidate``).

:func:`consolidate`
    Takes the valid L2 memories of one user older than
    ``consolidation.min_age_days`` (not pinned; commitments, tasks,
    snapshots and transcripts are left alone), clusters them by similarity,
    and merges every cluster of at least ``min_cluster_size`` into one L3
    abstract written by the summarizer (Haiku with a key, an extractive
    summary offline). :func:`~dexai_memory.supersession.chain.consolidate` keeps every source id on the
    abstract and marks the originals superseded by it (never deleted).
    Similarity is the cosine of the provider's embedder vectors when it has
    one, else the word overlap of the two texts (shared content words over
    the smaller text's words); both are compared with
    ``consolidation.cluster_similarity``. Clustering is greedy and
    deterministic: the oldest unclustered memory seeds a cluster of every
    unclustered memory at least that similar to it, within one project.

:func:`cleanup`
    Archives (tier L3, ``archived``) valid memories older than their type's
    ``retention`` days (null = forever; session notes and snapshots 7 days by
    default). Pinned memories are never touched. Each archive is logged in
    the memory's history with its reason.

:func:`~dexai_memory.capture.routines.store_routines` (a step of :func:`consolidate`)
    Requests the user made in the same order in two sessions or more (read from the prompts
    episodes keep, before they are staged) become PROCEDURE memories ("Routine (asked in 3
    sessions): run the tests, then commit, then push.").

:func:`stage_episodes` (a step of :func:`consolidate`)
    Age-staged compression of episodes: one older than
    :data:`EPISODE_SUMMARY_DAYS` (7) keeps its title and summary as
    content instead of the full narrative; one older than
    :data:`EPISODE_COMPRESS_DAYS` (30) keeps only its compressed form
    and index key. What recall needs stays: the forms (the prefetch shows the
    summary form, assembly the richest that fits) and the artifacts (files,
    commands, commits, errors fixed: what the prefetch matches on).
    ``metadata["stage"]`` says ``"summarised"`` or ``"compressed"`` and each step
    is logged in the memory's history. Pinned episodes are left whole.

:func:`~dexai_memory.lifecycle.links.discover_links` (a step of :func:`consolidate`)
    Links the user's current memories that name the same rare entity or the same file, an
    error and its later fix, a decision and its reason; recall follows them for a second hop
    (:mod:`dexai_memory.recall.linked`). ``links_found`` counts the new links.

:func:`~dexai_memory.supersession.scan.scan_contradictions` (a step of :func:`consolidate`)
    Compares the user's current memories with the supersession rules and records each pair
    that contradicts, open, in the contradiction log (``dexai memory conflicts``, the panel);
    nothing is resolved. After the first run only the memories written or edited since a day
    before the last run are decided (:func:`last_scan`). ``contradictions_found`` counts the
    new records.

:func:`store_forms` (the last step of :func:`consolidate`)
    Writes the compression levels of every current durable memory (and
    episode) that has none or whose content changed since they were built:
    ``metadata["forms"] = {"summary", "compressed", "index"}``. With a model
    (the same choice as extraction: API key, else Claude Code sign-in;
    :func:`dexai_memory.extraction.factory.make_form_writer`) Claude Haiku
    writes them, 20 memories a call, within ``extraction.daily_token_budget``;
    every answer is checked and a memory it gives nothing usable for, or a
    run past the budget or with the model failing, gets the offline rules of
    :func:`dexai_memory.recall.forms.build_forms` (deterministic, no model
    call; the only writer when extraction is offline). ``metadata["forms_by"]``
    says ``"model"`` or ``"rules"``: a later run with a model rewrites forms
    the rules built (at most ``consolidation.model_forms_per_run`` memories a
    run, new and edited ones first), and forms of unchanged content that the
    model wrote, or was asked about already, are not asked for again.
    Forms another part wrote without a content key (an episode's) are kept.
    Context assembly (:mod:`dexai_memory.recall.assembly`) shows each memory
    at the richest level that fits. A dry run counts without writing (or
    asking).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .capture.routines import store_routines
from .errors import DexaiMemoryError
from .extraction.form_writer import OfflineFormWriter
from .lifecycle.links import discover_links
from .models import Memory, MemoryEvent, MemoryType, SearchFilters, Tier, utcnow
from .recall.assembly import DURABLE_TYPES
from .recall.forms import forms_metadata, needs_forms, wants_model_forms
from .supersession.chain import consolidate as merge_into_abstract
from .supersession.rules import content_words
from .supersession.scan import scan_contradictions

if TYPE_CHECKING:
    from .config import Settings
    from .extraction.base import FormWriter, Summarizer
    from .providers.base import MemoryProvider

logger = logging.getLogger(__name__)

#: Types consolidation never merges (they have their own lifecycle).
NOT_CONSOLIDATED = frozenset({MemoryType.COMMITMENT, MemoryType.TASK, MemoryType.SNAPSHOT, MemoryType.TRANSCRIPT,
                              MemoryType.EPISODE})
ProgressCallback = Callable[[int], None]


@dataclass
class MergedCluster:
    """One cluster: its members and (unless dry run) the abstract that replaced them."""

    member_ids: list[str]
    contents: list[str]
    min_similarity: float
    abstract_id: str | None = None
    summary: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"member_ids": self.member_ids, "contents": self.contents,
                "min_similarity": round(self.min_similarity, 4), "abstract_id": self.abstract_id,
                "summary": self.summary}


@dataclass
class ConsolidationReport:
    """What :func:`consolidate` merged (or would merge, in a dry run)."""

    user_id: str
    dry_run: bool
    candidates: int = 0
    method: str = "embedding"
    clusters: list[MergedCluster] = field(default_factory=list)
    #: Memories whose compression levels were (or, in a dry run, would be) built.
    forms_built: int = 0
    #: Episodes (to be) cut to their summary, and to their compressed form (:func:`stage_episodes`).
    episodes_summarised: int = 0
    episodes_compressed: int = 0
    #: New links between memories (:func:`~dexai_memory.lifecycle.links.discover_links`).
    links_found: int = 0
    #: Contradictions the scan recorded open (:func:`~dexai_memory.supersession.scan.scan_contradictions`).
    contradictions_found: int = 0
    #: Routines (requests repeated in order across sessions) stored or updated as procedures.
    routines: int = 0

    @property
    def superseded(self) -> int:
        """Memories superseded by an abstract."""
        return sum(len(c.member_ids) for c in self.clusters)

    def to_dict(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "dry_run": self.dry_run, "candidates": self.candidates,
                "method": self.method, "merged": len(self.clusters), "superseded": self.superseded,
                "clusters": [c.to_dict() for c in self.clusters], "forms_built": self.forms_built,
                "episodes_summarised": self.episodes_summarised, "episodes_compressed": self.episodes_compressed,
                "links_found": self.links_found, "contradictions_found": self.contradictions_found,
                "routines": self.routines}


@dataclass
class ArchivedMemory:
    id: str
    type: str
    age_days: float
    content: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "age_days": round(self.age_days, 1), "content": self.content}


@dataclass
class CleanupReport:
    """What :func:`cleanup` archived (or would archive, in a dry run)."""

    user_id: str
    dry_run: bool
    archived: list[ArchivedMemory] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "dry_run": self.dry_run, "archived_count": len(self.archived),
                "archived": [a.to_dict() for a in self.archived]}


# --------------------------------------------------------------------------- similarity
def word_overlap(a: str, b: str) -> float:
    """Shared content words over the smaller text's content words (0-1)."""
    wa, wb = content_words(a), content_words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / min(len(wa), len(wb))


def similarity_matrix(contents: Sequence[str], vectors: np.ndarray | None) -> np.ndarray:
    """Pairwise similarities: cosine of unit vectors when given, else :func:`word_overlap`."""
    n = len(contents)
    if vectors is not None:
        v = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(v, axis=1, keepdims=True)
        v = v / np.clip(norms, 1e-12, None)
        return np.asarray(v @ v.T, dtype=np.float64)
    sims = np.eye(n)
    for i in range(n):
        for j in range(i + 1, n):
            sims[i, j] = sims[j, i] = word_overlap(contents[i], contents[j])
    return sims


def cluster(memories: Sequence[Memory], sims: np.ndarray, threshold: float,
            min_size: int) -> list[tuple[list[int], float]]:
    """Greedy clusters (indices, min similarity to the seed) of at least ``min_size`` members.

    Memories are visited oldest first; each unclustered one seeds a cluster
    of the unclustered memories of the same project at least ``threshold``
    similar to it.
    """
    order = sorted(range(len(memories)), key=lambda i: (memories[i].created_at, memories[i].id))
    taken: set[int] = set()
    out: list[tuple[list[int], float]] = []
    for i in order:
        if i in taken:
            continue
        members = [j for j in order if j != i and j not in taken and memories[j].project == memories[i].project
                   and sims[i, j] >= threshold]
        if len(members) + 1 < min_size:
            continue
        group = [i, *members]
        taken.update(group)
        out.append((group, float(min(sims[i, j] for j in members))))
    return out


# --------------------------------------------------------------------------- consolidation
async def consolidation_candidates(provider: MemoryProvider, user_id: str, settings: Settings, *,
                                   now: datetime | None = None) -> list[Memory]:
    """Valid, unpinned L2 memories of ``user_id`` old enough to consolidate."""
    cutoff = (now or utcnow()) - timedelta(days=settings.consolidation.min_age_days)
    types = tuple(t for t in MemoryType if t not in NOT_CONSOLIDATED)
    return await provider.list(user_id=user_id, filters=SearchFilters(
        types=types, tiers=(Tier.L2,), created_before=cutoff, pinned=False), limit=100_000)


async def consolidate(provider: MemoryProvider, user_id: str, settings: Settings, summarizer: Summarizer | None,
                      *, dry_run: bool = False, now: datetime | None = None,
                      progress: ProgressCallback | None = None,
                      form_writer: FormWriter | None = None) -> ConsolidationReport:
    """Merge clusters of similar old L2 memories into L3 abstracts (see the module docstring).

    In a dry run nothing is written and no summary is made (``summarizer``
    may be None). ``progress(1)`` is called per cluster. Then the contradiction scan and link
    discovery over the memories current after the merge, and last
    :func:`store_forms` (abstracts included) with ``form_writer`` (None: the
    offline rules).
    """
    report = await _merge(provider, user_id, settings, summarizer, dry_run=dry_run, now=now, progress=progress)
    # before staging: an episode still holds its session's prompts
    report.routines = await store_routines(provider, user_id, dry_run=dry_run)
    report.episodes_summarised, report.episodes_compressed = await stage_episodes(
        provider, user_id, settings, dry_run=dry_run, now=now)
    report.contradictions_found = await scan_contradictions(
        provider, user_id, dry_run=dry_run, now=now, since=last_scan(settings, user_id),
        top_k=settings.supersession.comparison_top_k)
    report.links_found = await discover_links(provider, user_id, dry_run=dry_run, now=now)
    report.forms_built = await store_forms(provider, user_id, dry_run=dry_run, writer=form_writer,
                                           model_limit=settings.consolidation.model_forms_per_run)
    if not dry_run:
        record_run(settings, report, now or utcnow())
    return report


def status_file(settings: Settings) -> Path:
    """Where the last consolidation run of each user is kept: ``<home>/consolidation-status.json``."""
    return settings.home / "consolidation-status.json"


def record_run(settings: Settings, report: ConsolidationReport, at: datetime) -> None:
    """Keep ``report``'s counts as its user's last run (the panel's consolidation status); a file
    that cannot be written is logged, never raised (the run itself is done)."""
    import json

    from .datadir import write_private

    path = status_file(settings)
    try:
        runs = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError):
        runs = {}
    row = report.to_dict()
    row.pop("clusters", None)
    runs[report.user_id] = {**row, "at": at.isoformat()}
    try:
        write_private(path, json.dumps(runs, indent=1).encode())
    except OSError as exc:
        logger.warning("the consolidation status was not written: %s", exc)


def last_run(settings: Settings, user_id: str) -> dict[str, Any] | None:
    """The counts and time of ``user_id``'s last consolidation run (None: none recorded)."""
    import json

    try:
        runs = json.loads(status_file(settings).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    row = runs.get(user_id) if isinstance(runs, dict) else None
    return row if isinstance(row, dict) else None


#: How far before the last run the contradiction scan looks again (a write during that run is not missed).
SCAN_OVERLAP = timedelta(days=1)


def last_scan(settings: Settings, user_id: str) -> datetime | None:
    """Since when the contradiction scan decides memories: a day before the last recorded run that
    scanned (None: no such run, scan everything)."""
    last = last_run(settings, user_id)
    if not last or "contradictions_found" not in last or not isinstance(last.get("at"), str):
        return None
    try:
        return datetime.fromisoformat(last["at"]) - SCAN_OVERLAP
    except ValueError:
        return None


#: Days after which an episode keeps only its summary, and only its compressed form (the design's ages).
EPISODE_SUMMARY_DAYS = 7.0
EPISODE_COMPRESS_DAYS = 30.0
#: The stages of an episode, from the fullest.
EPISODE_STAGES = ("full", "summarised", "compressed")


def staged_content(memory: Memory, stage: str) -> str | None:
    """The content of episode ``memory`` at ``stage`` (None when its forms lack what it needs)."""
    raw = memory.metadata.get("forms")
    forms: dict[str, Any] = raw if isinstance(raw, dict) else {}
    title = str(memory.metadata.get("title") or "").strip()
    if stage == "summarised":
        summary = str(forms.get("summary") or "").strip()
        return "\n".join(t for t in (title, summary) if t) or None
    compressed = str(forms.get("compressed") or forms.get("summary") or "").strip()
    key = str(forms.get("index") or "").strip()
    return " | ".join(t for t in (compressed, key) if t) or None


async def stage_episodes(provider: MemoryProvider, user_id: str, settings: Settings, *, dry_run: bool = False,
                         now: datetime | None = None) -> tuple[int, int]:
    """Age-staged compression of ``user_id``'s episodes (see the module docstring); returns how
    many were (or, in a dry run, would be) summarised and compressed."""
    now = now or utcnow()
    episodes = await provider.list(user_id=user_id, filters=SearchFilters(
        types=(MemoryType.EPISODE,), created_before=now - timedelta(days=EPISODE_SUMMARY_DAYS), pinned=False),
        limit=100_000)
    counts = {"summarised": 0, "compressed": 0}
    for m in episodes:
        if m.pinned:
            continue
        age = (now - m.created_at).total_seconds() / 86400
        target = "compressed" if age >= EPISODE_COMPRESS_DAYS else "summarised"
        current = str(m.metadata.get("stage") or "full")
        if EPISODE_STAGES.index(current) >= EPISODE_STAGES.index(target):
            continue
        content = staged_content(m, target)
        if not content:
            continue
        counts[target] += 1
        if dry_run:
            continue
        await provider.update(m.id, user_id=user_id, content=content,
                              metadata={**m.metadata, "stage": target, "staged_at": now.isoformat()})
        await provider.record_event(MemoryEvent(m.id, target.upper(), f"episode {age:.0f} days old: kept as its "
                                                f"{'summary' if target == 'summarised' else 'compressed form'}",
                                                now, details={"before_chars": str(len(m.content))}),
                                    user_id=user_id)
    if any(counts.values()) and not dry_run:
        logger.info("staged episodes of %s: %s", user_id, counts)
    return counts["summarised"], counts["compressed"]


async def store_forms(provider: MemoryProvider, user_id: str, *, dry_run: bool = False,
                      writer: FormWriter | None = None, model_limit: int = 200) -> int:
    """Write the compression levels on ``user_id``'s current durable memories that lack them or
    whose content changed, and, when ``writer`` asks a model, upgrade rules-built ones (at most
    ``model_limit`` memories go to the model; see the module docstring); returns how many
    (would) change. ``writer`` None: the offline rules. A memory the backend refuses to update
    is logged and skipped (its forms are built on the fly at assembly)."""
    memories = await provider.list(user_id=user_id, filters=SearchFilters(types=DURABLE_TYPES), limit=100_000)
    stale = [m for m in memories if needs_forms(m)]
    to_model: list[Memory] = []
    if writer is not None and writer.uses_model:
        upgrades = [m for m in memories if not needs_forms(m) and wants_model_forms(m)]
        to_model = (stale + upgrades)[:max(0, model_limit)]
    chosen = {m.id for m in to_model}
    to_rules = [m for m in stale if m.id not in chosen]
    if dry_run:
        return len(to_model) + len(to_rules)
    written = (await writer.write([m.content for m in to_model])) if writer is not None and to_model else []
    written += await OfflineFormWriter().write([m.content for m in to_rules])
    built = by_model = 0
    stale_ids = {m.id for m in stale}
    for m, w in zip(to_model + to_rules, written, strict=True):
        if m.id not in stale_ids and w.by != "model" and not w.asked:
            continue  # current rules-built forms the model could not upgrade now: kept as they are
        try:
            await provider.update(m.id, user_id=user_id,
                                  metadata=forms_metadata(m, w.forms, by=w.by, asked=w.asked))
        except DexaiMemoryError as exc:
            logger.warning("could not store the forms of %s: %s", m.id, exc)
            continue
        built += 1
        by_model += w.by == "model"
    if built:
        logger.info("built the compression levels of %d memories of %s (%d by the model)", built, user_id,
                    by_model)
    return built


async def _merge(provider: MemoryProvider, user_id: str, settings: Settings, summarizer: Summarizer | None,
                 *, dry_run: bool, now: datetime | None, progress: ProgressCallback | None) -> ConsolidationReport:
    cfg = settings.consolidation
    memories = await consolidation_candidates(provider, user_id, settings, now=now)
    embedder = getattr(provider, "embedder", None)
    report = ConsolidationReport(user_id=user_id, dry_run=dry_run, candidates=len(memories),
                                 method="embedding" if embedder is not None else "word-overlap")
    if len(memories) < cfg.min_cluster_size:
        return report
    contents = [m.content for m in memories]
    vectors = await embedder.aembed_batch(contents) if embedder is not None else None
    sims = similarity_matrix(contents, vectors)
    for indices, min_sim in cluster(memories, sims, cfg.cluster_similarity, cfg.min_cluster_size):
        members = [memories[i] for i in indices]
        merged = MergedCluster(member_ids=[m.id for m in members], contents=[m.content for m in members],
                               min_similarity=min_sim)
        if not dry_run:
            if summarizer is None:
                raise ValueError("consolidate needs a summarizer unless dry_run is set")
            merged.summary = (await summarizer.summarize(merged.contents)).strip() or " / ".join(merged.contents)
            abstract = await merge_into_abstract(
                provider, merged.member_ids, merged.summary, user_id=user_id,
                reason=f"consolidated {len(members)} similar memories ({report.method} similarity >= "
                       f"{cfg.cluster_similarity:.2f})")
            merged.abstract_id = abstract.id
            logger.info("consolidated %d memories of %s into %s", len(members), user_id, abstract.id)
        report.clusters.append(merged)
        if progress:
            progress(1)
    return report


# --------------------------------------------------------------------------- cleanup
async def cleanup(provider: MemoryProvider, user_id: str, settings: Settings, *, dry_run: bool = False,
                  now: datetime | None = None) -> CleanupReport:
    """Archive valid memories past their type's retention (never pinned ones)."""
    now = now or utcnow()
    report = CleanupReport(user_id=user_id, dry_run=dry_run)
    for type_name, days in sorted(settings.retention.items()):
        if days is None:
            continue
        mtype = MemoryType.parse(type_name)
        expired = await provider.list(user_id=user_id, filters=SearchFilters(
            types=(mtype,), created_before=now - timedelta(days=days), pinned=False), limit=100_000)
        for m in expired:
            if m.pinned:  # backends that ignore the pinned filter
                continue
            age = (now - m.created_at).total_seconds() / 86400
            report.archived.append(ArchivedMemory(m.id, mtype.value, age, m.content))
            if dry_run:
                continue
            await provider.update(m.id, user_id=user_id, tier=Tier.L3, archived=True)
            await provider.record_event(MemoryEvent(
                m.id, "ARCHIVED", f"retention: {mtype.value} kept {days} days, this one is {age:.0f} days old", now,
            ), user_id=user_id)
    if report.archived and not dry_run:
        logger.info("archived %d memories of %s by retention", len(report.archived), user_id)
    return report


async def known_users(provider: MemoryProvider) -> list[str]:
    """Every user of the store, where the backend can list them (the native one can); else []."""
    if not provider.capabilities.list_users:
        return []
    return list(await provider.users())


async def consolidate_user(provider: MemoryProvider, user_id: str, settings: Settings, *, dry_run: bool = False,
                           cleanup_too: bool = True, summarizer: Summarizer | None = None,
                           form_writer: FormWriter | None = None) -> dict[str, Any]:
    """The cold path on demand for one user, as ``dexai memory consolidate`` and ``POST
    /api/consolidate`` run it: the retention :func:`cleanup` (unless ``cleanup_too`` is False),
    then :func:`consolidate` with the configured summarizer and form writer (none in a dry run;
    those made here are closed here).

    Returns ``{"user_id", "dry_run", "cleanup"?, "consolidation"}`` with each report as a dict.
    """
    own_writer = None
    if summarizer is None and not dry_run:
        from .extraction.factory import make_summarizer

        summarizer = make_summarizer(settings)
    if form_writer is None and not dry_run:
        from .extraction.factory import make_form_writer

        form_writer = own_writer = make_form_writer(settings)
    try:
        row: dict[str, Any] = {"user_id": user_id, "dry_run": dry_run}
        if cleanup_too:
            row["cleanup"] = (await cleanup(provider, user_id, settings, dry_run=dry_run)).to_dict()
        row["consolidation"] = (await consolidate(provider, user_id, settings, summarizer, dry_run=dry_run,
                                                  form_writer=form_writer)).to_dict()
    finally:
        if own_writer is not None:
            await own_writer.aclose()
    return row
