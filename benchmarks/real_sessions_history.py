"""The learned-history arm of ``real_sessions_bench`` (``--history``): day-one memory, measured as the live arm is.

The question: had the user installed the plugin just before session *i*, with sessions < *i* on
disk, would the item a prompt needs reach the context? For each session, in the live arm's order:

1. the sessions before it are laid out as Claude Code keeps them (``<dir>/projects/<slug>/<id>.jsonl``,
   each entry's ``cwd`` set to the replay's project directory, so the project learn-history
   derives is the one the hooks see) and the real command learns the new ones into the
   *learned* data directory (``python -m dexai_memory.cli.main memory learn-history --yes --json
   --vectors now``: incremental, a session learned before is skipped);
2. that data directory is copied, a daemon is started on the copy, and the session is replayed
   through the hooks on it exactly as the live arm does (:func:`~benchmarks.real_sessions_bench.replay_session`:
   the same need matching, so needs within one session behave as live);
3. the copy is thrown away: what the hooks captured of session *i* never counts as learned for
   later sessions (learn-history would also leave out a session the hooks captured live).

Reported with the live arm's figures: injected when needed, stored, memories per prompt (the
learned store after the last session, over the same prompts), junk estimate, tokens; the
difference per label kind, and the needs live injected and history did not.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import REPO_ROOT, say
from benchmarks.real_sessions_bench import (
    USER,
    Figures,
    Labels,
    Plugin,
    mean,
    memories,
    replay_session,
    report,
    sessions_in_order,
    transcripts_dir,
)


def lay_out(session: dict[str, Any], cwd: Path, claude: Path) -> Path:
    """Write ``session``'s transcript into the Claude Code tree ``claude/projects``, its ``cwd`` made ``cwd``."""
    folder = claude / "projects" / str(cwd).replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    path = transcripts_dir() / session["file"]
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    out = []
    for line in raw.decode("utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            out.append(line)
            continue
        if isinstance(entry, dict) and "cwd" in entry:
            entry["cwd"] = str(cwd)
            line = json.dumps(entry, ensure_ascii=False)
        out.append(line)
    target = folder / f"{session['id'].split('/', 1)[1]}.jsonl"
    target.write_text("\n".join(out) + "\n", encoding="utf-8")
    return target


def learn_history(plugin: Plugin, claude: Path) -> dict[str, Any]:
    """Run ``dexai memory learn-history`` (the real command) on ``claude`` into ``plugin.home``."""
    env = {**plugin.env(), "DEXAI_DAEMON_AUTOSTART": "0", "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run([sys.executable, "-m", "dexai_memory.cli.main", "memory", "learn-history", "--yes", "--json", "--user", USER,
                           "--vectors", "now", "--claude-dir", str(claude)],
                          capture_output=True, text=True, env=env, cwd=plugin.tmp, timeout=900, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"learn-history failed ({proc.returncode}): {proc.stderr[-2000:]}")
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def start_daemon(plugin: Plugin) -> None:
    """Start the copy's daemon before the session, as the live arm's has run since its first session
    (so every session does not begin with a cold start the live arm has once)."""
    code = ("import sys; from dexai_memory.config import load_settings; "
            "from dexai_memory.daemon.control import spawn, wait_until_answering; s = load_settings(); "
            "spawn(s, reason='real_sessions_bench'); sys.exit(0 if wait_until_answering(s, 120) else 1)")
    proc = subprocess.run([sys.executable, "-c", code], env={**plugin.env(), "PYTHONPATH": str(REPO_ROOT)},
                          cwd=plugin.tmp, capture_output=True, text=True, timeout=180, check=False)
    if proc.returncode != 0:
        say(f"  the daemon did not answer: {proc.stderr[-500:]}")
    time.sleep(2.0)  # the embedding model loads after the socket answers


def history_arm(labels: Labels, *, quick: bool, seed: int, keep: bool) -> dict[str, Any]:
    """The learned-history arm (see the module docstring); a report as the live arm's."""
    tmp = Path(tempfile.mkdtemp(prefix="dexai-history-"))
    learned = Plugin(home=tmp / "learned", tmp=tmp)
    learned.home.mkdir(mode=0o700)
    learned.configure()  # the replay's batch window, copied into each session's data directory
    claude = tmp / "claude"
    figures = Figures()
    waited: list[float] = []
    runs: list[dict[str, Any]] = []
    learn_seconds = 0.0
    t0 = time.monotonic()
    try:
        for cwd, session in sessions_in_order(labels, tmp, quick):
            plugin = Plugin(home=tmp / "session", tmp=tmp)
            shutil.copytree(learned.home, plugin.home)
            say(f"{session['id']}: replaying on the learned store ({len(memories(plugin.home))} memories)")
            start_daemon(plugin)
            try:
                replay_session(plugin, session, labels, figures, cwd)
            finally:
                plugin.stop()
                waited += plugin.waited_ms
                shutil.rmtree(plugin.home, ignore_errors=True)
            lay_out(session, cwd, claude)
            t1 = time.monotonic()
            done = learn_history(learned, claude)
            learn_seconds += time.monotonic() - t1
            runs.append({"after": session["id"], **{k: done.get(k) for k in (
                "sessions", "prompts", "added", "superseded", "updated", "skipped", "episodes", "memories")}})
        stored = memories(learned.home)
        result = report(figures, stored, labels, seed)
    finally:
        if keep:
            say(f"learned data directory kept: {learned.home}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    result["summary"]["replay_seconds"] = round(time.monotonic() - t0, 1)
    result["summary"]["learn_seconds"] = round(learn_seconds, 1)
    result["summary"]["prompt_wait_ms_mean"] = mean(waited)
    result["learn_runs"] = runs
    return result


def by_kind(needs: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """Per label kind: (needs injected, needs)."""
    got: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for x in needs:
        total[x["kind"]] += 1
        got[x["kind"]] += bool(x["in_context"])
    return {k: (got[k], total[k]) for k in sorted(total)}


def compare(live: dict[str, Any], history: dict[str, Any]) -> dict[str, Any]:
    """History minus live for every numeric summary figure; per kind; the needs one arm injected and not the other."""
    delta = {k: round(v - live["summary"][k], 2) for k, v in history["summary"].items()
             if isinstance(v, int | float) and isinstance(live["summary"].get(k), int | float)}
    kinds_live, kinds_history = by_kind(live["needs"]), by_kind(history["needs"])
    kinds = {k: f"{kinds_live[k][0]}/{kinds_live[k][1]} vs {kinds_history.get(k, (0, 0))[0]}/{kinds_live[k][1]}"
             for k in kinds_live}

    def key(x: dict[str, Any]) -> tuple[str, str, int]:
        return x["item"], x["session"], x["line"]

    seen = {key(x): x for x in history["needs"]}
    only_live: list[dict[str, Any]] = []
    only_history: list[dict[str, Any]] = []
    for x in live["needs"]:
        h = seen.get(key(x))
        if h is None or x["in_context"] == h["in_context"]:
            continue
        row = {"item": x["item"], "kind": x["kind"], "session": x["session"], "line": x["line"], "prompt": x["prompt"],
               "live_stored": x["stored"], "history_stored": h["stored"],
               "history_stored_as_note": h["stored_as_note"]}
        (only_live if x["in_context"] else only_history).append(row)
    return {"summary_delta": delta, "by_kind": kinds, "injected_live_only": only_live,
            "injected_history_only": only_history}
