"""The plugin's one-step install: dexai-memory into ``${CLAUDE_PLUGIN_DATA}/venv``.

``install.py foreground ROOT DATA``   install now, output on stdout (``dexai-hook install``);
``install.py background ROOT DATA``   install detached (a plugin update: the old venv serves meanwhile).

:func:`start_from_hook` is what SessionStart does when no Python with dexai-memory is
found (``run.py``): start the install in the background (the session is never held up) and
return the message the user is shown once; a failed install is reported once and retried
after a day (at once when ``install.failed`` is deleted). One install at a time (``flock`` on
``install.lock``, released by the kernel when an install is killed); ``installed`` (holding
the plugin directory it came from) is written only on success; output in ``install.log``.

Runs on any python3 from PATH (dexai-memory is not installed yet): standard library only.
"""

from __future__ import annotations

import datetime
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import IO

#: Seconds after a failed install before SessionStart tries again.
RETRY_SECONDS = 24 * 3600
#: Oldest Python the package supports.
MIN_PYTHON = (3, 11)
#: The extras the plugin uses: ``sdk`` for the extraction through the user's Claude Code sign-in.
PLUGIN_EXTRAS = "sdk"
#: Packages built from their source distribution: claude-agent-sdk's platform wheels bundle a
#: second Claude Code CLI (~380 MB) that the plugin never runs (its user has ``claude``).
FROM_SOURCE = ("claude-agent-sdk",)


class Failed(Exception):
    """The install cannot go on (the reason is shown to the user)."""


def data_dir() -> str:
    """``$CLAUDE_PLUGIN_DATA``, else ``${CLAUDE_CONFIG_DIR:-~/.claude}/plugins/data/dexai-memory``."""
    config = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return os.environ.get("CLAUDE_PLUGIN_DATA") or os.path.join(config, "plugins", "data", "dexai-memory")


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _new_enough(exe: str, cwd: str) -> bool:
    if exe == sys.executable:
        return sys.version_info >= MIN_PYTHON
    try:
        out = subprocess.run([exe, "-c", f"import sys; print(sys.version_info >= {MIN_PYTHON})"],
                             stdin=subprocess.DEVNULL, capture_output=True, timeout=60, cwd=cwd, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.stdout.strip() == b"True"


def base_python(cwd: str) -> str | None:
    """A python3 >= 3.11 to make the venv with (``$DEXAI_INSTALL_PYTHON`` when set)."""
    forced = os.environ.get("DEXAI_INSTALL_PYTHON")
    names = [forced] if forced else [sys.executable, "python3", "python3.14", "python3.13", "python3.12", "python3.11"]
    for name in names:
        exe = name if os.sep in name else shutil.which(name)
        if exe and os.access(exe, os.X_OK) and _new_enough(exe, cwd):
            return exe
    return None


def pip_install(pip: list[str], source: str) -> list[str]:
    """The command that installs the package at ``source`` with :data:`PLUGIN_EXTRAS` (only what
    the plugin uses; :data:`FROM_SOURCE` without its bundled CLI) through ``pip`` (the start of a
    pip command line: :meth:`Installer.pip`)."""
    return [*pip, "install", "--disable-pip-version-check", "--no-binary", ",".join(FROM_SOURCE),
            f"{source}[{PLUGIN_EXTRAS}]"]


def pip_can_target(base: str, cwd: str) -> bool:
    """Whether ``base -m pip`` can install into another environment (``--python``, pip >= 22.3):
    the venv is then made without a pip of its own, which saves ``ensurepip`` (~10 s)."""
    try:
        out = subprocess.run([base, "-m", "pip", "--version"], stdin=subprocess.DEVNULL, capture_output=True,
                             timeout=60, cwd=cwd, check=False, text=True)
    except (OSError, subprocess.SubprocessError):
        return False
    words = out.stdout.split()
    try:
        version = tuple(int(part) for part in words[1].split(".")[:2]) if out.returncode == 0 else ()
    except (IndexError, ValueError):
        return False
    return version >= (22, 3)


class Installer:
    """One install of ``root`` (the plugin directory) into ``data``/venv."""

    def __init__(self, root: str, data: str, *, foreground: bool):
        self.root, self.data, self.foreground = root, data, foreground
        self.venv = self.path("venv")
        self.python = os.path.join(self.venv, "bin", "python")
        self.log: IO[str] | None = None

    def path(self, name: str) -> str:
        return os.path.join(self.data, name)

    def say(self, message: str) -> None:
        line = f"{datetime.datetime.now():%Y-%m-%d %H:%M:%S} dexai-memory install: {message}\n"
        if self.log is not None:
            self.log.write(line)
            self.log.flush()
        if self.foreground:
            sys.stdout.write(line)
            sys.stdout.flush()
        elif self.log is None:  # before install.log is opened: a background install's stderr is appended to it
            sys.stderr.write(line)
            sys.stderr.flush()

    def run(self, argv: list[str]) -> None:
        self.say("$ " + " ".join(argv))
        subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, cwd=self.data,
                       check=True)

    def install(self) -> int:
        os.makedirs(self.data, exist_ok=True)
        with open(self.path("install.lock"), "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | (0 if self.foreground else fcntl.LOCK_NB))
            except OSError:
                self.say("another install is running; not starting a second one")
                return 0
            with open(self.path("install.log"), "w") as self.log:
                return self._install()

    def _install(self) -> int:
        _remove(self.path("install.failed"))
        _remove(self.path("install.reported"))
        upgrade = os.path.isfile(self.path("installed")) and os.access(self.python, os.X_OK)
        self.say(("upgrading " if upgrade else "installing ") + self.root + " into " + self.venv)
        try:
            if not os.path.isfile(os.path.join(self.root, "pyproject.toml")):
                raise Failed(self.root + " is not the dexai-memory source (no pyproject.toml)")
            if not upgrade:
                self._make_venv()
            src = tempfile.mkdtemp(prefix="src-", dir=self.data)
            try:  # pip builds a copy: the plugin directory is left as it is
                junk = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__", ".venv", ".*_cache", ".cache")
                shutil.copytree(self.root, os.path.join(src, "dexai-memory"), ignore=junk)
                self.run(pip_install(self.pip(), os.path.join(src, "dexai-memory")))
            finally:
                shutil.rmtree(src, ignore_errors=True)
            self.run([self.python, "-I", "-c", "import dexai_memory.hooks.client"])
            with open(self.path("installed.tmp"), "w") as marker:
                marker.write(self.root + "\n")
            os.replace(self.path("installed.tmp"), self.path("installed"))
            _remove(self.path("install.notice"))
            self.say(f"done: memory is active ({self.python})")
            return 0
        except (Failed, OSError, subprocess.SubprocessError) as exc:
            self.say(f"FAILED: {exc} (log: {self.path('install.log')})")
            with open(self.path("install.failed"), "w") as failed:
                failed.write(f"{exc}\n")
            _remove(self.path("install.notice"))
            return 1

    def pip(self) -> list[str]:
        """The venv's own pip, else the base Python's pip aimed at the venv (``--python``; the venv
        was made without one, see :func:`pip_can_target`); ``ensurepip`` when neither can."""
        own = [self.python, "-m", "pip"]
        if self._runs([*own, "--version"]):
            return own
        base = base_python(self.data)
        if base is not None and pip_can_target(base, self.data):
            return [base, "-m", "pip", "--python", self.python]
        self.run([self.python, "-m", "ensurepip", "--default-pip"])
        return own

    def _runs(self, argv: list[str]) -> bool:
        try:
            return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=60, cwd=self.data,
                                  check=False).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False

    def _make_venv(self) -> None:
        _remove(self.path("installed"))
        base = base_python(self.data)
        if base is None:
            raise Failed("no python3 >= 3.11 on PATH (" + os.environ.get("PATH", "") + "); install one or set "
                         "DEXAI_INSTALL_PYTHON")
        if os.path.lexists(self.venv):
            shutil.rmtree(self.venv)
        args = [base, "-m", "venv"]
        if os.environ.get("DEXAI_INSTALL_SYSTEM_SITE_PACKAGES") == "1":
            args.append("--system-site-packages")
        if pip_can_target(base, self.data):
            args.append("--without-pip")
        self.run([*args, self.venv])


