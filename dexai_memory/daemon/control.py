"""Who runs the daemon: one per data directory, started by the hooks when none answers.

Stdlib only (command hooks import it). The pieces:

* **The lock** ``<home>/daemon.lock``: a running daemon holds an exclusive
  ``flock`` on it for its whole life (:class:`DaemonLock`), and writes its pid
  to ``<home>/daemon.pid``. The kernel drops the lock when the process dies
  (even by SIGKILL), so a crash leaves nothing to clean up: the next daemon
  takes the lock, and the socket server replaces a stale ``daemon.sock``.
* **Autostart** (:func:`ensure_daemon`): a hook that finds no daemon
  answering starts ``dexai daemon run`` detached (a new session, output
  appended to ``<home>/daemon.log``, rotated at start) and goes on with its
  own fallback; it never waits for the start. Two hooks (or two sessions)
  starting one at the same time end with one daemon: the second process
  cannot take the lock and exits. ``daemon.autostart: false`` (or
  ``$DEXAI_DAEMON_AUTOSTART=0``) turns this off, for people who run the
  daemon under systemd/launchd or want no background process.
* **Version**: every socket answer carries the daemon's package version;
  a hook that sees another version than its own asks that daemon to shut
  down (:func:`replace_if_stale`) and starts a new one, which waits for the
  old one's lock.
* **Stop / status** for ``dexai daemon stop | status``, and the ports
  (:func:`port_problems`): the panel/API port and the http hooks' port are fixed
  numbers another program may hold; the daemon then runs without them, and
  ``dexai daemon status`` / ``start`` say so instead of reporting all is well.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

from ..config import Settings
from ..version import __version__

logger = logging.getLogger("dexai_memory.daemon.control")

#: Environment override of ``daemon.autostart`` ("0"/"false" off, "1"/"true" on).
AUTOSTART_ENV = "DEXAI_DAEMON_AUTOSTART"
#: daemon.log is rotated at start when larger than this (one old file kept as daemon.log.1).
LOG_ROTATE_BYTES = 2 * 1024 * 1024
#: Seconds after a start during which hooks do not start another one.
SPAWN_GRACE_SECONDS = 15.0


def lock_path(settings: Settings) -> Path:
    return settings.home / "daemon.lock"


def pid_path(settings: Settings) -> Path:
    return settings.home / "daemon.pid"


def log_path(settings: Settings) -> Path:
    return settings.home / "daemon.log"


def _spawn_stamp(settings: Settings) -> Path:
    return settings.home / "daemon.spawn"


def autostart_enabled(settings: Settings) -> bool:
    """``$DEXAI_DAEMON_AUTOSTART`` when set, else ``daemon.autostart``."""
    env = os.environ.get(AUTOSTART_ENV, "").strip().lower()
    if env in ("0", "false", "no", "off"):
        return False
    if env in ("1", "true", "yes", "on"):
        return True
    return settings.daemon.autostart


class DaemonLock:
    """The exclusive lock a daemon holds on ``<home>/daemon.lock`` while it runs."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._fd: int | None = None

    def acquire(self, wait: float = 0.0) -> bool:
        """Take the lock, retrying for up to ``wait`` seconds while the holder is on its way out
        (or not answering yet); True when held. Gives up at once when the holder answers with
        this package version: that daemon serves, this one is not needed. Writes the pid file."""
        from .ipc import ipc_request

        self.settings.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(lock_path(self.settings), os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                answer = ipc_request(self.settings.socket_path, {"op": "ping"}, 0.2)
                if time.monotonic() >= deadline or (answer is not None and answer.get("version") == __version__):
                    os.close(fd)
                    return False
                time.sleep(0.2)
        self._fd = fd
        tmp = pid_path(self.settings).with_suffix(".pid.tmp")
        tmp.write_text(f"{os.getpid()}\n", encoding="utf-8")
        os.chmod(tmp, 0o600)
        os.replace(tmp, pid_path(self.settings))
        return True

    def release(self) -> None:
        """Remove the pid file (if it is ours) and drop the lock."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            if read_pid(self.settings) == os.getpid():
                pid_path(self.settings).unlink()
        with contextlib.suppress(OSError):
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
        self._fd = None


def lock_held(settings: Settings) -> bool:
    """True when a daemon process holds the lock (running or starting)."""
    try:
        fd = os.open(lock_path(settings), os.O_RDWR)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: do not start another one
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops a lock we may have taken
    return False


def read_pid(settings: Settings) -> int | None:
    try:
        return int(pid_path(settings).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


def _rotate_log(path: Path) -> None:
    with contextlib.suppress(OSError):
        if path.stat().st_size > LOG_ROTATE_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))


def daemon_command(settings: Settings, *, idle_exit_minutes: float | None = None) -> list[str]:
    """The command line of a detached daemon for ``settings.home``."""
    minutes = settings.daemon.idle_exit_minutes if idle_exit_minutes is None else idle_exit_minutes
    return [sys.executable, "-m", "dexai_memory.cli.main", "daemon", "run", "--home", str(settings.home),
            "--idle-exit-minutes", str(minutes), "--lock-wait", "20", "--log-level", "INFO"]


def spawn(settings: Settings, *, reason: str, idle_exit_minutes: float | None = None) -> int | None:
    """Start a detached daemon now; its pid (None if it could not be started). Never waits for it."""
    import subprocess  # not on the path of hooks that find a daemon

    home = settings.home
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        log = log_path(settings)
        _rotate_log(log)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        _spawn_stamp(settings).write_text(f"{time.time()} {reason}\n", encoding="utf-8")
    except OSError as exc:
        logger.warning("cannot start the daemon (%s): %s", reason, exc)
        return None
    env = {**os.environ, "DEXAI_MEMORY_HOME": str(home)}
    env.pop(AUTOSTART_ENV, None)
    try:
        proc = subprocess.Popen(daemon_command(settings, idle_exit_minutes=idle_exit_minutes),
                                stdin=subprocess.DEVNULL, stdout=fd, stderr=fd, cwd=str(home), env=env,
                                start_new_session=True, close_fds=True)
    except OSError as exc:
        logger.warning("cannot start the daemon (%s): %s", reason, exc)
        return None
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):  # the pid: a stamp of a daemon that already exited does not hold back
        _spawn_stamp(settings).write_text(f"{time.time()} {reason}\n{proc.pid}\n", encoding="utf-8")
    # reap it when it exits (a long-lived caller such as an Agent SDK app would keep a zombie)
    import threading

    threading.Thread(target=proc.wait, name="dexai-daemon-reaper", daemon=True).start()
    logger.info("started the memory daemon (pid %s): %s", proc.pid, reason)
    return proc.pid


def _recently_spawned(settings: Settings) -> bool:
    """A daemon was started less than :data:`SPAWN_GRACE_SECONDS` ago and its process still runs
    (it may still be loading before it takes the lock)."""
    stamp = _spawn_stamp(settings)
    try:
        if time.time() - stamp.stat().st_mtime >= SPAWN_GRACE_SECONDS:
            return False
        lines = stamp.read_text(encoding="utf-8").splitlines()
    except OSError:
        return False
    if len(lines) < 2 or not lines[1].strip().isdigit():
        return True  # written a moment ago, its pid not yet
    try:
        os.kill(int(lines[1]), 0)
    except ProcessLookupError:
        return False  # it exited (stopped, or crashed at start): a new one may start
    except PermissionError:
        return True
    return True


def ensure_daemon(settings: Settings, *, reason: str) -> bool:
    """Called by a hook that got no answer from the daemon: start one unless one is running or
    starting, or autostart is off. True when a start was requested now."""
    if not autostart_enabled(settings):
        return False
    if lock_held(settings):
        return False  # running (busy) or starting
    if _recently_spawned(settings) and not settings.socket_path.exists():
        # started a moment ago and still loading (it takes the lock first thing, but python must
        # start): do not pile up processes. A crash right after start is retried after the grace.
        return False
    return spawn(settings, reason=reason) is not None


def replace_if_stale(settings: Settings, reply: dict[str, Any]) -> bool:
    """When the daemon that answered runs another package version, ask it to stop and start a
    new one (which waits for the old one's lock). True when a replacement was started."""
    version = reply.get("version")
    if not version or version == __version__:
        return False
    from .ipc import ipc_request

    logger.info("daemon runs dexai-memory %s, the hooks %s: replacing it", version, __version__)
    ipc_request(settings.socket_path, {"op": "daemon.shutdown", "reason": "version"}, 1.0)
    if not autostart_enabled(settings):
        return False
    return spawn(settings, reason=f"replace daemon {version} with {__version__}") is not None


class DaemonStatus(NamedTuple):
    """What ``dexai daemon status`` shows."""

    running: bool
    answering: bool
    pid: int | None
    version: str | None
    health: dict[str, Any] | None
    autostart: bool
    idle_exit_minutes: float
    log: str
    socket: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self._asdict())


def status(settings: Settings, timeout: float = 2.0) -> DaemonStatus:
    """Whether a daemon runs for ``settings.home`` and, when it answers, its health."""
    from .ipc import ipc_request

    held = lock_held(settings)
    health = ipc_request(settings.socket_path, {"op": "health"}, timeout)
    answering = health is not None and health.get("ok", True) is not False
    return DaemonStatus(running=held or answering, answering=answering,
                        pid=(health or {}).get("pid") or (read_pid(settings) if held else None),
                        version=(health or {}).get("version"), health=health if answering else None,
                        autostart=autostart_enabled(settings), idle_exit_minutes=settings.daemon.idle_exit_minutes,
                        log=str(log_path(settings)), socket=str(settings.socket_path))


def _spawned_and_gone(settings: Settings) -> bool:
    """The daemon last started has exited without taking the lock: it failed at start (a damaged
    store, a broken ``memory.yaml``); nothing will answer."""
    try:
        lines = _spawn_stamp(settings).read_text(encoding="utf-8").splitlines()
    except OSError:
        return False
    if len(lines) < 2 or not lines[1].strip().isdigit():
        return False  # its pid not written yet
    try:
        os.kill(int(lines[1]), 0)
    except ProcessLookupError:
        return not lock_held(settings)
    except PermissionError:
        return False
    return False


def wait_until_answering(settings: Settings, timeout: float) -> bool:
    """Poll the socket until a daemon answers ``ping`` (True), ``timeout`` passes, or the daemon
    started for it has exited without answering (False at once: a hook does not wait out its
    budget for a daemon that failed at start, it queues its event)."""
    from .ipc import ipc_request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ipc_request(settings.socket_path, {"op": "ping"}, 0.5) is not None:
            return True
        if _spawned_and_gone(settings):
            return False
        time.sleep(0.1)
    return False


def ask_running_daemon(settings: Settings, request: dict[str, Any], *, timeout: float = 60.0) -> dict[str, Any] | None:
    """The answer of the daemon running for ``settings.home`` (None when none answers; none is
    started). Raises :class:`~dexai_memory.errors.DaemonError` with the error it answered."""
    from ..errors import DaemonError
    from .ipc import ipc_request

    if not settings.socket_path.exists():
        return None
    reply = ipc_request(settings.socket_path, request, timeout)
    if reply is not None and (reply.get("ok") is False or reply.get("error")):
        raise DaemonError(str(reply.get("error") or f"the memory daemon refused {request.get('op')}"))
    return reply


def stop(settings: Settings, timeout: float = 15.0) -> bool:
    """Stop the daemon of ``settings.home``: ask it over the socket, then SIGTERM its pid.
    True when no daemon runs afterwards."""
    from .ipc import ipc_request

    if not lock_held(settings) and ipc_request(settings.socket_path, {"op": "ping"}, 0.5) is None:
        return True
    ipc_request(settings.socket_path, {"op": "daemon.shutdown", "reason": "stop"}, 2.0)
    deadline = time.monotonic() + timeout
    signalled = False
    while time.monotonic() < deadline:
        if not lock_held(settings):
            return True
        if not signalled and time.monotonic() > deadline - timeout / 2:
            import signal

            pid = read_pid(settings)
            if pid:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGTERM)
            signalled = True
        time.sleep(0.1)
    return not lock_held(settings)


