"""``dexai memory learn-history`` at scale: time, peak memory, memories per prompt, kill -9 and resume.

Two modes:

* **synthetic** (default): writes ``--sessions`` Claude Code transcripts of ``--turns`` entries
  in all (typed prompts, the assistant's text and tool calls, tool results of 0.5-3 KB, meta
  lines and slash commands, in the real JSONL shape) over ten projects in a temporary
  ``.claude/projects``, then runs the real command (``python -m dexai_memory.cli.main memory
  learn-history --yes --json``, offline extractor) twice on fresh data directories: once
  straight through, once killed with SIGKILL after ``--kill-after`` seconds and run again
  (it resumes; the final store must hold the same memories as the straight run);
* **corpus** (``--claude-dir DIR``): one straight run on real transcripts already laid out as
  ``DIR/projects/<slug>/<session>.jsonl``.

Reported: the dry run's time (reading every transcript), the run's wall time and peak RSS
(``wait4``), sessions, prompts, memories stored (notes; the L3 copies of the prompts apart),
memories per prompt, prompts per second, and the extrapolation to 1,000 sessions / 100,000
entries. Vectors are left to the daemon (``--vectors later``), as the command does for a
run this size.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import REPO_ROOT, arg_parser, say, write_result

USER = "history-bench"
PROJECTS = ["shop", "blog", "infra", "mobile-app", "data-pipeline", "docs-site", "billing", "auth-service",
            "ml-models", "cli-tools"]
TECH = ["pnpm", "npm", "yarn", "pytest", "ruff", "black", "Postgres", "SQLite", "Redis", "Docker", "Terraform",
        "uv", "poetry", "Vite", "webpack", "GitHub Actions", "CircleCI", "Sentry"]
PROMPTS = [
    "Always run {tech} before committing in this repo.",
    "We use {tech} here, never {tech2}.",
    "Fix the failing test in src/{mod}.py, the assertion on line {n} is wrong.",
    "What does the function {fn} in {mod}.py do?",
    "We decided to move the cache to {tech}; update the config accordingly.",
    "Don't touch the migrations folder without asking me first.",
    "The staging server is {proj}-staging-{n}.internal, deploy there first.",
    "Rename {fn} to {fn}_v2 and update the callers.",
    "I prefer small commits with a short imperative subject line.",
    "Add type hints to {mod}.py and make mypy pass.",
    "Remind me to update the changelog before the release on Friday.",
    "Why is the build slow? It takes {n} minutes now.",
    "yes, go ahead",
    "Use {tech} from now on instead of {tech2} for {proj}.",
    "My API key is sk-ant-api03-{secret} please put it in .env <private>and my card is 4111</private>",
    "Refactor the {mod} module into smaller files, keep the public API.",
]
MODS = ["invoice", "auth", "router", "models", "views", "utils", "cache", "client", "config", "tasks"]
FNS = ["parse_total", "load_user", "render_page", "sync_orders", "refresh_token", "build_index"]


def _prompt(rng: random.Random, project: str) -> str:
    return rng.choice(PROMPTS).format(tech=rng.choice(TECH), tech2=rng.choice(TECH), mod=rng.choice(MODS),
                                      fn=rng.choice(FNS), n=rng.randint(2, 400), proj=project,
                                      secret="x" * 40)


def generate(root: Path, sessions: int, turns: int, seed: int = 7) -> dict[str, int]:
    """Write ``sessions`` transcripts of ``turns`` entries in all under ``root/projects``."""
    rng = random.Random(seed)
    per = max(4, turns // sessions)
    prompts = entries = 0
    start = time.mktime((2026, 9, 1, 9, 0, 0, 0, 0, 0))
    for s in range(sessions):
        project = PROJECTS[s % len(PROJECTS)]
        cwd = f"/home/bench/{project}"
        folder = root / "projects" / cwd.replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        sid = f"{s:04d}aaaa-bbbb-cccc-dddd-{rng.getrandbits(48):012x}"
        t = start + s * 3600 * 4
        lines: list[str] = []

        def write(entry: dict[str, Any], sid: str = sid, cwd: str = cwd, lines: list[str] = lines) -> None:
            nonlocal t
            t += rng.randint(5, 90)
            n = len(lines)
            lines.append(json.dumps({"parentUuid": f"{sid}-{n - 1}" if n else None, "isSidechain": False,
                                     "userType": "external", "cwd": cwd, "sessionId": sid, "version": "2.0.14",
                                     "gitBranch": "main", "uuid": f"{sid}-{n}",
                                     "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t)),
                                     **entry}))

        write({"type": "user", "isMeta": True, "message": {"role": "user", "content": "<local-command-caveat>"}})
        while len(lines) < per:
            write({"type": "user", "promptId": f"p{len(lines)}",
                   "message": {"role": "user", "content": _prompt(rng, project)}})
            prompts += 1
            for _ in range(rng.randint(1, 3)):
                tid = f"toolu_{rng.getrandbits(40):010x}"
                write({"type": "assistant", "message": {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me look at the file and run the tests; we always deploy on Fridays."},
                    {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": "pytest -x -q"}}]}})
                output = "\n".join(f"tests/test_{rng.choice(MODS)}.py::test_{i} PASSED" for i in range(rng.randint(10, 60)))
                write({"type": "user", "message": {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": tid, "content": output}]},
                    "toolUseResult": {"stdout": output, "stderr": "", "interrupted": False}})
            write({"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "text", "text": f"Done: the change is in src/{rng.choice(MODS)}.py and the tests pass."}]}})
        (folder / f"{sid}.jsonl").write_text("\n".join(lines) + "\n")
        entries += len(lines)
    return {"sessions": sessions, "entries": entries, "prompts": prompts}


def _env(claude: Path, home: Path) -> dict[str, str]:
    return {**os.environ, "CLAUDE_CONFIG_DIR": str(claude), "DEXAI_MEMORY_HOME": str(home),
            "DEXAI_EXTRACTOR": "offline", "DEXAI_CLAUDE_CODE_CLI": "none", "DEXAI_DAEMON_AUTOSTART": "0",
            "PYTHONPATH": str(REPO_ROOT)}


def command(claude: Path, home: Path, *args: str, kill_after: float | None = None) -> dict[str, Any]:
    """Run ``dexai memory learn-history ARGS``; its JSON answer with ``wall_s``, ``peak_rss_mb``
    (and ``killed`` when SIGKILLed after ``kill_after`` seconds)."""
    argv = [sys.executable, "-m", "dexai_memory.cli.main", "memory", "learn-history", "--json", "--user", USER,
            *args]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=_env(claude, home), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if kill_after is not None:
        try:
            proc.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    out = proc.stdout.read().decode() if proc.stdout else ""
    err = proc.stderr.read().decode() if proc.stderr else ""
    info: dict[str, Any] = {"wall_s": round(wall, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}
    if os.WIFSIGNALED(status):
        return {**info, "killed": True}
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"learn-history failed: {err[-2000:]}")
    return {**info, **json.loads(out.strip().splitlines()[-1])}


def stored(home: Path) -> dict[str, int]:
    """Memories (notes and episodes) and L3 transcripts in the store (soft-deleted apart); current
    ones, and how many of them repeat another's text."""
    import sqlite3

    with sqlite3.connect(home / "memory.db") as conn:
        rows = dict(conn.execute("SELECT type = 'TRANSCRIPT', COUNT(*) FROM memories WHERE deleted = 0 "
                                 "GROUP BY type = 'TRANSCRIPT'").fetchall())
        current = [r[0] for r in conn.execute(
            "SELECT lower(content) FROM memories WHERE deleted = 0 AND type != 'TRANSCRIPT' "
            "AND superseded_by IS NULL AND valid_until IS NULL")]
    return {"notes": rows.get(0, 0), "transcripts": rows.get(1, 0), "current": len(current),
            "current_duplicates": len(current) - len(set(current))}


