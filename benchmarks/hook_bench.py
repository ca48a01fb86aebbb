"""Hook benchmark: recall latency in-process, and the plugin's hooks with the daemon up and cold.

* **in-process recall** at 10k and 100k synthetic memories (one user): ``auto_recall`` on
  cold-start prompts (it always searches; query embedding included) and ``recall_block``
  (budget mode, 800 tokens), p50/p95. Targets: p95 <= 15 ms at 10k, <= 40 ms at 100k.
* **the hooks with the daemon up** (the usual case), 10k memories: the plugin's launcher
  ``hooks/dexai-hook <event>`` run as hooks.json runs it (``--async`` where it is async), a new
  process reading the hook JSON on stdin, against a real daemon (``dexai daemon start`` with
  ``DEXAI_MEMORY_HOME`` set, as the hooks start it). Per event (``session-start``,
  ``user-prompt-submit``: a prompt of a started session, its SessionStart sent first and not
  timed; ``user-prompt-submit:first``: a session's first prompt with no SessionStart before it,
  which carries the session's block too; ``pre-compact``, ``post-tool-use`` of Bash: async,
  ``post-tool-use:Read``: synchronous, with the file-aware prefetch, ``stop``, ``session-end``):
  wall time p50/p95 and what the user waits for, as hooks.json decides
  (:func:`testing.plugin_check.user_waits`): a synchronous hook's wall time, 0 for an async one
  (its wall time is still its cost). Target: UserPromptSubmit p95 <= 15 ms.
* **where the time goes**: the process start (the launcher with the no-op ``post-compact``,
  timed beside each event; and its parts, ``sh`` alone and ``curl`` alone) against the daemon's
  own work (the same event as a JSON-lines ``hook.event`` request from this process,
  :func:`~dexai_memory.daemon.ipc.ipc_request`: no process start).
* **cold**: no daemon running; ``session-start`` through the launcher starts one (the Python
  client) and waits for it (``hooks.cold_start_wait_seconds``), then the session's first
  prompt. Each run starts from the same store and is paired with a warm run (daemon started
  and settled first, same store and prompt, a new session): is the first prompt's block the same?
* ``--baseline REF`` (e.g. ``67524dc``): the plugin launcher and package of git ``REF``
  (exported to a temporary directory, on ``PYTHONPATH``) with REF's own daemon up on its own
  copy of the store, interleaved with the current one payload by payload (same machine load);
  keys ``baseline+daemon/...``, waits by REF's hooks.json. Whatever REF's launcher does applies
  (before the curl launcher: a Python process per event asking its daemon over the socket).

The machine is shared: the load average before and after is printed and kept in the JSON. The
databases come from ``search_bench``'s cache. The daemons run the offline extractor and serve
no TCP port. ``--quick``: 1k memories, fewer repetitions, one cold run, no 100k row.
``--hooks-only``: the hook rows only (10k memories), written to ``hooks.hooks-only.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import synthetic
from benchmarks.common import (
    CACHE_DIR,
    REPO_ROOT,
    RESULTS_DIR,
    arg_parser,
    latency_stats,
    say,
    write_result,
)
from benchmarks.search_bench import embedded_db
from dexai_memory.config import Settings, load_settings
from dexai_memory.daemon.control import read_pid, stop
from dexai_memory.daemon.event import HookEvent
from dexai_memory.daemon.ipc import ipc_request
from dexai_memory.daemon.session_state import EVENTS as HOOK_NAMES
from dexai_memory.embeddings import OnnxMiniLMEmbedder
from dexai_memory.providers.native import NativeProvider
from dexai_memory.recall.ranking import auto_recall, recall_block
from dexai_memory.text.tokens import count_tokens
from testing.plugin_check import user_waits

NAME = "hooks"
USER = "bench-user"
RECALL_TARGETS_MS = {10_000: 15.0, 100_000: 40.0}
#: What the user waits for in UserPromptSubmit with the daemon up, p95.
PROMPT_TARGET_MS = 15.0
#: ``user-prompt-submit`` is a prompt of a started session (its SessionStart sent first, untimed);
#: ``user-prompt-submit:first`` a session's first prompt with no SessionStart before it (it carries
#: the session's block too).
EVENTS = ("session-start", "user-prompt-submit", "user-prompt-submit:first", "pre-compact", "post-tool-use",
          "post-tool-use:Read", "stop", "session-end")
#: The no-op event: the launcher's process start and the socket round trip, no work in the daemon.
NOOP = "post-compact"
#: Files the ``post-tool-use:Read`` payloads read (a different one each time: a file is prefetched once a session).
FILES = ("dexai_memory/config.py", "dexai_memory/daemon/core.py", "dexai_memory/daemon/executor.py", "README.md",
         "dexai_memory/recall/ranking.py", "benchmarks/hook_bench.py", "dexai_memory/capture/gate.py")
#: A bench data directory's memory.yaml: no TCP port (other daemons may run on this machine), and
#: an idle exit so a daemon left by a crashed run goes away by itself.
HOME_CONFIG = "daemon:\n  api_port: 0\n  http_port: 0\n  idle_exit_minutes: 10\n"


def prepare_home(db: Path, root: Path) -> Settings:
    """A data directory holding a copy of ``db`` as its memory.db (the cache stays untouched)."""
    home = Path(tempfile.mkdtemp(prefix="hb", dir=root))
    shutil.copy2(db, home / "memory.db")
    (home / "memory.yaml").write_text(HOME_CONFIG, encoding="utf-8")
    return load_settings(home=home)


async def in_process(settings: Settings, queries: Sequence[str]) -> dict[str, Any]:
    embedder = OnnxMiniLMEmbedder()
    async with NativeProvider(settings.db_path, embedder=embedder, search=settings.search) as provider:
        for q in queries[:5]:  # warm the model and the page cache
            await auto_recall(provider, USER, q, [], settings)
        auto_ms, block_ms, injected, tokens = [], [], [], []
        for q in queries:
            t0 = time.perf_counter()
            r = await auto_recall(provider, USER, q, [], settings)
            auto_ms.append((time.perf_counter() - t0) * 1000)
            injected.append(len(r.memories))
            t0 = time.perf_counter()
            b = await recall_block(provider, USER, q, settings)
            block_ms.append((time.perf_counter() - t0) * 1000)
            tokens.append(b.tokens)
    return {"auto_recall": latency_stats(auto_ms), "recall_block": latency_stats(block_ms),
            "mean_injected": round(sum(injected) / len(injected), 2),
            "mean_block_tokens": round(sum(tokens) / len(tokens), 1)}


# --------------------------------------------------------------------------- one plugin under test
@dataclass
class Side:
    """One plugin under test: its root (``hooks/`` inside), data directory and extra environment."""

    name: str
    root: Path
    settings: Settings
    extra_env: dict[str, str] = field(default_factory=dict)
    hooks_json: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.hooks_json = json.loads((self.root / "hooks" / "hooks.json").read_text(encoding="utf-8"))

    @property
    def launcher(self) -> str:
        return str(self.root / "hooks" / "dexai-hook")

    def env(self, *, autostart: bool = False) -> dict[str, str]:
        env = {**os.environ, "DEXAI_MEMORY_HOME": str(self.settings.home), "DEXAI_MEMORY_USER": USER,
               "DEXAI_EXTRACTOR": "offline", "DEXAI_DAEMON_AUTOSTART": "1" if autostart else "0",
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}", **self.extra_env}
        for name in ("DEXAI_MEMORY_PROJECT", "DEXAI_MEMORY_DISABLED", "DEXAI_HOOK_TOKEN", "DEXAI_HOOK_PYTHON",
                     "CLAUDE_PLUGIN_ROOT", "CLAUDE_PLUGIN_DATA"):
            env.pop(name, None)
        # no plugin venv of a past install: the launcher finds `dexai` on PATH, this checkout's
        env["CLAUDE_PLUGIN_DATA"] = str(self.settings.home / "plugin-data")
        return env

    def daemon_pid(self) -> int | None:
        return read_pid(self.settings)

    def answering(self) -> bool:
        return ipc_request(self.settings.socket_path, {"op": "ping"}, 2.0) is not None

    def start_daemon(self) -> None:
        """``dexai daemon start`` for this side's package and data directory (cwd: the data
        directory, so the checkout never shadows a baseline package on ``PYTHONPATH``)."""
        proc = subprocess.run([sys.executable, "-m", "dexai_memory.cli.main", "daemon", "start"],
                              env=self.env(), cwd=self.settings.home, capture_output=True, text=True, timeout=120,
                              check=False)
        if proc.returncode != 0 or not self.answering():
            raise RuntimeError(f"{self.name}: dexai daemon start failed: {proc.stdout}{proc.stderr}{self.log_tail()}")

    def stop_daemon(self) -> None:
        if not stop(self.settings, 30.0):
            raise RuntimeError(f"{self.name}: the daemon did not stop{self.log_tail()}")

    def log_tail(self) -> str:
        try:
            return "\n" + "".join((self.settings.home / "daemon.log").read_text(encoding="utf-8").splitlines(True)[-15:])
        except OSError:
            return ""


def cpu_ms(pid: int | None) -> float:
    """CPU time (user + system) of process ``pid`` so far, in ms (0 when it cannot be read)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def settle(side: Side, timeout: float = 60.0) -> None:
    """Wait until ``side``'s daemon is done starting (its model loaded): its CPU time grows by
    less than 20 ms over half a second."""
    pid, deadline, last = side.daemon_pid(), time.monotonic() + timeout, -1.0
    time.sleep(1.0)
    while time.monotonic() < deadline:
        now = cpu_ms(pid)
        if 0 <= now - last < 20:
            return
        last = now
        time.sleep(0.5)


