"""Bounded work: does a real daemon keep answering while it takes in a very long turn?

A real ``dexai daemon`` process (offline extractor, native store, a data directory of its
own) is sent one long turn of ``--sizes`` characters (default 200 KB and 1 MB) two ways:

``reply``
    a Stop hook event whose ``last_assistant_message`` is the long text, then a short
    prompt and its Stop (the long reply is that prompt's context);
``turn``
    the socket's ``enqueue`` operation with a long user turn (a chat turn, read for
    memories), then ``flush``: the text goes through redaction, the gate and extraction.

The daemon is warmed up first (one short prompt and reply: the embedding model loaded). Then a
client thread pings the daemon's socket every 20 ms for two seconds with nothing to do (the
machine's noise floor: other processes share the cores), and again while the long turn runs;
the figures are the ping latencies (max, p95) of both, the time until the daemon has taken the
turn in and flushed the queue, and the daemon's peak resident memory (``VmHWM``). The caps in
force are read from the settings (``limits``).

Run: ``python -m benchmarks.bounds_bench`` (``--quick``: 200 KB only).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import arg_parser, format_table, latency_stats, run_main, say, write_result

NAME = "bounds_bench"
PING_EVERY = 0.02

_SENTENCES = (
    "I prefer pnpm over npm for the {i} frontend packages.",
    "My colleague Priya{i} leads the billing team at Globex.",
    "We decided to deploy release {i} on Friday after the freeze.",
    "Remember that the staging server for shard {i} lives at 10.0.{j}.1.",
    "Never run the migration {i} without a backup first.",
    "The build for module {i} failed because the cache was stale, so I cleared it.",
    "Here is the plan: refactor the parser, then update the docs for version {i}.",
)


def long_text(chars: int) -> str:
    """Prose of about ``chars`` characters, full of the shapes the offline rules look for."""
    parts: list[str] = []
    total, i = 0, 0
    while total < chars:
        s = _SENTENCES[i % len(_SENTENCES)].format(i=i, j=i % 250)
        parts.append(s)
        total += len(s) + 1
        i += 1
    return " ".join(parts)[:chars]


def _rss(pid: int) -> dict[str, float]:
    out: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":", 1)
                out[key] = round(int(value.split()[0]) / 1024, 1)
    except OSError:
        pass
    return out


class Pinger(threading.Thread):
    """Pings the daemon's socket every :data:`PING_EVERY` seconds; keeps each round trip (ms)."""

    def __init__(self, socket_path: str):
        super().__init__(daemon=True)
        self.socket_path = socket_path
        self.ms: list[float] = []
        self.missed = 0
        self.stop = threading.Event()

    def run(self) -> None:
        from dexai_memory.daemon.ipc import ipc_request

        while not self.stop.is_set():
            start = time.perf_counter()
            reply = ipc_request(self.socket_path, {"op": "ping"}, timeout=120)
            if reply is None:
                self.missed += 1
            else:
                self.ms.append((time.perf_counter() - start) * 1000.0)
            self.stop.wait(PING_EVERY)


