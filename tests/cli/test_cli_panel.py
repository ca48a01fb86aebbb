"""``dexai panel`` (issue 16), as a real process: the URL with the token first on stdout,
the API on 127.0.0.1 behind the token, Ctrl+C stops it; a taken port is a clean error."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from dexai_memory.api.server import bind


def start(home: Path, *args: str) -> subprocess.Popen[str]:
    home.mkdir(parents=True, exist_ok=True)
    (home / "memory.yaml").write_text("embedding:\n  backend: none\n")
    return subprocess.Popen([sys.executable, "-m", "dexai_memory.cli.main", "panel", "--no-open", "--user", "sam",
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_panel_prints_its_url_first_and_serves_the_api_until_interrupted(isolated_home: Path) -> None:
    proc = start(isolated_home, "--port", "0")
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        parts = urlsplit(url)
        assert parts.scheme == "http" and parts.hostname == "127.0.0.1" and parts.port and parts.path == "/"
        token = parse_qs(parts.query)["token"][0]
        assert token == (isolated_home / "api-token").read_text().strip()
        base = f"http://127.0.0.1:{parts.port}"
        try:
            urllib.request.urlopen(f"{base}/api/facts", timeout=10)
            raise AssertionError("answered without the token")
        except urllib.error.HTTPError as exc:
            assert exc.code == 401
        request = urllib.request.Request(f"{base}/api/facts", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.load(response)["user_id"] == "sam"
        with urllib.request.urlopen(f"{base}/", timeout=10) as response:
            assert b"Remember something" in response.read()
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_a_taken_port_is_a_clean_error(isolated_home: Path) -> None:
    sock = bind(0)
    try:
        proc = start(isolated_home, "--port", str(sock.getsockname()[1]))
        out, err = proc.communicate(timeout=60)
    finally:
        sock.close()
    assert proc.returncode == 1 and out == ""
    assert "cannot listen on 127.0.0.1" in err and "--port 0" in err and "Traceback" not in err


def test_with_no_daemon_running_the_panel_is_the_daemon(isolated_home: Path, tmp_path: Path) -> None:
    """The store keeps one writer: the panel's process holds the daemon's lock and socket, so the
    hooks and the CLI go to it (autostart off: nothing else could answer them) and see what the
    panel wrote; Ctrl+C stops both."""
    import os

    from dexai_memory.config import load_settings
    from dexai_memory.daemon.control import lock_held, status

    env = {**os.environ, "DEXAI_DAEMON_AUTOSTART": "0", "DEXAI_MEMORY_USER": "sam"}
    proc = start(isolated_home, "--port", "0")
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        parts = urlsplit(url)
        token = parse_qs(parts.query)["token"][0]
        settings = load_settings(home=isolated_home)
        st = status(settings)
        assert st.answering and st.pid == proc.pid and lock_held(settings)
        request = urllib.request.Request(
            f"http://127.0.0.1:{parts.port}/api/memories", method="POST",
            data=json.dumps({"content": "The staging server is stage.example.com"}).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status in (200, 201)
        listed = subprocess.run([sys.executable, "-m", "dexai_memory.cli.main", "memory", "list", "--user", "sam"],
                                capture_output=True, text=True, env=env, timeout=60, check=True)
        assert "stage.example.com" in listed.stdout
        hook = subprocess.run([str(Path(__file__).resolve().parents[2] / "hooks" / "dexai-hook"), "session-start"],
                              input=json.dumps({"session_id": "s1", "source": "startup", "cwd": str(tmp_path),
                                                "hook_event_name": "SessionStart"}),
                              capture_output=True, text=True, env={**env, "DEXAI_HOOK_PYTHON": sys.executable},
                              timeout=60, check=True)
        assert "stage.example.com" in hook.stdout  # answered by the panel's daemon
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert "memory daemon in this process" in err
    assert not lock_held(load_settings(home=isolated_home)) and not (isolated_home / "api.json").exists()
