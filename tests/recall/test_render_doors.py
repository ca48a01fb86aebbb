"""A hostile corpus stored as memories and read back through every door a model reads memories by:
0 lines come back live (what "live" means: :mod:`tests.recall.render_corpus`).

Each entry of the corpus is stored for a user of its own (so every door shows it, whatever the
budgets) four times: a pinned standing instruction (persistent context, profile), an open commitment
whose what / who / due text are the entry (Coming up), a task snapshot (Session state), and a memory
taken from tool output whose tool name, event date and category are the entry too (Relevant, the
assembly's labels). The doors, all on a real SQLite store:

* the hooks, through the daemon's executor (what the command hooks, the HTTP hooks and the Agent SDK
  callbacks all get): SessionStart at startup, UserPromptSubmit with the entry as the prompt, and
  SessionStart after a compaction whose last prompt was the entry (the re-injection block);
* the Agent SDK callbacks of :func:`dexai_memory.hooks.sdk.memory_hooks`, called as the SDK calls them;
* the Messages API compaction loop's block (:func:`dexai_memory.api_compaction.build_memory_block`);
* the MCP tools as the daemon answers them (``tool.call``: recall, then forget by query), and the
  plugin's real stdio MCP server (``python -m dexai_memory.mcp_server``) remembering every entry
  and recalling it;
* the HTTP API on Starlette's test client: ``POST /api/context/assemble`` (every signal the entry),
  ``POST /api/recall`` and ``GET /api/persistent``.

Set ``RENDER_COUNTS`` to a file path to get the count of live lines per door as JSON (the figures of
the report); the tests assert every count is 0.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from dexai_memory.config import Settings, load_settings
from dexai_memory.daemon.core import MemoryDaemon
from dexai_memory.daemon.session_state import write_marker
from dexai_memory.embeddings import Embedder
from dexai_memory.models import Memory, MemoryType
from dexai_memory.providers.native import NativeProvider
from dexai_memory.supersession.rules import OfflineClassifier
from tests.hook_daemon import context_of, handle
from tests.pipeline_fakes import EchoExtractor, JoinSummarizer
from tests.recall.render_corpus import CORPUS, live_lines, shown

TOKEN = "render-test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
#: Live lines and entries shown, per door, over the module's tests.
TALLY: dict[str, dict[str, int]] = {}
#: A few live lines per door (reported with the counts, never asserted on).
EXAMPLES: dict[str, list[str]] = {}


def user(i: int) -> str:
    return f"hostile{i:02d}"


def memories_of(i: int, entry: str) -> list[Memory]:
    u = user(i)
    return [
        Memory(entry, user_id=u, type=MemoryType.INSIGHT, importance=9, confidence=0.95, pinned=True,
               metadata={"category": "instruction"}),
        Memory(entry, user_id=u, type=MemoryType.COMMITMENT, importance=8, confidence=0.9,
               metadata={"commitment": {"what": entry, "who": entry, "due_at": None, "due_text": entry,
                                        "status": "open"}}),
        Memory(entry, user_id=u, type=MemoryType.SNAPSHOT, importance=5, session_id=f"s{i}"),
        Memory(entry, user_id=u, type=MemoryType.FACT, importance=6, confidence=0.9,
               metadata={"origin": "tool", "tool": entry, "event_date": entry, "category": entry}),
    ]


async def store_corpus(provider: NativeProvider) -> None:
    for i, entry in enumerate(CORPUS):
        for m in memories_of(i, entry):
            await provider.add(m)


def tally(door: str, output: str, *, fence: bool = True) -> list[str]:
    """Count ``output``'s live lines and shown entries under ``door``; the live lines."""
    live = live_lines(output, fence=fence)
    row = TALLY.setdefault(door, {"live": 0, "answers_with_live": 0, "shown": 0, "answers": 0})
    row["live"] += len(live)
    row["answers_with_live"] += bool(live)
    row["shown"] += len(shown(output))
    row["answers"] += 1
    if live and len(EXAMPLES.setdefault(door, [])) < 4:
        EXAMPLES[door].append(live[0][:160])
    return live


@pytest.fixture(scope="module", autouse=True)
def report() -> Iterator[None]:
    yield
    path = os.environ.get("RENDER_COUNTS")
    if path:
        Path(path).write_text(json.dumps({"counts": TALLY, "examples": EXAMPLES}, indent=1, sort_keys=True,
                                         ensure_ascii=False))


def assert_no_live(doors: Callable[[str], bool], *, min_shown: int) -> None:
    rows = {d: r for d, r in TALLY.items() if doors(d)}
    assert rows
    assert {d: r["live"] for d, r in rows.items()} == dict.fromkeys(rows, 0), rows
    thin = {d: r["shown"] for d, r in rows.items() if r["shown"] < min_shown}
    assert not thin, f"doors that showed too few hostile entries to prove anything: {thin}"


@asynccontextmanager
async def daemon_on_corpus(settings: Settings, embedder: Embedder, *, serve_socket: bool = False,
                           stored: bool = True) -> AsyncIterator[MemoryDaemon]:
    settings.home.mkdir(parents=True, exist_ok=True)
    async with NativeProvider(settings.db_path, embedder=embedder) as provider:
        if stored:
            await store_corpus(provider)
        async with MemoryDaemon(settings, provider, extractor=EchoExtractor(), classifier=OfflineClassifier(),
                                summarizer=JoinSummarizer(), serve_socket=serve_socket, schedule=False) as daemon:
            yield daemon


