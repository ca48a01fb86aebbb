"""The daemon's doors under a hostile client: a real ``dexai daemon run`` subprocess (its open-file
limit held at 1,024, as on a default Linux login) with the http hooks installed, spoken to over
real sockets: idle and slow connections, an unauthenticated 16 MB body, deep JSON and lone
surrogates on the Unix socket and the HTTP hook port, and a burst of 500 connects."""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from dexai_memory.config import load_settings
from dexai_memory.daemon.http_hooks import HTTP_FILE, TOKEN_FILE
from dexai_memory.daemon.ipc import ipc_request

FD_LIMIT = 1024
DEEP = b"[" * 100_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _limit_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


class Daemon(NamedTuple):
    proc: subprocess.Popen[str]
    socket_path: Path
    http_port: int
    token: str


def start_daemon(home: Path, tmp_path: Path, *, install: bool) -> Daemon:
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    (home / "memory.yaml").write_text(f"embedding:\n  backend: none\ndaemon:\n  api_port: 0\n  http_port: {port}\n"
                                      "  autostart: false\n")
    env = {**os.environ, "DEXAI_MEMORY_HOME": str(home), "HOME": str(tmp_path / "user")}  # no real settings
    env.pop("DEXAI_MEMORY_PROJECT", None)
    if install:
        subprocess.run([sys.executable, "-m", "dexai_memory.cli.main", "daemon", "http-hooks", "--install",
                        "--settings-file", str(tmp_path / "claude-settings.json")],
                       env=env, check=True, capture_output=True, timeout=60)
    proc = subprocess.Popen([sys.executable, "-m", "dexai_memory.cli.main", "daemon", "run", "--home", str(home),
                             "--no-schedule"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            text=True, preexec_fn=_limit_files)
    sock = load_settings().socket_path
    deadline = time.monotonic() + 60
    while ipc_request(sock, {"op": "ping"}, 0.5) is None:
        assert proc.poll() is None and time.monotonic() < deadline, "the daemon did not start"
        time.sleep(0.1)
    if install:
        while not (home / HTTP_FILE).exists():
            assert time.monotonic() < deadline, "the HTTP hook port did not open"
            time.sleep(0.05)
    token = (home / TOKEN_FILE).read_text().strip() if install else ""
    return Daemon(proc, sock, port, token)


@pytest.fixture
def daemon(isolated_home: Path, tmp_path: Path) -> Iterator[Daemon]:
    d = start_daemon(isolated_home, tmp_path, install=True)
    try:
        yield d
    finally:
        d.proc.terminate()
        try:
            d.proc.wait(20)
        except subprocess.TimeoutExpired:
            d.proc.kill()
            d.proc.wait(5)


def http(port: int, body: bytes, token: str = "", *, path: str = "/hooks/user-prompt-submit",
         timeout: float = 10) -> tuple[int, Any]:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n{auth}"
                  "Connection: close\r\n\r\n".encode() + body)
        raw = b""
        while chunk := s.recv(65536):
            raw += chunk
    head, _, rest = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(rest or b"null")


def socket_line(path: Path, line: bytes, timeout: float = 10) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        s.sendall(line + b"\n")
        raw = b""
        while not raw.endswith(b"\n"):
            chunk = s.recv(65536)
            assert chunk, "the daemon dropped the connection without an answer"
            raw += chunk
    answer: dict[str, Any] = json.loads(raw)
    return answer


def test_the_http_port_stays_closed_until_the_hooks_are_installed(isolated_home: Path, tmp_path: Path) -> None:
    d = start_daemon(isolated_home, tmp_path, install=False)
    try:
        assert not (isolated_home / HTTP_FILE).exists()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", d.http_port), timeout=2).close()
    finally:
        d.proc.terminate()
        d.proc.wait(20)


