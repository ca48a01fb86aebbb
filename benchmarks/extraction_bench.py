"""Extraction benchmark (issue 13): what a coding agent must not forget, from one turn at a time.

Corpus: ``benchmarks/data/extraction_corpus.jsonl``, hand-written single-turn
statements of a coding session's or a personal assistant's user, each labelled
(``must_keep``, ``kind``, accepted memory ``types``, ``min_importance``,
``key_phrases`` that the stored content must hold verbatim, and for dated ones
the turn timestamp ``ts`` and the resolved ``date``), plus filler and
chit-chat (``kind: filler``) that must yield nothing. ``split`` is ``dev``
(tuned on) or ``heldout`` (never looked at while tuning); both are reported.

Each turn goes through what the live path runs on a prompt: redaction, the
heuristic gate at ``extraction.gate_threshold`` (a turn below it is never
extracted), then the extractor, as a ``user`` turn with no speaker name (as
the Claude Code hooks send it). Extractors: ``offline`` (always); with
``--haiku fake``, the Haiku extractor through the real ``anthropic`` client
against :mod:`dexai_memory.demo.fakeapi`, whose model echoes every turn as one note
(a plumbing check and a "store everything verbatim" baseline, not a model's
quality); with ``--haiku real``, the configured Anthropic API (needs
``ANTHROPIC_API_KEY``; costs money; never run by the tests).

Scoring, per must-keep statement: **found** = a note of the turn holds every
key phrase (case-insensitive); **kept** (recall) = found, and that note has an
accepted type, importance >= ``min_importance`` and clean content (no "The
user said", "Remember this:", "The user warned:" prefixes, no broken
third-person grammar such as "The user work"). **Precision** = notes that hold
the key phrases of their statement / every note (filler notes count as
wrong). **Date accuracy** = dated statements with a note whose ``event_date``
(or commitment due date) equals the label. Filler: notes per filler turn and
the share of filler turns with any note, and the notes per filler turn of the
extractor alone (gate off: what ``ingest``, whose gate threshold is 0, stores).

``--quick``: every third statement, offline only. ``--misses N`` prints N
misses per kind of the ``--misses-split`` split (default ``dev``).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.common import BENCH_DIR, arg_parser, format_table, say, write_result
from dexai_memory.capture.gate import Gate
from dexai_memory.config import DEFAULT_GATE_THRESHOLD
from dexai_memory.errors import ExtractionError
from dexai_memory.extraction.base import Extractor
from dexai_memory.models import ExtractedNote, Turn
from dexai_memory.text.redaction import redact

NAME = "extraction_bench"
CORPUS = BENCH_DIR / "data" / "extraction_corpus.jsonl"
USER = "bench-user"
FIELDS = {"id", "split", "text", "ts", "must_keep", "kind", "types", "min_importance", "key_phrases", "date"}
#: Content an extractor must not store as is (see the module docstring).
UNCLEAN = re.compile(
    r"^(?:the user (?:said|says|warned|instructed|noted|mentioned|asked)\b|remember (?:this|that)\b|note\s*:|"
    r"the user and the team's\b)|\bthe user (?:live|work|have|want|need|like|prefer|use|go|do)\b",
    re.I,
)
SPLITS = ("dev", "heldout", "all")


class CorpusError(ValueError):
    """The corpus file is malformed."""


def load_corpus(path: Path = CORPUS) -> list[dict[str, Any]]:
    """The labelled rows of ``path`` (one JSON object per line), checked."""
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        missing = FIELDS - set(row)
        if missing:
            raise CorpusError(f"{path}:{n}: missing {sorted(missing)}")
        if row["id"] in seen:
            raise CorpusError(f"{path}:{n}: duplicate id {row['id']}")
        if row["split"] not in ("dev", "heldout"):
            raise CorpusError(f"{path}:{n}: split must be dev or heldout")
        if row["must_keep"] and not row["key_phrases"]:
            raise CorpusError(f"{path}:{n}: a must-keep row needs key phrases")
        for phrase in row["key_phrases"]:
            if phrase.lower() not in row["text"].lower():
                raise CorpusError(f"{path}:{n}: key phrase {phrase!r} is not in the text")
        seen.add(row["id"])
        rows.append(row)
    return rows


def _turn(row: dict[str, Any]) -> Turn:
    return Turn(id=row["id"], user_id=USER, content=redact(row["text"]), role="user",
                timestamp=datetime.fromisoformat(row["ts"]), session_id="bench", project="bench")


async def run_extractor(extractor: Extractor, rows: Sequence[dict[str, Any]], gate: Gate) -> dict[str, Any]:
    """Per row: the gate's verdict and the notes (none when the gate stops the turn); for filler rows
    also the notes of the extractor alone (``ungated``: what ``ingest``, whose gate threshold is 0, or
    a longer turn that passes the gate would store)."""
    out: dict[str, Any] = {}

    async def extract(turn: Turn) -> list[ExtractedNote]:
        try:
            return await extractor.extract([turn])
        except ExtractionError as exc:  # reported per turn; the live path would retry, then dead-letter
            out[turn.id]["errors"].append(str(exc))
            return []

    for row in rows:
        turn = _turn(row)
        verdict = gate.score(turn.content, ())
        out[row["id"]] = {"gate": verdict.score, "passed": verdict.passed, "errors": []}
        notes = await extract(turn) if verdict.passed else []
        out[row["id"]]["notes"] = notes
        if not row["must_keep"]:
            out[row["id"]]["ungated"] = notes if verdict.passed else await extract(turn)
    return out


def _holds(content: str, phrases: Iterable[str]) -> bool:
    low = " ".join(content.lower().split())
    return all(" ".join(p.lower().split()) in low for p in phrases)


def _note_date(note: ExtractedNote) -> set[str]:
    found = {note.event_date} if note.event_date else set()
    if note.commitment is not None and note.commitment.due_at is not None:
        found.add(note.commitment.due_at.date().isoformat())
    return found


def score_row(row: dict[str, Any], notes: Sequence[ExtractedNote]) -> dict[str, Any]:
    """Found / kept / why not / date for one row (see the module docstring)."""
    if not row["must_keep"]:
        return {"notes": len(notes), "matching": 0}
    matching = [n for n in notes if _holds(n.content, row["key_phrases"])]
    result: dict[str, Any] = {"notes": len(notes), "matching": len(matching), "found": bool(matching)}
    problems: list[str] = []
    kept = False
    for note in matching:
        why = []
        if note.type.value not in row["types"]:
            why.append(f"type {note.type.value}")
        if note.importance < row["min_importance"]:
            why.append(f"importance {note.importance}")
        if UNCLEAN.search(note.content):
            why.append("unclean")
        if not why:
            kept = True
            break
        problems.extend(why)
    if not matching:
        problems.append("no note" if not notes else "key phrase lost")
    result["kept"] = kept
    result["problems"] = [] if kept else sorted(set(problems))
    if row["date"]:
        result["date_ok"] = any(row["date"] in _note_date(n) for n in notes)
    return result


def _pct(num: int, den: int) -> float | None:
    return round(100.0 * num / den, 1) if den else None


def summarise(rows: Sequence[dict[str, Any]], scores: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per-kind and overall figures of ``rows``."""
    kinds: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in rows:
        s = scores[row["id"]]
        k = kinds[row["kind"]]
        k["n"] += 1
        k["notes"] += s["notes"]
        if row["must_keep"]:
            k["found"] += s["found"]
            k["kept"] += s["kept"]
            k["matching"] += s["matching"]
            if "date_ok" in s:
                k["dated"] += 1
                k["date_ok"] += s["date_ok"]
        else:
            k["with_notes"] += s["notes"] > 0
            k["ungated"] += s.get("ungated", 0)
    per_kind: dict[str, dict[str, Any]] = {}
    for kind, k in sorted(kinds.items()):
        if kind == "filler":
            per_kind[kind] = {"n": k["n"], "notes": k["notes"], "notes_per_turn": round(k["notes"] / k["n"], 3),
                              "turns_with_notes_pct": _pct(k["with_notes"], k["n"]),
                              "ungated_notes_per_turn": round(k["ungated"] / k["n"], 3)}
        else:
            per_kind[kind] = {"n": k["n"], "recall_pct": _pct(k["kept"], k["n"]), "found_pct": _pct(k["found"], k["n"]),
                              "precision_pct": _pct(k["matching"], k["notes"]),
                              "notes_per_turn": round(k["notes"] / k["n"], 3),
                              "date_accuracy_pct": _pct(k["date_ok"], k["dated"]), "dated": k["dated"]}
    keep = [r for r in rows if r["must_keep"]]
    filler = [r for r in rows if not r["must_keep"]]
    kept = sum(scores[r["id"]]["kept"] for r in keep)
    found = sum(scores[r["id"]]["found"] for r in keep)
    matching = sum(scores[r["id"]]["matching"] for r in keep)
    notes = sum(scores[r["id"]]["notes"] for r in rows)
    dated = [r for r in keep if r["date"]]
    filler_notes = sum(scores[r["id"]]["notes"] for r in filler)
    recalls = [v["recall_pct"] for kk, v in per_kind.items() if kk != "filler" and v["recall_pct"] is not None]
    overall = {
        "statements": len(keep), "filler_turns": len(filler),
        "recall_pct": _pct(kept, len(keep)), "found_pct": _pct(found, len(keep)),
        "min_kind_recall_pct": min(recalls) if recalls else None,
        "precision_pct": _pct(matching, notes),
        "notes_per_statement": round(sum(scores[r["id"]]["notes"] for r in keep) / len(keep), 3) if keep else None,
        "filler_notes_per_turn": round(filler_notes / len(filler), 3) if filler else None,
        "filler_turns_with_notes_pct": _pct(sum(scores[r["id"]]["notes"] > 0 for r in filler), len(filler)),
        "filler_notes_per_turn_ungated": round(sum(scores[r["id"]].get("ungated", 0) for r in filler) / len(filler), 3)
        if filler else None,
        "date_accuracy_pct": _pct(sum(scores[r["id"]]["date_ok"] for r in dated), len(dated)),
        "dated": len(dated),
    }
    return {"overall": overall, "per_kind": per_kind}


