"""Data safety of the CLI: imports are all or nothing and idempotent, bad input and file-system
problems give a clean message (never a traceback), and doctor sees a read-only database."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from dexai_memory.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def keep_umask() -> Iterator[None]:
    """The CLI sets umask 0077 for its process; give the test process its own back."""
    old = os.umask(0o022)
    os.umask(old)
    yield
    os.umask(old)


def dexai(*args: str, input: str | bytes | None = None) -> Result:
    # catch_exceptions=False: a traceback fails the test instead of becoming exit code 1
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def ok(*args: str, input: str | None = None) -> Result:
    result = dexai(*args, input=input)
    assert result.exit_code == 0, result.output
    return result


def count(user: str = "sam") -> int:
    return len(json.loads(ok("memory", "list", "--user", user, "--all", "--json", "-n", "100000").stdout))


def unprivileged() -> list[str]:
    """A command prefix under which file permissions apply: root bypasses them, so as root the
    process runs without CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file permissions cannot be exercised")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def dexai_process(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEXAI_MEMORY_HOME": str(home), "DEXAI_MEMORY_USER": "sam"}
    return subprocess.run([*unprivileged(), sys.executable, "-m", "dexai_memory.cli.main", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120, check=False)


# --------------------------------------------------------------------------- import: all or nothing, idempotent
def test_import_that_fails_on_line_801_stores_nothing(tmp_path: Path) -> None:
    """A write failure after the first 500 rows (here: line 801 carries the id of another user's
    memory) rolls the whole import back: not one row of the 800 valid lines stays."""
    ok("memory", "import", "-", "--user", "other", input=json.dumps({"id": "m_taken", "content": "theirs"}) + "\n")
    f = tmp_path / "big.jsonl"
    lines = [json.dumps({"content": f"fact number {i}"}) for i in range(800)]
    lines.append(json.dumps({"id": "m_taken", "content": "mine"}))
    f.write_text("\n".join(lines) + "\n")
    result = dexai("memory", "import", str(f), "--user", "sam", "--vectors", "later")
    assert result.exit_code == 1
    assert "already exists" in result.output and "Traceback" not in result.output
    assert count("sam") == 0


def test_reimporting_a_file_adds_nothing_and_reports_skips(tmp_path: Path) -> None:
    """Same ids (an export) or same content (lines without an id) are skipped and counted; an id
    stored with another content keeps the stored memory and is reported as a conflict."""
    f = tmp_path / "in.jsonl"
    f.write_text('{"content": "Sam likes tea"}\n{"content": "Sam likes tea"}\n{"id": "m_fixed", "content": "x"}\n')
    first = json.loads(ok("memory", "import", str(f), "--user", "sam", "--json").stdout)
    assert (first["imported"], first["skipped"], first["conflicts"]) == (2, 0, [])
    again = json.loads(ok("memory", "import", str(f), "--user", "sam", "--json").stdout)
    assert (again["imported"], again["skipped"], again["conflicts"]) == (0, 2, [])
    dump = tmp_path / "dump.jsonl"
    ok("memory", "export", "--format", "jsonl", "--user", "sam", "-o", str(dump))
    assert json.loads(ok("memory", "import", str(dump), "--user", "sam", "--json").stdout)["skipped"] == 2
    changed = json.loads(ok("memory", "import", "-", "--user", "sam", "--json",
                            input='{"id": "m_fixed", "content": "y"}\n').stdout)
    assert changed["imported"] == 0 and changed["conflicts"] == ["m_fixed"]
    assert count() == 2
    assert "conflict" not in ok("memory", "import", str(f), "--user", "sam").output
    assert "skipped 2 already stored" in ok("memory", "import", str(f), "--user", "sam").output


def test_import_with_one_id_twice_and_two_contents_names_both_lines(tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl"
    f.write_text('{"id": "m_a", "content": "one"}\n{"content": "fine"}\n{"id": "m_a", "content": "two"}\n')
    result = dexai("memory", "import", str(f), "--user", "sam")
    assert result.exit_code == 1 and f"{f}:3" in result.output and f"{f}:1 " in result.output
    assert count() == 0


# --------------------------------------------------------------------------- clean messages, never a traceback
BAD_INPUT = [
    pytest.param("import", b'{"content": "ok"}\n\xff\xfe bad bytes\n', ":2: not UTF-8", id="import-invalid-utf8"),
    pytest.param("import", bytes(range(256)) * 4, "binary file", id="import-binary-file"),
    pytest.param("import", b"\x89PNG\r\n\x1a\n" + bytes(range(128, 256)), "not UTF-8", id="import-png"),
    pytest.param("import", b'{"content": "a\\u0000b"}\n', "NUL", id="import-nul-escape"),
    pytest.param("import", b'{"content": "half \\ud83d emoji"}\n', "surrogate", id="import-lone-surrogate"),
    pytest.param("import", b'{"content": "x", "importance": 5.7}\n', "whole number", id="import-importance-5.7"),
    pytest.param("import", b'{"content": "x", "created_at": 1700000000}\n', "ISO 8601", id="import-numeric-date"),
    pytest.param("ingest", b'{"id": "1", "role": "user", "content": "I live in Oslo", "timestamp": 1700000000}\n',
                 "timestamp", id="ingest-numeric-timestamp"),
]


@pytest.mark.parametrize(("command", "data", "message"), BAD_INPUT)
def test_bad_input_files_give_a_message_not_a_traceback(tmp_path: Path, command: str, data: bytes,
                                                        message: str) -> None:
    f = tmp_path / "input.jsonl"
    f.write_bytes(data)
    result = dexai("memory", command, str(f), "--user", "sam")
    assert result.exit_code == 1, result.output
    assert "Error:" in result.output and message in result.output
    assert count() == 0


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(("list", "--as-of", ""), "empty value", id="list-as-of-empty"),
    pytest.param(("search", "tea", "--as-of", " "), "empty value", id="search-as-of-blank"),
    pytest.param(("list", "--as-of", "last tuesday"), "ISO 8601", id="list-as-of-not-a-date"),
    pytest.param(("add", "x", "-i", "5.7"), "5.7", id="add-importance-5.7"),
])
def test_bad_options_are_usage_errors(args: tuple[str, ...], message: str) -> None:
    result = dexai("memory", *args, "--user", "sam")
    assert result.exit_code == 2 and message in result.output