# --------------------------------------------------------------------------- payloads and runs
def _argv_event(event: str) -> str:
    return event.split(":")[0]


def _payload(event: str, i: int, transcript: Path, queries: Sequence[str]) -> dict[str, Any]:
    name = _argv_event(event)
    base: dict[str, Any] = {"session_id": f"bench-{event}-{i}", "transcript_path": str(transcript),
                            "cwd": str(REPO_ROOT), "hook_event_name": HOOK_NAMES[name]}
    if event == "session-start":
        base["source"] = "startup"
    elif name == "user-prompt-submit":
        base.update(prompt=queries[i % len(queries)], prompt_id=f"p{i}")
    elif event in ("pre-compact", "post-compact"):
        base.update(trigger="manual", custom_instructions=None)
    elif event == "post-tool-use":
        base.update(tool_name="Bash", tool_use_id=f"t{i}", tool_input={"command": f"./deploy.sh staging {i}"},
                    tool_response={"stdout": f"Deployed build {i} to staging for Sarah at 3pm tomorrow"})
    elif event == "post-tool-use:Read":  # a file tool: synchronous, with the file-aware prefetch
        path = REPO_ROOT / FILES[i % len(FILES)]
        base.update(tool_name="Read", tool_use_id=f"r{i}", tool_input={"file_path": str(path)},
                    tool_response={"type": "text", "file": {"filePath": str(path), "content": "x = 1\n"}})
    elif event == "stop":
        base.update(last_assistant_message=f"I'll remind you to email Priya on Friday ({i}).")
    return base