def _note_json(note: ExtractedNote) -> dict[str, Any]:
    return {"content": note.content, "type": note.type.value, "importance": note.importance,
            "confidence": note.confidence, "category": note.category, "event_date": note.event_date,
            "due": note.commitment.due_at.date().isoformat() if note.commitment and note.commitment.due_at else None}


def _fake_echo_api() -> Any:
    """A started fake Messages API whose model records every turn to extract as one FACT note."""
    from dexai_memory.demo.fakeapi import FakeMessagesAPI, Reply, ToolUse, last_user_text

    line = re.compile(r"^\[(?P<id>[^\]]+)\] \w+(?: \([^)]*\))?: (?P<text>.*)$")

    def respond(body: dict[str, Any]) -> Reply | None:
        text = last_user_text(body)
        if "TO EXTRACT:" not in text:
            return None
        notes = [{"content": m.group("text"), "type": "FACT", "importance": 5, "source_ids": [m.group("id")]}
                 for raw in text.split("TO EXTRACT:", 1)[1].splitlines() if (m := line.match(raw.strip()))]
        return Reply(tool_uses=[ToolUse("record_memories", {"notes": notes})])

    return FakeMessagesAPI(responder=respond).start()


async def _extractors(haiku: str | None) -> tuple[list[tuple[str, Extractor]], list[Any]]:
    from dexai_memory.extraction.offline import OfflineExtractor

    found: list[tuple[str, Extractor]] = [("offline", OfflineExtractor())]
    closers: list[Any] = []
    if haiku:
        import anthropic

        from dexai_memory.config import load_settings
        from dexai_memory.extraction.haiku import HaikuExtractor

        model = load_settings().extraction.extraction_model
        if haiku == "fake":
            api = _fake_echo_api()
            closers.append(api.stop)
            client = anthropic.AsyncAnthropic(base_url=api.base_url, api_key="fake", max_retries=0)
            name = "haiku-fake-echo"
        else:
            client = anthropic.AsyncAnthropic()
            name = f"haiku ({model})"
        haiku_extractor = HaikuExtractor(client, model)
        closers.append(haiku_extractor.aclose)
        found.append((name, haiku_extractor))
    return found, closers