def test_1100_idle_connections_leave_both_doors_answering(daemon: Daemon) -> None:
    idle = []
    try:
        for _ in range(1100):
            idle.append(socket.create_connection(("127.0.0.1", daemon.http_port), timeout=5))
        for _ in range(300):
            s = socket.socket(socket.AF_UNIX)
            s.connect(str(daemon.socket_path))
            idle.append(s)
        time.sleep(0.5)
        assert ipc_request(daemon.socket_path, {"op": "ping"}, 5) is not None
        status, answer = http(daemon.http_port, json.dumps({"session_id": "s", "prompt": "hi"}).encode(),
                              daemon.token)
        assert status == 200 and isinstance(answer, dict)
        assert daemon.proc.poll() is None
    finally:
        for s in idle:
            s.close()


def test_a_client_sending_a_byte_a_second_is_dropped(daemon: Daemon) -> None:
    with socket.create_connection(("127.0.0.1", daemon.http_port), timeout=30) as s:
        started = time.monotonic()
        request = b"POST /hooks/stop HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * 60
        answer = b""
        for byte in request:
            try:
                s.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                break
            s.settimeout(1.0)
            try:
                answer = s.recv(4096)
            except TimeoutError:
                continue
            break
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert time.monotonic() - started < 20


def test_an_unauthenticated_16mb_body_is_never_read(daemon: Daemon) -> None:
    before = rss_kb(daemon.proc.pid)
    conns = []
    try:
        for _ in range(24):
            s = socket.create_connection(("127.0.0.1", daemon.http_port), timeout=10)
            s.sendall(b"POST /hooks/stop HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 16777216\r\n\r\n")
            conns.append(s)
        for s in conns:
            head = s.recv(4096)
            assert head.startswith(b"HTTP/1.1 200") and b"Connection: close" in head  # answered before any body
            sent = 0
            try:
                s.settimeout(2)
                while sent < 16 * 1024 * 1024:
                    sent += s.send(b"x" * 65536)
            except (BrokenPipeError, ConnectionResetError, TimeoutError):
                pass
            assert sent < 16 * 1024 * 1024  # the server closed: nothing buffered
        grew = rss_kb(daemon.proc.pid) - before
        assert grew < 40_000, f"RSS grew {grew} kB"
    finally:
        for s in conns:
            s.close()


def test_an_authenticated_body_over_the_cap_is_413(daemon: Daemon) -> None:
    with socket.create_connection(("127.0.0.1", daemon.http_port), timeout=10) as s:
        s.sendall(f"POST /hooks/stop HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {daemon.token}\r\n"
                  "Content-Length: 16777216\r\n\r\n".encode())
        assert s.recv(4096).startswith(b"HTTP/1.1 413")


def test_deep_json_and_lone_surrogates_get_an_answer_on_the_socket_and_the_port(daemon: Daemon) -> None:
    answer = socket_line(daemon.socket_path, DEEP)
    assert answer["ok"] is False and "nested deeper" in answer["error"]
    answer = socket_line(daemon.socket_path, b'{"op": "ping", "note": "half an emoji \\ud83d"}')
    assert answer["ok"] is True
    status, body = http(daemon.http_port, DEEP, daemon.token)
    assert status == 400 and "nested deeper" in body["error"]
    status, body = http(daemon.http_port, b'{"session_id": "s", "prompt": "cut \\ud83d here"}', daemon.token)
    assert status == 200 and isinstance(body, dict)
    # the launcher's HTTP on the socket, too
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(str(daemon.socket_path))
        s.sendall(b"POST /hook/stop HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(DEEP) + DEEP)
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
    assert ipc_request(daemon.socket_path, {"op": "ping"}, 5) is not None


def test_a_burst_of_500_connects_is_all_answered(daemon: Daemon) -> None:
    answers: list[dict[str, Any] | None] = []
    lock = threading.Lock()
    go = threading.Event()

    def ask() -> None:
        go.wait()
        answer = ipc_request(daemon.socket_path, {"op": "ping"}, 20)
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=ask) for _ in range(500)]
    for t in threads:
        t.start()
    go.set()
    for t in threads:
        t.join(60)
    assert len(answers) == 500 and all(a is not None and a["ok"] for a in answers)
