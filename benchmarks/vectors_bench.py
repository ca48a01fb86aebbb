"""Vectors as fast as ingest (issue 15, part 3): ``dexai memory ingest --vectors now`` of one LoCoMo
conversation, every vector ready when it returns, per embedding option.

Options measured (each a fresh data directory, the real CLI in a subprocess,
offline extractor):

* ``minilm``: the default, MiniLM int8 ONNX for every note and raw turn;
* ``minilm-int8-bulk``: ``embedding.bulk_model: int8``, the bulk vectors from MiniLM on int8
  activations (:func:`dexai_memory.embeddings.build_bulk_model`; built once, ~4 s, kept in
  the benchmarks' cache directory; its build time is reported apart); LoCoMo with ``locomo_bench --ingest cli
  --system-config "embedding: {bulk_model: int8}"``;
* ``minilm-no-transcripts``: ``search.embed_transcripts: false`` (raw turns
  archived in L3 are found by BM25 only);
* ``static``: ``embedding.backend: static-minilm``, the static table distilled
  from MiniLM (:func:`dexai_memory.embeddings.build_static_table`; built once,
  ~40 s, and kept in the benchmarks' cache directory; its build time is reported apart).

Also ``dexai memory import --vectors now`` of 10,000 synthetic memories (``benchmarks.synthetic``),
``minilm`` against ``minilm-int8-bulk`` (target: well under a minute).

Also: how many texts are embedded and how many are distinct (embedding only
distinct texts saves what duplicates there are), and embedding speed with a
global length sort against the per-call sort. Target: >= 100 turns/s with every
vector ready. LoCoMo evidence recall per option comes from
``python -m benchmarks.locomo_bench --embedder static`` (and the default run).
``--quick``: the first 150 turns.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import CACHE_DIR, LOCOMO_PATH, arg_parser, format_table, say, write_result
from benchmarks.locomo import conversation_turns, load_conversations, to_jsonl

NAME = "vectors"
TARGET_TURNS_PER_S = 100.0
OPTIONS: dict[str, str] = {
    "minilm": "",
    "minilm-int8-bulk": "embedding:\n  bulk_model: int8\n",
    "minilm-no-transcripts": "search:\n  embed_transcripts: false\n",
    "static": "embedding:\n  backend: static-minilm\n",
}


def static_table() -> tuple[Path, float | None]:
    """The cached static table (built now if missing) and the seconds its build took (None: cached)."""
    from dexai_memory.embeddings import build_static_table

    path = CACHE_DIR / "static-minilm.npz"
    if path.exists():
        return path, None
    t0 = time.perf_counter()
    build_static_table(path)
    return path, round(time.perf_counter() - t0, 1)


def bulk_model() -> tuple[Path, float | None]:
    """The cached int8 bulk model (built now if missing) and the seconds its build took (None: cached)."""
    from dexai_memory.embeddings import ensure_bulk_model

    path = CACHE_DIR / "minilm-int8-dynamic.onnx"
    t0 = time.perf_counter()
    built = not path.exists()
    ensure_bulk_model(path)
    return path, round(time.perf_counter() - t0, 1) if built else None


def run_option(name: str, jsonl: Path, tmp: Path, table: Path, command: str = "ingest") -> dict[str, Any]:
    """``dexai memory ingest`` (a conversation) or ``import`` (memories) of ``jsonl`` with ``--vectors now``
    in a fresh data directory configured as option ``name``: wall time and the CLI's report."""
    home = tmp / (name if command == "ingest" else f"{name}-{command}")
    home.mkdir()
    (home / "memory.yaml").write_text("extraction:\n  extractor: offline\n" + OPTIONS[name], encoding="utf-8")
    if name == "static":
        (home / "models").mkdir()
        shutil.copy2(table, home / "models" / "static-minilm.npz")
    if name == "minilm-int8-bulk":
        bulk = bulk_model()[0]
        (home / "models").mkdir()
        for suffix in (".onnx", ".json"):
            shutil.copy2(bulk.with_suffix(suffix), home / "models" / bulk.with_suffix(suffix).name)
    env = {**os.environ, "DEXAI_MEMORY_HOME": str(home)}
    env.pop("ANTHROPIC_API_KEY", None)
    t0 = time.perf_counter()
    args = ["--session", "s"] if command == "ingest" else []
    done = subprocess.run([sys.executable, "-m", "dexai_memory.cli.main", "memory", command, str(jsonl), "--user",
                           "bench", *args, "--vectors", "now", "--json"], env=env, capture_output=True,
                          text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode:
        raise RuntimeError(f"{command} ({name}) failed: {done.stderr or done.stdout}")
    report = json.loads(done.stdout)
    if report["vectors_pending"]:
        raise RuntimeError(f"{command} ({name}) left {report['vectors_pending']} vectors pending")
    if command == "import":
        say(f"  import, {name}: {report['imported']} memories in {wall:.1f}s")
        return {"memories": report["imported"], "wall_seconds": round(wall, 2),
                "memories_per_s": round(report["imported"] / wall, 1), "report": report}
    say(f"  {name}: {report['turns']} turns in {wall:.1f}s, {report['vector_seconds']}s of it embedding")
    return {"turns": report["turns"], "wall_seconds": round(wall, 2), "turns_per_s": round(report["turns"] / wall, 1),
            "vector_seconds": report["vector_seconds"], "report": report}


IMPORT_MEMORIES = 10_000
#: Issue 15: "import of 10,000 memories with vectors well under a minute".
IMPORT_TARGET_S = 60.0


def import_file(path: Path, n: int) -> Path:
    """``n`` synthetic memories (distinct contents) as ``dexai memory import`` reads them."""
    from benchmarks import synthetic

    seen: set[str] = set()
    with path.open("w", encoding="utf-8") as fh:
        for i, memory in enumerate(synthetic.memories(n * 2)):
            if len(seen) == n:
                break
            content = memory.content if memory.content not in seen else f"{memory.content} (note {i})"
            seen.add(content)
            fh.write(json.dumps({"content": content, "type": memory.type.value}) + "\n")
    return path


def text_figures(jsonl: Path, tmp: Path) -> dict[str, Any]:
    """Texts the default option embeds, how many are distinct, and MiniLM's speed on them."""
    import sqlean

    from dexai_memory.embeddings import OnnxMiniLMEmbedder

    conn = sqlean.connect(str(tmp / "minilm" / "memory.db"))
    try:
        texts = [r[0] for r in conn.execute("SELECT content FROM memories WHERE deleted = 0")]
    finally:
        conn.close()
    sample = texts[:400]
    model = OnnxMiniLMEmbedder(threads=max(1, os.cpu_count() or 1))
    model.embed("warm up")
    t0 = time.perf_counter()
    for start in range(0, len(sample), 64):  # fill_vectors' calls: sorted within each call
        model.embed_batch(sample[start:start + 64])
    per_call = time.perf_counter() - t0
    t0 = time.perf_counter()
    model.embed_batch(sample)  # one call: one global length sort
    global_sort = time.perf_counter() - t0
    return {"texts": len(texts), "distinct": len(set(texts)),
            "minilm_texts_per_s_sorted_per_call": round(len(sample) / per_call, 1),
            "minilm_texts_per_s_global_sort": round(len(sample) / global_sort, 1)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser("vectors_bench", __doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--locomo", type=Path, default=LOCOMO_PATH)
    args = parser.parse_args(argv)
    conv = max(load_conversations(args.locomo), key=lambda c: len(conversation_turns(c)))
    turns = conversation_turns(conv, user_id="bench")[:150 if args.quick else None]
    table, build_s = static_table()
    results: dict[str, Any] = {"conversation": conv.sample_id, "static_table_build_seconds": build_s,
                               "bulk_model_build_seconds": bulk_model()[1]}
    with tempfile.TemporaryDirectory(prefix="dexai-vectors-") as tmp_name:
        tmp = Path(tmp_name)
        jsonl = to_jsonl(turns, tmp / "conversation.jsonl")
        for name in OPTIONS:
            results[name] = run_option(name, jsonl, tmp, table)
        results["texts"] = text_figures(jsonl, tmp)
        memories = import_file(tmp / "memories.jsonl", 1000 if args.quick else IMPORT_MEMORIES)
        results["import"] = {name: run_option(name, memories, tmp, table, "import")
                             for name in ("minilm", "minilm-int8-bulk")}
    rows = [(name, results[name]["turns"], results[name]["wall_seconds"], results[name]["vector_seconds"],
             results[name]["turns_per_s"], TARGET_TURNS_PER_S) for name in OPTIONS]
    print(format_table(("option", "turns", "seconds", "embedding s", "turns/s, vectors ready", "target"), rows,
                       title=f"dexai memory ingest --vectors now, LoCoMo {conv.sample_id}"))
    t = results["texts"]
    print(f"\n{t['texts']} texts embedded by the default option, {t['distinct']} distinct; MiniLM "
          f"{t['minilm_texts_per_s_sorted_per_call']} texts/s sorted per call, "
          f"{t['minilm_texts_per_s_global_sort']} with one global length sort")
    imports = results["import"]
    print(format_table(("option", "memories", "seconds, vectors ready", "memories/s", "target s"),
                       [(name, r["memories"], r["wall_seconds"], r["memories_per_s"], IMPORT_TARGET_S)
                        for name, r in imports.items()], title="dexai memory import --vectors now"))
    summary = {f"{name.replace('-', '_')}_turns_per_s": results[name]["turns_per_s"] for name in OPTIONS}
    summary.update({f"import_{name.replace('-', '_')}_seconds": r["wall_seconds"] for name, r in imports.items()})
    summary.update({"texts": t["texts"], "distinct_texts": t["distinct"], "target_turns_per_s": TARGET_TURNS_PER_S})
    path = write_result(NAME, quick=args.quick, params={"conversation": conv.sample_id, "turns": len(turns)},
                        summary=summary, results=results, out_dir=args.out)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