def start_daemon(home: Path) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "DEXAI_MEMORY_HOME": str(home)}
    env.pop("ANTHROPIC_API_KEY", None)
    proc = subprocess.Popen([sys.executable, "-m", "dexai_memory.cli.main", "daemon", "--no-schedule", "--json",
                             "--log-level", "WARNING"], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    ready = json.loads(proc.stdout.readline())
    return proc, str(ready["socket"])


def hook(sock: str, name: str, payload: dict[str, Any], timeout: float = 300) -> dict[str, Any] | None:
    from dexai_memory.daemon.ipc import ipc_request

    return ipc_request(sock, {"op": "hook.event", "event": name, "payload": payload,
                              "env": {"DEXAI_MEMORY_USER": "bench"}}, timeout)


def one_run(kind: str, chars: int) -> dict[str, Any]:
    """One long turn of ``kind`` ("reply" or "turn") through a fresh daemon."""
    from dexai_memory.daemon.ipc import ipc_request

    home = Path(tempfile.mkdtemp(prefix="dxb", dir="/tmp"))  # short: Unix socket paths are limited
    proc, sock = start_daemon(home)
    try:
        text = long_text(chars)
        ipc_request(sock, {"op": "ping"}, timeout=10)
        hook(sock, "user-prompt-submit", {"session_id": "warm-up", "prompt": "Hello, I use pnpm."})
        hook(sock, "stop", {"session_id": "warm-up", "last_assistant_message": "Noted."})
        ipc_request(sock, {"op": "flush", "timeout": 60}, timeout=70)
        idle = Pinger(sock)
        idle.start()
        time.sleep(2.0)
        idle.stop.set()
        idle.join(timeout=30)
        before = _rss(proc.pid)
        pinger = Pinger(sock)
        pinger.start()
        time.sleep(0.2)
        start = time.perf_counter()
        sid = f"bench-{kind}-{chars}"
        if kind == "reply":
            hook(sock, "user-prompt-submit", {"session_id": sid, "prompt": "Please write the long report."})
            hook(sock, "stop", {"session_id": sid, "last_assistant_message": text})
            hook(sock, "user-prompt-submit", {"session_id": sid, "prompt": "I prefer the short version, use pnpm."})
            hook(sock, "stop", {"session_id": sid, "last_assistant_message": "Done."})
        else:
            ipc_request(sock, {"op": "enqueue", "turn": {"id": sid, "user_id": "bench", "content": text,
                                                         "speaker": "Sam"}}, timeout=300)
        taken_ms = (time.perf_counter() - start) * 1000.0
        flushed = ipc_request(sock, {"op": "flush", "timeout": 300}, timeout=310)
        total_ms = (time.perf_counter() - start) * 1000.0
        time.sleep(0.2)
        pinger.stop.set()
        pinger.join(timeout=130)
        after = _rss(proc.pid)
        stats = latency_stats(pinger.ms)
        return {"kind": kind, "chars": chars, "taken_in_ms": round(taken_ms, 1), "until_flushed_ms": round(total_ms, 1),
                "flushed": bool(flushed and flushed.get("flushed")), "pings": len(pinger.ms),
                "pings_missed": pinger.missed, "ping_max_ms": stats.get("max_ms"), "ping_p95_ms": stats.get("p95_ms"),
                "ping_stats": stats, "idle_ping_max_ms": latency_stats(idle.ms).get("max_ms"),
                "idle_ping_p95_ms": latency_stats(idle.ms).get("p95_ms"),
                "rss_mb_before": before.get("VmRSS"), "peak_rss_mb": after.get("VmHWM")}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(home, ignore_errors=True)


def caps() -> dict[str, Any]:
    """The limits in force (``limits`` settings), or {} on a version without them."""
    from dexai_memory.config import Settings

    limits = getattr(Settings(), "limits", None)
    if limits is None:
        return {}
    return {k: getattr(limits, k) for k in limits.__dataclass_fields__}


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser(NAME, __doc__ or "")
    parser.add_argument("--sizes", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument("--kinds", nargs="+", default=["reply", "turn"])
    args = parser.parse_args(argv)
    sizes = [200_000] if args.quick else args.sizes
    runs = []
    for chars in sizes:
        for kind in args.kinds:
            say(f"{kind} of {chars:,} characters")
            runs.append(one_run(kind, chars))
    headers = ["kind", "chars", "taken in (ms)", "until flushed (ms)", "pings", "missed", "ping max (ms)",
               "ping p95 (ms)", "idle max (ms)", "idle p95 (ms)", "peak RSS (MB)"]
    rows = [[r["kind"], r["chars"], r["taken_in_ms"], r["until_flushed_ms"], r["pings"], r["pings_missed"],
             r["ping_max_ms"], r["ping_p95_ms"], r.get("idle_ping_max_ms"), r.get("idle_ping_p95_ms"),
             r["peak_rss_mb"]] for r in runs]
    print(format_table(headers, rows, title="a long turn through a real daemon, socket pings every 20 ms"))
    limits = caps()
    print("caps:", json.dumps(limits))
    summary: dict[str, Any] = {}
    for r in runs:
        tag = f"{r['kind']}_{r['chars'] // 1000}k"
        summary[f"{tag}_ping_max_ms"] = r["ping_max_ms"]
        summary[f"{tag}_ping_p95_ms"] = r["ping_p95_ms"]
        summary[f"{tag}_until_flushed_ms"] = r["until_flushed_ms"]
        summary[f"{tag}_peak_memory_mb"] = r["peak_rss_mb"]
    path = write_result(NAME, quick=args.quick, params={"sizes": sizes, "kinds": args.kinds,
                                                        "ping_every_s": PING_EVERY, "caps": limits},
                        summary=summary, results=runs, out_dir=args.out)
    say(f"wrote {path}")
    return 0


if __name__ == "__main__":
    run_main(main)
