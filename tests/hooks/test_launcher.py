"""The plugin launcher ``hooks/dexai-hook``: every way of not finding dexai-memory still answers
valid hook output and exits 0 (with the reason on stderr), and the one-step install (a
background venv in ``${CLAUDE_PLUGIN_DATA}``) runs offline from a local wheelhouse.

The launcher runs as Claude Code runs it: a new process with a crafted environment and PATH
(only the few tools the script uses, plus the interpreters a case needs)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / "hooks" / "dexai-hook"
EVENTS = ("session-start", "user-prompt-submit", "pre-compact", "post-compact", "post-tool-use", "stop",
          "session-end")
#: The external tools the launcher uses; everything else a case needs is put on PATH explicitly.
TOOLS = ("sed", "tr", "find", "date", "mkdir", "dirname", "setsid", "cat", "rm")
#: Upper bound for a background install to finish (a bound, not a speed assertion).
INSTALL_DEADLINE = 300.0


def wait_for(predicate: Callable[[], bool], what: str, deadline: float = INSTALL_DEADLINE) -> None:
    end = time.monotonic() + deadline
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.2)


def tools_dir(base: Path) -> Path:
    """A directory with the launcher's tools and no python3 and no dexai."""
    bin_dir = base / "tools"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for tool in TOOLS:
        found = shutil.which(tool)
        if found and not (bin_dir / tool).exists():
            (bin_dir / tool).symlink_to(found)
    return bin_dir


def bare_python(base: Path) -> Path:
    """A python3 >= 3.11 that cannot import dexai_memory: a venv of this interpreter without
    site-packages. Returns its bin directory (python3 in it)."""
    venv = base / "bare"
    if not venv.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    assert subprocess.run([str(venv / "bin" / "python3"), "-c", "import dexai_memory"],
                          capture_output=True, cwd=base).returncode != 0
    return venv / "bin"


def python_wrapper(path: Path, python: str = sys.executable) -> Path:
    """An executable script that runs ``python`` (keeps its venv, unlike a symlink)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\nexec "{python}" "$@"\n')
    path.chmod(0o755)
    return path


def script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def plugin_copy(dest: Path) -> Path:
    """The plugin as Claude Code's plugin cache holds it: the repository's files (tracked and
    new, without ignored ones), so an install never writes into this checkout."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    return dest


def build_backend_wheelhouse(dest: Path) -> Path:
    """A wheelhouse with the build backend of pyproject.toml (setuptools, wheel and their
    dependencies), fetched once through pip's own configuration; the install under test then
    runs with PIP_NO_INDEX=1. (The package's own wheel is not needed: the plugin installs its
    own directory, which pip always builds.)"""
    dest.mkdir(parents=True, exist_ok=True)
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"]
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "-d", str(dest), *requires],
                          capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        pytest.skip(f"no package index to fetch the build backend {requires} from: {proc.stderr[-500:]}")
    return dest


def require_dependencies_in_base() -> None:
    """The install test gives the venv the base interpreter's site-packages (the option
    DEXAI_INSTALL_SYSTEM_SITE_PACKAGES=1), so the dependencies must be installed there."""
    base = subprocess.run([sys.executable, "-c", "import sys; print(sys._base_executable)"],
                          capture_output=True, text=True, check=True).stdout.strip()
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = [re.split(r"[<>=!~\[ ;]", r)[0] for r in  # the runtime and the extra the plugin installs
             [*project["dependencies"], *project["optional-dependencies"]["sdk"]]]
    probe = ("import sys\nfrom importlib import metadata\nmissing = []\n"
             f"for n in {names!r}:\n    try: metadata.distribution(n)\n"
             "    except metadata.PackageNotFoundError: missing.append(n)\nprint(' '.join(missing))")
    missing = subprocess.run([base, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    if missing:
        pytest.skip(f"the base interpreter {base} lacks dependencies ({missing}) the offline install needs")


def offline_install_env(wheelhouse: Path) -> dict[str, str]:
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse), "PIP_CONFIG_FILE": os.devnull,
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", "DEXAI_INSTALL_SYSTEM_SITE_PACKAGES": "1"}


class Launcher:
    """Runs hooks/dexai-hook of ``root`` with a crafted environment."""

    def __init__(self, tmp: Path, home: Path, root: Path = REPO) -> None:
        self.tmp = tmp
        self.root = root
        self.data = tmp / "plugin-data"
        self.tools = tools_dir(tmp)
        self.env = {"HOME": str(tmp / "user-home"), "PATH": str(self.tools), "CLAUDE_PLUGIN_ROOT": str(root),
                    "CLAUDE_PLUGIN_DATA": str(self.data), "DEXAI_MEMORY_HOME": str(home), "LANG": "C.UTF-8"}

    def path(self, *dirs: Path) -> None:
        self.env["PATH"] = os.pathsep.join([*map(str, dirs), str(self.tools)])

    def __call__(self, event: str, payload: str = "{}", cwd: Path | None = None,
                 **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.root / "hooks" / "dexai-hook"), event], input=payload, text=True,
                              capture_output=True, env={**self.env, **env}, cwd=cwd or self.tmp, timeout=120,
                              check=False)


