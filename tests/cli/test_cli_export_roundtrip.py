"""`dexai memory export` then `dexai memory import` into a fresh data directory gives back the same
memories, in the default format, through the real click entry point on real SQLite files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from dexai_memory.cli.main import cli

#: Every field that must come back as it was.
FIELDS = ("id", "content", "type", "tier", "importance", "confidence", "project", "session_id", "source_ids",
          "created_at", "updated_at", "valid_from", "valid_until", "superseded_by", "pinned", "archived",
          "metadata")


def ok(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def everything(home: Path) -> dict[str, dict[str, Any]]:
    listed = json.loads(ok("memory", "list", "--all", "--user", "sam", "--home", str(home), "--json",
                           "-n", "1000").stdout)
    return {m["id"]: m for m in listed}


def test_export_then_import_in_the_default_format_gives_back_the_same_memories(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    common = ("--user", "sam", "--home", str(a), "--json")

    def add(content: str, *extra: str) -> str:
        return str(json.loads(ok("memory", "add", content, *common, *extra).stdout)["id"])

    tea = add("Sam prefers green tea", "--type", "preference", "-i", "8", "--source", "D1:1")
    city = add("Sam lives in Porto", "--type", "fact", "-i", "6", "--project", "home")
    add("Sam's sister is Ana", "--type", "relationship", "-i", "4")
    ok("memory", "pin", tea, *common)
    moved = json.loads(ok("memory", "supersede", city, "Sam lives in Lisbon", "--reason", "moved",
                          *common).stdout)["id"]
    before = everything(a)
    assert len(before) == 4 and before[city]["superseded_by"] == moved and before[city]["valid_until"]
    history_before = json.loads(ok("memory", "history", moved, *common).stdout)

    dump = tmp_path / "dump.json"
    ok("memory", "export", "-o", str(dump), *common)  # the default format
    ok("memory", "import", str(dump), "--user", "sam", "--home", str(b))
    after = everything(b)
    assert set(after) == set(before)
    for mid, m in before.items():
        assert {k: after[mid][k] for k in FIELDS} == {k: m[k] for k in FIELDS}, mid
    history_after = json.loads(ok("memory", "history", moved, "--user", "sam", "--home", str(b), "--json").stdout)
    assert history_after == history_before
    # again: nothing stored twice, no event recorded twice
    again = json.loads(ok("memory", "import", str(dump), "--user", "sam", "--home", str(b), "--json").stdout)
    assert again["imported"] == 0 and again["skipped"] == 4
    assert json.loads(ok("memory", "history", moved, "--user", "sam", "--home", str(b), "--json").stdout) == history_before
    # JSONL, the other re-importable format, gives the same
    lines = tmp_path / "dump.jsonl"
    ok("memory", "export", "--format", "jsonl", "-o", str(lines), *common)
    ok("memory", "import", str(lines), "--user", "sam", "--home", str(tmp_path / "c"))
    assert everything(tmp_path / "c") == after
