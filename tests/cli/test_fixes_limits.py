"""One limit on the text of a memory written by hand (``limits.max_memory_chars``), with the same
refusal at every door: ``dexai memory add`` / ``edit`` / ``supersede``, ``dexai memory facts add``,
the MCP ``remember`` tool, ``POST /api/memories`` (the panel's box posts there). Real CLI entry
point, real SQLite store, real app."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from starlette.testclient import TestClient

from dexai_memory.agent_tools.mcp import MemoryTools
from dexai_memory.api.app import build_app
from dexai_memory.cli.main import cli
from dexai_memory.config import load_settings
from dexai_memory.limits import DEFAULT_MAX_MEMORY_CHARS
from dexai_memory.providers import make_provider

U = "sam"
#: The words every door's refusal carries.
REFUSAL = "longer than the 2,000 a memory may hold (limits.max_memory_chars)"
TOO_LONG = "Sam likes tea " * 200  # 2,800 characters
FITS = ("Sam prefers green tea in the morning " * 60)[:DEFAULT_MAX_MEMORY_CHARS - 1] + "."


@pytest.fixture(autouse=True)
def no_embedder(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\n")


def dexai(*args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--user", U], catch_exceptions=False)


def stored() -> int:
    result = dexai("memory", "list", "--json")
    assert result.exit_code == 0, result.output
    return len(json.loads(result.stdout))


def test_the_cli_doors_refuse_the_same_way_and_store_nothing() -> None:
    add = dexai("memory", "add", TOO_LONG)
    assert add.exit_code == 1 and REFUSAL in add.stderr
    facts = dexai("memory", "facts", "add", TOO_LONG)
    assert facts.exit_code == 1 and REFUSAL in facts.output
    assert stored() == 0
    ok = dexai("memory", "add", FITS, "--json")  # exactly at the limit: kept whole
    assert ok.exit_code == 0, ok.output
    memory_id = json.loads(ok.stdout)["id"]
    assert len(json.loads(ok.stdout)["content"]) == DEFAULT_MAX_MEMORY_CHARS
    edit = dexai("memory", "edit", memory_id, "--content", TOO_LONG)
    assert edit.exit_code == 1 and REFUSAL in edit.stderr
    supersede = dexai("memory", "supersede", memory_id, TOO_LONG)
    assert supersede.exit_code == 1 and REFUSAL in supersede.stderr
    assert stored() == 1


def test_the_mcp_tool_and_the_api_refuse_the_same_way() -> None:
    settings = load_settings()

    async def mcp() -> str:
        async with make_provider(settings) as provider:
            answer = await MemoryTools(provider, U, settings=settings).call("remember", {
                "content": TOO_LONG, "category": "fact"})
        return str(answer["content"][0]["text"])

    assert REFUSAL in asyncio.run(mcp())
    with TestClient(build_app(settings, U, "t" * 24), base_url="http://127.0.0.1") as client:
        response = client.post("/api/memories", json={"content": TOO_LONG},
                               headers={"Authorization": "Bearer " + "t" * 24})
    assert response.status_code == 400 and REFUSAL in response.text
    assert stored() == 0


def test_the_panel_box_leaves_the_limit_to_the_server() -> None:
    """No maxlength of its own: a pasted text is never cut silently, the API's refusal shows."""
    html = (Path(__file__).parents[2] / "dexai_memory" / "panel" / "static" / "index.html").read_text()
    box = next(line for line in html.splitlines() if 'id="remember"' in line)
    assert "maxlength" not in box


def test_one_config_key_moves_every_door(isolated_home: Path) -> None:
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\nlimits:\n  max_memory_chars: 5000\n")
    assert dexai("memory", "add", TOO_LONG).exit_code == 0
    assert dexai("memory", "facts", "add", TOO_LONG + " and coffee").exit_code == 0
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\nlimits:\n  max_memory_chars: 100\n")
    result = dexai("memory", "add", "Sam likes tea " * 10)
    assert result.exit_code == 1 and "longer than the 100 a memory may hold" in result.stderr