def assert_valid(event: str, proc: subprocess.CompletedProcess[str],
                 active: bool = False) -> dict[str, object] | None:
    """Exit 0 and valid output for ``event``: a JSON object; for pre-compact plain text (the
    compaction instructions) when memory is ``active``, else nothing."""
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    if event == "pre-compact":
        assert (proc.stdout.strip() != "" if active else proc.stdout == ""), proc.stdout
        return None
    answer = json.loads(proc.stdout)
    assert isinstance(answer, dict)
    return answer


def system_message(proc: subprocess.CompletedProcess[str]) -> str:
    answer = assert_valid("session-start", proc)
    assert answer is not None and isinstance(answer.get("systemMessage"), str), proc.stdout
    return str(answer["systemMessage"])


@pytest.fixture
def launcher(tmp_path: Path, isolated_home: Path) -> Launcher:
    return Launcher(tmp_path, isolated_home)


# --- every failure mode answers valid output, exit 0, and says why on stderr -----------------

@pytest.mark.parametrize("event", EVENTS)
def test_missing_hook_python_answers_noop(launcher: Launcher, event: str) -> None:
    proc = launcher(event, DEXAI_HOOK_PYTHON=str(launcher.tmp / "gone" / "python3"))
    answer = assert_valid(event, proc)
    assert "DEXAI_HOOK_PYTHON" in proc.stderr and "not a Python" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    if event == "session-start":  # the user is told why memory is off in this session
        assert "DEXAI_HOOK_PYTHON" in system_message(proc) and "is off" in system_message(proc)
    else:
        assert answer in ({}, None)
    assert not launcher.data.exists()  # an explicit interpreter is never replaced by an install


def test_non_executable_hook_python_answers_noop(launcher: Launcher) -> None:
    not_exec = launcher.tmp / "python3"
    not_exec.write_text("#!/bin/sh\n")
    for event in ("user-prompt-submit", "pre-compact"):
        proc = launcher(event, DEXAI_HOOK_PYTHON=str(not_exec))
        assert assert_valid(event, proc) in ({}, None)
        assert "is not a Python: memory is off" in proc.stderr


@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit", "pre-compact", "stop"])
def test_hook_python_without_the_package_answers_noop(launcher: Launcher, event: str) -> None:
    bare = bare_python(launcher.tmp) / "python3"
    proc = launcher(event, DEXAI_HOOK_PYTHON=str(bare))
    answer = assert_valid(event, proc)
    assert "cannot import dexai_memory" in proc.stderr
    if event == "session-start":
        assert answer and "cannot import" in str(answer["systemMessage"])
    assert not launcher.data.exists()


@pytest.mark.parametrize("shebang", ["#!{gone}/bin/python3\n", "#!/bin/sh\n'''exec' \"{gone}/bin/python3\" \"$0\" \"$@\"\n' '''\n",
                                     "#!/usr/bin/env python3.99\n"])
@pytest.mark.parametrize("event", ["user-prompt-submit", "pre-compact", "stop"])
def test_stale_dexai_shebang_answers_noop(launcher: Launcher, shebang: str, event: str) -> None:
    script(launcher.tmp / "bin" / "dexai", shebang.format(gone=launcher.tmp / "deleted-venv") + "import sys\n")
    launcher.path(launcher.tmp / "bin")
    proc = launcher(event)
    assert assert_valid(event, proc) in ({}, None)
    # no Python to run it with: memory is off, said once
    assert "no python3 on PATH" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_stale_dexai_shebang_falls_through_to_a_working_python(launcher: Launcher, isolated_home: Path) -> None:
    script(launcher.tmp / "bin" / "dexai", f"#!{launcher.tmp}/deleted-venv/bin/python3\n")
    python_wrapper(launcher.tmp / "py" / "python3")
    launcher.path(launcher.tmp / "bin", launcher.tmp / "py")
    proc = launcher("user-prompt-submit", json.dumps({"session_id": "s1", "prompt": "hello there"}))
    assert assert_valid("user-prompt-submit", proc) is not None
    assert proc.stderr == ""
    assert (isolated_home / "hooks.log").exists()  # the hook runtime ran


