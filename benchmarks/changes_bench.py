"""changes_bench: facts that change, and facts that stay, through the real warm path.

``benchmarks/data/changes.jsonl`` holds pairs of statements said days apart:

* a **change** pair: the second statement replaces the first (a reversed
  preference, a move, a new job, a tool migration, a rescheduled meeting, a
  correction, "I quit coffee", "X took over from Y", a renamed branch, "from X
  to Y", "no longer", "instead", "now", a negation);
* a **keep** pair: both stay true ("I also love swimming", two attributes, two
  people, a second value).

Each pair is said by the user of a Claude Code session (role ``user``, no
speaker) or by a named speaker. Every pair gets its own user in one SQLite
store (a temporary directory): each statement is a turn, dated when it was
said, that goes the daemon's way: redaction and the gate
(:meth:`~dexai_memory.pipeline.Pipeline.admit`), then
:meth:`~dexai_memory.pipeline.Pipeline.process` (the queue's handler: the
offline extractor, supersession, the native provider). Then, per pair:

* change: the new value is current; no current memory holds the old value
  without the new one; the old value is in history (a superseded memory);
  ``list --as-of`` a time between the two statements shows the old value;
* keep: both values are current.

A value is found in a memory's text as whole words, case-insensitively (a word also with a
third-person -s/-es: the labels quote the user, memories say "The user ...").
Every fourth pair of each kind is marked ``holdout``: it is reported apart
and was not looked at while the rules were tuned.

``--classifier haiku-fake`` runs the Haiku classifier (the real ``anthropic``
client and :class:`~dexai_memory.extraction.haiku.HaikuClassifier`) against the
local fake Messages API (:mod:`dexai_memory.demo.fakeapi`), whose model answers
from the pair's label: SUPERSEDE for the stored memory holding the old value of
a change, ADD otherwise. It measures what a correct model answer becomes once
the guards, the storage rules and the timestamps have had their say, not the
model's judgement. ``--classifier both`` runs the two.

``--classifier import`` says each pair's second statement through ``dexai memory
import`` instead (:func:`~dexai_memory.supersession.imports.import_memories`, the
offline rules): its notes, dated when it was said, arrive as the lines of a file
(a store that holds the first statement takes in what another one learnt), next
to ``import-as-is``, the import that stored such lines as they were, without
supersession. ``--classifier all`` runs the four.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.common import BENCH_DIR, format_table, write_result

DATA = BENCH_DIR / "data" / "changes.jsonl"
#: When every pair's first statement is said.
START = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Pair:
    id: str
    kind: str
    category: str
    speaker: str | None
    old: str
    new: str
    old_value: str
    new_value: str
    gap_days: int
    holdout: bool

    @property
    def said(self) -> tuple[datetime, datetime]:
        return START, START + timedelta(days=self.gap_days)


def load_pairs(path: Path = DATA) -> list[Pair]:
    with path.open(encoding="utf-8") as fh:
        return [Pair(**json.loads(line)) for line in fh if line.strip()]


def has(text: str, value: str) -> bool:
    """Whether ``value`` occurs in ``text`` as whole words (case-insensitive), a word of it also in its
    third-person form: the labels quote the user ("play tennis", "cycle"), memories say "The user
    plays tennis", "cycles"."""
    words = [rf"{re.escape(w)}(?:s|es)?" if w.isalpha() else re.escape(w) for w in value.split()]
    return re.search(rf"(?<!\w){' '.join(words)}(?!\w)", text, re.IGNORECASE) is not None


def _turn(pair: Pair, which: str) -> Any:
    from dexai_memory.models import Turn

    text = pair.old if which == "old" else pair.new
    when = pair.said[0] if which == "old" else pair.said[1]
    return Turn(id=f"{pair.id}-{which}", user_id=f"u-{pair.id}", content=text, role="user", speaker=pair.speaker,
                session_id=f"s-{pair.id}-{which}", timestamp=when)


def _recording_extractor() -> Any:
    """The offline extractor, keeping the notes of its last call (to tell extraction misses apart)."""
    from dexai_memory.extraction.offline import OfflineExtractor

    class Recording(OfflineExtractor):
        last: list[Any] = []

        async def extract(self, turns: Any, context: Any = ()) -> Any:
            notes = await super().extract(turns, context=context)
            self.last = list(notes)
            return notes

    return Recording()


