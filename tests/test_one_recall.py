"""Every door shows the same recall: for the same prompt and store, the block the
UserPromptSubmit hook injects (the plugin's launcher, as Claude Code runs it), ``dexai memory
recall``, the MCP ``recall`` tool (the daemon's ``tool.call``, what the MCP server forwards)
and ``POST /api/recall`` (the panel's API served by the daemon) are identical, over 50 prompts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import socket
import sys
from pathlib import Path

import httpx
import pytest

from dexai_memory.api.auth import load_token
from dexai_memory.config import load_settings
from dexai_memory.daemon import MemoryDaemon
from dexai_memory.daemon.ipc import ipc_request
from dexai_memory.embeddings import Embedder
from dexai_memory.models import Memory, MemoryType
from dexai_memory.providers.native import NativeProvider

REPO = Path(__file__).resolve().parents[1]
LAUNCHER = REPO / "hooks" / "dexai-hook"
USER = "alice"
HINT = "\n\n[dexai-memory hint]"

FACTS = [
    ("Alice prefers tabs over spaces in Python code", MemoryType.PREFERENCE),
    ("The project uses PostgreSQL 16 for the orders service", MemoryType.FACT),
    ("Never force-push to the main branch", MemoryType.INSIGHT),
    ("Run ruff and mypy before every commit", MemoryType.PREFERENCE),
    ("Alice's manager is Priya Raman", MemoryType.RELATIONSHIP),
    ("The staging server is staging.internal on port 8443", MemoryType.FACT),
    ("Alice moved from Copenhagen to Lisbon in March", MemoryType.EVENT),
    ("The billing module is written in Go, the rest in Python", MemoryType.FACT),
    ("Deploys happen on Tuesdays and Thursdays only", MemoryType.FACT),
    ("Alice is allergic to peanuts", MemoryType.FACT),
    ("The team decided to use pnpm instead of npm because of disk space", MemoryType.FACT),
    ("Use conventional commits for every commit message", MemoryType.PREFERENCE),
    ("The CI runs on GitHub Actions with a 30 minute limit", MemoryType.FACT),
    ("Alice's favourite editor is Neovim", MemoryType.PREFERENCE),
    ("The API rate limit is 100 requests per minute per user", MemoryType.FACT),
    ("Bob owns the payments service and reviews its pull requests", MemoryType.RELATIONSHIP),
    ("The database backups run nightly at 02:00 UTC", MemoryType.FACT),
    ("Alice drinks her coffee black", MemoryType.PREFERENCE),
    ("The mobile app targets iOS 17 and Android 14", MemoryType.FACT),
    ("Do not log personal data in the request logger", MemoryType.INSIGHT),
    ("The frontend uses React with Vite", MemoryType.FACT),
    ("Alice has a dog named Pixel", MemoryType.FACT),
    ("The release of version 2.0 is planned for June", MemoryType.EVENT),
    ("Tests must not reach the network beyond localhost", MemoryType.PREFERENCE),
    ("The search service uses Elasticsearch 8", MemoryType.FACT),
]

PROMPTS = [
    "tabs or spaces?", "which database does the orders service use?", "can I force-push to main?",
    "what should I run before committing?", "who is my manager?", "where is the staging server?",
    "where do I live now?", "what language is billing written in?", "when do we deploy?",
    "what am I allergic to?", "why did we pick pnpm?", "how should commit messages look?",
    "what CI do we use and its limit?", "which editor do I like?", "what is the API rate limit?",
    "who owns payments?", "when do backups run?", "how do I take my coffee?",
    "which mobile OS versions do we target?", "is it ok to log user emails?", "what is the frontend stack?",
    "what's my dog called?", "when is version 2.0 released?", "may tests call external APIs?",
    "what does the search service run on?", "xyzzy", "plugh frobnicate", "tell me about Lisbon",
    "Priya", "Go or Python for billing?", "review process for payments pull requests",
    "nightly jobs", "React or Vue?", "peanuts in the team lunch order?", "Elasticsearch version",
    "what do I know about Neovim?", "commit message format and linting", "deploy schedule next week",
    "port of staging", "iOS target", "PostgreSQL version", "pnpm vs npm", "rate limiting rules",
    "Bob", "Pixel the dog", "June release plans", "coffee", "Copenhagen", "GitHub Actions timeout",
    "what is the weather on Mars?",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _hook_block(home: Path, session: str, prompt: str) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(home.parent), "DEXAI_MEMORY_HOME": str(home),
           "DEXAI_MEMORY_USER": USER, "DEXAI_DAEMON_AUTOSTART": "0", "DEXAI_HOOK_PYTHON": sys.executable}
    proc = await asyncio.create_subprocess_exec(
        "/bin/sh", str(LAUNCHER), "user-prompt-submit", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, cwd=str(home.parent))
    out, err = await proc.communicate(json.dumps({"session_id": session, "prompt": prompt,
                                                  "cwd": str(home.parent)}).encode())
    assert proc.returncode == 0, err
    answer = json.loads(out or b"{}")
    text = (answer.get("hookSpecificOutput") or {}).get("additionalContext") or ""
    return str(text).split(HINT)[0].strip()


async def test_every_door_shows_the_same_block(isolated_home: Path, embedder: Embedder, tmp_path: Path) -> None:
    settings = load_settings()
    settings = dataclasses.replace(settings, daemon=dataclasses.replace(settings.daemon, api_port=_free_port()))
    provider = NativeProvider(settings.db_path, embedder=embedder)
    await provider.start()
    for content, kind in FACTS:
        await provider.add(Memory(content=content, user_id=USER, type=kind))
    daemon = MemoryDaemon(settings, provider, serve_socket=True, serve_api=True, schedule=False)
    await daemon.start()
    try:
        await daemon.api_ready.wait()
        assert daemon.api is not None
        token = load_token(settings.home)
        hook, mcp, api = [], [], []
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{daemon.api.port}",
                                     headers={"Authorization": f"Bearer {token}"}) as client:
            for i, prompt in enumerate(PROMPTS):
                hook.append(await _hook_block(settings.home, f"session-{i}", prompt))
                reply = await asyncio.to_thread(ipc_request, settings.socket_path, {
                    "op": "tool.call", "name": "recall", "arguments": {"query": prompt}, "user_id": USER}, 30)
                assert reply is not None and not reply.get("isError"), reply
                text = reply["content"][0]["text"]
                mcp.append("" if text.startswith("No memories found") else text.split("\n\nMemory ids")[0].strip())
                answer = await client.post("/api/recall", json={"prompt": prompt, "user_id": USER})
                assert answer.status_code == 200, answer.text
                api.append(answer.json()["text"].strip())
        queries = tmp_path / "queries.jsonl"
        queries.write_text("".join(json.dumps({"query": p}) + "\n" for p in PROMPTS))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "dexai_memory.cli.main", "memory", "recall", "--queries", str(queries), "--json",
            "--user", USER, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "DEXAI_MEMORY_HOME": str(settings.home)})
        out, err = await proc.communicate()
        assert proc.returncode == 0, err.decode()
        cli = [json.loads(line)["text"].strip() for line in out.decode().splitlines() if line.strip()]
    finally:
        await daemon.stop()
        await provider.aclose()
    assert len(cli) == len(PROMPTS) == 50
    for prompt, blocks in zip(PROMPTS, zip(hook, cli, mcp, api, strict=True), strict=True):
        assert len(set(blocks)) == 1, f"{prompt!r}: hook / cli / mcp / api differ:\n" + "\n---\n".join(blocks)
    shown = sum(1 for b in hook if b)
    assert shown >= 25, f"only {shown} of 50 prompts recalled anything: the comparison proves little"
    assert any(not b for b in hook), "no prompt came back empty: 'nothing relevant' is never compared"


@pytest.fixture(autouse=True)
def _quiet_api(monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon's API must not open a browser or read the developer's settings."""
    monkeypatch.delenv("BROWSER", raising=False)