def _tables(name: str, summaries: dict[str, dict[str, Any]]) -> str:
    out: list[str] = []
    for split in SPLITS:
        s = summaries[split]
        rows = []
        for kind, v in s["per_kind"].items():
            if kind == "filler":
                continue
            rows.append([kind, v["n"], v["recall_pct"], v["found_pct"], v["precision_pct"], v["notes_per_turn"],
                         v["date_accuracy_pct"]])
        o = s["overall"]
        rows.append(["ALL", o["statements"], o["recall_pct"], o["found_pct"], o["precision_pct"],
                     o["notes_per_statement"], o["date_accuracy_pct"]])
        out.append(format_table(["kind", "n", "recall %", "found %", "precision %", "notes/turn", "date acc %"], rows,
                                title=f"{name}, {split} split"))
        out.append(f"filler: {o['filler_turns']} turns, {o['filler_notes_per_turn']} notes per turn, "
                   f"{o['filler_turns_with_notes_pct']} % of them with a note "
                   f"({o['filler_notes_per_turn_ungated']} notes per turn from the extractor alone, gate off); "
                   f"least recall of a kind: {o['min_kind_recall_pct']} %\n")
    return "\n\n".join(out)


def _misses(rows: Sequence[dict[str, Any]], per_turn: dict[str, Any], split: str, n: int) -> str:
    lines = [f"Misses ({split} split, up to {n} per kind):"]
    by_kind: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        if split != "all" and row["split"] != split:
            continue
        t = per_turn[row["id"]]
        s = t["score"]
        bad = (row["must_keep"] and (not s["kept"] or s.get("date_ok") is False)) or (not row["must_keep"]
                                                                                     and s.get("ungated"))
        if bad and len(by_kind[row["kind"]]) < n:
            notes = "; ".join(f"[{x['type']} {x['importance']} {x['event_date'] or x['due'] or ''}] {x['content']}"
                              for x in t.get("ungated_notes", t["notes"])) or "(none)"
            why = ", ".join(s.get("problems", [])) + ("" if s.get("date_ok", True) else " date")
            by_kind[row["kind"]].append(f"  {row['id']} {row['text']!r} gate={t['gate']} {why} -> {notes}")
    for kind, items in sorted(by_kind.items()):
        lines.append(f" {kind}:")
        lines.extend(items)
    return "\n".join(lines)


