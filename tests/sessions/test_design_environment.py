"""A session's system state and last known environment, kept by the session store and shown by the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from dexai_memory.cli.main import cli
from dexai_memory.config import load_settings
from dexai_memory.sessions.store import SessionStore

KEY = {"project_key": "proj", "session_id": "s-env"}


async def test_the_latest_workspace_branch_and_model_are_kept_and_shown(tmp_path: Path) -> None:
    store = SessionStore.open(load_settings())
    await store.append(KEY, [
        {"type": "user", "uuid": "u1", "cwd": str(tmp_path), "gitBranch": "main", "version": "2.1.0",
         "permissionMode": "default", "message": {"role": "user", "content": "hello"}},
        {"type": "assistant", "uuid": "a1", "cwd": str(tmp_path),
         "message": {"id": "m1", "role": "assistant", "model": "claude-sonnet-4-5", "content": []}},
    ])
    await store.append(KEY, [{"type": "user", "uuid": "u2", "cwd": str(tmp_path), "gitBranch": "fix/login",
                              "message": {"role": "user", "content": "go on"}}])
    info = store.info("s-env")
    assert info is not None
    assert info.system_state == {"last_workspace": str(tmp_path), "git_branch": "fix/login",
                                 "permission_mode": "default", "model": "claude-sonnet-4-5"}
    env = info.environment
    assert env["workspace"] == str(tmp_path) and env["version"] == "2.1.0" and env["last_update"] > 0
    assert 0 <= env["system_snapshot"]["disk_usage_percent"] <= 100

    runner = CliRunner()
    shown = runner.invoke(cli, ["sessions", "show", "s-env"])
    assert shown.exit_code == 0, shown.output
    assert f"workspace: {tmp_path}" in shown.stdout and "git branch: fix/login" in shown.stdout
    data = json.loads(runner.invoke(cli, ["sessions", "show", "s-env", "--json"]).stdout)
    assert data["system_state"]["model"] == "claude-sonnet-4-5"
    assert data["last_known_environment"]["workspace"] == str(tmp_path)
    assert runner.invoke(cli, ["sessions", "delete", "s-env", "--yes"]).exit_code == 0
    assert store.info("s-env") is None