def waits(hooks_json: dict[str, Any], event: str, payload: dict[str, Any]) -> bool:
    """Whether Claude Code waits for ``event`` with ``payload`` under ``hooks_json``."""
    return user_waits(hooks_json, HOOK_NAMES[_argv_event(event)], payload)


def context_of(stdout: str) -> str:
    """The text a hook's answer adds to the model's context ("" for none)."""
    try:
        answer = json.loads(stdout) if stdout.strip() else {}
    except ValueError:
        return stdout.strip()
    out = answer.get("hookSpecificOutput") if isinstance(answer, dict) else None
    return str(out.get("additionalContext") or "") if isinstance(out, dict) else ""


def run_hook(side: Side, event: str, payload: dict[str, Any], *, autostart: bool = False) -> tuple[float, float, str]:
    """One event through ``side``'s launcher as hooks.json runs it (``--async`` where it is an
    async hook): wall ms from process start to exit, CPU ms of the launcher's processes, stdout."""
    argv = [side.launcher, _argv_event(event), *([] if waits(side.hooks_json, event, payload) else ["--async"])]
    return _timed(argv, json.dumps(payload), side, side.env(autostart=autostart))


def ask_daemon(side: Side, event: str, payload: dict[str, Any]) -> tuple[float, float, str]:
    """The same event as a JSON-lines ``hook.event`` request from this process (no process
    start): wall ms, 0, the answer as the launcher would print it."""
    hook = HookEvent.make(_argv_event(event), payload, env={"DEXAI_MEMORY_USER": USER},
                          background=not waits(side.hooks_json, event, payload))
    t0 = time.perf_counter()
    reply = ipc_request(side.settings.socket_path, {"op": "hook.event", **hook.to_json()}, 60.0)
    wall = (time.perf_counter() - t0) * 1000
    if reply is None or "answer" not in reply:
        raise RuntimeError(f"the daemon did not answer hook.event {event}: {reply}")
    answer = reply["answer"]
    return wall, 0.0, answer if isinstance(answer, str) else json.dumps(answer)