def test_as_of_still_answers_with_a_date() -> None:
    ok("memory", "add", "Sam lives in Oslo", "--user", "sam")
    assert "Oslo" in ok("memory", "list", "--user", "sam", "--as-of", "2999-01-01").output


def test_export_into_a_missing_directory_is_a_clean_error(tmp_path: Path) -> None:
    ok("memory", "add", "Sam likes tea", "--user", "sam")
    result = dexai("memory", "export", "--user", "sam", "-o", str(tmp_path / "missing" / "out.json"))
    assert result.exit_code == 1 and "does not exist" in result.output
    assert not (tmp_path / "missing").exists()


def test_export_file_is_private_and_replaced_atomically(tmp_path: Path) -> None:
    ok("memory", "add", "Sam likes tea", "--user", "sam")
    (tmp_path / "exports").mkdir()
    out = tmp_path / "exports" / "out.json"
    ok("memory", "export", "--user", "sam", "-o", str(out))
    ok("memory", "export", "--user", "sam", "-o", str(out))
    assert oct(out.stat().st_mode & 0o777) == oct(0o600)
    assert sorted(p.name for p in out.parent.iterdir()) == ["out.json", "out.json.bak"]  # no temp file left


def test_unreadable_input_file_is_a_clean_error(tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl"
    f.write_text('{"content": "x"}\n')
    f.chmod(0)
    for command in ("import", "ingest"):
        proc = dexai_process("memory", command, str(f), home=tmp_path / "home")
        assert proc.returncode in (1, 2), proc.stderr  # 2: click's own check of FILE
        assert "not readable" in proc.stderr or "Permission denied" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_unwritable_export_directory_is_a_clean_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert dexai_process("memory", "add", "Sam likes tea", home=home).returncode == 0
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    proc = dexai_process("memory", "export", "-o", str(locked / "out.json"), home=home)
    assert proc.returncode == 1 and "Permission denied" in proc.stderr and "Traceback" not in proc.stderr


def test_unwritable_home_is_a_clean_error(tmp_path: Path) -> None:
    parent = tmp_path / "ro"
    parent.mkdir(mode=0o555)
    proc = dexai_process("memory", "add", "Sam likes tea", home=parent / "home")
    assert proc.returncode == 1 and "Permission denied" in proc.stderr and "Traceback" not in proc.stderr
    home = tmp_path / "home"
    assert dexai_process("memory", "add", "Sam likes tea", home=home).returncode == 0
    home.chmod(0o500)
    proc = dexai_process("memory", "add", "Sam likes coffee", home=home)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr


# --------------------------------------------------------------------------- doctor and a read-only database
@pytest.mark.parametrize("what", ["file", "directory"])
def test_doctor_reports_a_read_only_database(tmp_path: Path, what: str) -> None:
    """chmod 444 memory.db (or a read-only data directory): reads work, every write fails, and
    doctor must say so (it used to say all ok)."""
    home = tmp_path / "home"
    assert dexai_process("memory", "add", "Sam likes tea", home=home).returncode == 0
    healthy = dexai_process("memory", "doctor", "--json", home=home)
    assert healthy.returncode == 0, healthy.stdout
    (home / "memory.db").chmod(0o444) if what == "file" else home.chmod(0o555)
    try:
        proc = dexai_process("memory", "doctor", "--json", home=home)
        report = json.loads(proc.stdout)
        assert proc.returncode == 1 and not report["ok"]
        failing = {c["name"] for c in report["checks"] if not c["ok"]}
        assert failing & {"database writable", "data dir"} or any("read" in c["detail"] for c in report["checks"]
                                                                  if not c["ok"]), report
        add = dexai_process("memory", "add", "Sam likes coffee", home=home)
        assert add.returncode == 1 and "Traceback" not in add.stderr, add.stderr
    finally:
        home.chmod(0o700)
