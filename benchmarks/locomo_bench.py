"""LoCoMo evidence recall within the L1 budget (issue 5, part 1), with baselines.

For each conversation of the development split (one user scope each) and each
question of categories 1-4, a method returns the block it would inject (at
most ``--budget`` tokens, 800 by default, counted with
:func:`dexai_memory.text.tokens.count_tokens`) and the turn ids (``dia_id``) behind
it. Metrics, overall and per category:

* evidence recall: ``|gold found| / |gold|`` averaged over questions;
* hit rate: share of questions with at least one gold turn found;
* mean block tokens; recall latency p50/p95 (retrieval + packing, query
  embedding included, in-process).

Methods (all at the same token budget):

``bm25``
    BM25 (the ``bm25s`` package, English stop words) over raw speaker-prefixed
    turns ("Caroline: text"), top turns greedily packed into the budget;
``dense``
    cosine over raw turns embedded with our ONNX MiniLM embedder;
``hybrid``
    our ``NativeProvider`` hybrid search (FTS5 BM25 + vec0, RRF) over raw
    turns, no extraction, packed like the others;
``system``
    the full dexai pipeline: ingest through ``dexai_memory.pipeline`` then the
    block ``dexai_memory.recall.ranking`` builds for the question (see
    :func:`run_system`). Reported as "not available" until both exist.
``system@5``
    the same ingest, the block capped at 5 memories as auto-recall caps it
    (``auto_recall.max_memories``).
``system-nolinks``
    the same ingest and links, the block built without following links
    (``auto_recall.follow_links: false``): the same-run baseline of link expansion.

Reference points: BM25 at fixed k = 5/10/20 turns (no budget), to compare with
the figures in the data's README (43.1 / 50.2 / 58.6 % on all 10 conversations).

``--misses N`` prints N missed questions per category for ``--misses-method``
with their gold turns and what was retrieved. ``--quick``: first conversation,
20 questions.

``--usage-feedback evidence|answer`` (system methods) replays use: after each question is scored,
its block is answered by a simulated reply, the question's answer followed by its gold turns
(``evidence``: a reply that restates what it used) or the answer alone (``answer``: terse, so
nearly everything shown counts as ignored), and the memories of the block are counted cited or
ignored as after a real reply (:mod:`dexai_memory.lifecycle.usage`); later questions of the
conversation are ranked with those counts (``auto_recall.usage_weight``; ``--system-config
'auto_recall: {usage_weight: 0}'`` is the same replay with ranking blind to it). LoCoMo has no
replies of its own: this is a simulation.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    CACHE_DIR,
    LOCOMO_PATH,
    arg_parser,
    elapsed_ms,
    format_table,
    latency_stats,
    say,
    write_result,
)
from dexai_memory.embeddings import Embedder, OnnxMiniLMEmbedder, StaticMiniLMEmbedder
from dexai_memory.models import Memory, MemoryType, Turn
from dexai_memory.providers.native import NativeProvider
from dexai_memory.text.tokens import count_tokens

NAME = "locomo_bench"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
DEFAULT_BUDGET = 800
FIXED_K = (5, 10, 20)
#: Ranked turns considered when packing a budget (more than ever fit in 800 tokens).
POOL = 80
_EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")
_SESSION_KEY = re.compile(r"^session_(\d+)$")


# --------------------------------------------------------------------------- data
@dataclass(frozen=True)
class Question:
    """A question of categories 1-4 with its gold turn ids (malformed ids parsed, unknown ones dropped)."""

    conv_id: str
    index: int
    question: str
    answer: str
    category: int
    gold: tuple[str, ...]


@dataclass
class Conversation:
    conv_id: str
    user_id: str
    turns: list[Turn]
    questions: list[Question]
    dropped_evidence: list[str] = field(default_factory=list)

    @property
    def by_id(self) -> dict[str, Turn]:
        return {t.id: t for t in self.turns}


def parse_session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> an aware UTC datetime."""
    return datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def parse_evidence(raw: Iterable[str], known: set[str]) -> tuple[tuple[str, ...], list[str]]:
    """Every ``D<session>:<turn>`` in ``raw`` ('D8:6; D9:17', 'D:11:26', 'D30:05'), normalised;
    ids not in ``known`` are dropped (returned second)."""
    found: list[str] = []
    dropped: list[str] = []
    for item in raw:
        ids = [f"D{int(s)}:{int(t)}" for s, t in _EVIDENCE_ID.findall(str(item))]
        if not ids:
            dropped.append(str(item))
        for dia in ids:
            if dia in known:
                if dia not in found:
                    found.append(dia)
            else:
                dropped.append(dia)
    return tuple(found), dropped