def curl_alone(side: Side, event: str, payload: dict[str, Any]) -> tuple[float, float, str]:
    """The launcher's ``curl`` command line by itself (no ``sh``, no launcher script)."""
    argv = ["curl", "-sS", "--max-time", "25", "--unix-socket", str(side.settings.socket_path),
            "-H", "Content-Type: application/json", "-H", "Expect:", "-H", f"X-Dexai-Env-DEXAI_MEMORY_USER: {USER}",
            "--data-binary", "@-", f"http://dexai-memory/hook/{_argv_event(event)}"]
    return _timed(argv, json.dumps(payload), side)


def sh_alone(side: Side, event: str, payload: dict[str, Any]) -> tuple[float, float, str]:
    """A POSIX shell that starts and exits (the launcher's interpreter)."""
    return _timed(["sh", "-c", ":"], "", side)


def _timed(argv: list[str], data: str, side: Side, env: dict[str, str] | None = None) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, input=data, capture_output=True, text=True, env=env or side.env(),
                          cwd=side.settings.home, timeout=120, check=False)
    wall = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr}")
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000, proc.stdout


def noop_hook(side: Side, event: str, payload: dict[str, Any]) -> tuple[float, float, str]:
    """The launcher with the no-op event, timed beside ``event`` (the same moments, the same load)."""
    return run_hook(side, NOOP, {**_payload(NOOP, 0, Path(str(payload["transcript_path"])), ["-"]),
                                 "session_id": str(payload["session_id"])})


#: The no-op launcher run timed beside each event: the process start under that event's load.
NOOP_BESIDE = "launcher no-op beside"
Arm = tuple[str, Side, Callable[[Side, str, dict[str, Any]], tuple[float, float, str]]]
#: Parts of the no-op's process start, timed with it: the shell alone, curl alone.
PARTS: list[tuple[str, Callable[[Side, str, dict[str, Any]], tuple[float, float, str]]]] = [
    ("sh alone", sh_alone), ("curl alone", curl_alone)]


