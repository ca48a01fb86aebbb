"""The daemon's doors under a hostile client: memory, descriptors and refused connects.

A real ``dexai daemon run`` subprocess (open-file limit 1,024, as on a default Linux login) with
the http hooks installed, on a fresh data directory; ``--python PATH`` runs the daemon with another
interpreter (one whose ``dexai_memory`` is another checkout), for the figures before a change.
Measured, each on a fresh daemon:

* ``unauth_16mb``: 24 connections to the HTTP hook port each announcing a 16 MB body without the
  token and pushing it as fast as the server takes it: the daemon's RSS growth (kB);
* ``slow``: 24 connections sending their request a byte every 0.2 s for 3 s: RSS growth, and
  whether a hook event is still answered meanwhile;
* ``idle``: 1,100 idle connections to the HTTP port: does the Unix socket still answer a ping
  (and in how many ms);
* ``burst``: N raw non-blocking connects to the Unix socket at once (500 and 1,000): how many
  the kernel refused (``EAGAIN``, listen backlog full), then N clients of ``ipc_request`` (which
  retries a refused connect) at once: how many got an answer.

Figures (2 cores, daemon limited to 1,024 descriptors; before = the daemon of the main branch
before the doors were bounded, run with ``--python``; the clients are this checkout's):

=============================================  ==================  ==============
case                                           before              after
=============================================  ==================  ==============
24 × unauthenticated 16 MB bodies: RSS growth  +393 MB (384 MB in)  +0.05 MB
24 slow clients: RSS growth / hook answered    +0.05 MB / yes      +0.1 MB / yes
1,100 idle HTTP connections: socket answers    no (descriptors)    yes (1 ms)
burst of 500 raw connects refused (EAGAIN)     273                 0
burst of 1,000 raw connects refused            406                 0
=============================================  ==================  ==============
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import arg_parser, format_table, run_main, say, write_result
from dexai_memory.daemon.ipc import ipc_request

NAME = "doors_bench"
FD_LIMIT = 1024


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _limit_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


class Daemon:
    """A daemon subprocess with the http hooks installed, on a fresh data directory."""

    def __init__(self, python: str) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="dexai-doors-")
        self.home = Path(self._tmp.name) / "h"
        self.home.mkdir(mode=0o700)
        self.port = _free_port()
        (self.home / "memory.yaml").write_text("embedding:\n  backend: none\ndaemon:\n  api_port: 0\n"
                                               f"  http_port: {self.port}\n  autostart: false\n")
        env = {**os.environ, "DEXAI_MEMORY_HOME": str(self.home), "HOME": self._tmp.name}
        env.pop("DEXAI_MEMORY_PROJECT", None)
        cli = [python, "-m", "dexai_memory.cli.main"]
        cwd = self._tmp.name  # `-m` puts the working directory first on the path: not a checkout
        subprocess.run([*cli, "daemon", "http-hooks", "--install", "--settings-file",
                        str(Path(self._tmp.name) / "claude.json")], env=env, check=True, capture_output=True, cwd=cwd)
        self.proc = subprocess.Popen([*cli, "daemon", "run", "--home", str(self.home), "--no-schedule"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_limit_files,
                                     cwd=cwd)
        self.sock = self.home / "daemon.sock"
        deadline = time.monotonic() + 60
        while ipc_request(self.sock, {"op": "ping"}, 0.5) is None or not (self.home / "daemon-http").exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the daemon did not start")
            time.sleep(0.1)
        self.token = (self.home / "hook-token").read_text().strip()
        time.sleep(0.5)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self._tmp.cleanup()


def _hook_answered(d: Daemon) -> bool:
    body = json.dumps({"session_id": "s", "prompt": "hello"}).encode()
    try:
        with socket.create_connection(("127.0.0.1", d.port), timeout=5) as s:
            s.sendall(f"POST /hooks/user-prompt-submit HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {d.token}\r\n"
                      f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
            return s.recv(4096).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def unauth_16mb(d: Daemon, conns: int = 24) -> dict[str, Any]:
    before = _rss_kb(d.proc.pid)
    socks = []
    for _ in range(conns):
        s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
        s.sendall(b"POST /hooks/stop HTTP/1.1\r\nHost: x\r\nContent-Length: 16777216\r\n\r\n")
        socks.append(s)
    chunk = b"x" * 65536
    sent = [0] * conns

    def push(i: int, s: socket.socket) -> None:
        s.settimeout(5.0)
        try:
            while sent[i] < 16 * 1024 * 1024:
                sent[i] += s.send(chunk)
        except OSError:
            pass

    threads = [threading.Thread(target=push, args=(i, s)) for i, s in enumerate(socks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    pushed = sum(sent)
    time.sleep(1.0)
    grew = _rss_kb(d.proc.pid) - before
    for s in socks:
        s.close()
    return {"rss_growth_kb": grew, "bytes_accepted_mb": round(pushed / 2**20, 1)}


def slow(d: Daemon, conns: int = 24, seconds: float = 3.0) -> dict[str, Any]:
    before = _rss_kb(d.proc.pid)
    socks = [socket.create_connection(("127.0.0.1", d.port), timeout=5) for _ in range(conns)]
    request = b"POST /hooks/stop HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b"x" * 100
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end and i < len(request):
        for s in socks:
            try:
                s.send(request[i:i + 1])
            except OSError:
                pass
        i += 1
        time.sleep(0.2)
    answered = _hook_answered(d)
    grew = _rss_kb(d.proc.pid) - before
    for s in socks:
        s.close()
    return {"rss_growth_kb": grew, "hook_answered_meanwhile": answered}


def idle(d: Daemon, conns: int = 1100) -> dict[str, Any]:
    socks, failed = [], 0
    for _ in range(conns):
        try:
            socks.append(socket.create_connection(("127.0.0.1", d.port), timeout=2))
        except OSError:
            failed += 1
    time.sleep(0.5)
    started = time.perf_counter()
    pong = ipc_request(d.sock, {"op": "ping"}, 5)
    ms = round((time.perf_counter() - started) * 1000, 1)
    answered = _hook_answered(d)
    for s in socks:
        s.close()
    return {"connects_failed": failed, "socket_answered": pong is not None, "ping_ms": ms if pong else None,
            "hook_answered": answered}


def burst(d: Daemon, n: int) -> dict[str, Any]:
    go = threading.Event()
    refused: list[int] = []
    answers: list[bool] = []
    lock = threading.Lock()

    def raw() -> None:
        s = socket.socket(socket.AF_UNIX)
        s.setblocking(False)
        go.wait()
        try:
            s.connect(str(d.sock))
        except BlockingIOError:
            with lock:
                refused.append(1)
        except OSError:
            with lock:
                refused.append(1)
        time.sleep(0.5)
        s.close()

    def client() -> None:
        go.wait()
        answer = ipc_request(d.sock, {"op": "ping"}, 20)
        with lock:
            answers.append(answer is not None)

    result: dict[str, Any] = {}
    for label, target in (("raw_refused", raw), ("client_answered", client)):
        go.clear()
        threads = [threading.Thread(target=target) for _ in range(n)]
        for t in threads:
            t.start()
        go.set()
        for t in threads:
            t.join(60)
        result[label] = len(refused) if label == "raw_refused" else sum(answers)
        time.sleep(1.0)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser(NAME, __doc__.splitlines()[0] if __doc__ else NAME)
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter running the daemon (one importing another checkout, for 'before')")
    args = parser.parse_args(argv)
    sizes = (200,) if args.quick else (500, 1000)
    results: dict[str, Any] = {}
    for name, run in (("unauth_16mb", unauth_16mb), ("slow", slow), ("idle", idle)):
        say(f"{name} ...")
        d = Daemon(args.python)
        try:
            results[name] = run(d) if not args.quick else run(d, 8) if name != "idle" else run(d, 200)
        finally:
            d.close()
    for n in sizes:
        say(f"burst {n} ...")
        d = Daemon(args.python)
        try:
            results[f"burst_{n}"] = burst(d, n)
        finally:
            d.close()
    rows = [[name, json.dumps(value)] for name, value in results.items()]
    print(format_table(["case", "figures"], rows, title=f"doors (daemon run by {args.python})"))
    summary = {"unauth_16mb_rss_growth_kb": results["unauth_16mb"]["rss_growth_kb"],
               "slow_rss_growth_kb": results["slow"]["rss_growth_kb"],
               "idle_socket_answered": results["idle"]["socket_answered"],
               **{f"burst_{n}_raw_refused": results[f"burst_{n}"]["raw_refused"] for n in sizes},
               **{f"burst_{n}_client_answered": results[f"burst_{n}"]["client_answered"] for n in sizes}}
    write_result(NAME, quick=args.quick, params={"python": args.python, "fd_limit": FD_LIMIT},
                 summary=summary, results=results, out_dir=args.out)
    return 0


if __name__ == "__main__":
    run_main(main)
