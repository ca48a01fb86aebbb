"""LongMemEval (S setting) evidence recall within the L1 budget, with BM25 at the same size.

LongMemEval (Wu et al., ICLR 2025; MIT): 500 questions, each with its own
haystack of ~50 dated user-assistant sessions (~500 turns). For every question
of the chosen split, a fresh store gets the question's haystack (user and
assistant turns, each dated at its session), the question is asked at its
``question_date``, and each method returns the block it would inject (at most
``--budget`` tokens, 800 by default). Gold = the turns marked ``has_answer``;
questions without one (most abstention questions) are skipped and counted.

Metrics, overall and per ``question_type``, as ``locomo_bench`` defines them
(a gold turn is found when it is the source of a memory in the block):

* evidence recall: ``|gold found| / |gold|`` averaged over questions;
* recall_any: share of questions with at least one gold turn found;
* recall_all: share of questions with every gold turn found;
* mean block tokens; recall latency p50/p95 (in-process).

Methods:

``system``
    every turn stored as the L3 transcript memory the pipeline archives for it
    (:func:`dexai_memory.pipeline.transcript_memory`: "User: ...", dated at its
    session, source id = the turn) in one bulk add, no extraction; then the
    block :func:`dexai_memory.recall.ranking.recall_block` builds for the
    question (budget mode) at ``question_date``;
``bm25``, ``dense``, ``hybrid``
    the raw-turn baselines of ``locomo_bench`` (``bm25s``; MiniLM cosine;
    ``NativeProvider`` hybrid search), packed greedily into the same budget.

Split: questions whose ``question_id`` sorts in the first half of the data's
ids are development (``--split dev``, the default); the second half is held
out (``--split holdout``): do not tune on it. Turn embeddings are cached on
disk (the benchmarks' cache directory, keyed by model and text) so a second run only
embeds the queries.

Data: ``shared/bench/longmemeval/s`` beside the checkout (one JSON file per
question, see its README), ``$DEXAI_LONGMEMEVAL_PATH`` or ``--data`` (a
directory of per-question files or the official ``longmemeval_s*.json``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    CACHE_DIR,
    arg_parser,
    elapsed_ms,
    format_table,
    say,
    shared_bench_path,
    write_result,
)
from benchmarks.locomo_bench import (
    Conversation,
    PrimedEmbedder,
    Retrieved,
    Score,
    bench_embedder,
    make_methods,
)
from dexai_memory.embeddings import Embedder
from dexai_memory.models import Turn

NAME = "longmemeval"
DEFAULT_BUDGET = 800
LME_PATH = shared_bench_path("DEXAI_LONGMEMEVAL_PATH", "longmemeval", "s")
WHERE_TO_GET = ("LongMemEval S data not found at {path}. Get the MIT copy of LongMemEval_S from "
                "https://github.com/hussainzs/Memoria (evaluations/data/lme_jsons/, the files with 38-58 "
                "sessions) or longmemeval_s_cleaned.json from https://huggingface.co/datasets/xiaowu0162/"
                "longmemeval-cleaned, put it in shared/bench/longmemeval/s beside the checkout, or point "
                "--data / $DEXAI_LONGMEMEVAL_PATH at it.")
TYPES = ("single-session-user", "single-session-assistant", "single-session-preference",
         "temporal-reasoning", "knowledge-update", "multi-session")
METHODS = ("system", "bm25", "hybrid", "dense")


# --------------------------------------------------------------------------- data
def parse_date(text: str) -> datetime:
    """'2023/03/27 (Mon) 23:35' -> an aware UTC datetime."""
    return datetime.strptime(text.strip(), "%Y/%m/%d (%a) %H:%M").replace(tzinfo=UTC)


@dataclass(frozen=True)
class Question:
    """One LongMemEval question with its gold turn ids."""

    question_id: str
    question_type: str
    question: str
    answer: str
    asked_at: datetime
    gold: tuple[str, ...]

    @property
    def abstention(self) -> bool:
        return self.question_id.endswith("_abs")


def instance_turns(instance: dict[str, Any], user_id: str) -> tuple[list[Turn], tuple[str, ...]]:
    """The haystack of one instance as turns (id ``<session id>:<index>``) and the ids of its gold turns."""
    turns: list[Turn] = []
    gold: list[str] = []
    sessions = zip(instance["haystack_session_ids"], instance["haystack_dates"], instance["haystack_sessions"],
                   strict=True)
    for n, (session_id, date, session) in enumerate(sessions):
        when = parse_date(date)
        sid = f"{n}-{session_id}"  # a session id may repeat within a haystack
        for i, raw in enumerate(session):
            text = str(raw.get("content") or "").strip()
            if not text:
                continue
            role = str(raw.get("role") or "user")
            tid = f"{sid}:{i}"
            turns.append(Turn(id=tid, user_id=user_id, content=text, role=role, speaker=role.capitalize(),
                              timestamp=when, session_id=sid, metadata={"date": date}))
            if raw.get("has_answer"):
                gold.append(tid)
    return turns, tuple(gold)


@dataclass(frozen=True)
class Entry:
    """Where an instance is: its id and type, and the file (and index in it) holding it."""

    question_id: str
    question_type: str
    path: Path
    index: int | None  # None: the file is the instance itself


def _instances(path: Path) -> Iterator[tuple[dict[str, Any], Path, int | None]]:
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    for file in files:
        data = json.loads(file.read_text(encoding="utf-8"))
        if isinstance(data, list):
            for i, item in enumerate(data):
                yield item, file, i
        else:
            yield data, file, None


def index(path: Path) -> list[Entry]:
    """Every instance at ``path`` (a directory of per-question files or one JSON list), sorted by id."""
    entries = [Entry(str(d["question_id"]), str(d["question_type"]), file, i) for d, file, i in _instances(path)]
    return sorted(entries, key=lambda e: e.question_id)


def split(entries: Sequence[Entry], which: str) -> list[Entry]:
    """``dev``: the ids sorting in the first half; ``holdout``: the rest; ``all``: every one."""
    ordered = sorted(entries, key=lambda e: e.question_id)
    half = len(ordered) // 2
    if which == "dev":
        return ordered[:half]
    if which == "holdout":
        return ordered[half:]
    if which == "all":
        return ordered
    raise ValueError(f"unknown split {which!r} (dev, holdout or all)")


def load(entry: Entry) -> tuple[Question, list[Turn]]:
    """The question and haystack of ``entry``."""
    data = json.loads(entry.path.read_text(encoding="utf-8"))
    instance = data[entry.index] if entry.index is not None else data
    if str(instance["question_id"]) != entry.question_id:
        raise ValueError(f"{entry.path}: expected {entry.question_id}, found {instance['question_id']}")
    user_id = f"lme-{entry.question_id}"
    turns, gold = instance_turns(instance, user_id)
    question = Question(entry.question_id, entry.question_type, str(instance["question"]),
                        str(instance.get("answer", "")), parse_date(instance["question_date"]), gold)
    return question, turns


# --------------------------------------------------------------------------- embedding cache
class DiskPrimedEmbedder(PrimedEmbedder):
    """A :class:`PrimedEmbedder` whose primed texts are kept on disk between runs (queries never are).

    The file holds one float32 vector per (model, text) pair, keyed by the
    SHA-256 of the text, in ``longmemeval-<model>.sqlite`` in the benchmarks' cache directory.
    :meth:`forget` drops the in-memory copy between questions.
    """

    def __init__(self, inner: Embedder, path: Path | None):
        super().__init__(inner)
        self.path = path
        self._db: sqlite3.Connection | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path)
            self._db.execute("CREATE TABLE IF NOT EXISTS vec (key BLOB PRIMARY KEY, v BLOB NOT NULL)")
        self.hits = 0
        self.embedded = 0

    @staticmethod
    def _key(text: str) -> bytes:
        return hashlib.sha256(text.encode("utf-8")).digest()[:16]

    def prime(self, texts: Sequence[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if self._db is not None and todo:
            for start in range(0, len(todo), 500):
                part = todo[start:start + 500]
                keys = {self._key(t): t for t in part}
                rows = self._db.execute(f"SELECT key, v FROM vec WHERE key IN ({','.join('?' * len(keys))})",
                                        list(keys)).fetchall()
                for key, blob in rows:
                    self._cache[keys[key]] = np.frombuffer(blob, dtype=np.float32)
                self.hits += len(rows)
        missing = [t for t in todo if t not in self._cache]
        out = super().prime(texts)
        self.embedded += len(missing)
        if self._db is not None and missing:
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO vec (key, v) VALUES (?, ?)",
                                     [(self._key(t), np.asarray(self._cache[t], np.float32).tobytes())
                                      for t in missing])
        return out

    def forget(self) -> None:
        self._cache.clear()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def cache_path(model_id: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-." else "_" for c in model_id)
    return CACHE_DIR / f"longmemeval-{safe}.sqlite"


# --------------------------------------------------------------------------- the system
def _bench_config(home: Path, extra: str) -> Path:
    """A data directory at ``home`` with the settings file of the system method (offline, plus ``extra``)."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "bench.yaml"
    config.write_text("extraction:\n  extractor: offline\n" + extra, encoding="utf-8")
    return config