@pytest.mark.parametrize("event", ["user-prompt-submit", "pre-compact", "session-end"])
def test_python3_without_the_package_answers_noop(launcher: Launcher, event: str) -> None:
    launcher.path(bare_python(launcher.tmp))
    proc = launcher(event)
    assert assert_valid(event, proc) in ({}, None)
    assert "cannot import dexai_memory" in proc.stderr
    assert not launcher.data.exists()  # only SessionStart installs


def test_env_python3_shebang_without_the_package(launcher: Launcher) -> None:
    script(launcher.tmp / "bin" / "dexai", "#!/usr/bin/env python3\n")
    launcher.path(launcher.tmp / "bin", bare_python(launcher.tmp))
    proc = launcher("stop", DEXAI_AUTO_INSTALL="0")
    assert assert_valid("stop", proc) == {}
    assert "cannot import" in proc.stderr


def test_nothing_on_path_session_start_says_why(launcher: Launcher) -> None:
    proc = launcher("session-start")
    assert "no python3 on PATH" in system_message(proc) and "Python >= 3.11" in system_message(proc)
    assert "no python3 on PATH" in proc.stderr and "Python >= 3.11" in proc.stderr
    assert not launcher.data.exists()  # nothing to install with


def test_unwritable_plugin_data_says_it_cannot_install(launcher: Launcher) -> None:
    launcher.path(bare_python(launcher.tmp))
    (launcher.tmp / "a-file").write_text("")
    proc = launcher("session-start", CLAUDE_PLUGIN_DATA=str(launcher.tmp / "a-file" / "data"))
    assert "not writable" in system_message(proc)


def test_auto_install_off(launcher: Launcher) -> None:
    launcher.path(bare_python(launcher.tmp))
    message = system_message(launcher("session-start", DEXAI_AUTO_INSTALL="0"))
    assert "DEXAI_AUTO_INSTALL=0" in message
    assert not launcher.data.exists()


def test_mcp_without_the_package_exits_1_with_a_message(launcher: Launcher) -> None:
    launcher.path(bare_python(launcher.tmp))
    proc = launcher("mcp", "")
    assert proc.returncode == 1 and proc.stdout == ""
    assert "memory tools are unavailable" in proc.stderr


# --- the interpreters that work --------------------------------------------------------------

@pytest.mark.parametrize("by", ["path", "command name"])
def test_hook_python_runs_the_hook(launcher: Launcher, isolated_home: Path, by: str) -> None:
    python = python_wrapper(launcher.tmp / "py" / "python3")
    launcher.path(launcher.tmp / "py")
    proc = launcher("session-start", json.dumps({"session_id": "s1", "source": "startup"}),
                    DEXAI_HOOK_PYTHON=str(python) if by == "path" else "python3")
    assert assert_valid("session-start", proc) is not None and proc.stderr == ""
    assert (isolated_home / "hooks.log").exists()


@pytest.mark.parametrize("form", ["plain", "pip trampoline", "env"])
def test_dexai_shebang_runs_the_hook(launcher: Launcher, isolated_home: Path, form: str) -> None:
    python = python_wrapper(launcher.tmp / "py" / "python3")
    trampoline = "#!/bin/sh\n'''exec' \"" + str(python) + "\" \"$0\" \"$@\"\n' '''\n"  # pip's, for long paths
    shebang = {"plain": f"#!{python}\n", "pip trampoline": trampoline, "env": "#!/usr/bin/env python3\n"}[form]
    script(launcher.tmp / "bin" / "dexai", shebang + "import sys\n")
    launcher.path(launcher.tmp / "bin", *([launcher.tmp / "py"] if form == "env" else []))
    proc = launcher("stop", json.dumps({"session_id": "s1"}))
    assert assert_valid("stop", proc) == {} and proc.stderr == ""
    assert (isolated_home / "hooks.log").exists()