def turn_text(turn: Turn) -> str:
    """The speaker-prefixed line a raw-turn method stores and injects: 'Caroline: text'."""
    return f"{turn.speaker}: {turn.content}" if turn.speaker else turn.content


def _turns_of(sample: dict[str, Any], user_id: str) -> list[Turn]:
    conv = sample["conversation"]
    sessions = sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY.match(k)))
    turns: list[Turn] = []
    for n in sessions:
        when = parse_session_date(conv[f"session_{n}_date_time"])
        for raw in conv[f"session_{n}"]:
            text = str(raw.get("text") or "").strip()
            caption = raw.get("blip_caption")
            if caption:  # captions of shared images count as text
                text = f"{text} [shares an image: {caption}]".strip()
            if not text:
                continue
            dia = str(raw["dia_id"])
            turns.append(Turn(id=dia, user_id=user_id, content=text, role="user", speaker=raw.get("speaker"),
                              timestamp=when, session_id=f"{sample['sample_id']}-s{n}",
                              metadata={"session": n, "date": conv[f"session_{n}_date_time"]}))
    return turns


def _shared_turns(path: Path) -> dict[str, list[Turn]] | None:
    """Turns by sample id from the shared loader ``benchmarks.locomo`` (None if it is missing)."""
    try:
        from benchmarks import locomo
    except ImportError:
        return None
    return {c.sample_id: locomo.conversation_turns(c, user_id=f"locomo-{c.sample_id}")
            for c in locomo.load_conversations(path)}


def load(path: Path = LOCOMO_PATH) -> list[Conversation]:
    """The conversations of the LoCoMo file at ``path`` with their category 1-4 questions.

    Turns come from the shared loader (``benchmarks.locomo``, also used by the
    ingest benchmarks) when it is present, else from :func:`_turns_of` here.
    """
    samples = json.loads(Path(path).read_text(encoding="utf-8"))
    shared = _shared_turns(path)
    out = []
    for sample in samples:
        conv_id = str(sample["sample_id"])
        user_id = f"locomo-{conv_id}"
        turns = shared[conv_id] if shared is not None else _turns_of(sample, user_id)
        known = {t.id for t in turns}
        questions, dropped_all = [], []
        for i, qa in enumerate(sample["qa"]):
            cat = int(qa.get("category", 0))
            if cat not in CATEGORIES:
                continue
            gold, dropped = parse_evidence(qa.get("evidence") or [], known)
            dropped_all.extend(dropped)
            if not gold:
                continue
            questions.append(Question(conv_id, i, str(qa["question"]), str(qa.get("answer", "")), cat, gold))
        out.append(Conversation(conv_id, user_id, turns, questions, dropped_all))
    return out


# --------------------------------------------------------------------------- methods
@dataclass
class Retrieved:
    """What a method injects for one question: turn ids in block order, the block, its latency."""

    ids: list[str]
    text: str
    latency_ms: float


def pack(ranked_ids: Sequence[str], lines: dict[str, str], budget: int) -> tuple[list[str], str]:
    """Greedily add ranked turns while they fit ``budget`` tokens (a turn that does not fit is skipped)."""
    chosen: list[str] = []
    used = 0
    for tid in ranked_ids:
        if tid in chosen:
            continue
        cost = count_tokens(lines[tid])
        if used + cost > budget:
            continue
        chosen.append(tid)
        used += cost
    return chosen, "\n".join(lines[t] for t in chosen)