def _fresh(directory: Path) -> None:
    """Empty ``directory`` (each question gets a fresh store)."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir()


async def system_method(question: Question, turns: list[Turn], embedder: DiskPrimedEmbedder, budget: int,
                        home: Path, config_extra: str = "",
                        ) -> tuple[Callable[[Question], Awaitable[Retrieved]], Callable[[], Awaitable[None]]]:
    """Store ``turns`` as L3 transcript memories (one bulk add, vectors from the cache), return the recall."""
    from dexai_memory.config import load_settings
    from dexai_memory.pipeline import transcript_memory
    from dexai_memory.providers.native import NativeProvider
    from dexai_memory.recall.ranking import recall_block

    settings = load_settings(_bench_config(home, config_extra), home=home)
    provider = NativeProvider(home / "memory.db", embedder=embedder, search=settings.search)
    await provider.start()
    try:
        memories = [transcript_memory(t) for t in turns]
        if settings.search.embed_transcripts:
            embedder.prime([m.content for m in memories])
        await provider.add_many(memories)
    except BaseException:
        await provider.aclose()
        raise

    async def run(q: Question) -> Retrieved:
        t0 = time.perf_counter()
        result = await recall_block(provider, turns[0].user_id, q.question, settings, max_tokens=budget,
                                    now=q.asked_at)
        ms = elapsed_ms(t0)
        ids = [sid for r in result.memories for sid in r.memory.source_ids]
        return Retrieved(list(dict.fromkeys(ids)), result.text, ms)

    return run, provider.aclose


# --------------------------------------------------------------------------- scoring
@dataclass
class LmeScore(Score):
    """``locomo_bench``'s score (recall, hit = recall_any, tokens, latency) plus recall_all."""

    all_found: list[float] = field(default_factory=list)

    def add(self, q: Any, r: Retrieved) -> float:
        rec = super().add(q, r)
        self.all_found.append(1.0 if rec == 1.0 else 0.0)
        return rec

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if self.recall:
            out["recall_any"] = out.pop("hit_rate")
            out["recall_all"] = round(100 * statistics.fmean(self.all_found), 1)
        return out


