"""Routines: requests the user makes in the same order in two sessions become a procedure at
consolidation; through a real daemon on a real native store (the sessions' SessionEnd records
their episodes, ``dexai memory consolidate`` finds the routine, the next SessionStart shows it)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from click.testing import CliRunner

from dexai_memory.capture.routines import find_routines, requests_of
from dexai_memory.cli.main import cli
from dexai_memory.config import load_settings
from dexai_memory.models import MemoryType, SearchFilters
from dexai_memory.providers.native import NativeProvider
from tests.capture.test_episodes import CWD, Transcript
from tests.hook_daemon import context_of, handle, running_daemon

U = "dana"


def test_requests_of_a_prompt() -> None:
    assert requests_of("run the tests again, then commit") == [("run tests", "run the tests"), ("commit", "commit")]
    assert requests_of("ok now push to main") == [("push main", "push to main")]
    assert requests_of("Can you run the tests?") == [("run tests", "run the tests")]  # asked as a question
    assert requests_of("What does the parser do?") == []            # a question, no request
    assert requests_of("The build is slow today.") == []           # a statement, no request


def test_a_run_in_two_sessions_is_a_routine_and_its_parts_are_not_repeated() -> None:
    sessions = [("s1", ["fix the login bug", "run the tests", "commit and push"]),
                ("s2", ["run the tests again", "ok commit", "push", "thanks"]),
                ("s3", ["run the tests", "explain this function"])]
    [routine] = find_routines(sessions)
    assert routine.content == "Routine (asked in 2 sessions): run the tests, then commit, then push."
    assert routine.sessions == ("s1", "s2")
    assert find_routines([("s1", ["run the tests", "commit"])]) == []  # one session is not a habit


def _session(path: Path, sid: str, prompts: list[str]) -> Transcript:
    t = Transcript(path, sid)
    for p in prompts:
        t.prompt(p)
        t.tool("Bash", {"command": "make test"}, "ok", stdout="ok")
    return t


def test_routines_are_found_at_consolidation_and_open_the_next_session(isolated_home: Path, tmp_path: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\n")
    settings = load_settings(home=isolated_home)
    days = {"s1": ["fix the rounding bug in invoices", "run the tests", "commit and push to main"],
            "s2": ["add a CSV export of invoices", "run the tests again", "commit", "push to main"]}

    async def sessions() -> None:
        async with NativeProvider(settings.db_path, embedder=None) as store, \
                running_daemon(settings, store) as daemon:
            for sid, prompts in days.items():
                t = _session(tmp_path / f"{sid}.jsonl", sid, prompts)
                await handle(daemon, "session-end", {"session_id": sid, "transcript_path": str(t.path), "cwd": CWD},
                             user=U)

    asyncio.run(sessions())
    result = CliRunner().invoke(cli, ["memory", "consolidate", "--user", U, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["users"][0]["consolidation"]["routines"] == 1, result.output

    async def next_session() -> tuple[list[str], str]:
        async with NativeProvider(settings.db_path, embedder=None) as store:
            kept = await store.list(user_id=U, filters=SearchFilters(types=(MemoryType.PROCEDURE,)))
            async with running_daemon(settings, store) as daemon:
                answer = await handle(daemon, "session-start", {"session_id": "s3", "source": "startup", "cwd": CWD},
                                      user=U)
            return [m.content for m in kept], context_of(answer, "SessionStart")

    kept, block = asyncio.run(next_session())
    routine = "Routine (asked in 2 sessions): run the tests, then commit, then push to main."
    assert kept == [routine]
    assert "Procedures (how the user works):" in block and routine in block, block
    # a second consolidation finds nothing new to write
    again = CliRunner().invoke(cli, ["memory", "consolidate", "--user", U, "--json"], catch_exceptions=False)
    assert json.loads(again.output)["users"][0]["consolidation"]["routines"] == 0, again.output
