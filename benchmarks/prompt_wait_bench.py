"""What a ``claude -p`` prompt waits for because of the plugin: the real CLI, with and without it.

The Claude Code CLI bundled in claude-agent-sdk (``dexai_memory.demo.claude_cli``) runs against
the local fake Messages API (``dexai_memory.demo.fakeapi``, 127.0.0.1 only), signed in with a
token and no API key, with the harness's environment (no telemetry, no autoupdate, no
nonessential traffic). Prompts of the same shape alternate in one run: with the plugin
(``--plugin-dir``) and without it (the control), N pairs, each arm leading in turn so neither
always follows the other. ``--floor`` adds a third arm: a plugin with the same doors doing
nothing (no-op command hooks, a standard-library MCP server listing our tools), what any plugin
shaped like ours costs in this CLI; ``--also DIR`` adds another plugin directory (e.g. an older
hooks.json) served by the same package and daemon. For each run:

* **wait**: from spawning ``claude -p`` to the fake API receiving the main model request (the
  ``/v1/messages`` request of this run's session, ``--session-id``, whose last user message holds
  this run's prompt). Any other request of the session (a title, a quota check, a Haiku call) is
  logged under ``other_requests`` and skipped;
* **wall**: from the spawn to the CLI's exit;
* from the CLI's debug log (``--debug-file``, both arms): how long each plugin command hook took
  and when it finished, and how long each plugin MCP server took to connect (``--no-debug-log``
  turns this off).

The plugin is a black box: a directory with ``.claude-plugin/``, ``hooks/hooks.json`` and
``.mcp.json`` (``--plugin-dir``, default this checkout). Its Python is found as a user's install
finds it: the ``bin/`` of ``--python`` (default: this interpreter's venv, whose ``dexai``
console script the launcher reads) first on ``PATH``; ``--hook-python env`` sets
``DEXAI_HOOK_PYTHON`` to that interpreter instead. To measure an older checkout, install it in a
venv of its own (``pip install --no-deps -e OLD``) and pass its python with ``--python``.

The with-plugin arm has its own ``HOME``, ``CLAUDE_CONFIG_DIR`` and ``DEXAI_MEMORY_HOME`` (an
empty store, user ``bench``), prepared once; the control its own ``HOME``. Extraction uses the
offline extractor (``DEXAI_EXTRACTOR=offline``): the fake API cannot play Haiku for the daemon.

* warm (default): one throw-away prompt with the plugin, then wait until ``dexai daemon status``
  says the daemon answers (``dexai daemon start`` when the hooks did not start one), then one
  throw-away pair, then the measured pairs;
* ``--cold``: ``dexai daemon stop`` before every with-plugin run, so the prompt meets no daemon;
* ``--busy``: a process burning one core for the whole run.

Every daemon of the run's data directory is stopped at the end and the temporary directory
removed (``--keep`` keeps it). Target: wait ratio of medians (with / without) <= 1.10.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.common import (
    REPO_ROOT,
    RESULTS_DIR,
    arg_parser,
    format_table,
    latency_stats,
    say,
    write_result,
)
from dexai_memory.demo.claude_cli import build_args, build_env, claude_binary, claude_version
from dexai_memory.demo.fakeapi import FakeMessagesAPI, RecordedRequest, last_user_text

NAME = "prompt_wait"
TARGET_RATIO = 1.10
USER = "bench"
RUN_TIMEOUT_S = 120.0
DAEMON_WAIT_S = 60.0
#: After the CLI exits, how long its leftover children (async hooks, MCP servers) may linger
#: before they are killed, so they do not load the next run.
LINGER_S = 3.0
PROMPT = "Pair {pair}, {arm} run: what does the release checklist say about {topic}?"
TOPICS = ("the database migration", "the rollout order", "feature flags", "the changelog",
          "the staging soak", "rollback steps", "the on-call handover", "version tags")

HOOK_RE = re.compile(r"Hooks: (?P<name>\S+) \[(?P<cmd>.*)\] \(plugin (?P<plugin>[^)]*)\) "
                     r"finished with status (?P<rc>-?\d+) \((?P<ms>\d+)ms\)")
MCP_RE = re.compile(r'MCP server "(?P<name>[^"]+)": (?P<what>Starting connection|Successfully connected '
                    r"\(transport: (?P<transport>[^)]*)\) in (?P<ms>\d+)ms|.*probe timed out)")
STAMP_RE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)")
MCP_HOOK_RE = re.compile(r"Hooks: mcp_tool calling (?P<server>\S+)/(?P<tool>\S+) with")
HOOK_DONE_RE = re.compile(r'"Hook (?P<event>\w+) \(\w+\) (?:success|error)')


@dataclass
class Arm:
    """One side of the comparison: the CLI's environment and the plugin directories it loads."""

    name: str
    env: dict[str, str]
    plugin_dirs: list[Path]


