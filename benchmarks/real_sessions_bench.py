"""Real coding sessions replayed through the plugin as installed: what is kept, what is injected.

The corpus is ``benchmarks/data/real_sessions/`` (its README: sources, licenses, labels). Each
project's sessions are replayed in order, one user, one data directory, as Claude Code would
fire the plugin's hooks:

* ``SessionStart`` (``startup``), then for every entry of the transcript, in order:
  a typed prompt: ``Stop`` for the turn before it (``last_assistant_message``: that turn's last
  assistant text), then ``UserPromptSubmit``; a tool result: ``PostToolUse`` (or
  ``PostToolUseFailure`` for an error) with the tool's name, input and ``toolUseResult`` (the
  structured response Claude Code gives hooks), for the hooks hooks.json matches; a compaction
  in the log (``/compact``, a compact summary), and every :data:`COMPACT_EVERY` prompts of a
  session that never compacts: ``PreCompact`` then ``SessionStart`` (``compact``);
* at the end of the session: ``Stop``, ``SessionEnd``; then the queue is left to drain (time
  passes between two sessions);
* a typed prompt the log shows :data:`PAUSE_SECONDS` or more after the entry before it waits for
  the queue to drain (the user took that long; the daemon extracted the ended turn meanwhile). The
  replay runs hours in minutes, so the queue's batch window is :data:`REPLAY_FLUSH_SECONDS`.

Every hook runs the command hooks.json gives (``sh -c``, ``CLAUDE_PLUGIN_ROOT`` = this
checkout), with the transcript so far as ``transcript_path``; the first ``SessionStart``
autostarts the daemon as it would for a user. No API key: the offline extractor decides.

Printed and written to ``results/real_sessions.json``:

* **stored**: labelled items present in memory (any non-transcript memory holding one of the
  item's ``match`` alternatives) when a prompt needing them is replayed;
* **injected when needed**: the item is in the context the model has at that prompt: the
  session's block (``SessionStart``, or the one re-injected after the last compaction), a block
  an earlier prompt of the session got since then (still in the conversation), or this prompt's
  ``UserPromptSubmit`` block; by this prompt's hook alone (``by_prompt_hook``), and by the prompt
  hooks since the session's block (``by_prompt_hooks``). **Stored as a note**: the item is in a
  memory recall can show (not only in an episode's list of prompts or a snapshot);
* **memories per prompt** (transcript rows apart), by the role they came from;
* **injected tokens**: mean / max per prompt, on prompts that need memory and on those that
  need none (labelled ``no_memory_prompts``), and how often something was injected there;
* **junk estimate**: the share of stored memories that look like tool output, narration,
  listings, diffs or logs (:func:`looks_like_junk`, a rough automatic figure), plus a random
  sample of 60 memories written to the JSON for a person to judge.

``--split dev`` (default) replays the development projects; ``holdout`` the project kept aside
(do not tune on it); ``all`` both. ``--project SLUG`` one project. ``--quick``: the first two
sessions of each project.

``--history`` also runs the learned-history arm (:mod:`benchmarks.real_sessions_history`):
before each session the store holds what ``dexai memory learn-history`` learned from the sessions
before it, and the session is lived through the hooks on a throwaway copy; both arms' figures,
their differences and the needs one arm injected and the other did not are written together.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.common import BENCH_DIR, REPO_ROOT, arg_parser, say, write_result
from benchmarks.hook_bench import context_of
from dexai_memory.config import load_settings
from dexai_memory.daemon.control import stop
from dexai_memory.text.tokens import count_tokens
from testing.harness import queue_drained
from testing.plugin_check import hooks_for

CORPUS = BENCH_DIR / "data" / "real_sessions"
USER = "real-sessions"
#: Prompts of a session that never compacts after which a compaction is replayed.
COMPACT_EVERY = 40
#: A typed prompt this long after the entry before it (the log's timestamps) waits for the extraction
#: queue to drain first: in the session the user took that long, and the daemon extracted the turn
#: that had ended meanwhile; replayed hook after hook, it would still be queued.
PAUSE_SECONDS = 10.0
#: The queue's batch window in the replay (``extraction.flush_interval_seconds``, 5 s by default):
#: the replay runs the log's hours in minutes, so its window shrinks alike; batches, extractor and
#: every other setting are the product's.
REPLAY_FLUSH_SECONDS = 0.5
SAMPLE = 60
#: Memory types recall never shows in a block (an episode lists the session's prompts, a snapshot the
#: task at compaction): an item found only there is stored, not stored as a note.
NOT_NOTES = ("EPISODE", "SNAPSHOT")

#: User entries Claude Code or the harness wrote, not the person typing.
WRAPPERS = ("<local-command", "Caveat:", "[Request interrupted", "<system-reminder>", "<task-notification>",
            "<bash-notification>", "Unknown slash command", "This session is being continued")

# --------------------------------------------------------------------------- the corpus
@dataclass
class Labels:
    sessions: list[dict[str, Any]]
    items: list[dict[str, Any]]
    no_memory: list[dict[str, Any]]


def load_labels(split: str, project: str | None = None) -> Labels:
    data = json.loads((CORPUS / "labels.json").read_text(encoding="utf-8"))
    sessions = [s for s in data["sessions"] if split == "all" or s.get("split", "dev") == split]
    if project:
        sessions = [s for s in sessions if s["project"] == project]
    sessions.sort(key=lambda s: (s["project"], s["order"]))
    ids = {s["id"] for s in sessions}
    items = [i for i in data["items"] if i["said"]["session"] in ids]
    no_memory = [p for p in data.get("no_memory_prompts", []) if p["session"] in ids]
    return Labels(sessions, items, no_memory)


def transcripts_dir() -> Path:
    """Where the transcripts are (they stay out of git; see the corpus README):
    ``$DEXAI_REAL_SESSIONS_DIR``, the corpus folder, or ``shared/bench/real_sessions`` beside
    the checkout."""
    candidates = [Path(os.environ["DEXAI_REAL_SESSIONS_DIR"])] if os.environ.get("DEXAI_REAL_SESSIONS_DIR") else []
    candidates += [CORPUS, REPO_ROOT.parent / "shared" / "bench" / "real_sessions"]
    for directory in candidates:
        if any(directory.glob("*/*.jsonl.gz")):
            return directory
    raise SystemExit("no transcripts found: put them in shared/bench/real_sessions beside the checkout or set "
                     "DEXAI_REAL_SESSIONS_DIR (benchmarks/data/real_sessions/README.md says where they come from)")


def read_session(file: str) -> list[str]:
    path = transcripts_dir() / file
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
        return fh.read().splitlines()


def typed_prompt(entry: dict[str, Any]) -> str | None:
    """The user's typed prompt of a transcript entry (None for tool results, meta and wrappers)."""
    if entry.get("type") != "user" or entry.get("isMeta") or entry.get("isCompactSummary") or entry.get("isSidechain"):
        return None
    content = (entry.get("message") or {}).get("content")
    if isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return None
        content = "\n".join(str(b.get("text") or "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    if not isinstance(content, str) or not content.strip():
        return None
    text = content.strip()
    if text.startswith(WRAPPERS):
        return None
    m = re.match(r"<command-name>/?([\w:-]+)</command-name>", text) or re.search(
        r"<command-name>/?([\w:-]+)</command-name>", text)
    if m:
        args = re.search(r"<command-args>(.*?)</command-args>", text, re.S)
        return f"/{m.group(1)} {args.group(1).strip() if args else ''}".strip()
    return text


def is_compaction(entry: dict[str, Any], prompt: str | None) -> bool:
    """A compaction in the log: the boundary entry, the summary Claude Code continues with, ``/compact``."""
    if entry.get("isCompactSummary") or (entry.get("type") == "system" and entry.get("subtype") == "compact_boundary"):
        return True
    content = (entry.get("message") or {}).get("content") if entry.get("type") == "user" else None
    if isinstance(content, str) and content.startswith("This session is being continued"):
        return True
    return prompt is not None and prompt.split()[0] == "/compact"


def tool_results(entry: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if entry.get("type") != "user":
        return
    content = (entry.get("message") or {}).get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                yield block


def assistant_parts(entry: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    if entry.get("type") != "assistant":
        return "", []
    content = (entry.get("message") or {}).get("content")
    if isinstance(content, str):
        return content, []
    text, uses = [], []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") == "text":
            text.append(str(block.get("text") or ""))
        elif isinstance(block, dict) and block.get("type") == "tool_use":
            uses.append(block)
    return "\n".join(t for t in text if t.strip()), uses


def logged_at(entry: dict[str, Any]) -> float | None:
    """The entry's timestamp in the log (seconds since the epoch), None when it has none."""
    stamp = entry.get("timestamp")
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def matches(text: str, alternatives: Sequence[Sequence[str]]) -> bool:
    low = text.lower()
    return any(all(term.lower() in low for term in alt) for alt in alternatives)


# --------------------------------------------------------------------------- the plugin, as installed
@dataclass
class Plugin:
    home: Path
    tmp: Path
    hooks_json: dict[str, Any] = field(init=False)
    waited_ms: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.hooks_json = json.loads((REPO_ROOT / "hooks" / "hooks.json").read_text(encoding="utf-8"))

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DEXAI_", "ANTHROPIC_", "CLAUDE_"))}
        env.update(DEXAI_MEMORY_HOME=str(self.home), DEXAI_MEMORY_USER=USER, CLAUDE_PLUGIN_ROOT=str(REPO_ROOT),
                   CLAUDE_PLUGIN_DATA=str(self.tmp / "plugin-data"), DEXAI_AUTO_INSTALL="0",
                   PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        return env

    def fire(self, event: str, payload: dict[str, Any]) -> str:
        """Run the plugin's hooks for ``event`` as Claude Code does; the context they add."""
        payload = {"hook_event_name": event, **payload}
        added = []
        for hook in hooks_for(self.hooks_json, event, payload):
            if hook.get("type") != "command":
                continue
            t0 = time.perf_counter()
            proc = subprocess.run(["sh", "-c", hook["command"]], input=json.dumps(payload), capture_output=True,
                                  text=True, env=self.env(), cwd=payload.get("cwd") or self.tmp,
                                  timeout=float(hook.get("timeout") or 60), check=False)
            if not (hook.get("async") or hook.get("asyncRewake")):
                self.waited_ms.append((time.perf_counter() - t0) * 1000)
            added.append(context_of(proc.stdout))
        return "\n".join(a for a in added if a)

    def configure(self) -> None:
        """The data directory's ``memory.yaml``: the replay's batch window (:data:`REPLAY_FLUSH_SECONDS`)."""
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "memory.yaml").write_text(
            f"extraction:\n  flush_interval_seconds: {REPLAY_FLUSH_SECONDS}\n", encoding="utf-8")

    def drain(self, timeout: float = 300.0) -> None:
        if not queue_drained(self.home, timeout):
            say("  the queue did not drain in time")

    def stop(self) -> None:
        stop(load_settings(home=self.home), 30.0)


# --------------------------------------------------------------------------- the store
def memories(home: Path) -> list[dict[str, Any]]:
    db = home / "memory.db"
    if not db.exists():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    con.row_factory = sqlite3.Row
    try:
        rows = con.execute("SELECT id, content, type, importance, created_at, superseded_by, metadata, project "
                           "FROM memories WHERE deleted = 0 AND UPPER(type) != 'TRANSCRIPT' AND user_id = ?",
                           (USER,)).fetchall()
    finally:
        con.close()
    return [dict(r) for r in rows]


def origin(memory: dict[str, Any]) -> str:
    """The role the memory came from, read from its metadata (``unknown`` when not recorded)."""
    try:
        meta = json.loads(memory.get("metadata") or "{}")
    except ValueError:
        meta = {}
    source = str(meta.get("source") or meta.get("origin") or meta.get("role") or "")
    for role in ("tool", "assistant", "user"):
        if role in source:
            return role
    return str(meta.get("source_role") or "unknown")


_JUNK = re.compile(
    r"^(tool said|the assistant said|the assistant)\b|^[-+@]{1,3}\s|\bdiff --git\b|^\s*\d+[→:]\s|"
    r"\b(downloading|installing|collected \d+ items|passed in|failed in|files? changed|insertions?\(\+\)|"
    r"deletions?\(-\)|platform linux|rootdir:|cachedir|inifile|successfully (installed|built))\b|"
    r"\b[0-9a-f]{7,40}\b.*\b(commit|HEAD)\b|^\s*(total \d+|[d-][rwx-]{9})|\[\{'type': 'text'|"
    r"^\s*[\w./-]+\.(py|ts|js|json|md|toml|rs|go):\d+", re.I | re.M)


def looks_like_junk(text: str) -> bool:
    """A rough automatic junk test: tool output, narration, listings, diffs, logs, list printouts."""
    if _JUNK.search(text):
        return True
    symbols = sum(1 for c in text if not (c.isalnum() or c.isspace()))
    return len(text) > 20 and symbols / len(text) > 0.18


# --------------------------------------------------------------------------- one replay
@dataclass
class Figures:
    sessions: int = 0
    prompts: int = 0
    injected_tokens: list[int] = field(default_factory=list)
    needed_tokens: list[int] = field(default_factory=list)
    none_tokens: list[int] = field(default_factory=list)
    #: The no-memory prompts something was injected on, with what (to read why).
    none_injected: list[dict[str, Any]] = field(default_factory=list)
    needs: list[dict[str, Any]] = field(default_factory=list)
    compactions: int = 0
    #: Typed prompts replayed after the queue drained (the log shows a pause before them).
    pauses: int = 0


def replay_session(plugin: Plugin, session: dict[str, Any], labels: Labels, figures: Figures, cwd: Path) -> None:
    lines = read_session(session["file"])
    sid = session["id"].split("/", 1)[1]
    transcript = plugin.tmp / "transcripts" / f"{sid}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    needs: dict[tuple[str, int], list[dict[str, Any]]] = {}  # a prompt may need several items
    for item in labels.items:
        for n in item["needed"]:
            needs.setdefault((n["session"], n["line"]), []).append(item)
    quiet = {(p["session"], p["line"]) for p in labels.no_memory}
    figures.sessions += 1
    base = {"session_id": sid, "transcript_path": str(transcript), "cwd": str(cwd), "permission_mode": "default"}
    block = plugin.fire("SessionStart", {**base, "source": "startup"})
    earlier: list[str] = []  # the prompt blocks injected since the session's block: still in the conversation
    tool_uses: dict[str, dict[str, Any]] = {}
    last_reply, open_turn, since_compact, just_compacted = "", False, 0, False
    last_at: float | None = None  # the log's time of the entry before this one
    with transcript.open("w", encoding="utf-8") as out:
        for number, raw in enumerate(lines, 1):
            out.write(raw + "\n")
            out.flush()
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(entry, dict):
                continue
            at, before = logged_at(entry), last_at
            last_at = at if at is not None else last_at
            text, uses = assistant_parts(entry)
            if text.strip():
                last_reply = text
            for use in uses:
                tool_uses[str(use.get("id"))] = use
            for result in tool_results(entry):
                use = tool_uses.get(str(result.get("tool_use_id")), {})
                response = entry.get("toolUseResult")
                if response is None:
                    response = result.get("content")
                failed = bool(result.get("is_error"))
                plugin.fire("PostToolUseFailure" if failed else "PostToolUse", {
                    **base, "tool_name": use.get("name") or "tool", "tool_input": use.get("input") or {},
                    "tool_use_id": result.get("tool_use_id"),
                    **({"error": str(response)} if failed else {"tool_response": response})})
            prompt = typed_prompt(entry)
            logged = is_compaction(entry, prompt)
            if (logged and not just_compacted) or since_compact >= COMPACT_EVERY:
                block = compact(plugin, base, figures)
                since_compact, just_compacted, earlier = 0, True, []
            if logged or prompt is None:
                continue
            just_compacted = False
            if prompt is None:
                continue
            if open_turn:
                plugin.fire("Stop", {**base, "stop_hook_active": False, "last_assistant_message": last_reply})
            if at is not None and before is not None and at - before >= PAUSE_SECONDS:
                plugin.drain(60.0)  # the user took a while: what was queued meanwhile is extracted
                figures.pauses += 1
            last_reply, open_turn = "", True
            since_compact += 1
            figures.prompts += 1
            added = plugin.fire("UserPromptSubmit", {**base, "prompt": prompt})
            tokens = count_tokens(added)
            figures.injected_tokens.append(tokens)
            key = (session["id"], number)
            if key in quiet:
                figures.none_tokens.append(tokens)
                if tokens:
                    figures.none_injected.append({"session": session["id"], "line": number, "prompt": prompt[:160],
                                                  "injected": added[:1500]})
            if key in needs:
                figures.needed_tokens.append(tokens)
                every = memories(plugin.home)  # what recall can find: this project's, or no project's
            for item in needs.get(key, []):
                stored = [m for m in every if m["project"] in (str(cwd), None) and matches(m["content"], item["match"])]
                figures.needs.append({
                    "item": item["id"], "kind": item["kind"], "session": session["id"], "line": number,
                    "stored": bool(stored), "stored_current": any(not m["superseded_by"] for m in stored),
                    "stored_as_note": any(m["type"] not in NOT_NOTES for m in stored),
                    "in_context": matches("\n".join([block, *earlier, added]), item["match"]),
                    "in_earlier_block": matches("\n".join(earlier), item["match"]),
                    "by_prompt_hook": matches(added, item["match"]),
                    "by_prompt_hooks": matches("\n".join([*earlier, added]), item["match"]), "tokens": tokens, "prompt": prompt[:160],
                    "injected": added[:1500]})
            if added:
                earlier.append(added)
        if open_turn:
            plugin.fire("Stop", {**base, "stop_hook_active": False, "last_assistant_message": last_reply})
        plugin.fire("SessionEnd", {**base, "reason": "other"})
    plugin.drain()


def compact(plugin: Plugin, base: dict[str, Any], figures: Figures) -> str:
    figures.compactions += 1
    plugin.fire("PreCompact", {**base, "trigger": "auto", "custom_instructions": None})
    plugin.fire("PostCompact", {**base, "trigger": "auto", "compact_summary": ""})
    return plugin.fire("SessionStart", {**base, "source": "compact"})


# --------------------------------------------------------------------------- the report
def mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 1) if values else None


def report(figures: Figures, stored: list[dict[str, Any]], labels: Labels, seed: int) -> dict[str, Any]:
    needs = figures.needs
    by_role = Counter(origin(m) for m in stored)
    junk = [m for m in stored if looks_like_junk(m["content"])]
    sample = random.Random(seed).sample(stored, min(SAMPLE, len(stored)))
    n = len(needs) or 1
    items_stored = {x["item"] for x in needs if x["stored"]}
    return {
        "summary": {
            "sessions": figures.sessions, "prompts": figures.prompts, "compactions": figures.compactions,
            "prompts_after_a_pause": figures.pauses,
            "needs": len(needs), "items": len({x["item"] for x in needs}),
            "needs_stored_pct": round(100 * sum(x["stored"] for x in needs) / n, 1),
            "items_stored_pct": round(100 * len(items_stored) / max(1, len({x['item'] for x in needs})), 1),
            "injected_when_needed_pct": round(100 * sum(x["in_context"] for x in needs) / n, 1),
            "injected_by_prompt_hook_pct": round(100 * sum(x["by_prompt_hook"] for x in needs) / n, 1),
            "injected_by_prompt_hooks_pct": round(100 * sum(x.get("by_prompt_hooks", False) for x in needs) / n, 1),
            "needs_stored_as_note_pct": round(100 * sum(x.get("stored_as_note", False) for x in needs) / n, 1),
            "memories": len(stored),
            "memories_per_prompt": round(len(stored) / max(1, figures.prompts), 2),
            "notes_per_prompt": round(sum(m["type"] not in NOT_NOTES for m in stored) / max(1, figures.prompts), 2),
            "junk_estimate_pct": round(100 * len(junk) / max(1, len(stored)), 1),
            "mean_injected_tokens": mean(figures.injected_tokens),
            "max_injected_tokens": max(figures.injected_tokens, default=0),
            "mean_tokens_when_needed": mean(figures.needed_tokens),
            "mean_tokens_no_memory_prompts": mean(figures.none_tokens),
            "injected_on_no_memory_prompts": sum(1 for t in figures.none_tokens if t),
            "no_memory_prompts": len(figures.none_tokens),
            "prompts_with_injection": sum(1 for t in figures.injected_tokens if t),
        },
        "by_role": dict(by_role),
        "by_type": dict(Counter(m["type"] for m in stored)),
        "needs": needs,
        "injected_on_no_memory_prompts": figures.none_injected,
        "sample": [{"content": m["content"], "type": m["type"], "importance": m["importance"], "origin": origin(m),
                    "junk_estimate": looks_like_junk(m["content"])} for m in sample],
    }


def live_arm(labels: Labels, *, quick: bool, seed: int, keep: bool) -> dict[str, Any]:
    """Replay ``labels``' sessions through the hooks, one data directory for all of them; the report."""
    tmp = Path(tempfile.mkdtemp(prefix="dexai-real-"))
    plugin = Plugin(home=tmp / "home", tmp=tmp)
    plugin.configure()
    figures = Figures()
    t0 = time.monotonic()
    try:
        for cwd, session in sessions_in_order(labels, tmp, quick):
            say(f"{session['id']}: replaying")
            replay_session(plugin, session, labels, figures, cwd)
        stored = memories(plugin.home)
        result = report(figures, stored, labels, seed)
    finally:
        plugin.stop()
        if keep:
            say(f"data directory kept: {plugin.home}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    result["summary"]["replay_seconds"] = round(time.monotonic() - t0, 1)
    result["summary"]["prompt_wait_ms_mean"] = mean(plugin.waited_ms)
    return result


def sessions_in_order(labels: Labels, tmp: Path, quick: bool) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Each session to replay, in order, with its project's directory (``tmp/projects/<slug>``, a git root)."""
    projects: dict[str, list[dict[str, Any]]] = {}
    for s in labels.sessions:
        projects.setdefault(s["project"], []).append(s)
    for slug, sessions in projects.items():
        cwd = tmp / "projects" / slug
        (cwd / ".git").mkdir(parents=True, exist_ok=True)
        for session in sessions[:2] if quick else sessions:
            yield cwd, session


def print_summary(summary: dict[str, Any]) -> None:
    for key, value in summary.items():
        print(f"{key:34} {value}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser("real_sessions_bench", (__doc__ or "").split("\n\n")[0])
    parser.add_argument("--split", choices=("dev", "holdout", "all"), default="dev")
    parser.add_argument("--project", default=None, help="replay one project (its slug)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the random sample of stored memories")
    parser.add_argument("--keep", action="store_true", help="keep the data directory (printed)")
    parser.add_argument("--history", action="store_true",
                        help="also the learned-history arm (benchmarks/real_sessions_history.py): before each "
                             "session the store holds what learn-history learned from the sessions before it")
    args = parser.parse_args(argv)
    labels = load_labels(args.split, args.project)
    if not labels.sessions:
        say(f"no sessions in split {args.split!r}")
        return 1
    result = live_arm(labels, quick=args.quick, seed=args.seed, keep=args.keep)
    s = result["summary"]
    print_summary(s)
    print(f"by role: {result['by_role']}")
    name = f"real_sessions.{args.split}"
    if args.history:
        from benchmarks.real_sessions_history import compare, history_arm

        learned = history_arm(labels, quick=args.quick, seed=args.seed, keep=args.keep)
        print("\nlearned history (learn-history on the sessions before each one, then the session through the hooks):")
        print_summary(learned["summary"])
        print(f"by role: {learned['by_role']}")
        result = {"live": result, "history": learned, "comparison": compare(result, learned)}
        print("\nhistory - live:")
        print_summary(result["comparison"]["summary_delta"])
        print(f"injected when needed, by kind (live / history): {result['comparison']['by_kind']}")
        s = {**{f"live_{k}": v for k, v in s.items()}, **{f"history_{k}": v for k, v in learned["summary"].items()}}
        name = f"real_sessions_history.{args.split}"
    path = write_result(name, quick=args.quick,
                        params={"split": args.split, "project": args.project, "seed": args.seed,
                                "history": args.history},
                        summary=s, results=result, out_dir=args.out)
    say(f"wrote {path}")
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