def test_dexai_wrapper_that_is_not_python_is_not_run(launcher: Launcher, isolated_home: Path) -> None:
    # a pyenv-style shim: not a Python, so the hook does not run it (python3 on PATH does the work)
    trap = launcher.tmp / "shim-ran"
    script(launcher.tmp / "bin" / "dexai", f'#!/bin/sh\ntouch "{trap}"\necho \'{{"from": "shim"}}\'\n')
    launcher.path(launcher.tmp / "bin")
    proc = launcher("stop")
    assert assert_valid("stop", proc) == {} and "no python3 on PATH" in proc.stderr and not trap.exists()
    python_wrapper(launcher.tmp / "py" / "python3")
    launcher.path(launcher.tmp / "bin", launcher.tmp / "py")
    proc = launcher("stop", json.dumps({"session_id": "s1"}))
    assert assert_valid("stop", proc) == {} and proc.stderr == "" and not trap.exists()
    assert (isolated_home / "hooks.log").exists()


def test_project_directory_cannot_shadow_the_package(launcher: Launcher, isolated_home: Path) -> None:
    project = launcher.tmp / "project"
    trap = launcher.tmp / "shadowed"
    (project / "dexai_memory").mkdir(parents=True)
    (project / "dexai_memory" / "__init__.py").write_text(f"open({str(trap)!r}, 'w').close()\n")
    proc = launcher("stop", cwd=project, DEXAI_HOOK_PYTHON=str(python_wrapper(launcher.tmp / "py" / "python3")))
    assert assert_valid("stop", proc) == {}
    assert not trap.exists()
    assert (isolated_home / "hooks.log").exists()


# --- the install's bookkeeping (fast: an install that fails at once) --------------------------

def old_python(tmp: Path) -> Path:
    """A "python3" the installer finds too old to make the venv with (it answers its version
    probe with False), and that runs anything else with the bare Python: an install that starts
    and fails at once, with nothing downloaded."""
    bare = bare_python(tmp) / "python3"
    return script(tmp / "old" / "python3", f'#!/bin/sh\n[ "$1" = -c ] && {{ echo False; exit 0; }}\nexec "{bare}" "$@"\n')


def installer_env(launcher: Launcher, tmp: Path) -> None:
    """A python3 on PATH without the package, and DEXAI_INSTALL_PYTHON a Python too old: the
    background install starts and fails at once."""
    launcher.path(bare_python(tmp))
    launcher.env["DEXAI_INSTALL_PYTHON"] = str(old_python(tmp))

FAILURE = "no python3 >= 3.11"


def test_failed_install_is_reported_once_and_retried_after_a_day(launcher: Launcher, tmp_path: Path) -> None:
    installer_env(launcher, tmp_path)
    data, failed = launcher.data, launcher.data / "install.failed"
    first = system_message(launcher("session-start"))
    assert "installing" in first and str(data / "install.log") in first and str(data / "venv") in first
    wait_for(failed.exists, "the install to fail")
    assert FAILURE in (data / "install.log").read_text()
    assert assert_valid("user-prompt-submit", launcher("user-prompt-submit")) == {}  # other events stay quiet

    report = system_message(launcher("session-start"))
    assert "failed" in report and str(data / "install.log") in report and "install.failed" in report
    assert launcher("session-start").stdout.strip() == "{}"  # reported once, not retried within a day

    day_ago = time.time() - 25 * 3600
    os.utime(failed, (day_ago, day_ago))
    assert "retrying" in system_message(launcher("session-start"))
    wait_for(lambda: failed.exists() and failed.stat().st_mtime > day_ago + 3600, "the retry to fail")

    failed.unlink()  # asking for a retry now
    (data / "install.reported").unlink(missing_ok=True)
    assert "installing" in system_message(launcher("session-start"))
    wait_for(failed.exists, "the asked-for retry to fail")


def test_one_install_at_a_time_and_a_killed_install_is_recovered(launcher: Launcher, tmp_path: Path) -> None:
    installer_env(launcher, tmp_path)
    data = launcher.data
    data.mkdir(parents=True)
    # a running install holds the lock: further SessionStarts start nothing and stay quiet after the notice
    with subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time\n"
                           f"f = open({str(data / 'install.lock')!r}, 'a')\n"
                           "fcntl.flock(f, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(600)"],
                          stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
            assert "installing" in system_message(launcher("session-start"))
            assert launcher("session-start").stdout.strip() == "{}"
            log = data / "install.log"
            wait_for(lambda: log.read_text().count("another install is running") == 2,
                     "both installers to give up", 60)
            assert not (data / "install.failed").exists() and not (data / "installed").exists()
        finally:
            holder.kill()  # the "install" dies: the kernel releases its lock
    launcher("session-start")
    wait_for((data / "install.failed").exists, "the next install to run")


def test_install_command_runs_in_the_foreground(launcher: Launcher, tmp_path: Path) -> None:
    installer_env(launcher, tmp_path)
    proc = launcher("install", "")
    assert proc.returncode == 1
    assert "FAILED" in proc.stdout and FAILURE in proc.stdout
    assert (launcher.data / "install.failed").exists()