async def evaluate(entries: Sequence[Entry], wanted: Sequence[str], budget: int, embedder_name: str = "minilm",
                   system_config: str = "", use_cache: bool = True) -> dict[str, Any]:
    """Run every wanted method on every question of ``entries``; scores and counts."""
    overall: dict[str, LmeScore] = defaultdict(LmeScore)
    per_type: dict[tuple[str, str], LmeScore] = defaultdict(LmeScore)
    per_question: list[dict[str, Any]] = []
    skipped: list[str] = []
    inner = bench_embedder(embedder_name)
    embedder = DiskPrimedEmbedder(inner, cache_path(inner.model_id) if use_cache else None)
    tmp = Path(tempfile.mkdtemp(prefix="dexai-lme-"))
    t_start = time.perf_counter()
    try:
        for n, entry in enumerate(entries, 1):
            q, turns = load(entry)
            if not q.gold:
                skipped.append(q.question_id)
                continue
            t0 = time.perf_counter()
            embedder.forget()
            conv = Conversation(q.question_id, turns[0].user_id, turns, [])
            base = set(wanted) - {"system"}
            methods, cleanups = await make_methods(conv, embedder, budget, tmp, base)
            if "system" in wanted:
                run, close = await system_method(q, turns, embedder, budget, tmp / f"{n}-system", system_config)
                methods = {"system": run, **methods}
                cleanups.append(close)
            row: dict[str, Any] = {"question_id": q.question_id, "type": q.question_type, "gold": len(q.gold)}
            try:
                for name in wanted:
                    r = await methods[name](q)
                    row[name] = overall[name].add(q, r)
                    per_type[(name, q.question_type)].add(q, r)
            finally:
                for close in cleanups:
                    await close()
            per_question.append(row)
            _fresh(tmp)
            say(f"[{n}/{len(entries)}] {q.question_id} ({q.question_type}): {len(turns)} turns, "
                f"{elapsed_ms(t0) / 1000:.1f} s, " + ", ".join(f"{m} {row[m]:.2f}" for m in wanted))
    finally:
        embedder.close()
        shutil.rmtree(tmp, ignore_errors=True)
    types = [t for t in TYPES if any((w, t) in per_type for w in wanted)]
    types += sorted({t for (_, t) in per_type} - set(types))
    scores = {name: {"overall": overall[name].to_dict(),
                     "per_type": {t: per_type[(name, t)].to_dict() for t in types if (name, t) in per_type}}
              for name in wanted if name in overall}
    return {"scores": scores, "types": types, "skipped_no_gold": skipped, "per_question": per_question,
            "seconds": round(time.perf_counter() - t_start, 1),
            "embedding_cache": {"hits": embedder.hits, "embedded": embedder.embedded,
                                "path": str(embedder.path) if embedder.path else None}}