def labelled(claude: Path, home: Path) -> dict[str, Any] | None:
    """The real-session corpus's labelled items (``benchmarks/data/real_sessions/labels.json``) said
    in the sessions learned: how many a stored note holds (any of the item's ``match``
    alternatives, as ``real_sessions_bench`` counts "stored"). None when no labelled session is here."""
    import sqlite3

    from benchmarks.real_sessions_bench import CORPUS, matches

    learned = {p.stem for p in (claude / "projects").glob("*/*.jsonl")}
    items = [i for i in json.loads((CORPUS / "labels.json").read_text(encoding="utf-8"))["items"]
             if i["said"]["session"].rsplit("/", 1)[-1] in learned]
    if not items:
        return None
    with sqlite3.connect(home / "memory.db") as conn:
        rows = conn.execute("SELECT type, content FROM memories WHERE deleted = 0 AND type != 'TRANSCRIPT'").fetchall()
    found = [i["id"] for i in items if any(matches(c, i["match"]) for _, c in rows)]
    # "stored as a note": in a memory recall shows, not only in an episode's list of prompts
    as_note = [i["id"] for i in items if any(matches(c, i["match"]) for t, c in rows if t != "EPISODE")]
    return {"items": len(items), "stored": len(found), "share": round(len(found) / len(items), 3),
            "as_note": len(as_note), "as_note_share": round(len(as_note) / len(items), 3),
            "missed": sorted(set(i["id"] for i in items) - set(found))}


