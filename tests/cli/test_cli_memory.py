"""Every `dexai memory` command through the real click entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from dexai_memory.cli.main import cli


def dexai(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def ok(*args: str, input: str | None = None) -> Result:
    result = dexai(*args, input=input)
    assert result.exit_code == 0, result.output
    return result


def add(content: str, *extra: str, user: str = "sam") -> str:
    out = json.loads(ok("memory", "add", content, "--user", user, "--json", *extra).stdout)
    return str(out["id"])


def test_help_lists_commands() -> None:
    out = ok("--help").output
    assert "memory" in out
    mem = ok("memory", "--help").output
    for name in ["add", "search", "list", "get", "edit", "pin", "unpin", "forget", "history", "export", "import",
                 "stats", "doctor", "supersede", "restore", "reembed"]:
        assert name in mem
    assert "--user" in ok("memory", "add", "--help").output


def test_add_get_search_list() -> None:
    mid = add("Sam prefers green tea", "--type", "preference", "-i", "8", "--source", "D1:1")
    got = json.loads(ok("memory", "get", mid, "--user", "sam", "--json").stdout)
    assert got["type"] == "PREFERENCE" and got["importance"] == 8 and got["source_ids"] == ["D1:1"]
    add("Sam's brother lives in Oslo", "--type", "relationship")
    hits = json.loads(ok("memory", "search", "what tea does Sam like", "--user", "sam", "--json").stdout)
    assert hits[0]["id"] == mid and 0 <= hits[0]["score"] <= 1
    listed = json.loads(ok("memory", "list", "--user", "sam", "--json").stdout)
    assert len(listed) == 2
    assert "Sam prefers green tea" in ok("memory", "list", "--user", "sam", "--type", "PREFERENCE").output
    assert json.loads(ok("memory", "list", "--user", "other", "--json").stdout) == []


def test_edit_pin_unpin_and_history() -> None:
    mid = add("The standup is at 9am")
    ok("memory", "edit", mid, "--user", "sam", "--content", "The standup is at 9:30am", "--set", "team=core")
    got = json.loads(ok("memory", "get", mid, "--user", "sam", "--json").stdout)
    assert got["content"] == "The standup is at 9:30am" and got["metadata"]["team"] == "core"
    ok("memory", "pin", mid, "--user", "sam")
    assert json.loads(ok("memory", "get", mid, "--user", "sam", "--json").stdout)["pinned"] is True
    ok("memory", "unpin", mid, "--user", "sam")
    assert json.loads(ok("memory", "get", mid, "--user", "sam", "--json").stdout)["pinned"] is False
    events = json.loads(ok("memory", "history", mid, "--user", "sam", "--json").stdout)[0]["events"]
    assert [e["action"] for e in events] == ["ADD", "EDIT", "PIN", "UNPIN"]


def test_supersede_history_and_as_of() -> None:
    old = add("Sam lives in Berlin")
    new = json.loads(ok("memory", "supersede", old, "Sam lives in Lisbon", "--reason", "moved",
                        "--user", "sam", "--json").stdout)["id"]
    chain = json.loads(ok("memory", "history", new, "--user", "sam", "--json").stdout)
    assert [c["memory"]["id"] for c in chain] == [old, new]
    text = ok("memory", "history", new, "--user", "sam").output
    assert "SUPERSEDED" in text and "moved" in text
    current = json.loads(ok("memory", "search", "where does Sam live", "--user", "sam", "--json").stdout)
    assert [c["id"] for c in current] == [new]
    created = json.loads(ok("memory", "get", old, "--user", "sam", "--json").stdout)["created_at"]
    then = json.loads(ok("memory", "list", "--user", "sam", "--as-of", created, "--json").stdout)
    assert [m["id"] for m in then] == [old]


def test_forget_soft_restore_and_hard() -> None:
    mid = add("Sam's gym code is 2468")
    ok("memory", "forget", mid, "--user", "sam")
    assert json.loads(ok("memory", "search", "gym code", "--user", "sam", "--json").stdout) == []
    ok("memory", "restore", mid, "--user", "sam")
    assert len(json.loads(ok("memory", "search", "gym code", "--user", "sam", "--json").stdout)) == 1
    ok("memory", "forget", mid, "--user", "sam", "--hard", "--yes")
    result = dexai("memory", "get", mid, "--user", "sam")
    assert result.exit_code == 1 and "no memory" in result.output


def test_export_json_markdown_and_reimport(tmp_path: Path) -> None:
    add("Sam prefers dark mode", "--type", "preference")
    add("Sam adopted a cat named Miso", "--type", "event")
    md = ok("memory", "export", "--format", "markdown", "--user", "sam").stdout
    assert "## Preference" in md and "Sam prefers dark mode" in md
    dump = tmp_path / "dump.jsonl"
    ok("memory", "export", "--format", "jsonl", "--user", "sam", "-o", str(dump))
    assert len(dump.read_text().splitlines()) == 2
    ok("memory", "export", "--format", "jsonl", "--user", "sam", "-o", str(dump))
    assert (tmp_path / "dump.jsonl.bak").exists()
    result = json.loads(ok("memory", "import", str(dump), "--user", "sam", "--home", str(tmp_path / "other"),
                           "--json").stdout)
    assert result == {"imported": 2, "skipped": 0, "conflicts": [], "vectors": "now", "vectors_pending": 0}
    again = json.loads(ok("memory", "import", str(dump), "--skip-existing", "--home", str(tmp_path / "other"),
                          "--json").stdout)
    assert again == {"imported": 0, "skipped": 2, "conflicts": [], "vectors": "now", "vectors_pending": 0}
    whole = json.loads(ok("memory", "export", "--user", "sam", "--home", str(tmp_path / "other")).stdout)
    assert {m["content"] for m in whole} == {"Sam prefers dark mode", "Sam adopted a cat named Miso"}


def test_import_bad_line_names_line_and_stores_nothing(tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl"
    f.write_text('{"content": "fine"}\n{"content": "bad", "importance": 99}\n')
    result = dexai("memory", "import", str(f), "--user", "sam")
    assert result.exit_code == 1
    assert f"{f}:2" in result.output and "importance" in result.output
    assert json.loads(ok("memory", "list", "--user", "sam", "--json").stdout) == []
    f.write_text('{"content": "x", "colour": "red"}\n')
    assert "unknown field" in dexai("memory", "import", str(f)).output
    f.write_text("not json\n")
    assert f"{f}:1" in dexai("memory", "import", str(f)).output


def test_stats_and_doctor() -> None:
    add("Sam prefers tea", "--type", "preference", "--pin")
    add("Sam went hiking", "--type", "event")
    stats = json.loads(ok("memory", "stats", "--user", "sam", "--json").stdout)
    assert stats["total"] == 2 and stats["pinned"] == 1 and stats["by_type"] == {"PREFERENCE": 1, "EVENT": 1}
    doctor = json.loads(ok("memory", "doctor", "--json").stdout)
    assert doctor["ok"] is True
    assert {c["name"] for c in doctor["checks"]} >= {"config", "sqlite-vec", "embedder", "provider (native)"}


def test_doctor_reports_corrupt_database(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    (isolated_home / "memory.db").write_text("garbage")
    result = dexai("memory", "doctor")
    assert result.exit_code == 1
    assert "FAIL" in result.output and "not a SQLite database" in result.output and "fix:" in result.output
    assert (isolated_home / "memory.db").read_text() == "garbage"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["memory", "add", "x", "--type", "nonsense"], "unknown memory type", id="bad-type"),
        pytest.param(["memory", "add", "   "], "non-empty", id="empty-content"),
        pytest.param(["memory", "get", "m_missing"], "no memory", id="missing-id"),
        pytest.param(["memory", "edit", "m_missing", "--content", "x"], "no memory", id="edit-missing"),
        pytest.param(["memory", "edit", "m_missing"], "nothing to change", id="edit-nothing"),
        pytest.param(["memory", "search", "x", "--type", "bogus"], "unknown memory type", id="search-bad-type"),
        pytest.param(["memory", "list", "--as-of", "yesterday-ish"], "ISO 8601", id="bad-date"),
    ],
)
def test_user_errors_are_clean(args: list[str], message: str) -> None:
    result = dexai(*args)
    assert result.exit_code == (2 if "--as-of" in args else 1)  # a bad --as-of is a usage error now
    assert message in result.output
    assert "Traceback" not in result.output


def test_bad_config_is_clean(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("auto_recall:\n  max_tokens: -5\n")
    result = dexai("memory", "list", "--config", str(cfg))
    assert result.exit_code == 1 and "auto_recall.max_tokens" in result.output and str(cfg) in result.output


def test_real_console_script(isolated_home: Path) -> None:
    """The installed `dexai` entry point: exit codes and no traceback on user error."""
    exe = Path(sys.executable).with_name("dexai")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "dexai_memory.cli.main"]
    done = subprocess.run([*cmd, "memory", "add", "Sam likes jazz", "--user", "sam", "--json"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    bad = subprocess.run([*cmd, "memory", "get", "m_nope", "--user", "sam"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "Error: no memory" in bad.stderr and "Traceback" not in bad.stderr


def test_stats_and_doctor_show_the_model_tokens_and_the_extractor(isolated_home: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import date, timedelta

    from dexai_memory.extraction.usage import TokenLedger, Usage

    ledger = TokenLedger.in_home(isolated_home)
    ledger.charge("claude_code", Usage(1_200, 300))
    ledger.charge("api_key", Usage(500, 0))
    earlier = date.today().replace(day=1) if date.today().day > 1 else None
    if earlier:  # earlier this month: in the month, not in today
        ledger.charge("claude_code", Usage(1_000, 0), day=earlier)
    ledger.charge("claude_code", Usage(9_999, 0), day=date.today().replace(day=1) - timedelta(days=1))  # last month
    stats = json.loads(ok("memory", "stats", "--user", "sam", "--json").stdout)["model_tokens"]
    assert stats["today"]["total_tokens"] == 2_000 and stats["today"]["calls"] == 2
    assert stats["today"]["by_source"] == {"claude_code": 1_500, "api_key": 500}
    assert stats["month"]["total_tokens"] == 2_000 + (1_000 if earlier else 0)
    assert stats["daily_budget"] == 300_000 and stats["left_today"] == 298_000
    assert "model tokens: today 2,000 of 300,000" in ok("memory", "stats", "--user", "sam").output

    checks = {c["name"]: c for c in json.loads(ok("memory", "doctor", "--json").stdout)["checks"]}
    assert checks["extractor"]["ok"] and checks["extractor"]["detail"].startswith("offline rules")
    assert "Claude Code: turned off" in checks["extractor"]["detail"]  # the suite's DEXAI_CLAUDE_CODE_CLI=none
    assert checks["model tokens"]["ok"] and "today 2,000 of 300,000" in checks["model tokens"]["detail"]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    (isolated_home / "memory.yaml").write_text("extraction:\n  daily_token_budget: 1000\n")
    checks = {c["name"]: c for c in json.loads(dexai("memory", "doctor", "--json").stdout)["checks"]}
    assert checks["extractor"]["detail"].startswith("Claude Haiku") and "ANTHROPIC_API_KEY is set" in \
        checks["extractor"]["detail"]
    assert not checks["model tokens"]["ok"] and "budget is spent" in checks["model tokens"]["fix"]


def test_add_supersedes_a_contradicted_memory_like_an_extracted_note() -> None:
    old = add("Sam lives in Berlin")
    done = ok("memory", "add", "Sam lives in Lisbon", "--user", "sam")
    assert "supersedes" in done.output
    new = json.loads(ok("memory", "search", "where does Sam live", "--user", "sam", "--json").stdout)
    assert [m["content"] for m in new] == ["Sam lives in Lisbon"]
    before = json.loads(ok("memory", "get", old, "--user", "sam", "--json").stdout)
    assert before["superseded_by"] == new[0]["id"]
    assert add("Sam lives in Lisbon") == new[0]["id"]  # a repeat is counted, not stored twice
    conflicts = json.loads(ok("memory", "conflicts", "--all", "--user", "sam", "--json").stdout)
    assert [(c["a"]["id"], c["resolution"]) for c in conflicts] == [(old, "b_wins")]