def warm_walls(sides: Sequence[Side], queries: Sequence[str], reps: int,
               transcript: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every event through each side's launcher with its daemon up, and (current side) as an
    in-process ``hook.event`` and beside the launcher with the no-op event; arms interleaved
    payload by payload, their order alternating. Returns (rows by arm/event, the no-op by event)."""
    results: dict[str, Any] = {}
    beside: dict[str, Any] = {}
    bare = [sys.executable, "-c", "import sys; sys.stdin.read()"]
    walls = []
    for _ in range(max(3, reps // 3)):
        t0 = time.perf_counter()
        subprocess.run(bare, input="{}", capture_output=True, text=True, check=True)
        walls.append((time.perf_counter() - t0) * 1000)
    results["python -c pass (reference)"] = latency_stats(walls)
    base_arms: list[Arm] = [(f"{s.name}+daemon", s, run_hook) for s in sides]
    base_arms.append(("in-process", sides[0], ask_daemon))
    for event in (NOOP, *EVENTS):
        n = reps if event in ("user-prompt-submit", NOOP) else max(3, reps // 3)
        arms = [*base_arms, *((name, sides[0], fn) for name, fn in PARTS)] if event == NOOP \
            else [*base_arms, (NOOP_BESIDE, sides[0], noop_hook)]
        wall: dict[str, list[float]] = {a[0]: [] for a in arms}
        cpu: dict[str, list[float]] = {a[0]: [] for a in arms}
        daemon_cpu: dict[str, float] = {a[0]: 0.0 for a in arms}
        answered: dict[str, int] = {a[0]: 0 for a in arms}
        for i in range(-2, n):  # the first two warm up
            order = arms if i % 2 else arms[::-1]
            for name, side, runner in order:
                payload = {**_payload(event, max(i, 0), transcript, queries),
                           "session_id": f"{name}-{event}-{i}"}
                if event == "user-prompt-submit":  # a prompt of a started session (untimed start)
                    ask_daemon(side, "session-start", {**_payload("session-start", 0, transcript, queries),
                                                       "session_id": payload["session_id"]})
                pid = side.daemon_pid()
                before = cpu_ms(pid)
                ms, own_cpu, out = runner(side, event, payload)
                if i >= 0:
                    wall[name].append(ms)
                    cpu[name].append(own_cpu)
                    daemon_cpu[name] += cpu_ms(pid) - before
                    answered[name] += bool(context_of(out))
        for name, side, runner in arms:
            stats: dict[str, Any] = latency_stats(wall[name])
            if runner is not ask_daemon:
                stats["cpu_p50_ms"] = round(sorted(cpu[name])[len(cpu[name]) // 2], 1)
            stats["daemon_cpu_mean_ms"] = round(daemon_cpu[name] / n, 1)
            if event.startswith("user-prompt-submit"):
                stats["answered_with_context"] = f"{answered[name]}/{n}"
            if runner is noop_hook:
                beside[event] = stats
                continue
            if runner not in (run_hook, ask_daemon):
                results[f"{name}/{event}"] = stats
                continue
            waited = waits(side.hooks_json, event, _payload(event, 0, transcript, queries))
            stats.update(user_waits="sync" if waited else "async",
                         wait_p50_ms=stats["p50_ms"] if waited else 0.0, wait_p95_ms=stats["p95_ms"] if waited else 0.0)
            results[f"{name}/{event}"] = stats
            say(f"  {name:18s} {event:20s} p50 {stats['p50_ms']:8.1f}  p95 {stats['p95_ms']:8.1f} ms "
                f"({stats['user_waits']})")
        for side in sides:
            if not side.answering():
                raise RuntimeError(f"{side.name}: the daemon stopped answering after {event}{side.log_tail()}")
    return results, beside


def where_time_goes(hooks: dict[str, Any], beside: dict[str, Any], side: str) -> dict[str, Any]:
    """Per event, the share of the launcher's p50 that is the process start (the launcher with
    the no-op event, timed beside it) and the share that is the daemon's own work (the in-process
    request); under ``process start``, the no-op's parts: the shell alone, curl alone, the
    daemon's no-op."""
    out: dict[str, Any] = {"process start": {
        "launcher_noop_p50_ms": hooks.get(f"{side}+daemon/{NOOP}", {}).get("p50_ms"),
        "sh_alone_p50_ms": hooks.get(f"sh alone/{NOOP}", {}).get("p50_ms"),
        "curl_alone_p50_ms": hooks.get(f"curl alone/{NOOP}", {}).get("p50_ms"),
        "daemon_noop_p50_ms": hooks.get(f"in-process/{NOOP}", {}).get("p50_ms")}}
    for event in EVENTS:
        wall = hooks.get(f"{side}+daemon/{event}", {}).get("p50_ms")
        start = beside.get(event, {}).get("p50_ms")
        work = hooks.get(f"in-process/{event}", {}).get("p50_ms")
        if not (wall and start and work is not None):
            continue
        out[event] = {"wall_p50_ms": wall, "process_start_p50_ms": start, "daemon_p50_ms": work,
                      "start_share_pct": round(100 * min(start, wall) / wall, 1),
                      "daemon_share_pct": round(100 * min(work, wall) / wall, 1)}
    return out


# --------------------------------------------------------------------------- cold start
def restore_store(side: Side, db: Path) -> None:
    """Back to the store as prepared (the cache's copy; no queue, no session state), daemon stopped."""
    home = side.settings.home
    # daemon.spawn: hooks start no daemon within 15 s of the last start (a guard against piling
    # up starts), even when that daemon was stopped since; a user's cold start is not that soon
    for name in ("memory.db-wal", "memory.db-shm", "queue.db", "queue.db-wal", "queue.db-shm", "daemon.spawn"):
        (home / name).unlink(missing_ok=True)
    shutil.copy2(db, home / "memory.db")


