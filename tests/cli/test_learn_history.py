"""``dexai memory learn-history``: past Claude Code sessions (a fake ``~/.claude/projects`` tree in
the real transcript shape) replayed into a real native store, through click's CliRunner."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dexai_memory.capture.history_log import HistoryLog
from dexai_memory.cli.main import cli
from dexai_memory.config import load_settings
from dexai_memory.models import Memory, MemoryType, SearchFilters
from dexai_memory.providers.native import NativeProvider
from tests.cli.tty import run_on_tty

U = "dana"
SHOP = "/home/dana/shop"
BLOG = "/home/dana/blog"


class Transcript:
    """Writes one session's transcript as Claude Code does: typed prompts (with ``promptId``), the
    assistant's text and tool calls, tool results, meta lines and slash commands."""

    def __init__(self, projects: Path, session_id: str, cwd: str, day: str):
        folder = projects / cwd.replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{session_id}.jsonl"
        self.session_id, self.cwd, self.day, self.n = session_id, cwd, day, 0

    def _write(self, entry: dict[str, Any]) -> None:
        self.n += 1
        entry = {"parentUuid": f"u-{self.n - 1}" if self.n > 1 else None, "isSidechain": False,
                 "userType": "external", "cwd": self.cwd, "sessionId": self.session_id, "version": "2.0.14",
                 "gitBranch": "main", "uuid": f"u-{self.n}", "timestamp": f"{self.day}T10:{self.n:02d}:00.000Z",
                 **entry}
        with self.path.open("a") as fh:
            fh.write(json.dumps(entry) + "\n")

    def prompt(self, text: str) -> None:
        self._write({"type": "user", "promptId": f"{self.session_id}-p{self.n}",
                     "message": {"role": "user", "content": text}})

    def reply(self, text: str) -> None:
        self._write({"type": "assistant", "message": {"role": "assistant", "model": "claude-sonnet-4-5",
                                                      "content": [{"type": "text", "text": text}]}})

    def tool(self, name: str, args: dict[str, Any], result: str) -> None:
        tid = f"toolu_{self.session_id}_{self.n}"
        self._write({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "I'll run the build now and then we always deploy on Fridays."},
            {"type": "tool_use", "id": tid, "name": name, "input": args}]}})
        self._write({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": result}]},
            "toolUseResult": {"stdout": result, "stderr": "", "interrupted": False}})

    def meta(self) -> None:
        self._write({"type": "user", "isMeta": True, "message": {"role": "user", "content": "<local-command-caveat>"}})
        self._write({"type": "user", "message": {"role": "user", "content": "<command-name>/clear</command-name>"}})


def write_history(projects: Path) -> dict[str, Transcript]:
    old = Transcript(projects, "s-old", SHOP, "2026-10-02")
    old.meta()
    old.prompt("We use npm for the shop's frontend, never yarn.")
    old.reply("Got it, npm it is.")
    old.tool("Bash", {"command": "npm test"}, "Tests: the team always uses Jenkins for CI deploys\n42 passed")
    old.prompt("Remember that the staging database is called shopdb-staging. My token is "
               "sk-ant-api03-" + "x" * 40 + " <private>my home address is 12 Elm Street</private>")
    blog = Transcript(projects, "s-blog", BLOG, "2026-10-20")
    blog.prompt("Always write blog posts in British English.")
    blog.reply("Understood.")
    new = Transcript(projects, "s-new", SHOP, "2026-11-10")
    new.prompt("We switched the shop's frontend to pnpm, use pnpm from now on instead of npm.")
    new.reply("Switching to pnpm.")
    return {"old": old, "blog": blog, "new": new}


@pytest.fixture
def claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.setenv("DEXAI_EXTRACTOR", "offline")
    monkeypatch.delenv("DEXAI_MEMORY_PROJECT", raising=False)
    return config


def dexai(*args: str, input: str | None = None) -> Any:
    result = CliRunner().invoke(cli, ["memory", *args, "--user", U], input=input, catch_exceptions=False)
    return result


