"""Memories are private: the data directory is 0700 and every file in it 0600, after a realistic run."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAUNCHER = ROOT / "hooks" / "dexai-hook"
#: Written by the hook client's own code (dexai_memory/hooks/client.py): private once it calls
#: datadir.private_umask() first thing in run(); see test_hook_runtime_files_are_private.
HOOK_RUNTIME_FILES = {"hooks.log"}


def run(*args: str, home: Path, stdin: str | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
    # a user's usual umask (0022: files 0644), which must not decide the modes of our files
    env = {**os.environ, "DEXAI_MEMORY_HOME": str(home), "DEXAI_MEMORY_USER": "sam",
           "DEXAI_HOOK_PYTHON": sys.executable, **extra}
    proc = subprocess.run(list(args), cwd=ROOT, env=env, input=stdin, capture_output=True, text=True, timeout=120,
                          check=False, umask=0o022)
    assert proc.returncode == 0, proc.stderr
    return proc


def dexai(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return run(sys.executable, "-m", "dexai_memory.cli.main", *args, home=home)


def loose_files(home: Path) -> list[str]:
    """Every file or directory under ``home`` with group/other bits (or beyond 0700 / 0600)."""
    loose = []
    for path in sorted(home.rglob("*")):
        if path.is_socket():
            continue
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode & ~(0o700 if path.is_dir() else 0o600):
            loose.append(f"{path.relative_to(home)}: {mode:o}")
    return loose


def test_every_file_in_the_data_dir_is_private_after_a_realistic_run(tmp_path: Path) -> None:
    """An existing 0755 data dir (an older version's) is tightened to 0700 with a log line; after
    add, import, export into the data dir, backup, a Stop hook no daemon answers (it queues the
    event) and hooks that start the daemon (it replays it and queues the turn), every directory
    under it is 0700 and every file 0600 (memory.db, its -wal/-shm, queue.db, backups, exports,
    state files, the daemon's log, pid and lock files)."""
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    (home / "memory.yaml").write_text("embedding:\n  backend: none\n")  # an older, world-readable file
    added = dexai("memory", "add", "Sam likes green tea", home=home)
    assert "tightened to 700" in added.stderr
    lines = tmp_path / "in.jsonl"
    lines.write_text('{"content": "Sam has a cat named Miso"}\n')
    dexai("memory", "import", str(lines), home=home)
    dexai("memory", "export", "--format", "jsonl", "-o", str(home / "export.jsonl"), home=home)
    dexai("memory", "export", "--format", "jsonl", "-o", str(home / "export.jsonl"), home=home)  # + .bak
    dexai("memory", "backup", home=home)
    payload = {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "Stop",
               "last_assistant_message": "Noted: you prefer dark roast coffee and your sister lives in Oslo."}
    run(str(LAUNCHER), "stop", home=home, stdin=json.dumps(payload))
    assert (home / "queue.db").exists()
    prompt = {"session_id": "s2", "cwd": str(tmp_path), "prompt": "My sister Ana lives in Oslo", "prompt_id": "p1"}
    run(str(LAUNCHER), "user-prompt-submit", home=home, stdin=json.dumps(prompt), DEXAI_DAEMON_AUTOSTART="1")
    run(str(LAUNCHER), "stop", home=home, stdin=json.dumps({**prompt, "last_assistant_message": "Noted."}),
        DEXAI_DAEMON_AUTOSTART="1")
    assert (home / "daemon.log").exists() and (home / "daemon.pid").exists()
    dexai("daemon", "stop", home=home)
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert [f for f in loose_files(home) if f.split(":")[0] not in HOOK_RUNTIME_FILES] == []
    names = {p.name for p in home.rglob("*")}
    assert {"memory.db", "queue.db", "export.jsonl", "export.jsonl.bak", "backups"} <= names


def test_hook_runtime_files_are_private(tmp_path: Path) -> None:
    """The hook process's own files (hooks.log, state files) are 0600 even under a 0022 umask."""
    home = tmp_path / "home"
    payload = {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "Stop",
               "last_assistant_message": "Noted: you prefer dark roast coffee."}
    run(str(LAUNCHER), "stop", home=home, stdin=json.dumps(payload))
    assert (home / "hooks.log").exists() and (home / "queue.db").exists()
    assert loose_files(home) == []
