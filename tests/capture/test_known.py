"""Claude Code's own memory (:mod:`dexai_memory.capture.known`): what ``CLAUDE.md`` or the auto
memory already says is not stored again; the files are read, never written."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dexai_memory.capture.known import ClaudeMemory, memory_files
from dexai_memory.config import load_settings
from dexai_memory.models import Turn
from dexai_memory.pipeline import Pipeline
from dexai_memory.providers.native import NativeProvider
from tests.pipeline_fakes import EchoExtractor


@pytest.fixture
async def provider(tmp_path: Path) -> AsyncIterator[NativeProvider]:
    async with NativeProvider(tmp_path / "memory.db", embedder=None) as p:
        yield p


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


async def test_what_claude_md_and_the_auto_memory_say_is_not_stored_again(
        provider: NativeProvider, tmp_path: Path) -> None:
    project, config = tmp_path / "app", tmp_path / "claude-config"
    write(project / "CLAUDE.md", "# Rules\n- Use pnpm, never npm, for every install.\n- Tests: `make check`.\n")
    auto = config / "projects" / str(project).replace("/", "-").replace("_", "-") / "memory" / "MEMORY.md"
    write(auto, "The staging server is staging.example.net and deploys run on Fridays.\n")
    before = {p: p.read_text() for p in (project / "CLAUDE.md", auto)}
    pipeline = Pipeline(provider, load_settings(), extractor=EchoExtractor())
    pipeline.claude_memory = ClaudeMemory(env={"CLAUDE_CONFIG_DIR": str(config)})
    said = ["Use pnpm for every install, never npm.",          # CLAUDE.md says it
            "Deploys to staging.example.net run on Fridays.",    # the auto memory says it
            "The billing service is owned by Priya Raman."]      # new
    turns = [Turn(id=f"t{i}", user_id="u", content=text, session_id="s", project=str(project))
             for i, text in enumerate(said)]
    report = await pipeline.process([(t, ()) for t in turns])
    stored = [m.content for m in await provider.list(user_id="u")]
    assert stored == [said[2]] and report.skipped == 2
    assert {p: p.read_text() for p in before} == before  # read, never written


def test_the_files_of_a_project(tmp_path: Path) -> None:
    config = tmp_path / "cfg"
    files = memory_files(str(tmp_path / "app"), env={"CLAUDE_CONFIG_DIR": str(config)})
    assert files[:4] == [tmp_path / "app" / "CLAUDE.md", tmp_path / "app" / ".claude" / "CLAUDE.md",
                         tmp_path / "app" / "CLAUDE.local.md", config / "CLAUDE.md"]


def test_a_scope_that_is_not_a_directory_reads_nothing(tmp_path: Path) -> None:
    memory = ClaudeMemory(env={"CLAUDE_CONFIG_DIR": str(tmp_path)})
    assert not memory.says("Use pnpm for every install, never npm.", "my-scope")
    assert not memory.says("Use pnpm for every install, never npm.", None)