# --------------------------------------------------------------------------- output
def render(results: dict[str, Any], wanted: Sequence[str], budget: int, split_name: str) -> str:
    scores, types = results["scores"], results["types"]
    rows = []
    for name in wanted:
        o = scores[name]["overall"]
        rows.append([name, o["questions"], o["evidence_recall"], o["recall_any"], o["recall_all"],
                     o["mean_tokens"], o["latency_p50_ms"], o["latency_p95_ms"]])
    out = format_table(["method", "questions", "recall %", "any %", "all %", "mean tokens", "p50 ms", "p95 ms"],
                       rows, title=f"LongMemEval S, {split_name} split, evidence recall, block <= {budget} tokens")
    rows = []
    for t in types:
        cells: list[Any] = [t, scores[wanted[0]]["per_type"].get(t, {}).get("questions")]
        for name in wanted:
            d = scores[name]["per_type"].get(t, {})
            cells.append(f"{d.get('evidence_recall')} / {d.get('recall_any')} / {d.get('recall_all')}")
        rows.append(cells)
    out += "\n\n" + format_table(["question type", "questions", *(f"{m} recall/any/all %" for m in wanted)], rows,
                                 title="per question type")
    if results["skipped_no_gold"]:
        out += f"\n\nskipped (no has_answer turn): {len(results['skipped_no_gold'])} questions"
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser("longmemeval_bench", __doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=LME_PATH,
                        help=f"directory of per-question JSON files or one JSON list (default: {LME_PATH})")
    parser.add_argument("--split", choices=("dev", "holdout", "all"), default="dev",
                        help="dev: ids in the first half (default); holdout: the second half, never tune on it")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N questions of the split")
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="block budget in tokens (default: 800)")
    parser.add_argument("--methods", default="system,bm25", help=f"comma-separated, of {', '.join(METHODS)} "
                        "(default: system,bm25)")
    parser.add_argument("--embedder", choices=("minilm", "static"), default="minilm")
    parser.add_argument("--system-config", default="", metavar="YAML", help="settings added to the system's memory.yaml")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the turn embedding cache")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH",
                        help="where to write the result (default: results/longmemeval.<split>[.quick].json)")
    args = parser.parse_args(argv)
    if not args.data.exists():
        parser.error(WHERE_TO_GET.format(path=args.data))
    wanted = [m.strip() for m in args.methods.split(",") if m.strip()]
    if set(wanted) - set(METHODS):
        parser.error(f"unknown method(s): {', '.join(sorted(set(wanted) - set(METHODS)))}")
    entries = split(index(args.data), args.split)
    limit = 10 if args.quick and args.limit is None else args.limit
    chosen = entries[:limit] if limit else entries
    say(f"{len(chosen)} of {len(entries)} {args.split} questions")
    results = asyncio.run(evaluate(chosen, wanted, args.budget, args.embedder,
                                   args.system_config + "\n" if args.system_config else "", not args.no_cache))
    print(render(results, wanted, args.budget, args.split))
    summary: dict[str, Any] = {}
    for name in wanted:
        o = results["scores"].get(name, {}).get("overall", {})
        for key in ("evidence_recall", "recall_any", "recall_all"):
            summary[f"{name}_{key}_pct"] = o.get(key)
        summary[f"{name}_mean_tokens"] = o.get("mean_tokens")
        summary[f"{name}_latency_p95_ms"] = o.get("latency_p95_ms")
    params = {"data": str(args.data), "split": args.split, "questions_in_split": len(entries),
              "limit": limit, "questions": [e.question_id for e in chosen], "budget": args.budget,
              "methods": wanted, "embedder": bench_embedder(args.embedder).model_id,
              "system_config": args.system_config}
    out_dir = args.json.parent if args.json else args.out
    path = write_result(f"{NAME}.{args.split}", quick=args.quick, params=params, summary=summary,
                        results=results, out_dir=out_dir)
    if args.json and path != args.json:
        path = path.replace(args.json)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
