"""The README a newcomer reads in five minutes: short, its Python runs as pasted (the Agent SDK script
through the real Claude Code CLI against the fake Messages API), its links lead somewhere, it and the
docs describe the code and not its history, and every page of docs/ is reachable from it."""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dexai_memory.config import load_settings
from dexai_memory.demo.claude_cli import build_env, claude_binary
from dexai_memory.demo.fakeapi import FakeMessagesAPI, text_of
from dexai_memory.embeddings import Embedder
from dexai_memory.models import Memory, MemoryType
from dexai_memory.providers.native import NativeProvider

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [README, *DOCS, REPO / "benchmarks" / "README.md"]
#: "seed 002", "issue 15", "session 6": where a text came from, not what the code does. A hyphenated
#: word ("multi-session 73.8", a LongMemEval category) is not one.
HISTORY = re.compile(r"(?<![-\w])(seed|issue|session)s? #?\d{1,3}(?![\d.])", re.I)


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_is_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_readme_answers_in_order() -> None:
    heads = [line[3:] for line in README.read_text(encoding="utf-8").splitlines() if line.startswith("## ")]
    order = ["Two commands", "Claude Code", "Agent SDK", "The CLI", "Where your data lives, and backups",
             "How it compares", "Limits"]
    assert [h for h in heads if h in order] == order, heads


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_history_references(page: Path) -> None:
    hits = [m.group(0) for m in HISTORY.finditer(page.read_text(encoding="utf-8"))]
    assert not hits, f"{page.name} speaks of {hits}: say what the code does instead"


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        if not (page.parent / target.split("#")[0]).exists():
            broken.append(target)
    assert not broken, f"{page.name}: broken links {broken}"


def test_every_docs_page_is_linked_from_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    assert not [doc.name for doc in DOCS if f"(docs/{doc.name})" not in text]


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: str(p.relative_to(REPO)))
def test_every_python_block_compiles(page: Path) -> None:
    for block in python_blocks(page.read_text(encoding="utf-8")):
        compile(block, page.name, "exec")  # a top-level `await` or `async with` fails here


def sdk_script() -> str:
    (script,) = [b for b in python_blocks(README.read_text(encoding="utf-8")) if "ClaudeSDKClient" in b]
    return script


@pytest.mark.e2e
def test_the_agent_sdk_script_runs_as_pasted(tmp_path: Path, isolated_home: Path, embedder: Embedder) -> None:
    """The README's script, saved to a file and run with ``python``: the real Agent SDK starts the real
    Claude Code CLI (bundled in claude-agent-sdk) against the fake Messages API; the memory the hooks
    recall for its prompt reaches the model and the script prints the model's answer."""
    fact = "Alice prefers tabs over spaces for indentation"

    async def plant() -> None:
        settings = load_settings(home=isolated_home)
        async with NativeProvider(settings.db_path, embedder=embedder) as provider:
            await provider.add(Memory(content=fact, user_id="alice", type=MemoryType.PREFERENCE, importance=8))

    asyncio.run(plant())
    script = tmp_path / "agent.py"
    script.write_text(sdk_script(), encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    with FakeMessagesAPI() as api:
        env = build_env(tmp_path / "claude-home", api.base_url, {
            "DEXAI_MEMORY_HOME": str(isolated_home), "DEXAI_EXTRACTOR": "offline", "DEXAI_DAEMON_AUTOSTART": "0",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))})
        proc = subprocess.run([sys.executable, str(script)], env=env, cwd=project, capture_output=True, text=True,
                              timeout=300, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert proc.stdout.strip().splitlines()[-1] == "OK."  # the fake model's answer, printed by the script
        assert any(fact in text_of(request) for request in api.message_requests()), \
            "the memory recalled for the prompt did not reach the model"


def claude_lines() -> list[list[str]]:
    """The subcommand words of each ``claude ...`` line in the README's bash blocks (up to the first
    argument: a path, a URL or ``plugin@marketplace``)."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S):
        for line in block.splitlines():
            words = line.split(" #")[0].split()
            if words[:1] == ["claude"]:
                out.append(list(itertools.takewhile(lambda w: re.fullmatch(r"[a-z-]+", w), words[1:])))
    return out


@pytest.mark.e2e
@pytest.mark.parametrize("words", claude_lines(), ids=" ".join)
def test_claude_commands_exist(words: list[str], tmp_path: Path) -> None:
    """Each ``claude ...`` command the README gives is one the bundled Claude Code CLI has (its ``--help``
    shows that command's usage, not its parent's)."""
    proc = subprocess.run([str(claude_binary()), *words, "--help"], env={**build_env(tmp_path, "http://127.0.0.1:9")},
                          capture_output=True, text=True, timeout=60, check=False)
    usage = r"Usage: claude " + " ".join(rf"{re.escape(w)}(\|[\w-]+)*" for w in words) + r" "
    assert re.search(usage, proc.stdout), proc.stdout[:500]


def test_python_modules_in_shell_blocks_exist() -> None:
    text = "\n".join(re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S))
    modules = re.findall(r"python -m ([\w.]+)", text)
    assert modules
    sys.path.insert(0, str(REPO))  # benchmarks/ is a package of the checkout, not of the wheel
    try:
        assert not [m for m in modules if importlib.util.find_spec(m) is None]
    finally:
        sys.path.remove(str(REPO))


def test_the_backup_block_runs_as_pasted(tmp_path: Path, isolated_home: Path) -> None:
    """The README's backup commands, line by line through a shell in a data directory with one memory:
    each exits 0, ``PATH`` standing for the backup the first line made, and the export comes back."""
    block = next(b for b in re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
                 if "dexai memory backup" in b)
    dexai = Path(sys.executable).with_name("dexai")
    env = {**os.environ, "DEXAI_MEMORY_HOME": str(isolated_home), "DEXAI_MEMORY_USER": "alice",
           "DEXAI_DAEMON_AUTOSTART": "0", "DEXAI_EXTRACTOR": "offline",
           "PATH": os.pathsep.join([str(dexai.parent), os.environ.get("PATH", "")])}
    subprocess.run(["dexai", "memory", "add", "Alice keeps the release notes in docs/CHANGES.md"], env=env,
                   cwd=tmp_path, check=True, capture_output=True, timeout=120)
    made = None
    for line in (ln.split("#")[0].strip() for ln in block.splitlines()):
        if not line:
            continue
        if " PATH" in line:
            assert made is not None, "restore-backup before any backup"
            line = line.replace("PATH", str(made))
        proc = subprocess.run(["bash", "-c", line], env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=120, check=False)
        assert proc.returncode == 0, (line, proc.stdout, proc.stderr)
        if line == "dexai memory backup":
            made = next(p for p in (isolated_home / "backups").iterdir() if p.is_dir() or p.suffix == ".db")
    listed = subprocess.run(["dexai", "memory", "list"], env=env, cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, check=True)
    assert "docs/CHANGES.md" in listed.stdout
    assert (tmp_path / "memories.json").exists()