def run_corpus(claude: Path, work: Path) -> dict[str, Any]:
    home = work / "home"
    dry = command(claude, home, "--dry-run")
    say(f"dry run: {dry['sessions']} sessions, {dry['prompts']} prompts, {dry['bytes'] / 1e6:.1f} MB "
        f"in {dry['wall_s']} s")
    done = command(claude, home, "--yes", "--vectors", "later")
    kept = stored(home)
    prompts = done["prompts"] or 1
    return {"dry_run": dry, "run": done, "stored": kept, "labelled": labelled(claude, home),
            "memories_per_prompt": round(kept["notes"] / prompts, 3),
            "notes_per_prompt": round((kept["notes"] - done["episodes"]) / prompts, 3)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser("history_bench", __doc__ or "")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=20_000, help="transcript entries in all")
    parser.add_argument("--kill-after", type=float, default=None,
                        help="seconds before the second run is killed (default: half the straight run)")
    parser.add_argument("--claude-dir", type=Path, default=None, help="a real corpus: DIR/projects/*/*.jsonl")
    args = parser.parse_args(argv)
    if args.quick:
        args.sessions, args.turns = 20, 2000
    with tempfile.TemporaryDirectory(prefix="history-bench-") as tmp:
        work = Path(tmp)
        if args.claude_dir is not None:
            result = run_corpus(args.claude_dir, work)
            summary = {"sessions": result["run"]["sessions"], "prompts": result["run"]["prompts"],
                       "wall_s": result["run"]["wall_s"], "peak_rss_mb": result["run"]["peak_rss_mb"],
                       "memories": result["stored"]["notes"], "memories_per_prompt": result["memories_per_prompt"],
                       "notes_per_prompt": result["notes_per_prompt"], "episodes": result["run"]["episodes"],
                       "labelled_items_stored": (result["labelled"] or {}).get("share"),
                       "labelled_items_stored_as_note": (result["labelled"] or {}).get("as_note_share")}
            params = {"claude_dir": str(args.claude_dir)}
        else:
            claude = work / "claude"
            made = generate(claude, args.sessions, args.turns)
            say(f"generated {made['sessions']} sessions, {made['entries']} entries, {made['prompts']} prompts")
            straight = run_corpus(claude, work / "straight")
            wall = straight["run"]["wall_s"]
            say(f"straight: {wall} s, peak {straight['run']['peak_rss_mb']} MB, {straight['stored']['notes']} "
                f"memories ({straight['memories_per_prompt']} a prompt)")
            home = work / "killed" / "home"
            kill_after = args.kill_after or max(1.0, wall / 2)
            killed = command(claude, home, "--yes", "--vectors", "later", kill_after=kill_after)
            from dexai_memory.capture.history_log import HistoryLog

            logged = len(HistoryLog(home, USER).sessions())
            resumed = command(claude, home, "--yes", "--vectors", "later")
            final = stored(home)
            say(f"killed after {kill_after:.1f} s ({logged} sessions recorded), resumed: {resumed['sessions']} "
                f"sessions in {resumed['wall_s']} s; memories {final['notes']} vs {straight['stored']['notes']}")
            per_entry = wall / made["entries"]
            result = {"generated": made, "straight": straight, "killed": {**killed, "sessions_recorded": logged,
                                                                            "after_s": kill_after},
                      "resumed": resumed, "resumed_stored": final}
            summary = {"sessions": made["sessions"], "entries": made["entries"], "prompts": made["prompts"],
                       "wall_s": wall, "dry_run_s": straight["dry_run"]["wall_s"],
                       "peak_rss_mb": straight["run"]["peak_rss_mb"], "memories": straight["stored"]["notes"],
                       "memories_per_prompt": straight["memories_per_prompt"],
                       "prompts_per_s": round(made["prompts"] / wall, 1),
                       "resume_same_memories": final["notes"] == straight["stored"]["notes"],
                       "resumed_memories": final["notes"], "current_duplicates": straight["stored"]["current_duplicates"],
                       "resumed_current_duplicates": final["current_duplicates"],
                       "sessions_recorded_at_kill": logged, "resumed_sessions": resumed["sessions"],
                       "extrapolated_100k_entries_min": round(per_entry * 100_000 / 60, 1)}
            params = {"sessions": args.sessions, "turns": args.turns}
    for k, v in summary.items():
        say(f"  {k}: {v}")
    write_result("history_bench", params=params, summary=summary, results=result, quick=args.quick,
                 out_dir=args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
