"""`dexai memory search` says nothing when nothing relates to the query (the relevance floor of
dexai_memory.providers.relevance, the real MiniLM embedder, a real SQLite file), and a real query
finds its hit first."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from dexai_memory.cli.main import cli


def ok(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_search_nonsense_finds_nothing_and_a_real_query_its_hit_first(tmp_path: Path) -> None:
    ids = {}
    for text in ("Sam's passport expires in March 2027", "The office wifi is called Bluebird",
                 "Sam plays the cello on Thursdays", "The garage door code is 4471"):
        ids[text] = json.loads(ok("memory", "add", text, "--user", "sam", "--json").stdout)["id"]
    assert json.loads(ok("memory", "search", "xyzzy", "--user", "sam", "--json").stdout) == []
    assert "No memories found." in ok("memory", "search", "zorp glorp blarg", "--user", "sam").output
    hits = json.loads(ok("memory", "search", "what is the wifi name", "--user", "sam", "--json").stdout)
    assert hits[0]["id"] == ids["The office wifi is called Bluebird"]
    # the floor is a setting: 0 returns the nearest memories, related or not
    no_floor = tmp_path / "no-floor.yaml"
    no_floor.write_text("search:\n  min_similarity: 0\n")
    assert json.loads(ok("memory", "search", "xyzzy", "--user", "sam", "--json", "--config", str(no_floor)).stdout)