async def run_pair(pipeline: Any, pair: Pair, *, imported: str | None = None) -> dict[str, Any]:
    """Say the pair's two statements through ``pipeline``, then check the store (module docstring).

    ``imported`` ("as-is" or "decided"): the second statement's notes reach the store through
    ``dexai memory import`` (:func:`~dexai_memory.supersession.imports.import_memories`) instead,
    as lines of a file written elsewhere and dated when they were said; "as-is" stores them as the
    import did before it went through supersession.
    """
    from dexai_memory.supersession.imports import import_memories

    gated: list[str] = []
    extracted: dict[str, bool] = {}
    for which, value in (("old", pair.old_value), ("new", pair.new_value)):
        clean, verdict = pipeline.admit(_turn(pair, which))
        if clean is None or not verdict.passed:
            gated.append(which)
            extracted[which] = False
            continue
        pipeline.extractor.last = []
        if which == "new" and imported is not None:
            notes = await pipeline.extractor.extract([clean])
            await import_memories(pipeline.provider, [pipeline.note_memory(n, [clean]) for n in notes], {},
                                  enabled=imported == "decided")
        else:
            await pipeline.process([(clean, ())])
        extracted[which] = any(has(n.content, value) for n in pipeline.extractor.last)
    return await check_pair(pipeline.provider, pair, gated, extracted)


async def check_pair(provider: Any, pair: Pair, gated: list[str], extracted: dict[str, bool]) -> dict[str, Any]:
    """The checks of the module docstring on ``pair``'s user in ``provider``."""
    from dexai_memory.models import MemoryType, SearchFilters
    from dexai_memory.providers import history as timeline

    user = f"u-{pair.id}"
    everything = [m for m in await provider.list(user_id=user, filters=SearchFilters(
        valid_only=False, include_archived=True), limit=1000) if m.type is not MemoryType.TRANSCRIPT]
    current = [m for m in everything if m.is_valid]
    old_said, new_said = pair.said
    between = old_said + (new_said - old_said) / 2
    then = [m for m in await timeline.as_of(provider, between, user_id=user, limit=1000)
            if m.type is not MemoryType.TRANSCRIPT]
    checks: dict[str, bool]
    if pair.kind == "change":
        checks = {
            "new_current": any(has(m.content, pair.new_value) for m in current),
            "old_not_current_alone": not any(has(m.content, pair.old_value) and not has(m.content, pair.new_value)
                                             for m in current),
            "old_in_history": any(has(m.content, pair.old_value) and m.superseded_by for m in everything),
            "as_of_shows_old": any(has(m.content, pair.old_value) for m in then),
        }
    else:
        checks = {
            "old_current": any(has(m.content, pair.old_value) for m in current),
            "new_current": any(has(m.content, pair.new_value) for m in current),
        }
    conflicts = []
    if provider.contradiction_log is not None:
        conflicts = [c for c in await provider.contradiction_log.list(user_id=user, open_only=True)]
    return {"id": pair.id, "kind": pair.kind, "category": pair.category, "holdout": pair.holdout,
            "speaker": pair.speaker, "ok": all(checks.values()),
            "reached": not gated and all(extracted.values()), "checks": checks, "gated": gated,
            "extracted": extracted, "open_conflicts": len(conflicts),
            "current": [m.content for m in current],
            "history": [m.content for m in everything if not m.is_valid]}


def _oracle_api(saying: dict[str, Pair]) -> Any:
    """A started fake Messages API whose classify_update answers from the label of ``saying["pair"]``
    (the pair being said; pairs are said one at a time)."""
    from dexai_memory.demo.fakeapi import FakeMessagesAPI, Reply, ToolUse, last_user_text

    line = re.compile(r"^\[(?P<id>[^\]]+)\] (?P<text>.*)$")

    def respond(body: dict[str, Any]) -> Reply | None:
        text = last_user_text(body)
        if not text.startswith("NEW:") or "EXISTING:" not in text:
            return None
        pair = saying.get("pair")
        if pair is not None and pair.kind != "change":
            pair = None
        decisions = []
        for raw in text.split("EXISTING:", 1)[1].splitlines():
            m = line.match(raw.strip())
            if not m:
                continue
            old = m.group("text")
            replaces = pair is not None and has(old, pair.old_value) and not has(old, pair.new_value)
            decisions.append({"memory_id": m.group("id"), "action": "SUPERSEDE" if replaces else "ADD",
                              "reason": "the label says it changed" if replaces else "the label says both hold"})
        return Reply(tool_uses=[ToolUse("classify_update", {"decisions": decisions})])

    return FakeMessagesAPI(responder=respond).start()


async def run(pairs: Sequence[Pair], classifier_name: str) -> list[dict[str, Any]]:
    from dexai_memory.config import load_settings
    from dexai_memory.pipeline import Pipeline
    from dexai_memory.providers.native import NativeProvider

    settings = load_settings()
    closers: list[Any] = []
    classifier = None
    saying: dict[str, Pair] = {}
    if classifier_name == "haiku-fake":
        import anthropic

        from dexai_memory.extraction.haiku import HaikuClassifier

        api = _oracle_api(saying)
        closers.append(api.stop)
        client = anthropic.AsyncAnthropic(base_url=api.base_url, api_key="fake", max_retries=0)
        classifier = HaikuClassifier(client, settings.supersession.classification_model)
    imported = {"import": "decided", "import-as-is": "as-is"}.get(classifier_name)
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="changes-bench-") as tmp:
            async with NativeProvider(Path(tmp) / "memory.db", embedder=None) as provider:
                pipeline = Pipeline(provider, settings, extractor=_recording_extractor(), classifier=classifier)
                for pair in pairs:
                    saying["pair"] = pair
                    results.append(await run_pair(pipeline, pair, imported=imported))
    finally:
        if classifier is not None:
            await classifier.aclose()
        for close in closers:
            close()
    return results