# --- the real install, offline ---------------------------------------------------------------

@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    require_dependencies_in_base()
    yield build_backend_wheelhouse(tmp_path_factory.mktemp("wheelhouse"))


@pytest.mark.slow
def test_first_session_start_installs_offline_and_later_hooks_use_the_venv(
        tmp_path: Path, isolated_home: Path, wheelhouse: Path) -> None:
    root = plugin_copy(tmp_path / "plugin")
    launcher = Launcher(tmp_path, isolated_home, root)
    launcher.path(bare_python(tmp_path))
    launcher.env.update(offline_install_env(wheelhouse))
    data = launcher.data

    proc = launcher("session-start", json.dumps({"session_id": "s1", "source": "startup"}))
    message = system_message(proc)
    assert "installing" in message and str(data / "install.log") in message
    assert not (isolated_home / "hooks.log").exists()  # no hook ran yet
    wait_for(lambda: (data / "installed").exists() or (data / "install.failed").exists(), "the install")
    assert not (data / "install.failed").exists(), (data / "install.log").read_text()
    venv_python = data / "venv" / "bin" / "python"
    where = subprocess.run([str(venv_python), "-c", "import dexai_memory; print(dexai_memory.__file__)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert where.startswith(str(data / "venv")), where  # the venv's own copy, not the checkout
    assert not (root / "build").exists()  # the plugin directory is left as it was

    for event in EVENTS:  # every later hook runs through the venv's python
        proc = launcher(event, json.dumps({"session_id": "s1", "source": "startup", "prompt": "hi"}))
        assert_valid(event, proc, active=True)
        assert proc.stderr == "", proc.stderr
    assert (isolated_home / "hooks.log").exists()
    answer = assert_valid("session-start", launcher("session-start"))
    assert answer is not None and "systemMessage" not in answer  # not told again

    # a plugin update (a new plugin directory): SessionStart reinstalls in the background while
    # the installed venv keeps serving the hooks
    updated = plugin_copy(tmp_path / "plugin-2")
    launcher.env["CLAUDE_PLUGIN_ROOT"] = str(updated)
    proc = launcher("session-start", json.dumps({"session_id": "s2", "source": "startup"}))
    assert "systemMessage" not in (assert_valid("session-start", proc) or {}) and proc.stderr == ""
    wait_for(lambda: (data / "installed").read_text().strip() == str(updated), "the upgrade")
    assert "upgrading" in (data / "install.log").read_text()


# --- hooks/run.py in a Python without dexai-memory ----------------------------------------------

def test_run_py_without_the_package_answers_noop_and_session_start_starts_the_install(tmp_path: Path) -> None:
    """What the launcher runs in the Python it picked: a hook answers a valid no-op, SessionStart
    starts the one-step install (here one that fails at once) and says so once; the MCP server
    and the CLI exit 1 with the reason."""
    bare = bare_python(tmp_path) / "python3"
    data = tmp_path / "plugin-data"
    env = {"PATH": f"{bare.parent}:/usr/bin:/bin", "HOME": str(tmp_path / "home"), "CLAUDE_PLUGIN_DATA": str(data),
           "DEXAI_INSTALL_PYTHON": str(old_python(tmp_path)), "DEXAI_MEMORY_HOME": str(tmp_path / "dexai-home")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(bare), str(REPO / "hooks" / "run.py"), *args], input="{}", text=True,
                              capture_output=True, env=env, cwd=tmp_path, timeout=60, check=False)

    for event in ("user-prompt-submit", "stop", "post-tool-use"):
        proc = run(event)
        assert proc.returncode == 0 and json.loads(proc.stdout) == {} and "cannot import dexai_memory" in proc.stderr
    proc = run("pre-compact")
    assert proc.returncode == 0 and proc.stdout == ""
    assert not data.exists()  # only SessionStart installs
    first = run("session-start")
    assert first.returncode == 0 and "installing" in json.loads(first.stdout)["systemMessage"]
    wait_for((data / "install.failed").exists, "the install to fail", 60)
    assert FAILURE in (data / "install.log").read_text() and not (data / "venv").exists()
    assert "failed" in json.loads(run("session-start").stdout)["systemMessage"]
    assert (data / "install.reported").exists() and json.loads(run("session-start").stdout) == {}
    for command in ("mcp", "memory"):
        proc = run(command)
        assert proc.returncode == 1 and proc.stdout == "" and "cannot import dexai_memory" in proc.stderr