def cold_starts(side: Side, db: Path, prompts: Sequence[str], runs: int, transcript: Path) -> dict[str, Any]:
    """``runs`` pairs (cold, warm) from the same store: session-start then the first prompt."""
    from dexai_memory.capture.queue_file import queue_path, queued_events

    out = []
    for k in range(runs):
        prompt = prompts[k % len(prompts)]
        run: dict[str, Any] = {"prompt": prompt}
        for mode in ("cold", "warm"):
            side.stop_daemon()
            restore_store(side, db)
            if mode == "warm":
                side.start_daemon()
                settle(side)
            sid = f"{mode}-{k}"
            start = {**_payload("session-start", k, transcript, prompts), "session_id": sid}
            ss_ms, _, ss_out = run_hook(side, "session-start", start, autostart=True)
            queued = len(queued_events(queue_path(side.settings.home))) if mode == "cold" else 0
            ask = {**_payload("user-prompt-submit", k, transcript, prompts), "session_id": sid, "prompt": prompt}
            ups_ms, _, ups_out = run_hook(side, "user-prompt-submit", ask, autostart=True)
            block, l1 = context_of(ups_out), context_of(ss_out)
            run[mode] = {"session_start_ms": round(ss_ms, 1), "queued_for_replay": queued,
                         "l1_tokens": count_tokens(l1), "first_prompt_ms": round(ups_ms, 1),
                         "block_tokens": count_tokens(block), "_block": block, "_l1": l1}
        run["same_block"] = run["cold"].pop("_block") == run["warm"].pop("_block")
        run["same_l1"] = run["cold"].pop("_l1") == run["warm"].pop("_l1")
        say(f"  cold run {k + 1}: session-start {run['cold']['session_start_ms']} ms (warm "
            f"{run['warm']['session_start_ms']}), first prompt {run['cold']['first_prompt_ms']} ms, "
            f"same block as warm: {'yes' if run['same_block'] else 'no'} "
            f"({run['cold']['block_tokens']} / {run['warm']['block_tokens']} tokens)")
        out.append(run)
    starts = [r["cold"]["session_start_ms"] for r in out]
    return {"runs": out, "session_start": latency_stats(starts),
            "first_prompt": latency_stats([r["cold"]["first_prompt_ms"] for r in out]),
            "same_block": f"{sum(r['same_block'] for r in out)}/{len(out)}",
            "same_l1": f"{sum(r['same_l1'] for r in out)}/{len(out)}",
            "cold_start_wait_seconds": side.settings.hooks.cold_start_wait_seconds}


# --------------------------------------------------------------------------- baseline and the run
def baseline_plugin(ref: str, tmp: Path) -> Path:
    """The plugin of git ``ref`` in ``tmp``: its hooks/ and its package (``cli`` and ``args``
    placed as ``dexai_memory.cli`` / ``dexai_memory.args``, as its wheel maps them) for ``PYTHONPATH``."""
    root = tmp / "baseline"
    root.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO_ROOT), "archive", ref, "hooks", "dexai_memory", "cli", "args"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    for part in ("cli", "args"):
        if (root / part).is_dir() and not (root / "dexai_memory" / part).exists():
            (root / part).rename(root / "dexai_memory" / part)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "dexai_memory")], check=False,
                   capture_output=True)
    return root