def start_background(root: str, data: str) -> None:
    """Start ``install.py background`` detached (its own session); never waits."""
    with open(os.path.join(data, "install.log"), "a") as log:
        subprocess.Popen([sys.executable, os.path.abspath(__file__), "background", root, data],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def start_from_hook(root: str, data: str) -> str | None:
    """SessionStart with no dexai-memory: start the install when due; the message to show (None: none)."""
    log = os.path.join(data, "install.log")
    try:
        os.makedirs(data, exist_ok=True)
        open(log, "a").close()
    except OSError:
        return (f"dexai-memory cannot install itself: {data} is not writable, so memory is off. Make it writable, "
                "or pip install dexai-memory yourself.")
    failed = os.path.join(data, "install.failed")
    if os.path.exists(failed):
        if time.time() - os.path.getmtime(failed) < RETRY_SECONDS:
            reported = os.path.join(data, "install.reported")
            if os.path.exists(reported):
                return None
            open(reported, "w").close()
            return (f"dexai-memory: installing its Python package failed, so memory is off (log: {log}). It is "
                    f"retried after a day. To retry now, delete {failed} and start a new session, or run: "
                    f"CLAUDE_PLUGIN_DATA='{data}' sh '{root}/hooks/dexai-hook' install. Or install it yourself "
                    "(pip install dexai-memory, or set DEXAI_HOOK_PYTHON).")
        start_background(root, data)
        return (f"dexai-memory: the last install of its Python package failed; retrying now in the background "
                f"(log: {log}). Memory turns on by itself when it succeeds.")
    start_background(root, data)
    try:
        fd = os.open(os.path.join(data, "install.notice"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError:
        return None  # told already
    os.close(fd)
    return (f"dexai-memory: installing its Python package into {data}/venv in the background (first start; a minute "
            "or two). Memory turns on by itself as soon as it finishes; until then this session runs without memory. "
            f"Log: {log}")


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in ("foreground", "background"):
        print("usage: install.py foreground|background PLUGIN_ROOT DATA_DIR", file=sys.stderr)
        return 2
    mode, root, data = argv
    if mode == "background":
        failed = os.path.join(data, "install.failed")
        if os.path.exists(failed) and time.time() - os.path.getmtime(failed) < RETRY_SECONDS:
            return 0  # an update's reinstall failed lately: retried after a day
    return Installer(root, data, foreground=mode == "foreground").install()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