# --------------------------------------------------------------------------- environment
def _scrubbed(env: dict[str, str]) -> dict[str, str]:
    """``env`` without the caller's own DEXAI_* settings (a test run's autostart switch, a
    developer's data directory): the arms set theirs explicitly."""
    return {k: v for k, v in env.items() if not k.startswith("DEXAI_")}


#: The floor arm's MCP server: the plugin's tool list, answered at once, standard library only.
FLOOR_SERVER = """import json, sys
tools = json.loads(sys.argv[1])
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message.get("method")
    result = ({"protocolVersion": message["params"].get("protocolVersion"), "capabilities": {"tools": {}},
               "serverInfo": {"name": "floor", "version": "0"}} if method == "initialize"
              else {"tools": tools} if method == "tools/list" else {})
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\\n")
    sys.stdout.flush()
"""


def floor_plugin(tmp: Path, python: Path) -> Path:
    """A plugin with the same doors as ours doing nothing (``--floor``): command hooks that read
    their input and answer ``{}`` for the events a prompt waits for (SessionStart,
    UserPromptSubmit, Stop), and a standard-library MCP server listing our three tools. What any
    plugin with these doors costs in this CLI, measured beside ours."""
    from dexai_memory.agent_tools.specs import TOOL_SPECS

    root = tmp / "floor-plugin"
    (root / "hooks").mkdir(parents=True)
    shutil.copytree(REPO_ROOT / ".claude-plugin", root / ".claude-plugin")
    (root / "hooks" / "server.py").write_text(FLOOR_SERVER, encoding="utf-8")
    noop = [{"hooks": [{"type": "command", "command": "cat >/dev/null; echo '{}'", "timeout": 30}]}]
    (root / "hooks" / "hooks.json").write_text(json.dumps(
        {"hooks": {event: noop for event in ("SessionStart", "UserPromptSubmit", "Stop")}}), encoding="utf-8")
    tools = json.dumps([spec.to_wire() for spec in TOOL_SPECS])
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"dexai-memory": {
        "command": str(python), "args": ["-S", "${CLAUDE_PLUGIN_ROOT}/hooks/server.py", tools]}}}), encoding="utf-8")
    return root


