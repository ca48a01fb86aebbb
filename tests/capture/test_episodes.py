"""Episodes from a Claude Code transcript (the real JSONL shape): artifacts, forms, one episode
per stretch, through the plugin's command hooks answered by a real daemon."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from dexai_memory.capture.episodes import build_episode, episode_from_transcript, stretch_entries
from dexai_memory.config import load_settings
from dexai_memory.embeddings import Embedder
from dexai_memory.models import MemoryType, SearchFilters
from dexai_memory.providers.native import NativeProvider
from tests.hook_daemon import launch_sync, running_daemon

CWD = "/home/dana/shop"


class Transcript:
    """Writes Claude Code transcript entries (user prompts, tool uses and their results)."""

    def __init__(self, path: Path, session_id: str = "sess-1"):
        self.path = path
        self.session_id = session_id
        self.n = 0

    def _write(self, entry: dict[str, Any]) -> None:
        self.n += 1
        entry = {"uuid": f"u-{self.n}", "sessionId": self.session_id, "cwd": CWD,
                 "timestamp": f"2026-11-20T10:{self.n:02d}:00Z", **entry}
        with self.path.open("a") as fh:
            fh.write(json.dumps(entry) + "\n")

    def prompt(self, text: str) -> None:
        self._write({"type": "user", "message": {"role": "user", "content": text}})

    def tool(self, name: str, args: dict[str, Any], result: str = "ok", *, error: bool = False,
             stdout: str | None = None) -> None:
        tid = f"toolu_{self.n}"
        self._write({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Working on it."},
            {"type": "tool_use", "id": tid, "name": name, "input": args}]}})
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tid, "content": result}
        if error:
            block["is_error"] = True
        entry: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": [block]}}
        if stdout is not None:
            entry["toolUseResult"] = {"stdout": stdout, "stderr": "", "interrupted": False}
        self._write(entry)

    def compact_boundary(self) -> None:
        self._write({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted"})
        # what Claude Code writes after it: the summary, a caveat, the command and its output
        self._write({"type": "user", "isCompactSummary": True, "isVisibleInTranscriptOnly": True,
                     "message": {"role": "user", "content": "This session is being continued... Summary: chatted"}})
        self._write({"type": "user", "isMeta": True, "message": {"role": "user", "content": "<local-command-caveat>"}})
        self._write({"type": "user", "message": {"role": "user", "content": "<command-name>/compact</command-name>"}})


def session_one(path: Path) -> Transcript:
    t = Transcript(path)
    t.prompt("Fix the rounding bug in invoices. Totals are off by a cent.")
    t.tool("Read", {"file_path": f"{CWD}/src/billing/invoice.py"}, "def total(): ...")
    t.tool("Edit", {"file_path": f"{CWD}/src/billing/invoice.py", "old_string": "float(", "new_string": "Decimal("})
    t.tool("Bash", {"command": "pytest tests/test_invoice.py"},
           "FAILED tests/test_invoice.py::test_total\nE   AssertionError: 10.01 != 10.00", error=True)
    t.tool("Write", {"file_path": f"{CWD}/tests/test_invoice.py", "content": "..."})
    t.tool("Bash", {"command": "pytest tests/test_invoice.py"}, "1 passed", stdout="1 passed in 0.1s")
    t.tool("Bash", {"command": "git commit -am 'Round invoices with Decimal' --token=sk-ant-api03-" + "x" * 40},
           "", stdout="[fix/rounding 1a2b3c4d] Round invoices with Decimal\n 2 files changed")
    t.tool("MultiEdit", {"file_path": "/elsewhere/notes.md", "edits": []})
    return t


def test_artifacts_and_forms_from_a_real_format_transcript(tmp_path: Path) -> None:
    session_one(tmp_path / "t.jsonl")
    episode = episode_from_transcript(str(tmp_path / "t.jsonl"), "sess-1")
    assert episode is not None
    art = episode.artifacts
    assert art["files"] == ["src/billing/invoice.py", "tests/test_invoice.py", "/elsewhere/notes.md"]
    assert art["commands"][0] == "pytest tests/test_invoice.py" and len(art["commands"]) == 2
    assert art["commits"] == ["1a2b3c4d Round invoices with Decimal"]
    assert art["errors_fixed"] == [{"command": "pytest tests/test_invoice.py",
                                    "error": "AssertionError: 10.01 != 10.00"}]
    assert "sk-ant-api03" not in json.dumps(episode.to_dict())  # commands are redacted
    assert episode.title == "Fix the rounding bug in invoices"
    assert "invoice.py" in episode.summary and "1a2b3c4d" in episode.summary
    assert len(episode.compressed) < len(episode.summary) < len(episode.full)
    assert episode.key.startswith("fix rounding") and "invoice" in episode.key
    memory = episode.memory("dana", "shop")
    assert memory.type is MemoryType.EPISODE and memory.content == episode.full
    assert set(memory.metadata["forms"]) == {"summary", "compressed", "index"}
    assert set(memory.metadata["artifacts"]) == {"files", "commands", "commits", "errors_fixed"}


def test_a_stretch_starts_after_the_last_compaction(tmp_path: Path) -> None:
    t = session_one(tmp_path / "t.jsonl")
    first = episode_from_transcript(str(t.path), "sess-1")
    t.compact_boundary()
    assert len(stretch_entries(str(t.path))) == 3 and episode_from_transcript(str(t.path), "sess-1") is None
    t.prompt("Now add a CSV export of invoices.")
    t.tool("Write", {"file_path": f"{CWD}/src/billing/export.py", "content": "..."})
    second = episode_from_transcript(str(t.path), "sess-1")
    assert first is not None and second is not None and second.id != first.id
    assert second.artifacts["files"] == ["src/billing/export.py"] and second.artifacts["commits"] == []
    assert second.title == "Now add a CSV export of invoices" and "continued" not in second.full
    # the same stretch, grown: the same episode id
    t.tool("Bash", {"command": "git status"}, "clean")
    grown = episode_from_transcript(str(t.path), "sess-1")
    assert grown is not None and grown.id == second.id and grown.artifacts["commands"] == ["git status"]
    assert build_episode([], "x") is None


def _hook(event: str, payload: dict[str, Any], home: Path) -> dict[str, Any] | str:
    proc = launch_sync(event, payload, home, DEXAI_MEMORY_USER="dana")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.strip()
    return out if event == "pre-compact" else json.loads(out)


async def _episodes(provider: NativeProvider) -> list[Any]:
    return await provider.list(user_id="dana", filters=SearchFilters(types=(MemoryType.EPISODE,)))


async def test_precompact_and_session_end_store_one_episode_per_stretch(isolated_home: Path, tmp_path: Path,
                                                                        embedder: Embedder) -> None:
    """The plugin's hooks (launcher processes) answered by a real daemon."""
    t = session_one(tmp_path / "t.jsonl")
    payload = {"session_id": "sess-1", "transcript_path": str(t.path), "cwd": CWD, "trigger": "manual"}
    settings = load_settings(home=isolated_home)
    async with NativeProvider(settings.db_path, embedder=embedder) as provider, \
            running_daemon(settings, provider, serve_socket=True):
        assert "compact" in str(await asyncio.to_thread(_hook, "pre-compact", payload, isolated_home)).lower()
        await asyncio.to_thread(_hook, "pre-compact", payload, isolated_home)  # the same stretch: no second one
        episodes = await _episodes(provider)
        assert len(episodes) == 1 and episodes[0].metadata["artifacts"]["commits"]
        assert episodes[0].session_id == "sess-1" and episodes[0].project
        assert episodes[0].metadata["forms"]["index"]
        t.compact_boundary()
        t.prompt("Now add a CSV export of invoices.")
        t.tool("Write", {"file_path": f"{CWD}/src/billing/export.py", "content": "..."})
        assert await asyncio.to_thread(_hook, "session-end", payload, isolated_home) == {}
        await asyncio.to_thread(_hook, "session-end", payload, isolated_home)
        episodes = await _episodes(provider)
        assert len(episodes) == 2
        assert {tuple(e.metadata["artifacts"]["files"])[:1] for e in episodes} == {
            ("src/billing/invoice.py",), ("src/billing/export.py",)}
        # searches without a type filter skip episodes (they never flood recall or the L1 block)
        assert await provider.search("invoice rounding Decimal", user_id="dana") == []


def test_a_short_exchange_with_nothing_done_is_not_an_episode() -> None:
    """"Remember that I prefer pnpm" is kept as its fact; an episode of it would only repeat the prompt."""
    from dexai_memory.capture.episodes import MIN_DISCUSSION_PROMPTS, build_episode

    def prompt(i: int) -> dict[str, object]:
        return {"type": "user", "uuid": f"u{i}", "timestamp": f"2026-11-20T10:0{i}:00Z",
                "message": {"role": "user", "content": f"Question {i} about the release plan for the billing service"}}

    short = [prompt(i) for i in range(MIN_DISCUSSION_PROMPTS - 1)]
    assert build_episode(short, "s1") is None
    longer = [prompt(i) for i in range(MIN_DISCUSSION_PROMPTS)]
    episode = build_episode(longer, "s1")
    assert episode is not None and "discussion only" in episode.summary and " " in episode.key


def test_a_commit_with_an_empty_message_does_not_lose_the_episode() -> None:
    from dexai_memory.capture.episodes import _commit_from_command

    assert _commit_from_command('git commit -m ""') == "(commit)"
    assert _commit_from_command("git commit -m 'fix: the parser\n\nlong body'") == "fix: the parser"
