"""The daemon's HTTP front end for Claude Code http hooks (dexai_memory.daemon.http_hooks), the
launcher's fast path that defers to it, and the real CLI calling it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from dexai_memory.config import DEFAULT_HOOK_HTTP_PORT, load_settings
from dexai_memory.daemon import MemoryDaemon
from dexai_memory.daemon.http_hooks import HTTP_FILE, TOKEN_FILE, HookHttpServer, http_hook_settings
from dexai_memory.models import Memory
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.rules import OfflineClassifier
from tests.pipeline_fakes import EchoExtractor, JoinSummarizer

REPO = Path(__file__).resolve().parents[2]
FACT = "The deploy password hint is PINEAPPLE-42"


@pytest.fixture
async def served(isolated_home: Path) -> AsyncIterator[HookHttpServer]:
    settings = load_settings()
    async with NativeProvider(settings.db_path, embedder=None) as provider:
        await provider.add(Memory(content=FACT, user_id="alice", importance=5))  # below the persistent context: only recall brings it
        daemon = MemoryDaemon(settings, provider, classifier=OfflineClassifier(), summarizer=JoinSummarizer(),
                              extractor=EchoExtractor())
        await daemon.start()
        server = HookHttpServer(daemon, 0)
        assert await server.start()
        try:
            yield server
        finally:
            await server.aclose()
            await daemon.stop(flush_timeout=0)


async def post(port: int, path: str, body: dict[str, Any], headers: dict[str, str] | None = None,
               method: str = "POST") -> tuple[int, dict[str, Any]]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    data = json.dumps(body).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    writer.write(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(data)}\r\n{head}"
                 f"Connection: close\r\n\r\n".encode() + data)
    raw = await reader.read()
    writer.close()
    status_line, _, rest = raw.partition(b"\r\n")
    return int(status_line.split()[1]), json.loads(rest.partition(b"\r\n\r\n")[2] or b"{}")


def prompt_payload(prompt: str = "What is the deploy password hint?") -> dict[str, Any]:
    return {"session_id": "s1", "transcript_path": "/nonexistent.jsonl", "cwd": str(REPO),
            "hook_event_name": "UserPromptSubmit", "prompt": prompt, "prompt_id": "p1"}


async def test_recall_over_http_needs_the_token(served: HookHttpServer) -> None:
    home = served.settings.home
    token = (home / TOKEN_FILE).read_text().strip()
    assert oct((home / TOKEN_FILE).stat().st_mode & 0o777) == "0o600"
    assert (home / HTTP_FILE).read_text().split() == [str(os.getpid()), str(served.port)]
    auth = {"Authorization": f"Bearer {token}", "X-Dexai-User": "alice"}
    status, answer = await post(served.port, "/hooks/user-prompt-submit", prompt_payload(), auth)
    assert status == 200
    assert FACT in answer["hookSpecificOutput"]["additionalContext"]
    # no token, a wrong one, or memory scoped by the session's environment: {} and nothing read
    for headers in ({}, {"Authorization": "Bearer nope", "X-Dexai-User": "alice"},
                    {**auth, "X-Dexai-Project": "other"}, {**auth, "X-Dexai-Disabled": "1"}):
        assert await post(served.port, "/hooks/user-prompt-submit", prompt_payload(), headers) == (200, {})
    assert (await post(served.port, "/hooks/nope", {}, auth))[0] == 404
    assert (await post(served.port, "/hooks/stop", {}, auth, method="GET"))[0] == 405
    assert served.handled == {"user-prompt-submit": 1}


async def test_stop_over_http_queues_the_turn(served: HookHttpServer) -> None:
    token = (served.settings.home / TOKEN_FILE).read_text().strip()
    auth = {"Authorization": f"Bearer {token}", "X-Dexai-User": "alice"}
    await post(served.port, "/hooks/user-prompt-submit", prompt_payload("Remember that I moved to Lisbon in May."),
               auth)
    status, answer = await post(served.port, "/hooks/stop", {
        "session_id": "s1", "cwd": str(REPO), "hook_event_name": "Stop",
        "last_assistant_message": "Noted: you moved to Lisbon in May 2024."}, auth)
    assert (status, answer) == (200, {})
    daemon = served.daemon
    assert await daemon.flush(10)
    found = await daemon.provider.search("Lisbon", user_id="alice")
    assert any("Lisbon" in r.memory.content for r in found)


async def test_aclose_removes_the_marker_first(served: HookHttpServer) -> None:
    marker = served.settings.home / HTTP_FILE
    assert marker.exists()
    await served.aclose()
    assert not marker.exists()


def run_launcher(event: str, env: dict[str, str]) -> tuple[str, float]:
    start = time.perf_counter()
    proc = subprocess.run([str(REPO / "hooks" / "dexai-hook"), event], input="{}", capture_output=True, text=True,
                          env=env, timeout=60, check=True)
    return proc.stdout.strip(), (time.perf_counter() - start) * 1000


def test_launcher_defers_to_a_live_http_daemon_only(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / TOKEN_FILE).write_text("tok\n")
    (isolated_home / HTTP_FILE).write_text(f"{os.getpid()} {DEFAULT_HOOK_HTTP_PORT}\n")
    env = {**os.environ, "DEXAI_HOOK_TOKEN": "tok", "DEXAI_HOOK_PYTHON": sys.executable,
           "DEXAI_MEMORY_DISABLED": ""}
    env.pop("DEXAI_MEMORY_PROJECT", None)
    assert run_launcher("stop", env)[0] == ""  # deferred: no Python started, nothing printed
    assert run_launcher("post-tool-use", env)[0] == ""
    # session-start is never deferred; nor is any event with a wrong token, a dead daemon, another
    # port or memory scoped by the environment: the Python hook answers ({} here)
    assert run_launcher("session-start", env)[0] == "{}"
    assert run_launcher("stop", {**env, "DEXAI_HOOK_TOKEN": "other"})[0] == "{}"
    assert run_launcher("stop", {**env, "DEXAI_MEMORY_PROJECT": "p"})[0] == "{}"
    assert run_launcher("stop", {**env, "DEXAI_HOOK_HTTP_PORT": "1"})[0] == "{}"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    (isolated_home / HTTP_FILE).write_text(f"{dead} {DEFAULT_HOOK_HTTP_PORT}\n")
    assert run_launcher("stop", env)[0] == "{}"


def test_the_plugin_sends_nothing_over_http_unless_the_user_opts_in() -> None:
    hooks = json.loads((REPO / "hooks" / "hooks.json").read_text())["hooks"]
    assert all(h["type"] == "command" for groups in hooks.values() for g in groups for h in g["hooks"])


def test_http_hook_settings_match_the_server() -> None:
    wanted = http_hook_settings(DEFAULT_HOOK_HTTP_PORT, "tok")
    assert wanted["env"] == {"DEXAI_HOOK_TOKEN": "tok"}
    urls = {name: groups[0]["hooks"][0]["url"] for name, groups in wanted["hooks"].items()}
    assert urls == {name: f"http://127.0.0.1:{DEFAULT_HOOK_HTTP_PORT}/hooks/{event}" for name, event in
                    (("UserPromptSubmit", "user-prompt-submit"), ("PostToolUse", "post-tool-use"),
                     ("Stop", "stop"))}
    for groups in wanted["hooks"].values():
        assert set(groups[0]["hooks"][0]["allowedEnvVars"]) >= {"DEXAI_HOOK_TOKEN", "DEXAI_MEMORY_USER"}


def test_install_merges_into_the_users_claude_settings(isolated_home: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from dexai_memory.cli.main import cli

    target = tmp_path / ".claude" / "settings.json"
    target.parent.mkdir()
    mine = {"model": "opus", "env": {"FOO": "1"},
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}
    target.write_text(json.dumps(mine))
    for _ in range(2):  # twice: our hooks are replaced, never doubled
        res = CliRunner().invoke(cli, ["daemon", "http-hooks", "--install", "--settings-file", str(target)])
        assert res.exit_code == 0, res.output
    written = json.loads(target.read_text())
    token = (isolated_home / TOKEN_FILE).read_text().strip()
    assert written["model"] == "opus" and written["env"] == {"FOO": "1", "DEXAI_HOOK_TOKEN": token}
    stop = [h for g in written["hooks"]["Stop"] for h in g["hooks"]]
    assert [h["type"] for h in stop] == ["command", "http"]
    printed = json.loads(CliRunner().invoke(cli, ["daemon", "http-hooks"]).output)
    assert printed == http_hook_settings(DEFAULT_HOOK_HTTP_PORT, token)


@pytest.mark.e2e
async def test_real_cli_is_answered_over_http(tmp_path: Path, served: HookHttpServer) -> None:
    from dexai_memory.demo.fakeapi import FakeMessagesAPI, text_of
    from testing.harness import arun_claude

    plugin = REPO  # the plugin as shipped: command hooks only
    token = (served.settings.home / TOKEN_FILE).read_text().strip()
    opted_in = http_hook_settings(served.port, token)  # what `dexai daemon http-hooks --install` writes
    (tmp_path / "project").mkdir()
    # the Python the launcher runs, through a wrapper that logs which events started it (argv: -S run.py event ...)
    starts = tmp_path / "python-starts.log"
    wrapper = tmp_path / "python-wrapper"
    wrapper.write_text(f'#!/bin/sh\n[ "$1" = -S ] && e=$3 || e=$2\necho "$e" >> {starts}\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    env = {"DEXAI_MEMORY_HOME": str(served.settings.home), "DEXAI_MEMORY_USER": "alice",
           "DEXAI_HOOK_TOKEN": token, "DEXAI_HOOK_HTTP_PORT": str(served.port),
           "DEXAI_HOOK_PYTHON": str(wrapper), "DEXAI_DAEMON_AUTOSTART": "0"}
    with FakeMessagesAPI() as api:
        res = await arun_claude("What is the deploy password hint?", home=tmp_path / "claude-home",
                                base_url=api.base_url, cwd=tmp_path / "project", plugin_dirs=[plugin], env=env,
                                settings=opted_in, timeout=180)
        assert res.returncode == 0, res.stderr
        assert FACT in text_of(api.message_requests()[0])
        text = text_of(api.message_requests()[0])
    assert served.handled["user-prompt-submit"] == 1
    assert served.handled["stop"] == 1
    assert text.count("UserPromptSubmit hook additional context") == 1
    # answered once: the command hooks of the HTTP events deferred without starting Python
    started = starts.read_text().split()
    assert "session-start" in started
    assert not {"user-prompt-submit", "stop"} & set(started)


def test_cli_prints_the_same_token_the_server_checks(isolated_home: Path) -> None:
    from click.testing import CliRunner

    from dexai_memory.cli.main import cli

    first = CliRunner().invoke(cli, ["daemon", "http-token", "--json"])
    assert first.exit_code == 0, first.output
    data = json.loads(first.output)
    assert data["port"] == DEFAULT_HOOK_HTTP_PORT
    assert data["token"] == (isolated_home / TOKEN_FILE).read_text().strip()
    assert CliRunner().invoke(cli, ["daemon", "http-token"]).output.strip() == data["token"]  # made once
