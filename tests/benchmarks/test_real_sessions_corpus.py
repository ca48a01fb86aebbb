"""Consistency of the real-session corpus labels (benchmarks/data/real_sessions).

The labels are always checked for shape. The transcripts themselves are
third-party data kept out of git (see the corpus README); where they are
present, every label is also checked against them: the file decompresses to
the source blob, each line is a typed user prompt that contains its excerpt,
and each later need really comes after the thing it needs.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest

CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "real_sessions"
LABELS = CORPUS / "labels.json"
KINDS = {"instruction", "preference", "project_fact", "decision", "warning", "name", "commitment"}
SPLITS = {"dev", "holdout"}
# User entries whose text the harness or Claude Code wrote, not the person typing.
WRAPPER_PREFIXES = (
    "<command-",
    "<local-command",
    "Caveat:",
    "[Request interrupted",
    "<system-reminder>",
    "<task-notification>",
    "<bash-notification>",
    "Unknown slash command",
    "This session is being continued",
)


def transcripts_dir() -> Path | None:
    """Where the .jsonl.gz files are: an explicit override, the repository, or shared/ beside it."""
    candidates = []
    if os.environ.get("DEXAI_REAL_SESSIONS_DIR"):
        candidates.append(Path(os.environ["DEXAI_REAL_SESSIONS_DIR"]))
    candidates.append(CORPUS)
    candidates.append(CORPUS.parents[3] / "shared" / "bench" / "real_sessions")
    for directory in candidates:
        if any(directory.glob("*/*.jsonl.gz")):
            return directory
    return None


@cache
def labels() -> dict[str, Any]:
    return json.loads(LABELS.read_text(encoding="utf-8"))


def typed_prompt(entry: Any) -> str | None:
    """The text of a real typed prompt, or None for tool results, wrappers and summaries."""
    if not isinstance(entry, dict) or entry.get("type") != "user":
        return None
    if entry.get("isMeta") or entry.get("isCompactSummary") or entry.get("isSidechain"):
        return None
    content = entry.get("message", {}).get("content")
    if isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return None
        content = "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    if not isinstance(content, str) or not content.strip():
        return None
    text = content.strip()
    return None if text.startswith(WRAPPER_PREFIXES) else text


@cache
def raw_bytes(directory: Path, file: str) -> bytes:
    return gzip.decompress((directory / file).read_bytes())


@cache
def session_lines(directory: Path, file: str) -> tuple[str, ...]:
    return tuple(raw_bytes(directory, file).decode("utf-8").split("\n"))


def references() -> list[tuple[str, str, int, str]]:
    """Every (what, session id, line, excerpt) the labels point at."""
    data = labels()
    refs = []
    for item in data["items"]:
        refs.append((item["id"] + " said", item["said"]["session"], item["said"]["line"], item["said"]["quote"]))
        for need in item["needed"]:
            refs.append((item["id"] + " needed", need["session"], need["line"], need["prompt"]))
    for prompt in data["no_memory_prompts"]:
        refs.append(("no-memory", prompt["session"], prompt["line"], prompt["prompt"]))
    return refs


def test_sessions_are_well_formed() -> None:
    sessions = labels()["sessions"]
    assert len(sessions) >= 12
    ids = [s["id"] for s in sessions]
    assert len(ids) == len(set(ids))
    by_project: dict[str, list[dict[str, Any]]] = {}
    for s in sessions:
        assert s["split"] in SPLITS
        assert s["id"] == f"{s['project']}/{Path(s['file']).name.removesuffix('.jsonl.gz')}"
        assert s["file"].startswith(s["project"] + "/") and s["file"].endswith(".jsonl.gz")
        assert set(s["source"]) >= {"repo", "commit", "path"}
        assert len(s["source"]["commit"]) == 40
        by_project.setdefault(s["project"], []).append(s)
    assert len(by_project) >= 3
    for project, members in by_project.items():
        assert sorted(m["order"] for m in members) == list(range(1, len(members) + 1)), project
        assert len({m["split"] for m in members}) == 1, project
        assert (CORPUS / project / "SOURCE.md").is_file()
    assert {m[0]["split"] for m in by_project.values()} == SPLITS


def test_items_are_well_formed() -> None:
    data = labels()
    split_of = {s["id"]: s["split"] for s in data["sessions"]}
    project_of = {s["id"]: s["project"] for s in data["sessions"]}
    items = data["items"]
    assert len(items) >= 60
    assert len({i["id"] for i in items}) == len(items)
    assert {i["kind"] for i in items} == KINDS
    for item in items:
        assert item["kind"] in KINDS, item["id"]
        assert item["statement"].strip(), item["id"]
        assert project_of[item["said"]["session"]] == item["project"], item["id"]
        assert item["needed"], item["id"]
        for need in item["needed"]:
            assert project_of[need["session"]] == item["project"], item["id"]
        assert item.get("split", split_of[item["said"]["session"]]) == split_of[item["said"]["session"]]
        assert item["match"] and all(alt and all(t == t.lower() and t.strip() for t in alt) for alt in item["match"])
    dev = sum(1 for i in items if split_of[i["said"]["session"]] == "dev")
    assert dev >= 50
    assert 0.15 <= (len(items) - dev) / len(items) <= 0.30
    assert len(data["no_memory_prompts"]) >= 25
    for prompt in data["no_memory_prompts"]:
        assert prompt["session"] in split_of


def test_needs_come_after_what_they_need() -> None:
    data = labels()
    order = {s["id"]: s["order"] for s in data["sessions"]}
    for item in data["items"]:
        said = (order[item["said"]["session"]], item["said"]["line"])
        for need in item["needed"]:
            assert (order[need["session"]], need["line"]) > said, item["id"]


def test_transcripts_match_their_source() -> None:
    directory = transcripts_dir()
    if directory is None:
        pytest.skip("the transcripts are not on this machine (see benchmarks/data/real_sessions/README.md)")
    for s in labels()["sessions"]:
        data = raw_bytes(directory, s["file"])
        blob = s["source"].get("blob")
        if blob:
            assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == blob, s["id"]
        assert (directory / s["project"] / "LICENSE").is_file(), s["project"]


def test_every_line_is_a_typed_prompt_with_its_excerpt() -> None:
    directory = transcripts_dir()
    if directory is None:
        pytest.skip("the transcripts are not on this machine (see benchmarks/data/real_sessions/README.md)")
    file_of = {s["id"]: s["file"] for s in labels()["sessions"]}
    for what, session, line, excerpt in references():
        lines = session_lines(directory, file_of[session])
        assert 1 <= line <= len(lines), (what, session, line)
        text = typed_prompt(json.loads(lines[line - 1]))
        assert text is not None, (what, session, line)
        assert excerpt in text, (what, session, line, excerpt)