def fixed_k(ranked_ids: Sequence[str], lines: dict[str, str], k: int) -> tuple[list[str], str]:
    chosen = list(dict.fromkeys(ranked_ids))[:k]
    return chosen, "\n".join(lines[t] for t in chosen)


class PrimedEmbedder(Embedder):
    """Wraps an embedder; texts given to :meth:`prime` are embedded once and reused.

    The dense baseline and the hybrid provider embed the same turns; priming
    embeds them once. Texts that were not primed (queries) are always embedded
    afresh, so query latency stays honest.
    """

    def __init__(self, inner: Embedder):
        self.inner = inner
        self.dim = inner.dim
        self.model_id = inner.model_id
        self._cache: dict[str, np.ndarray] = {}

    def prime(self, texts: Sequence[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            for t, v in zip(todo, self.inner.embed_batch(todo), strict=True):
                self._cache[t] = v
        return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if all(t in self._cache for t in texts):
            return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)
        return self.inner.embed_batch(texts)


Method = Callable[[Question], Awaitable[Retrieved]]


class Bm25Index:
    """bm25s over speaker-prefixed turns (English stop words, no stemmer)."""

    def __init__(self, conv: Conversation):
        import bm25s

        self._bm25s = bm25s
        self.ids = [t.id for t in conv.turns]
        self.retriever = bm25s.BM25()
        self.retriever.index(bm25s.tokenize([turn_text(t) for t in conv.turns], stopwords="en", show_progress=False),
                             show_progress=False)

    def ranked(self, query: str, k: int = POOL) -> list[str]:
        tokens = self._bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        k = min(k, len(self.ids))
        docs, scores = self.retriever.retrieve(tokens, k=k, show_progress=False, n_threads=0)
        return [self.ids[int(d)] for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


async def make_methods(conv: Conversation, embedder: PrimedEmbedder, budget: int, tmp: Path,
                       wanted: set[str], system_config: str = "", ingest: str = "pipeline",
                       usage_feedback: str | None = None,
                       ) -> tuple[dict[str, Method], list[Callable[[], Awaitable[None]]]]:
    """The methods to run on ``conv`` and their clean-up callbacks (``system_config``: YAML added to the
    system method's settings; ``ingest``, ``usage_feedback``: see :func:`run_system` and the module
    docstring)."""
    lines = {t.id: turn_text(t) for t in conv.turns}
    methods: dict[str, Method] = {}
    cleanups: list[Callable[[], Awaitable[None]]] = []
    bm25 = Bm25Index(conv) if wanted & {"bm25", *(f"bm25@{k}" for k in FIXED_K)} else None

    if bm25 is not None:
        async def run_bm25(q: Question) -> Retrieved:
            t0 = time.perf_counter()
            ids, text = pack(bm25.ranked(q.question), lines, budget)
            return Retrieved(ids, text, elapsed_ms(t0))

        methods["bm25"] = run_bm25
        for k in FIXED_K:
            async def run_fixed(q: Question, k: int = k) -> Retrieved:
                t0 = time.perf_counter()
                ids, text = fixed_k(bm25.ranked(q.question, k), lines, k)
                return Retrieved(ids, text, elapsed_ms(t0))

            methods[f"bm25@{k}"] = run_fixed

    if "dense" in wanted or "hybrid" in wanted:
        matrix = embedder.prime([lines[t.id] for t in conv.turns])
    if "dense" in wanted:
        order_ids = [t.id for t in conv.turns]

        async def run_dense(q: Question) -> Retrieved:
            t0 = time.perf_counter()
            vec = await embedder.inner.aembed(q.question)
            sims = matrix @ vec
            top = np.argsort(-sims)[:POOL]
            ids, text = pack([order_ids[i] for i in top], lines, budget)
            return Retrieved(ids, text, elapsed_ms(t0))

        methods["dense"] = run_dense

    if "hybrid" in wanted:
        provider = NativeProvider(tmp / f"{conv.conv_id}-hybrid.db", embedder=embedder)
        await provider.start()
        cleanups.append(provider.aclose)
        await provider.add_many([
            Memory(content=lines[t.id], user_id=conv.user_id, type=MemoryType.EVENT, source_ids=(t.id,),
                   session_id=t.session_id, created_at=t.timestamp or datetime.now(UTC))
            for t in conv.turns
        ])

        async def run_hybrid(q: Question) -> Retrieved:
            t0 = time.perf_counter()
            results = await provider.search(q.question, user_id=conv.user_id, limit=POOL)
            ranked = [sid for r in results for sid in r.memory.source_ids[:1]]
            ids, text = pack(ranked, lines, budget)
            return Retrieved(ids, text, elapsed_ms(t0))

        methods["hybrid"] = run_hybrid

    if wanted & {"system", "system@5", "system-nolinks"}:
        method, close = await run_system(conv, embedder, budget, tmp, config_extra=system_config, ingest=ingest,
                                         usage_feedback=usage_feedback)
        if "system" in wanted:
            methods["system"] = method
        if "system-nolinks" in wanted:
            async def run_unlinked(q: Question, method: Any = method) -> Retrieved:
                return await method(q, links=False)

            methods["system-nolinks"] = run_unlinked
        if "system@5" in wanted:
            async def run_capped(q: Question, method: Any = method) -> Retrieved:
                return await method(q, cap=5)

            methods["system@5"] = run_capped
        cleanups.append(close)
    return methods, cleanups


# --------------------------------------------------------------------------- the full system (hook)
class SystemUnavailable(Exception):  # noqa: N818 - a reason, reported in the table
    """The full pipeline cannot run yet; the message says which part is missing."""


async def run_system(conv: Conversation, embedder: Embedder, budget: int, tmp: Path,
                     *, max_memories: int | None = None, config_extra: str = "",
                     ingest: str = "pipeline", usage_feedback: str | None = None,
                     ) -> tuple[Method, Callable[[], Awaitable[None]]]:
    """The "system" row: ``conv`` ingested through the real pipeline, recall per question.

    1. one data directory and user scope per conversation; every turn goes
       through :meth:`dexai_memory.pipeline.Pipeline.ingest` (redaction, gate,
       offline extractor, supersession, L3 transcript archive) with its dia_id
       as turn id and its session date as timestamp; with ``ingest="cli"`` the
       way ``dexai memory ingest --vectors now`` does it: stored with vectors
       deferred, then embedded by the bulk embedder
       (:func:`dexai_memory.embeddings.bulk_embedder`, ``embedding.bulk_model``);
       then the links between memories are found as consolidation finds them
       (:func:`dexai_memory.lifecycle.links.discover_links`; consolidation's merging
       is not run);
    2. for each question, the block :func:`dexai_memory.recall.ranking.recall_block`
       builds for it under ``budget`` tokens (budget mode; ``max_memories``
       caps the count as auto-recall does on a cold start; ``links=False`` builds it without
       following links). The retrieved ids
       are the ``source_ids`` of the memories in the block, in block order;
       the tokens are those of the whole block, fence included.

    Raises :class:`SystemUnavailable` when the pipeline or recall cannot be
    imported: the row then says "not available", never a made-up figure.
    """
    try:
        from dexai_memory.config import load_settings
        from dexai_memory.lifecycle.links import discover_links
        from dexai_memory.pipeline import Pipeline
        from dexai_memory.recall.ranking import recall_block
    except ImportError as exc:
        raise SystemUnavailable(f"cannot import the pipeline or recall: {exc}") from exc
    home = tmp / f"{conv.conv_id}-system"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "bench.yaml"
    config.write_text("extraction:\n  extractor: offline\n" + config_extra, encoding="utf-8")
    settings = load_settings(config, home=home)
    provider = NativeProvider(home / "memory.db", embedder=embedder, search=settings.search)
    await provider.start()
    try:
        t0 = time.perf_counter()
        if ingest == "cli":
            from dexai_memory.embeddings import bulk_embedder

            report = await Pipeline(provider, settings).ingest(conv.turns, user_id=conv.user_id, vectors="later")
            await provider.fill_vectors(embedder=bulk_embedder(settings.embedding))
        else:
            report = await Pipeline(provider, settings).ingest(conv.turns, user_id=conv.user_id)
        say(f"  system ingest: {elapsed_ms(t0) / 1000:.1f} s, {report.to_dict()}")
        t0 = time.perf_counter()
        linked = await discover_links(provider, conv.user_id)
        say(f"  links: {linked} in {elapsed_ms(t0) / 1000:.1f} s")
    except BaseException:
        await provider.aclose()
        raise

    no_links = dataclasses.replace(settings, auto_recall=dataclasses.replace(settings.auto_recall,
                                                                             follow_links=False))

    async def run(q: Question, cap: int | None = max_memories, links: bool = True) -> Retrieved:
        t0 = time.perf_counter()
        result = await recall_block(provider, conv.user_id, q.question, settings if links else no_links,
                                    max_tokens=budget, max_memories=cap)
        ms = elapsed_ms(t0)
        ids = [sid for r in result.memories for sid in r.memory.source_ids]
        if usage_feedback:  # after scoring this question: later ones are ranked with what it taught
            from dexai_memory.lifecycle.usage import record_citations, record_ignores

            turns = conv.by_id if usage_feedback == "evidence" else {}
            reply = "\n".join([str(q.answer), *(turns[g].content for g in q.gold if g in turns)])
            await record_citations(provider, conv.user_id, reply, result.memory_ids, session_id=f"q{q.index}")
            await record_ignores(provider, conv.user_id, reply, result.memory_ids)
        return Retrieved(list(dict.fromkeys(ids)), result.text, ms)

    return run, provider.aclose


# --------------------------------------------------------------------------- scoring
@dataclass
class Score:
    recall: list[float] = field(default_factory=list)
    hit: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)

    def add(self, q: Question, r: Retrieved) -> float:
        got = set(r.ids) & set(q.gold)
        rec = len(got) / len(q.gold)
        self.recall.append(rec)
        self.hit.append(1.0 if got else 0.0)
        self.tokens.append(count_tokens(r.text))
        self.latency.append(r.latency_ms)
        return rec

    def to_dict(self) -> dict[str, Any]:
        if not self.recall:
            return {"questions": 0}
        lat = latency_stats(self.latency)
        return {
            "questions": len(self.recall),
            "evidence_recall": round(100 * statistics.fmean(self.recall), 1),
            "hit_rate": round(100 * statistics.fmean(self.hit), 1),
            "mean_tokens": round(statistics.fmean(self.tokens), 1),
            "max_tokens": max(self.tokens),
            "latency_p50_ms": lat["p50_ms"],
            "latency_p95_ms": lat["p95_ms"],
        }


@dataclass
class Miss:
    question: Question
    recall: float
    retrieved: list[str]


def bench_embedder(name: str) -> Embedder:
    """``--embedder``: minilm (the default ONNX MiniLM) or static (the static table distilled from it,
    kept in the benchmarks' cache directory)."""
    if name == "static":
        return StaticMiniLMEmbedder(CACHE_DIR / "static-minilm.npz")
    return OnnxMiniLMEmbedder()


async def evaluate(convs: Sequence[Conversation], wanted: Sequence[str], budget: int,
                   limit_questions: int | None,
                   embedder_name: str = "minilm", system_config: str = "",
                   ingest: str = "pipeline", usage_feedback: str | None = None,
                   ) -> tuple[dict[str, Any], dict[str, list[Miss]], dict[str, str]]:
    """Run every wanted method on every conversation. Returns scores, misses and unavailable methods."""
    overall: dict[str, Score] = defaultdict(Score)
    per_cat: dict[tuple[str, int], Score] = defaultdict(Score)
    misses: dict[str, list[Miss]] = defaultdict(list)
    unavailable: dict[str, str] = {}
    embedder = PrimedEmbedder(bench_embedder(embedder_name))
    tmp = Path(tempfile.mkdtemp(prefix="dexai-locomo-"))
    try:
        for conv in convs:
            questions = conv.questions[:limit_questions] if limit_questions else conv.questions
            say(f"{conv.conv_id}: {len(conv.turns)} turns, {len(questions)} questions")
            todo = set(wanted) - set(unavailable)
            try:
                methods, cleanups = await make_methods(conv, embedder, budget, tmp, todo, system_config, ingest,
                                                       usage_feedback)
            except SystemUnavailable as exc:
                unavailable["system"] = unavailable["system@5"] = unavailable["system-nolinks"] = str(exc)
                methods, cleanups = await make_methods(conv, embedder, budget, tmp,
                                                       todo - {"system", "system@5", "system-nolinks"})
            try:
                for name, method in methods.items():
                    for q in questions:
                        r = await method(q)
                        rec = overall[name].add(q, r)
                        per_cat[(name, q.category)].add(q, r)
                        if rec < 1.0:
                            misses[name].append(Miss(q, rec, r.ids))
            finally:
                for close in cleanups:
                    await close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    scores: dict[str, Any] = {}
    for name in overall:
        scores[name] = {"overall": overall[name].to_dict(),
                        "per_category": {CATEGORIES[c]: per_cat[(name, c)].to_dict() for c in CATEGORIES
                                         if (name, c) in per_cat}}
    return scores, misses, unavailable


# --------------------------------------------------------------------------- output
def render(scores: dict[str, Any], unavailable: dict[str, str], wanted: Sequence[str], budget: int) -> str:
    rows = []
    for name in wanted:
        if name in unavailable or name not in scores:
            rows.append([name, "not available", "", "", "", "", "", "", "", ""])
            continue
        o = scores[name]["overall"]
        cats = scores[name]["per_category"]
        rows.append([name, o["evidence_recall"], o["hit_rate"]]
                    + [cats.get(CATEGORIES[c], {}).get("evidence_recall") for c in CATEGORIES]
                    + [o["mean_tokens"], o["latency_p50_ms"], o["latency_p95_ms"]])
    headers = ["method", "recall %", "hit %", *(f"{CATEGORIES[c]} %" for c in CATEGORIES),
               "mean tokens", "p50 ms", "p95 ms"]
    out = format_table(headers, rows, title=f"LoCoMo evidence recall, categories 1-4, block <= {budget} tokens "
                                            "(bm25@k: fixed k turns, no budget)")
    if unavailable:
        out += "\n\n" + "\n".join(f"{name}: not available - {why}" for name, why in unavailable.items())
    return out


def render_misses(misses: list[Miss], convs: Sequence[Conversation], n: int, method: str) -> str:
    by_conv = {c.conv_id: c.by_id for c in convs}
    parts = [f"Missed questions of '{method}' (up to {n} per category)"]
    for cat, label in CATEGORIES.items():
        chosen = [m for m in misses if m.question.category == cat][:n]
        total = sum(1 for m in misses if m.question.category == cat)
        parts.append(f"\n== {label}: {total} questions with recall < 100 %")
        for m in chosen:
            turns = by_conv[m.question.conv_id]
            parts.append(f"\n[{m.question.conv_id} q{m.question.index}] {m.question.question}  "
                         f"(answer: {m.question.answer}; recall {m.recall:.0%})")
            for gid in m.question.gold:
                mark = "+" if gid in m.retrieved else "-"
                t = turns[gid]
                when = t.timestamp.strftime("%d %b %Y") if t.timestamp else "?"
                parts.append(f"  {mark} gold {gid} ({when}): {turn_text(t)[:160]}")
            shown = ", ".join(m.retrieved[:12]) + (" ..." if len(m.retrieved) > 12 else "")
            parts.append(f"  retrieved ({len(m.retrieved)}): {shown}")
            for rid in m.retrieved[:3]:
                parts.append(f"    top {rid}: {turn_text(turns[rid])[:120]}")
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser(NAME, __doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=LOCOMO_PATH, help=f"LoCoMo JSON (default: {LOCOMO_PATH})")
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="block budget in tokens (default: 800)")
    parser.add_argument("--methods", default="system,system@5,hybrid,dense,bm25,bm25@5,bm25@10,bm25@20",
                        help="comma-separated methods (default: all)")
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--embedder", choices=("minilm", "static"), default="minilm",
                        help="the store's embedder: minilm (default) or static (distilled from MiniLM)")
    parser.add_argument("--system-config", default="", metavar="YAML",
                        help="settings added to the system method's memory.yaml, e.g. "
                             "'search: {embed_transcripts: false}' (options of issue 15)")
    parser.add_argument("--ingest", choices=("pipeline", "cli"), default="pipeline",
                        help="how the system method stores the conversation: pipeline (the daemon's warm path, "
                             "default) or cli (as 'dexai memory ingest --vectors now': vectors deferred, then "
                             "filled by the bulk embedder, see embedding.bulk_model)")
    parser.add_argument("--usage-feedback", choices=("evidence", "answer"), default=None,
                        help="system methods: after each question, count the block's memories cited or ignored "
                             "by a simulated reply (evidence: its answer and gold turns; answer: the answer "
                             "alone); later questions rank with them")
    parser.add_argument("--misses", type=int, default=0, metavar="N", help="print N missed questions per category")
    parser.add_argument("--misses-method", default="system", help="method whose misses are printed "
                        "(default: system, else hybrid when system is not available)")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        parser.error(f"LoCoMo data not found at {args.data} (set --data or DEXAI_LOCOMO_PATH)")
    wanted = [m.strip() for m in args.methods.split(",") if m.strip()]
    known = {"system", "system@5", "system-nolinks", "hybrid", "dense", "bm25", *(f"bm25@{k}" for k in FIXED_K)}
    if set(wanted) - known:
        parser.error(f"unknown method(s): {', '.join(sorted(set(wanted) - known))} (known: {', '.join(sorted(known))})")
    convs = load(args.data)
    n_conv = 1 if args.quick else args.conversations
    if n_conv:
        convs = convs[:n_conv]
    limit_q = 20 if args.quick else None
    scores, misses, unavailable = asyncio.run(evaluate(convs, wanted, args.budget, limit_q, args.embedder,
                                                         args.system_config + "\n" if args.system_config else "",
                                                         args.ingest, args.usage_feedback))
    print(render(scores, unavailable, wanted, args.budget))
    if args.misses:
        method = args.misses_method
        if method not in scores:
            method = "hybrid" if "hybrid" in scores else next(iter(scores))
        print("\n" + render_misses(misses[method], convs, args.misses, method))
    summary: dict[str, Any] = {}
    for name in wanted:
        key = name.replace("@", "_at_").replace("-", "_")
        o = scores.get(name, {}).get("overall")
        summary[f"{key}_evidence_recall_pct"] = o["evidence_recall"] if o else None
        summary[f"{key}_hit_rate_pct"] = o["hit_rate"] if o else None
        summary[f"{key}_mean_tokens"] = o["mean_tokens"] if o else None
        summary[f"{key}_latency_p95_ms"] = o["latency_p95_ms"] if o else None
    params = {"data": str(args.data), "conversations": [c.conv_id for c in convs], "budget": args.budget,
              "methods": wanted, "questions_per_conversation": limit_q,
              "questions": sum(len(c.questions[:limit_q] if limit_q else c.questions) for c in convs),
              "dropped_evidence_ids": sorted({d for c in convs for d in c.dropped_evidence}),
              "embedder": bench_embedder(args.embedder).model_id, "pool": POOL,
              "system_config": args.system_config, "ingest": args.ingest, "usage_feedback": args.usage_feedback}
    path = write_result(NAME, quick=args.quick, params=params, summary=summary,
                        results={"scores": scores, "unavailable": unavailable}, out_dir=args.out)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