async def amain(args: Any) -> int:
    quick = args.quick
    sizes = [1_000] if quick else [10_000] if args.hooks_only else [10_000, 100_000]
    hook_size = sizes[0]
    queries = synthetic.queries(15 if quick else 60, seed=11)
    cold_prompts = synthetic.queries(5, seed=23)  # prompts the warm rows never ask
    embedder = OnnxMiniLMEmbedder()
    results: dict[str, Any] = {"in_process": {}, "hooks": {}, "where": {}, "cold": {},
                               "load": {"start": [round(x, 2) for x in os.getloadavg()]}}
    # An installed package has its bytecode compiled by pip; this checkout may not (PYTHONDONTWRITEBYTECODE).
    await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "compileall", "-q",
                                             str(REPO_ROOT / "dexai_memory"), str(REPO_ROOT / "cli")],
                            check=False, capture_output=True)
    with tempfile.TemporaryDirectory(prefix="hb") as tmp_s:
        tmp = Path(tmp_s)
        dbs: dict[int, Path] = {}
        for n in sizes:
            key = f"search-n{n}-seed7-g{synthetic.GENERATOR_VERSION}-{embedder.model_id}"
            if not quick and n > 10_000 and not (CACHE_DIR / f"{key}.db").exists():
                # Never start (or clobber) search_bench's long 100k build from here.
                say(f"skipping {n:,}: {key}.db is not cached yet (python -m benchmarks.search_bench builds it)")
                results["in_process"][str(n)] = {"skipped": "database not cached yet"}
                continue
            dbs[n], build = await embedded_db(n, 7, embedder, use_cache=not quick, rebuild=False, tmp=tmp)
            if not args.hooks_only:
                say(f"in-process recall at {n:,} memories")
                results["in_process"][str(n)] = {**await in_process(prepare_home(dbs[n], tmp), queries),
                                                 "build": build}
        db, transcript = dbs[hook_size], write_transcript(tmp)
        sides = [Side("plugin", REPO_ROOT, prepare_home(db, tmp))]
        if args.baseline:
            sides.append(Side("baseline", baseline_plugin(args.baseline, tmp), prepare_home(db, tmp),
                              {"PYTHONPATH": str(tmp / "baseline")}))
        try:
            for side in sides:
                side.start_daemon()
                settle(side)
            say(f"hooks with the daemon up, {hook_size:,} memories")
            results["hooks"], beside = await asyncio.to_thread(warm_walls, sides, queries, 8 if quick else 40,
                                                               transcript)
            results["where"] = where_time_goes(results["hooks"], beside, "plugin")
            for side in sides[1:]:
                side.stop_daemon()
            say("cold starts")
            results["cold"] = await asyncio.to_thread(cold_starts, sides[0], db, cold_prompts,
                                                      args.cold_runs or (1 if quick else 3), transcript)
        finally:
            for side in sides:
                try:
                    side.stop_daemon()
                except RuntimeError as exc:
                    say(str(exc))
    results["load"]["end"] = [round(x, 2) for x in os.getloadavg()]
    from benchmarks.hook_report import print_tables, summarize

    print_tables(results, hook_size)
    out_dir = Path(args.out) if args.out else RESULTS_DIR
    separate = args.hooks_only and not quick  # hooks.hooks-only.json: the full run's hooks.json stays
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".hb", dir=out_dir) as staging:
        path = write_result(NAME, quick=quick, params={
            "sizes": sizes, "hook_size": hook_size, "queries": len(queries), "baseline": args.baseline,
            "prompt_target_p95_ms": PROMPT_TARGET_MS, "load_avg": results["load"]},
            summary=summarize(results), results=results, out_dir=Path(staging) if separate else out_dir)
        if separate:
            path = path.replace(out_dir / f"{NAME}.hooks-only.json")
    print(f"wrote {path}")
    return 0


def write_transcript(tmp: Path) -> Path:
    """The transcript the payloads point at (PreCompact and SessionEnd read it)."""
    path = tmp / "transcript.jsonl"
    path.write_text("".join(
        json.dumps({"type": r, "message": {"role": r, "content": t}}) + "\n" for r, t in [
            ("user", "Let's get the release out today."), ("assistant", "Starting with the changelog."),
            ("user", "Also bump the version in pyproject."), ("assistant", "Done: version bumped to 1.4.0.")] * 20),
        encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser("hook_bench", __doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--baseline", metavar="REF", default=None,
                        help="also run the plugin launcher, package and daemon of git REF (e.g. 67524dc), interleaved")
    parser.add_argument("--hooks-only", action="store_true",
                        help="only the hooks (no in-process recall rows); writes hooks.hooks-only.json")
    parser.add_argument("--cold-runs", type=int, default=None, metavar="N",
                        help="cold starts to time (default 3; --quick: 1)")
    return asyncio.run(amain(parser.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