def summarize(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for split in ("dev", "holdout", "all"):
        part = [r for r in results if split == "all" or r["holdout"] == (split == "holdout")]
        for kind, name in (("change", "changes"), ("keep", "keeps")):
            rows = [r for r in part if r["kind"] == kind]
            ok = sum(r["ok"] for r in rows)
            out[f"{name}_{split}_n"] = len(rows)
            out[f"{name}_{split}_pct"] = round(100 * ok / len(rows), 1) if rows else None
            # the pairs whose two statements passed the gate and were extracted with their values:
            # what supersession alone decides
            reached = [r for r in rows if r["reached"]]
            out[f"{name}_{split}_reached_n"] = len(reached)
            out[f"{name}_{split}_reached_pct"] = (round(100 * sum(r["ok"] for r in reached) / len(reached), 1)
                                                  if reached else None)
    changes = [r for r in results if r["kind"] == "change"]
    for check in ("new_current", "old_not_current_alone", "old_in_history", "as_of_shows_old"):
        out[f"changes_{check}_pct"] = round(100 * sum(r["checks"][check] for r in changes) / len(changes), 1)
    out["gated_n"] = sum(bool(r["gated"]) for r in results)
    out["not_extracted_n"] = sum(not r["gated"] and not r["reached"] for r in results)
    out["open_conflicts_n"] = sum(r["open_conflicts"] for r in results)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="every third pair only")
    parser.add_argument("--classifier", choices=("offline", "haiku-fake", "import", "both", "all"), default="both",
                        help="offline rules, the Haiku classifier on the fake API, or both (default); 'import': "
                             "the second statement arrives by 'dexai memory import' (offline rules), beside the "
                             "import that stored it as is ('import-as-is'); 'all': the four")
    parser.add_argument("--misses", action="store_true", help="print every development pair that failed")
    parser.add_argument("--holdout-misses", action="store_true", help="print the holdout pairs that failed too")
    parser.add_argument("--out", type=Path, default=None, help="directory for the JSON result")
    parser.add_argument("--name", default="changes", help="result file name (changes.json)")
    args = parser.parse_args(argv)
    pairs = load_pairs()
    if args.quick:
        pairs = pairs[::3]
    names = {"both": ["offline", "haiku-fake"], "import": ["import-as-is", "import"],
             "all": ["offline", "haiku-fake", "import-as-is", "import"]}.get(args.classifier, [args.classifier])
    summaries: dict[str, dict[str, Any]] = {}
    details: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        print(f"running {len(pairs)} pairs with the {name} classifier", file=sys.stderr)
        details[name] = asyncio.run(run(pairs, name))
        summaries[name] = summarize(details[name])
    rows = [(f"{name}{' (reached)' if part else ''}", *(s[f"{kind}_{split}{part}_pct"] for split in ("dev", "holdout", "all")
                                                   for kind in ("changes", "keeps")),
             s["changes_all_reached_n"] + s["keeps_all_reached_n"] if part else len(pairs), s["gated_n"],
             s["not_extracted_n"], s["open_conflicts_n"])
            for name, s in summaries.items() for part in ("", "_reached")]
    print(format_table(["classifier", "changes dev %", "keeps dev %", "changes holdout %", "keeps holdout %",
                        "changes all %", "keeps all %", "pairs", "gated", "not extracted", "open conflicts"], rows,
                       title=f"changes_bench: {sum(p.kind == 'change' for p in pairs)} change pairs, "
                             f"{sum(p.kind == 'keep' for p in pairs)} keep pairs"))
    if args.misses:
        for name, res in details.items():
            for r in res:
                if not r["ok"] and (args.holdout_misses or not r["holdout"]):
                    failed = [k for k, v in r["checks"].items() if not v]
                    print(f"\n[{name}] {r['id']} {r['kind']} ({r['category']}{', holdout' if r['holdout'] else ''}): "
                          f"{', '.join(failed)}{'; gated ' + ','.join(r['gated']) if r['gated'] else ''}"
                          f"{'' if r['reached'] or r['gated'] else '; value not extracted'}")
                    print("  current:", r["current"])
                    print("  history:", r["history"])
    summary = {f"{name.replace('-', '_')}_{k}": v for name, s in summaries.items() for k, v in s.items()}
    path = write_result(args.name, quick=args.quick, params={"pairs": len(pairs), "classifiers": names,
                                                             "data": str(DATA.relative_to(BENCH_DIR.parent))},
                        summary=summary, results=details, out_dir=args.out)
    print(f"\nwrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