def make_arms(tmp: Path, base_url: str, plugin_dir: Path, python: Path, hook_python: str,
              extra_plugins: Sequence[tuple[str, Path]] = ()) -> tuple[list[Arm], Path]:
    """([with-plugin arm, control arm, one arm per ``extra_plugins`` (name, directory)], the
    with-plugin DEXAI_MEMORY_HOME, which the extra arms share)."""
    memory_home = tmp / "memory"
    memory_home.mkdir(parents=True)
    bin_dir = str(python.parent)
    dexai_env = {"DEXAI_MEMORY_HOME": str(memory_home), "DEXAI_MEMORY_USER": USER,
                 "DEXAI_EXTRACTOR": "offline",
                 "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    if hook_python == "env":
        dexai_env["DEXAI_HOOK_PYTHON"] = str(python)
    arms = []
    for name, plugins in (("with", [plugin_dir]), ("without", []), *((n, [d]) for n, d in extra_plugins)):
        home = tmp / f"home-{name}"
        (home / ".claude").mkdir(parents=True)
        extra = {**dexai_env, "CLAUDE_CONFIG_DIR": str(home / ".claude")}
        env = _scrubbed(build_env(home, base_url, extra, auth="token"))
        env.update({k: v for k, v in extra.items() if k.startswith("DEXAI_")})
        arms.append(Arm(name, env, plugins))
    (tmp / "project").mkdir()
    return arms, memory_home


def dexai_command(python: Path) -> list[str]:
    """The ``dexai`` console script beside ``python`` (else ``python -m dexai_memory.cli.main``)."""
    script = python.parent / "dexai"
    return [str(script)] if script.is_file() else [str(python), "-m", "dexai_memory.cli.main"]


def package_path(python: Path, env: dict[str, str]) -> str:
    """Where ``python`` imports dexai_memory from, with the arm's environment."""
    proc = subprocess.run([str(python), "-c", "import dexai_memory; print(dexai_memory.__file__)"],
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    return proc.stdout.strip() or f"not importable: {proc.stderr.strip()[-300:]}"


# --------------------------------------------------------------------------- the daemon
class Daemon:
    """``dexai daemon status | start | stop`` for the with-plugin arm's data directory."""

    def __init__(self, python: Path, env: dict[str, str], home: Path) -> None:
        self.cmd = dexai_command(python)
        self.env = env
        self.home = home

    def _run(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.cmd, "daemon", *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout, check=False)

    def answering(self) -> bool:
        proc = self._run("status", "--json", timeout=30)
        try:
            status = json.loads(proc.stdout)
        except ValueError:
            return proc.returncode == 0 and (self.home / "daemon.sock").exists()
        return bool(status.get("answering", status.get("running")))

    def wait_answering(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.answering():
                return True
            time.sleep(0.5)
        return False

    def start(self) -> None:
        self._run("start", timeout=90)

    def stop(self) -> None:
        """``dexai daemon stop``; then the pid in ``daemon.pid`` if that process still serves
        this data directory (its command line names it)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._run("stop", timeout=60)
        try:
            pid = int((self.home / "daemon.pid").read_text().split()[0])
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            return
        ours = str(self.home).encode() in cmdline or (b"dexai" in cmdline and b"daemon" in cmdline)
        if not ours:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
            for _ in range(50):
                if not Path(f"/proc/{pid}").exists():
                    return
                time.sleep(0.1)


# --------------------------------------------------------------------------- one run
def _group_members(pgid: int) -> list[int]:
    """Pids whose process group is ``pgid`` (Linux /proc; empty elsewhere)."""
    members = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
        except (OSError, ValueError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid):
            members.append(int(entry.name))
    return members


def _reap_group(pgid: int) -> float:
    """Wait up to LINGER_S for the run's leftover processes, then kill them; seconds waited."""
    start = time.monotonic()
    while _group_members(pgid) and time.monotonic() - start < LINGER_S:
        time.sleep(0.05)
    if _group_members(pgid):
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
    return time.monotonic() - start


def _stamp(line: str) -> float | None:
    match = STAMP_RE.match(line)
    if not match:
        return None
    return datetime.fromisoformat(match.group(1).replace("Z", "+00:00")).timestamp()


def parse_debug_log(path: Path, t0: float) -> dict[str, Any]:
    """Plugin command hooks (event, ms, finished at ms after the spawn) and MCP servers (when the
    CLI started connecting, how long the connection took, whether its version probe timed out;
    ``ms`` is None when the server had not connected when the CLI exited)."""
    hooks: list[dict[str, Any]] = []
    servers: dict[str, dict[str, Any]] = {}
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return {"hooks": hooks, "mcp": []}
    calling: float | None = None  # an mcp_tool hook under way: when it was called (ms after the spawn)
    for line in lines:
        at = _stamp(line)
        at_ms = None if at is None else round((at - t0) * 1000.0, 1)
        if MCP_HOOK_RE.search(line):
            calling = at_ms
        elif calling is not None and at_ms is not None and (m := HOOK_DONE_RE.search(line)):
            hooks.append({"event": m.group("event"), "name": f"{m.group('event')} (mcp_tool)",
                          "ms": round(at_ms - calling), "rc": 0, "finished_at_ms": at_ms})
            calling = None
        elif (m := HOOK_RE.search(line)) and not m.group("plugin").endswith("@builtin"):
            hooks.append({"event": m.group("name").split(":")[0], "name": m.group("name"),
                          "ms": int(m.group("ms")), "rc": int(m.group("rc")), "finished_at_ms": at_ms})
        elif m := MCP_RE.search(line):
            server = servers.setdefault(m.group("name"), {
                "server": m.group("name"), "started_at_ms": None, "ms": None, "connected_at_ms": None,
                "probe_timed_out": False})
            if m.group("what").startswith("Starting"):
                server["started_at_ms"] = at_ms
            elif m.group("ms") is not None:
                server.update(ms=int(m.group("ms")), connected_at_ms=at_ms)
            else:
                server["probe_timed_out"] = True
    return {"hooks": hooks, "mcp": list(servers.values())}


def _describe(request: RecordedRequest, t0: float) -> dict[str, Any]:
    body = request.body if isinstance(request.body, dict) else {}
    return {"path": request.path, "model": body.get("model"), "max_tokens": body.get("max_tokens"),
            "tools": len(body.get("tools") or []), "at_ms": round((request.received_at - t0) * 1000.0, 1),
            "last_user": last_user_text(body)[-80:]}


def run_once(api: FakeMessagesAPI, arm: Arm, pair: int, tmp: Path, debug_log: bool) -> dict[str, Any]:
    """One ``claude -p`` of ``arm``: wait to the main request, wall to exit, what else was sent."""
    session = str(uuid.uuid4())
    prompt = PROMPT.format(pair=pair, arm=arm.name, topic=TOPICS[pair % len(TOPICS)])
    extra: list[str] = []
    log = tmp / "debug" / f"{pair:03d}-{arm.name}-{session[:8]}.txt"
    if debug_log:
        log.parent.mkdir(exist_ok=True)
        extra = ["--debug-file", str(log)]
    argv = [str(claude_binary()), *build_args(prompt, plugin_dirs=arm.plugin_dirs, session_id=session,
                                              extra_args=extra)]
    record: dict[str, Any] = {"pair": pair, "arm": arm.name, "session_id": session}
    t0 = time.time()
    proc = subprocess.Popen(argv, cwd=tmp / "project", env=arm.env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        record["error"] = f"timeout after {RUN_TIMEOUT_S:g}s"
    t_exit = time.time()
    record["linger_s"] = round(_reap_group(proc.pid), 3)
    record["returncode"] = proc.returncode
    record["wall_ms"] = round((t_exit - t0) * 1000.0, 1)
    mine = [r for r in api.requests
            if r.headers.get("x-claude-code-session-id", session) == session and t0 <= r.received_at <= t_exit]
    main = next((r for r in mine if r.is_message and prompt in last_user_text(r.body or {})), None)
    record["wait_ms"] = None if main is None else round((main.received_at - t0) * 1000.0, 1)
    record["other_requests"] = [_describe(r, t0) for r in mine if r is not main]
    try:
        result = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    except ValueError:
        result = {}
    record["cli_time_to_request_ms"] = result.get("time_to_request_ms")
    if main is None or proc.returncode != 0 or result.get("is_error"):
        record.setdefault("error", f"rc {proc.returncode}, main request {'seen' if main else 'missing'}: "
                                   f"{(err or out).strip()[-400:]}")
    if debug_log:
        record.update(parse_debug_log(log, t0))
    return record


# --------------------------------------------------------------------------- the whole run
def _stats(values: Sequence[float | None]) -> dict[str, Any]:
    clean = [v for v in values if v is not None]
    stats: dict[str, Any] = dict(latency_stats(clean))
    if clean:
        stats["min_ms"] = round(min(clean), 1)
        stats["stdev_ms"] = round(statistics.pstdev(clean), 1)
    return stats


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-arm wait and wall, per-pair added wait, the plugin's hook and MCP times, other requests."""
    by_arm = {arm: [r for r in runs if r["arm"] == arm] for arm in dict.fromkeys(r["arm"] for r in runs)}
    arms = {arm: {"wait": _stats([r["wait_ms"] for r in rs]), "wall": _stats([r["wall_ms"] for r in rs]),
                  "errors": sum(1 for r in rs if "error" in r)} for arm, rs in by_arm.items()}
    pairs: dict[int, dict[str, float]] = {}
    for r in runs:
        if r["wait_ms"] is not None:
            pairs.setdefault(r["pair"], {})[r["arm"]] = r["wait_ms"]
    added = [p["with"] - p["without"] for p in pairs.values() if "with" in p and "without" in p]
    hooks: dict[str, list[float]] = {}
    mcp: dict[str, list[float | None]] = {}
    done_at: dict[str, list[float | None]] = {}  # when each part finished, ms after the spawn
    probes_timed_out: dict[str, int] = {}
    for r in by_arm["with"]:
        for h in r.get("hooks", []):
            hooks.setdefault(h["event"], []).append(h["ms"])
            done_at.setdefault(f"hook {h['event']}", []).append(h["finished_at_ms"])
        for m in r.get("mcp", []):
            mcp.setdefault(m["server"], []).append(m["ms"])
            done_at.setdefault(f"MCP connect {m['server']}", []).append(m["connected_at_ms"])
            probes_timed_out[m["server"]] = probes_timed_out.get(m["server"], 0) + m["probe_timed_out"]
    other: dict[str, int] = {}
    for r in runs:
        for o in r["other_requests"]:
            key = f"{r['arm']}: {o['path']} {o['model']} max_tokens={o['max_tokens']} tools={o['tools']}"
            other[key] = other.get(key, 0) + 1
    return {"arms": arms, "added_wait": _stats(added),
            "hooks": {event: _stats(ms) for event, ms in hooks.items()},
            "mcp_connect": {server: {**_stats(ms), "not_connected_at_exit": ms.count(None),
                                     "version_probe_timed_out": probes_timed_out[server]}
                            for server, ms in mcp.items()},
            "done_at": {part: _stats(ms) for part, ms in done_at.items()},
            "other_requests": other}


def _p50(stats: dict[str, Any], key: str = "p50_ms") -> float | None:
    value = stats.get(key)
    return float(value) if value is not None else None


def headline(results: dict[str, Any]) -> dict[str, Any]:
    arms = results["arms"]
    w, c = arms["with"], arms["without"]
    ratio = None
    if _p50(w["wait"]) and _p50(c["wait"]):
        ratio = round(float(w["wait"]["p50_ms"]) / float(c["wait"]["p50_ms"]), 3)
    wall_ratio = None
    if _p50(w["wall"]) and _p50(c["wall"]):
        wall_ratio = round(float(w["wall"]["p50_ms"]) / float(c["wall"]["p50_ms"]), 3)
    return {"with_wait_p50_ms": _p50(w["wait"]), "with_wait_p95_ms": _p50(w["wait"], "p95_ms"),
            "without_wait_p50_ms": _p50(c["wait"]), "without_wait_p95_ms": _p50(c["wait"], "p95_ms"),
            "wait_ratio_p50": ratio, "target_ratio": TARGET_RATIO,
            "added_wait_p50_ms": _p50(results["added_wait"]),
            "with_wall_p50_ms": _p50(w["wall"]), "without_wall_p50_ms": _p50(c["wall"]),
            "wall_ratio_p50": wall_ratio, "errors": sum(a["errors"] for a in arms.values()),
            **{f"{name}_wait_p50_ms": _p50(a["wait"]) for name, a in arms.items() if name not in ("with", "without")},
            **{f"{name}_wait_ratio_p50": round(float(a["wait"]["p50_ms"]) / float(c["wait"]["p50_ms"]), 3)
               for name, a in arms.items() if name not in ("with", "without") and _p50(a["wait"]) and _p50(c["wait"])}}


def report(results: dict[str, Any], summary: dict[str, Any], params: dict[str, Any]) -> str:
    arms = results["arms"]
    rows = [(f"{arm} plugin", s["wait"].get("n", 0), s["wait"].get("p50_ms"), s["wait"].get("p95_ms"),
             s["wait"].get("min_ms"), s["wait"].get("max_ms"), s["wall"].get("p50_ms"), s["wall"].get("p95_ms"))
            for arm, s in arms.items()]
    mode = ("cold" if params["cold"] else "warm") + (", busy" if params["busy"] else "")
    out = [format_table(["arm", "runs", "wait p50 ms", "wait p95 ms", "wait min", "wait max",
                         "wall p50 ms", "wall p95 ms"], rows,
                        title=f"Prompt wait, `claude -p` spawn to the main model request ({mode})")]
    ratio = summary["wait_ratio_p50"]
    verdict = "n/a" if ratio is None else ("met" if ratio <= TARGET_RATIO else "NOT met")
    out.append(f"\nratio of medians (with / without): {ratio} (target <= {TARGET_RATIO}: {verdict}); "
               f"added wait per pair p50 {summary['added_wait_p50_ms']} ms; "
               f"wall ratio {summary['wall_ratio_p50']}")
    done = results["done_at"]
    parts = [(f"hook {event}", s.get("n"), s.get("p50_ms"), s.get("p95_ms"),
              done.get(f"hook {event}", {}).get("p50_ms")) for event, s in results["hooks"].items()]
    parts += [(f"MCP connect {server}", s.get("n"), s.get("p50_ms"), s.get("p95_ms"),
               done.get(f"MCP connect {server}", {}).get("p50_ms")) for server, s in results["mcp_connect"].items()]
    notes = [f"{server}: not connected when the CLI exited in {s['not_connected_at_exit']} run(s), version "
             f"probe timed out in {s['version_probe_timed_out']}" for server, s in results["mcp_connect"].items()
             if s["not_connected_at_exit"] or s["version_probe_timed_out"]]
    if parts:
        out.append("\n" + format_table(["with-plugin part (CLI debug log)", "n", "took p50 ms", "took p95 ms",
                                         "done at p50 ms"], parts))
    out.extend(f"MCP {note}" for note in notes)
    if results["other_requests"]:
        out.append("\nother requests (skipped): " + "; ".join(f"{k} x{n}" for k, n in
                                                             results["other_requests"].items()))
    return "\n".join(out)


def _line(record: dict[str, Any]) -> str:
    hooks = ", ".join(f"{h['event']} {h['ms']}" for h in record.get("hooks", []))
    mcp = ", ".join(f"{m['ms'] if m['ms'] is not None else 'not connected'}"
                    + (" (version probe timed out)" if m["probe_timed_out"] else "") for m in record.get("mcp", []))
    text = (f"pair {record['pair']:>2} {record['arm']:<7} wait {record['wait_ms']} ms, wall {record['wall_ms']} ms"
            + (f"; hooks ms: {hooks}" if hooks else "") + (f"; MCP connect ms: {mcp}" if mcp else ""))
    return text + (f"  ERROR {record['error']}" if "error" in record else "")


def measure(args: Any, tmp: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Warm up, run the pairs, stop the daemon: (params extras, results)."""
    python = Path(args.python)
    plugin_dir = Path(args.plugin_dir).resolve()
    with FakeMessagesAPI() as api:
        extra = [("floor", floor_plugin(tmp, python))] if args.floor else []
        extra += [(f"also{i}", Path(d).resolve()) for i, d in enumerate(args.also or (), 1)]
        arms, memory_home = make_arms(tmp, api.base_url, plugin_dir, python, args.hook_python, extra)
        with_arm, control = arms[0], arms[1]
        daemon = Daemon(python, with_arm.env, memory_home)
        info: dict[str, Any] = {"package": package_path(python, with_arm.env)}
        # bytecode as an installed package has it (pip compiles at install; a checkout under
        # PYTHONDONTWRITEBYTECODE would compile every changed module in every process)
        subprocess.run([str(python), "-m", "compileall", "-q", str(Path(info["package"]).parent)],
                       env=with_arm.env, capture_output=True, timeout=300, check=False)
        try:
            say("warm-up: one prompt with the plugin")
            warmup = [run_once(api, with_arm, 0, tmp, args.debug_log)]
            if not args.cold:
                answering = daemon.wait_answering(DAEMON_WAIT_S / 2)
                info["daemon_started_by"] = "hooks" if answering else "dexai daemon start"
                if not answering:
                    daemon.start()
                    answering = daemon.wait_answering(DAEMON_WAIT_S)
                info["daemon_answering"] = answering
                say(f"daemon answering: {answering} (started by {info['daemon_started_by']})")
            for arm in (control, *arms[2:], with_arm):
                warmup.append(run_once(api, arm, 0, tmp, args.debug_log))
            info["warmup"] = [{k: r.get(k) for k in ("arm", "wait_ms", "wall_ms", "error")} for r in warmup]
            runs = []
            for pair in range(1, args.runs + 1):
                shift = (pair - 1) % len(arms)  # each arm leads in turn
                for arm in arms[shift:] + arms[:shift]:
                    met_daemon = None
                    if args.cold and arm is with_arm:
                        daemon.stop()
                        met_daemon = daemon.answering()
                    record = run_once(api, arm, pair, tmp, args.debug_log)
                    if met_daemon is not None:
                        record["daemon_answering_before"] = met_daemon
                    say(_line(record))
                    runs.append(record)
            if not args.cold:  # a daemon the run's cleanup of leftover processes took down would show here
                info["daemon_answering_after"] = daemon.answering()
        finally:
            daemon.stop()
    results = summarize(runs)
    results["runs"] = runs
    return info, results


def _uptime() -> str:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    return ""


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser(NAME, __doc__.split("\n\n")[0] if __doc__ else NAME)
    parser.add_argument("--plugin-dir", default=str(REPO_ROOT),
                        help="the plugin to measure (a directory with .claude-plugin/, hooks/hooks.json, "
                             ".mcp.json); default: this checkout")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter whose venv serves the plugin (its bin/ first on PATH); "
                             "default: this one")
    parser.add_argument("--hook-python", choices=("path", "env"), default="path",
                        help="how the launcher finds Python: `dexai` on PATH (path) or DEXAI_HOOK_PYTHON (env)")
    parser.add_argument("--runs", type=int, default=20, help="pairs (with, without) to measure")
    parser.add_argument("--busy", action="store_true", help="burn one core for the whole run")
    parser.add_argument("--cold", action="store_true", help="stop the daemon before every with-plugin run")
    parser.add_argument("--json", type=Path, default=None,
                        help=f"result file (default {RESULTS_DIR}/prompt_wait[.cold][.busy].json)")
    parser.add_argument("--no-debug-log", dest="debug_log", action="store_false",
                        help="no --debug-file for the CLI (no per-hook times)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (debug logs)")
    parser.add_argument("--floor", action="store_true",
                        help="a third arm, interleaved: a plugin with the same doors doing nothing (no-op command "
                             "hooks for SessionStart, UserPromptSubmit and Stop, a stdlib MCP server listing the "
                             "tools): what any plugin shaped like ours costs in this CLI")
    parser.add_argument("--also", action="append", metavar="DIR",
                        help="one more plugin directory as its own arm, interleaved (e.g. a checkout of an older "
                             "hooks.json served by the same package and daemon); repeatable")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs = min(args.runs, 2)
    suffix = (".cold" if args.cold else "") + (".busy" if args.busy else "")
    target = args.json or (args.out or RESULTS_DIR) / f"{NAME}{suffix}{'.quick' if args.quick else ''}.json"
    params: dict[str, Any] = {
        "runs": args.runs, "busy": args.busy, "cold": args.cold, "plugin_dir": str(Path(args.plugin_dir).resolve()),
        "python": args.python, "claude_version": claude_version(), "auth": "token (no API key)",
        "hook_python": ("DEXAI_HOOK_PYTHON=" + args.python) if args.hook_python == "env"
        else f"`dexai` of {Path(args.python).parent} first on PATH",
        "order": "interleaved: each pair runs every arm once, each arm leading in turn",
        "floor": args.floor, "also": [str(Path(d).resolve()) for d in args.also or ()],
        "debug_log": args.debug_log, "extractor": "offline", "uptime_before": _uptime()}
    say(f"claude {params['claude_version']}, plugin {params['plugin_dir']}, {args.runs} pairs; "
        f"{params['uptime_before']}")
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    tmp = Path(tempfile.mkdtemp(prefix="dexai-prompt-wait-"))
    params["workdir"] = str(tmp)
    try:
        info, results = measure(args, tmp)
    finally:
        if burner is not None:
            burner.kill()
            burner.wait()
        if args.keep:
            say(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    params.update(info, uptime_after=_uptime())
    summary = headline(results)
    print(report(results, summary, params))
    out_dir = Path(tempfile.mkdtemp(prefix=".prompt-wait-", dir=target.parent.resolve()
                                    if target.parent.exists() else _made(target.parent)))
    try:
        written = write_result(NAME, quick=args.quick, params=params, summary=summary, results=results,
                               out_dir=out_dir)
        written.replace(target)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    print(f"\nwrote {target}")
    return 0 if summary["errors"] == 0 else 1


def _made(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()


if __name__ == "__main__":
    raise SystemExit(main())