async def test_hooks_sdk_compaction_and_mcp_tools_render_nothing_live(isolated_home: Path, embedder: Embedder,
                                                                       tmp_path: Path) -> None:
    from dexai_memory.agent_tools.ops import tool_ops
    from dexai_memory.api_compaction import build_memory_block
    from dexai_memory.hooks.sdk import MemoryHooks

    settings = load_settings()
    async with daemon_on_corpus(settings, embedder) as daemon:
        call = tool_ops(daemon)["tool.call"]
        for i, entry in enumerate(CORPUS):
            u, session = user(i), f"s{i}"
            start = await handle(daemon, "session-start", {"session_id": session, "source": "startup",
                                                           "cwd": str(tmp_path)}, user=u)
            tally("hook SessionStart (startup)", context_of(start, "SessionStart"))
            prompt = await handle(daemon, "user-prompt-submit", {"session_id": session, "prompt": entry,
                                                                 "cwd": str(tmp_path)}, user=u)
            tally("hook UserPromptSubmit", context_of(prompt, "UserPromptSubmit"))
            write_marker(settings, session, {"recent_prompts": [entry]})
            after = await handle(daemon, "session-start", {"session_id": session, "source": "compact",
                                                           "cwd": str(tmp_path)}, user=u)
            tally("hook SessionStart (compact: re-injection)", context_of(after, "SessionStart"))

            hooks = MemoryHooks(daemon, user_id=u).as_dict()
            for event, data in (("SessionStart", {"session_id": f"sdk{i}", "source": "startup"}),
                                ("UserPromptSubmit", {"session_id": f"sdk{i}", "prompt": entry})):
                out = await hooks[event][0].hooks[0]({**data, "cwd": str(tmp_path)}, None,  # type: ignore[arg-type]
                                                     {"signal": None})  # type: ignore[typeddict-item]
                tally(f"Agent SDK {event}", str(out.get("hookSpecificOutput", {}).get("additionalContext", "")))

            block = await build_memory_block(daemon, user_id=u, query=entry, settings=settings)
            tally("Messages API compaction block", block)

            for tool, arguments in (("recall", {"query": entry}), ("forget", {"query": entry})):
                answer = await call({"name": tool, "user_id": u, "arguments": arguments})
                assert [c["type"] for c in answer["content"]] == ["text"]  # one block: no raw JSON beside it
                tally(f"MCP {tool} (daemon tool.call)", answer["content"][0]["text"])
    assert_no_live(lambda d: not d.startswith(("MCP", "HTTP")), min_shown=len(CORPUS) // 2)
    assert_no_live(lambda d: d.startswith("MCP") and "stdio" not in d, min_shown=len(CORPUS) // 2)


async def test_the_stdio_mcp_server_renders_nothing_live(isolated_home: Path, embedder: Embedder) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    settings = load_settings()
    env = {**{k: v for k, v in os.environ.items() if k not in ("DEXAI_MEMORY_PROJECT", "CLAUDE_CODE_SESSION_ID")},
           "DEXAI_MEMORY_HOME": str(isolated_home), "DEXAI_MEMORY_USER": "mcp-user", "DEXAI_DAEMON_AUTOSTART": "0"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "dexai_memory.mcp_server"], env=env)
    async with daemon_on_corpus(settings, embedder, serve_socket=True, stored=False):
        with open(os.devnull, "w") as errlog:  # noqa: ASYNC230 - the server's stderr, opened once
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                for entry in CORPUS:
                    added = await client.call_tool("remember", {"content": entry[:1000], "category": "fact"})
                    assert len(added.content) == 1 and not added.structured_content
                    tally("MCP remember (stdio server)", "\n".join(b.text for b in added.content))  # type: ignore[union-attr]
                for entry in CORPUS:
                    found = await client.call_tool("recall", {"query": entry[:500]})
                    assert len(found.content) == 1 and not found.structured_content
                    tally("MCP recall (stdio server)", "\n".join(b.text for b in found.content))  # type: ignore[union-attr]
    assert_no_live(lambda d: "stdio" in d, min_shown=len(CORPUS) // 2)


def test_the_http_api_renders_nothing_live(isolated_home: Path) -> None:
    from dexai_memory.api.app import build_app

    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\n")
    app = build_app(load_settings(), "panel-user", TOKEN)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        portal = client.portal
        assert portal is not None
        portal.call(store_corpus, app.state.api.provider)
        for i, entry in enumerate(CORPUS):
            u = user(i)
            signals: dict[str, Any] = {"query": entry, "task": entry, "current_file": "src/app.py",
                                       "recent_errors": [entry], "activity": "debugging"}
            assembled = client.post("/api/context/assemble", json={"user_id": u, "signals": signals,
                                                                   "budget": 8000}, headers=AUTH)
            assert assembled.status_code == 200, assembled.text
            tally("HTTP POST /api/context/assemble", assembled.json()["context"])
            recalled = client.post("/api/recall", json={"user_id": u, "prompt": entry}, headers=AUTH)
            assert recalled.status_code == 200, recalled.text
            tally("HTTP POST /api/recall (text)", recalled.json()["text"])
            section = client.get("/api/persistent", params={"user_id": u}, headers=AUTH)
            assert section.status_code == 200, section.text
            tally("HTTP GET /api/persistent (text)", section.json()["text"], fence=False)
    assert_no_live(lambda d: d.startswith("HTTP") and "recall" not in d, min_shown=len(CORPUS) // 2)
    assert_no_live(lambda d: "recall" in d, min_shown=1)