#: Seconds :func:`port_problems` allows a daemon that is starting to open a port it has not yet recorded.
PORT_SETTLE_SECONDS = 3.0
#: The files where a daemon records the ports it serves (``api.json``: JSON with its pid and port;
#: ``daemon-http``: "pid port").
API_RECORD = "api.json"
HTTP_RECORD = "daemon-http"


def port_taken(port: int) -> bool:
    """True when a process listens on 127.0.0.1:``port`` (binding it fails)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a closed socket's TIME_WAIT is not a holder
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _recorded(settings: Settings, name: str) -> tuple[int, int] | None:
    """(pid, port) a daemon recorded in ``<home>/name`` for a port it serves; None when none."""
    import json

    try:
        text = (settings.home / name).read_text(encoding="utf-8")
        if name == API_RECORD:
            data = json.loads(text)
            return int(data["pid"]), int(data["port"])
        pid, port = text.split()[:2]
        return int(pid), int(port)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _ports_to_check(settings: Settings) -> list[tuple[str, int, str, str]]:
    """(config key, port, what it serves, record file) of each port the daemon opens with these settings."""
    out = []
    if settings.daemon.api_port:
        out.append(("daemon.api_port", settings.daemon.api_port, "the memory panel and the local API", API_RECORD))
    if settings.daemon.http_port:  # its port opens only while the http hooks are installed
        from .http_hooks import installed

        if not installed(settings.home, settings.daemon.http_port):
            out.append(("daemon.http_port", settings.daemon.http_port, "the http hooks", HTTP_RECORD))
    return out


def port_problems(settings: Settings, st: DaemonStatus, *, settle: float = PORT_SETTLE_SECONDS) -> list[str]:
    """One sentence per port the daemon should serve and does not because another process holds
    it (``daemon.api_port``: the panel and the API; ``daemon.http_port`` while the http hooks are
    installed), or, with no daemon running, that a daemon started now would find taken. A
    running daemon gets ``settle`` seconds to record a port it is still opening. Empty when all
    is well."""
    problems = []
    for key, port, what, record in _ports_to_check(settings):
        deadline = time.monotonic() + settle
        while True:
            served = _recorded(settings, record)
            if st.answering and (served == (st.pid, port) or (record == API_RECORD and served is not None
                                                                and served[0] == st.pid)):
                break  # the daemon serves it (the panel's own port, when `dexai panel` runs the daemon)
            taken = port_taken(port)
            if not st.running:
                if taken:
                    problems.append(f"port {port} ({key}) is held by another process: a daemon started now could "
                                    f"not serve {what}; set {key} to a free port (0 = off)")
                break
            if time.monotonic() >= deadline:
                if taken:
                    problems.append(f"port {port} ({key}) is held by another process: the daemon does not serve "
                                    f"{what}; set {key} to a free port (0 = off), then "
                                    "`dexai daemon stop` (the next hook or `dexai daemon start` starts it again)")
                else:
                    problems.append(f"the daemon does not serve {what} on port {port} ({key}); "
                                    f"its log says why: {log_path(settings)}")
                break
            time.sleep(0.2)
    return problems