async def run(rows: Sequence[dict[str, Any]], haiku: str | None, threshold: float) -> dict[str, Any]:
    """Every extractor over ``rows``: per-turn notes and scores, summaries per split."""
    gate = Gate(threshold)
    extractors, closers = await _extractors(haiku)
    results: dict[str, Any] = {}
    try:
        for name, extractor in extractors:
            say(f"{name}: {len(rows)} turns ...")
            raw = await run_extractor(extractor, rows, gate)
            per_turn: dict[str, Any] = {}
            scores: dict[str, dict[str, Any]] = {}
            for row in rows:
                r = raw[row["id"]]
                scores[row["id"]] = score_row(row, r["notes"])
                if "ungated" in r:
                    scores[row["id"]]["ungated"] = len(r["ungated"])
                per_turn[row["id"]] = {"gate": r["gate"], "passed": r["passed"], "errors": r["errors"],
                                       "notes": [_note_json(n) for n in r["notes"]], "score": scores[row["id"]]}
                if "ungated" in r:
                    per_turn[row["id"]]["ungated_notes"] = [_note_json(n) for n in r["ungated"]]
            summaries = {split: summarise([r for r in rows if split == "all" or r["split"] == split], scores)
                         for split in SPLITS}
            errors = sum(len(r["errors"]) for r in raw.values())
            if errors:
                say(f"{name}: {errors} extraction error(s), counted as no note")
            results[name] = {"summary": summaries, "per_turn": per_turn, "errors": errors}
    finally:
        for close in closers:
            maybe = close()
            if asyncio.iscoroutine(maybe):
                await maybe
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser(NAME, __doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help=f"labelled corpus (default: {CORPUS})")
    parser.add_argument("--haiku", choices=("fake", "real"), default=None,
                        help="also run the Haiku extractor: against the local fake API (echo model) or the real API")
    parser.add_argument("--threshold", type=float, default=DEFAULT_GATE_THRESHOLD,
                        help=f"gate threshold (default: extraction.gate_threshold = {DEFAULT_GATE_THRESHOLD})")
    parser.add_argument("--misses", type=int, default=0, metavar="N", help="print N misses per kind")
    parser.add_argument("--misses-split", choices=SPLITS, default="dev",
                        help="split whose misses are printed (default: dev; keep heldout unseen while tuning)")
    args = parser.parse_args(argv)
    rows = load_corpus(args.corpus)
    if args.quick:
        rows = rows[::3]
    results = asyncio.run(run(rows, None if args.quick else args.haiku, args.threshold))
    for name, res in results.items():
        print(_tables(name, res["summary"]))
        if args.misses:
            print(_misses(rows, res["per_turn"], args.misses_split, args.misses))
            print()
    summary: dict[str, Any] = {}
    for name, res in results.items():
        prefix = name.split(" ")[0].replace("-", "_")
        for split in ("dev", "heldout"):
            o = res["summary"][split]["overall"]
            for key in ("recall_pct", "min_kind_recall_pct", "precision_pct", "filler_notes_per_turn",
                        "filler_notes_per_turn_ungated", "date_accuracy_pct"):
                summary[f"{prefix}_{split}_{key}"] = o[key]
    params = {"corpus": str(args.corpus), "rows": len(rows), "threshold": args.threshold,
              "extractors": list(results), "haiku": args.haiku}
    path = write_result(NAME, quick=args.quick, params=params, summary=summary, results=results, out_dir=args.out)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
