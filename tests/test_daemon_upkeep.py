"""The daemon looks after itself: it exits when the installed package changed version under it
(the launcher's curl cannot tell), and a stopped daemon does not hold back the next start."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from dexai_memory import version
from dexai_memory.config import load_settings
from dexai_memory.daemon import control, ops


def test_the_daemon_sees_an_upgrade_of_the_installed_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ops, "_last_check", [0.0])
    assert not ops.upgraded()  # the file says what this process runs
    monkeypatch.setattr(ops, "_last_check", [0.0])
    monkeypatch.setattr(version, "__version__", "0.0.0-before-the-upgrade")
    assert ops.upgraded()
    assert not ops.upgraded()  # looked at once per VERSION_CHECK_SECONDS, not on every event


def test_a_stamp_of_a_daemon_that_exited_does_not_hold_back_a_start() -> None:
    settings = load_settings()
    settings.home.mkdir(parents=True, exist_ok=True)
    stamp = control._spawn_stamp(settings)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    stamp.write_text(f"{time.time()} test\n{gone.pid}\n", encoding="utf-8")
    assert not control._recently_spawned(settings)
    stamp.write_text(f"{time.time()} test\n{os.getpid()}\n", encoding="utf-8")
    assert control._recently_spawned(settings)  # still running: it may still be loading
    stamp.write_text(f"{time.time()} test\n", encoding="utf-8")
    assert control._recently_spawned(settings)  # written a moment ago, its pid not yet
    old = time.time() - control.SPAWN_GRACE_SECONDS - 1
    os.utime(stamp, (old, old))
    assert not control._recently_spawned(settings)