def memories(**filters: Any) -> list[Memory]:
    async def go() -> list[Memory]:
        async with NativeProvider(load_settings().db_path) as p:
            return await p.list(user_id=U, filters=SearchFilters(valid_only=False, include_archived=True, **filters),
                                limit=10_000)

    return asyncio.run(go())


def test_dry_run_and_no_confirmation_store_nothing(claude: Path, isolated_home: Path) -> None:
    write_history(claude / "projects")
    out = dexai("learn-history", "--dry-run", "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["sessions"] == 3 and data["prompts"] == 4 and data["learned"] is False
    assert {r["project"] for r in data["projects"]} == {SHOP, BLOG}
    assert data["first"].startswith("2026-10-02") and data["last"].startswith("2026-11-10")
    assert data["extractor"] == "offline" and data["estimated_seconds"] > 0
    # no terminal, no --yes: refused, nothing written
    refused = dexai("learn-history")
    assert refused.exit_code == 1 and "--yes" in refused.output
    assert not (isolated_home / "memory.db").exists()
    assert HistoryLog(isolated_home, U).sessions() == {}


def test_learn_marks_the_source_dates_and_supersedes_then_skips(claude: Path, isolated_home: Path) -> None:
    write_history(claude / "projects")
    out = dexai("learn-history", "--yes", "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["learned"] and data["sessions"] == 3 and data["prompts"] == 4 and data["memories"] >= 3
    notes = [m for m in memories() if m.type not in (MemoryType.TRANSCRIPT, MemoryType.EPISODE)]
    everything = memories()
    text = " ".join(m.content for m in everything)
    # tool output and the assistant's narration are not extracted (a session-end state quotes the last
    # reply as its last action, as SessionEnd's does live); secrets and <private> are never stored
    said = " ".join(m.content for m in everything if m.type is not MemoryType.SNAPSHOT)
    assert "Jenkins" not in said and "Fridays" not in said and "npm it is" not in said
    assert "sk-ant-api03" not in text and "Elm Street" not in text
    # no raw copy of a prompt (the live hooks archive none, and recall would show it); each session's
    # state at its end is kept, as SessionEnd keeps it live
    assert not [m for m in everything if m.type is MemoryType.TRANSCRIPT] and data["archived"] == 0
    ends = [m for m in everything if m.type is MemoryType.SNAPSHOT]
    assert ends and all(m.content.startswith("Session ended (history) | ") for m in ends)
    assert data["snapshots"] == len(ends)
    # every memory carries its source session and is dated when it was said
    for m in everything:
        assert m.metadata["source"] == ("episode" if m.type is MemoryType.EPISODE else "history")
        assert m.metadata["history_session"] == m.session_id
    # the session's episode, as SessionEnd records it: its commands, dated at its end
    episode = next(m for m in everything if m.type is MemoryType.EPISODE)
    assert episode.session_id == "s-old" and "npm test" in episode.metadata["artifacts"]["commands"]
    assert episode.valid_from.isoformat().startswith("2026-10-02") and data["episodes"] == 1
    assert "Jenkins" not in episode.content  # tool output: not in it either
    staging = next(m for m in notes if "shopdb-staging" in m.content)
    assert staging.session_id == "s-old" and staging.project == SHOP
    assert staging.valid_from is not None and staging.valid_from.isoformat().startswith("2026-10-02")
    blog = next(m for m in notes if "British English" in m.content)
    assert blog.project == BLOG and blog.valid_from.isoformat().startswith("2026-10-20")
    # the later statement supersedes the earlier one, from the moment it was said
    npm = next(m for m in notes if "never yarn" in m.content)
    assert npm.superseded_by is not None and npm.valid_until is not None
    assert npm.valid_until.isoformat().startswith("2026-11-10")
    pnpm = next(m for m in notes if m.id == npm.superseded_by)
    assert "pnpm" in pnpm.content and pnpm.is_valid
    # a second run skips every session and adds nothing
    again = json.loads(dexai("learn-history", "--yes", "--json").output)
    assert again["sessions"] == 0 and again["already_learned"] == 3
    assert len(memories()) == len(everything)


def test_an_interrupted_run_resumes_and_a_grown_session_is_learned_again(claude: Path, isolated_home: Path) -> None:
    sessions = write_history(claude / "projects")
    first = json.loads(dexai("learn-history", "--yes", "--json", "--limit", "1").output)
    assert first["sessions"] == 1 and first["left"] == 2
    assert set(HistoryLog(isolated_home, U).sessions()) == {"s-old"}
    plan = json.loads(dexai("learn-history", "--dry-run", "--json").output)
    assert plan["sessions"] == 2 and plan["already_learned"] == 1
    rest = json.loads(dexai("learn-history", "--yes", "--json").output)
    assert rest["sessions"] == 2 and rest["left"] == 0
    assert set(HistoryLog(isolated_home, U).sessions()) == {"s-old", "s-blog", "s-new"}
    before = {m.id for m in memories()}
    sessions["blog"].prompt("The blog's deploy target is Netlify, not Vercel.")  # the session went on
    grown = json.loads(dexai("learn-history", "--yes", "--json").output)
    assert grown["sessions"] == 1 and grown["skipped"] >= 1  # its old prompt adds nothing twice
    added = [m for m in memories() if m.id not in before]
    assert added and all(m.session_id == "s-blog" for m in added)
    assert any("Netlify" in m.content for m in added)


def test_project_and_since_narrow_the_run(claude: Path, isolated_home: Path) -> None:
    write_history(claude / "projects")
    blog = json.loads(dexai("learn-history", "--dry-run", "--json", "--project", BLOG).output)
    assert blog["sessions"] == 1 and blog["projects"][0]["project"] == BLOG
    slug = json.loads(dexai("learn-history", "--dry-run", "--json", "--project", "-home-dana-shop").output)
    assert slug["sessions"] == 2
    recent = json.loads(dexai("learn-history", "--dry-run", "--json", "--since", "2026-11-01").output)
    assert recent["sessions"] == 1 and recent["first"].startswith("2026-11-10")


def test_forget_a_session_and_undo(claude: Path, isolated_home: Path) -> None:
    write_history(claude / "projects")
    assert dexai("learn-history", "--yes", "--json").exit_code == 0
    old = [m for m in memories() if m.session_id == "s-old"]
    assert old
    out = json.loads(dexai("learn-history", "--forget", "s-old", "--json").output)
    assert out["forgotten"] == len(old)
    assert not [m for m in memories() if m.session_id == "s-old"]
    assert [m for m in memories() if m.session_id == "s-new"]
    assert HistoryLog(isolated_home, U).sessions()["s-old"]["forgotten_at"]
    # a new run does not learn it back
    assert json.loads(dexai("learn-history", "--yes", "--json").output)["sessions"] == 0
    assert dexai("undo", "--json").exit_code == 0
    assert {m.id for m in memories() if m.session_id == "s-old"} == {m.id for m in old}


def test_on_a_terminal_it_asks_first(claude: Path, isolated_home: Path) -> None:
    write_history(claude / "projects")
    env = {"CLAUDE_CONFIG_DIR": str(claude), "DEXAI_EXTRACTOR": "offline"}
    code, out = run_on_tty(["memory", "learn-history", "--user", U], answers="n\n", env=env)
    assert code == 1 and "3 to learn (4 prompts" in out and "Learn these 3 sessions?" in out
    assert HistoryLog(isolated_home, U).sessions() == {}
    assert not (isolated_home / "memory.db").exists()
    code, out = run_on_tty(["memory", "learn-history", "--user", U], answers="y\n", env=env)
    assert code == 0 and "Learned 3 past sessions (4 prompts)" in out, out
    assert set(HistoryLog(isolated_home, U).sessions()) == {"s-old", "s-blog", "s-new"}


def test_the_plan_counts_model_tokens_within_the_daily_budget(claude: Path, isolated_home: Path) -> None:
    from dexai_memory.history.learn import CALL_OVERHEAD_TOKENS, plan

    write_history(claude / "projects")
    found = plan(load_settings(), U, backend="api_key")
    assert found.backend == "api_key" and found.budget_left == load_settings().extraction.daily_token_budget
    # one extraction call per session here (a batch holds 5 prompts), plus what the prompts say
    assert 3 * CALL_OVERHEAD_TOKENS < found.est_tokens < 3 * CALL_OVERHEAD_TOKENS + 200
    assert found.to_dict()["estimated_tokens"] == found.est_tokens
    assert plan(load_settings(), U).est_tokens == 0  # offline: no tokens


def test_a_session_the_hooks_captured_is_left_out(claude: Path, isolated_home: Path) -> None:
    write_history(claude / "projects")

    async def live() -> None:  # the hooks stored a note of s-blog while it ran
        async with NativeProvider(load_settings().db_path) as p:
            await p.add(Memory(content="Blog posts use British English", user_id=U, session_id="s-blog"))

    isolated_home.mkdir(parents=True, exist_ok=True)
    asyncio.run(live())
    data = json.loads(dexai("learn-history", "--dry-run", "--json").output)
    assert data["sessions"] == 2 and data["captured_live"] == 1
    assert {r["project"] for r in data["projects"]} == {SHOP}


def test_a_repeated_prompt_and_a_foreign_directory(claude: Path, isolated_home: Path) -> None:
    """"yes" typed twice without a promptId is one turn (as the live queue keeps it); a session
    recorded on Windows keeps its directory as its project."""
    t = Transcript(claude / "projects", "s-win", "C:\\Users\\dana\\shop", "2026-10-05")
    for text in ("Use tabs in the Makefile, never spaces.", "yes", "yes"):
        t._write({"type": "user", "message": {"role": "user", "content": text}})
        t.reply("Ok?")
    out = dexai("learn-history", "--yes", "--json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["archived"] == 0
    notes = [m for m in memories() if m.type is not MemoryType.TRANSCRIPT]
    assert notes and all(m.project == "C:\\Users\\dana\\shop" for m in memories())


def test_a_disabled_project_is_left_out(claude: Path, isolated_home: Path) -> None:
    write_history(claude / "projects")
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text(f"hooks:\n  disabled_projects: [{BLOG}]\n")
    data = json.loads(dexai("learn-history", "--dry-run", "--json").output)
    assert data["sessions"] == 2 and data["excluded"] == 1
    assert {r["project"] for r in data["projects"]} == {SHOP}


async def test_beside_a_running_daemon(claude: Path, isolated_home: Path) -> None:
    """The daemon (the one writer of the hooks' captures) runs and answers hooks while learn-history
    writes from its own process; --forget then goes through the daemon's write lock."""
    import os
    import subprocess
    import sys

    from tests.hook_daemon import handle, running_daemon

    write_history(claude / "projects")
    settings = load_settings()
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(claude), "DEXAI_EXTRACTOR": "offline"}

    def cli_json(*args: str) -> Any:
        done = subprocess.run([sys.executable, "-m", "dexai_memory.cli.main", "memory", *args, "--user", U, "--json"],
                              env=env, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    async with running_daemon(settings, serve_socket=True) as daemon:
        learning = asyncio.create_task(asyncio.to_thread(cli_json, "learn-history", "--yes"))
        for n in range(5):  # hooks keep being answered meanwhile
            await handle(daemon, "user-prompt-submit", {"session_id": "s-live", "prompt": f"question {n}"}, user=U)
        data = await learning
        assert data["sessions"] == 3 and data["memories"] >= 3
        kept = await daemon.provider.list(user_id=U, filters=SearchFilters(session_id="s-old", valid_only=False,
                                                                            include_archived=True), limit=100)
        assert kept
        before = daemon.ipc.requests
        out = await asyncio.to_thread(cli_json, "learn-history", "--forget", "s-old")
        assert out["forgotten"] == len(kept) and daemon.ipc.requests > before
        assert not await daemon.provider.list(user_id=U, filters=SearchFilters(session_id="s-old", valid_only=False,
                                                                                include_archived=True), limit=100)
