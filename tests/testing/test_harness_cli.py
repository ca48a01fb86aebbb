"""End-to-end: the real bundled Claude Code CLI against the fake Messages API.

Every test uses a throw-away HOME (never the real ~/.claude) and no network
beyond 127.0.0.1.  Hooks are tiny Python scripts that log their stdin JSON
and print ``additionalContext``.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dexai_memory.demo.claude_cli import (
    ClaudeBinaryNotFound,
    ClaudeRun,
    ClaudeTimeout,
    claude_binary,
    claude_version,
)
from dexai_memory.demo.fakeapi import (
    DEFAULT_COMPACTION_SUMMARY,
    FakeMessagesAPI,
    RecordedRequest,
    Reply,
    ToolUse,
    is_compaction_prompt,
    text_of,
)
from testing.harness import arun_claude, command_hooks, run_claude
from testing.plugin_check import validate_plugin

pytestmark = pytest.mark.e2e

HOOK_SCRIPT = """\
import json, os, sys, time
event, log = sys.argv[1], sys.argv[2]
context = sys.argv[3] if len(sys.argv) > 3 else ""
payload = json.load(sys.stdin)
with open(log, "a") as f:
    f.write(json.dumps({
        "event": event,
        "at": time.time(),
        "input": payload,
        "plugin_root": os.environ.get("CLAUDE_PLUGIN_ROOT"),
        "project_dir": os.environ.get("CLAUDE_PROJECT_DIR"),
    }) + "\\n")
if context and event in ("SessionStart", "UserPromptSubmit"):
    print(json.dumps({"hookSpecificOutput": {
        "hookEventName": event, "additionalContext": context}}))
"""

LIFECYCLE = ("SessionStart", "UserPromptSubmit", "PreCompact", "PostCompact")


@pytest.fixture
def api() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as server:
        yield server


@pytest.fixture
def hook_script(tmp_path: Path) -> Path:
    path = tmp_path / "hook.py"
    path.write_text(HOOK_SCRIPT)
    return path


@pytest.fixture
def hook_log(tmp_path: Path) -> Path:
    return tmp_path / "hooks.jsonl"


def _hook_cmd(script: Path, event: str, log: Path, context: str = "") -> str:
    parts = [sys.executable, str(script), event, str(log)] + ([context] if context else [])
    return " ".join(shlex.quote(p) for p in parts)


def _events(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _labels(log: Path) -> list[str]:
    """``Event(source|trigger)`` labels in firing order."""
    out = []
    for e in _events(log):
        detail = e["input"].get("source") or e["input"].get("trigger") or ""
        out.append(f"{e['event']}({detail})" if detail else e["event"])
    return out


def _system_texts(request: RecordedRequest) -> list[str]:
    """Texts of the ``role: "system"`` messages Claude Code interleaves."""
    out: list[str] = []
    for message in request.body.get("messages", []):
        if message.get("role") != "system":
            continue
        content = message["content"]
        if isinstance(content, str):
            out.append(content)
        else:
            out.extend(b.get("text", "") for b in content if isinstance(b, dict))
    return out


def _runner(tmp_path: Path, api: FakeMessagesAPI, **kwargs: Any) -> ClaudeRun:
    return ClaudeRun(
        home=tmp_path / "home",
        base_url=api.base_url,
        cwd=tmp_path / "project",
        timeout=60,
        **kwargs,
    )


# --------------------------------------------------------------------------- basics


def test_binary_is_found_and_versioned() -> None:
    binary = claude_binary()
    assert binary.name == "claude" and binary.is_file()
    assert claude_version()[0].isdigit()


def test_missing_binary_override_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEXAI_CLAUDE_BINARY", "/nonexistent/claude")
    with pytest.raises(ClaudeBinaryNotFound, match="DEXAI_CLAUDE_BINARY"):
        claude_binary()


def test_hello_round_trip(tmp_path: Path, api: FakeMessagesAPI) -> None:
    api.enqueue(Reply(text="Hello from the fake model."))
    res = run_claude(
        "hello", home=tmp_path / "home", base_url=api.base_url, cwd=tmp_path / "proj", timeout=60
    )
    assert res.ok, res.stderr
    assert res.text == "Hello from the fake model."
    assert res.session_id and len(res.session_id) == 36
    [req] = api.message_requests()
    assert req.query == {"beta": ["true"]}
    assert req.body["stream"] is True
    assert req.api_key and req.api_key.startswith("sk-ant-offline")
    assert req.headers["user-agent"].startswith("claude-cli/")
    assert req.headers["x-claude-code-session-id"] == res.session_id
    assert req.body["messages"][0]["content"][-1]["text"] == "hello"
    # the CLI used the throw-away HOME for its transcript
    transcripts = list(
        (tmp_path / "home" / ".claude" / "projects").glob(f"*/{res.session_id}.jsonl")
    )
    assert len(transcripts) == 1
    # nothing but the Messages API was contacted
    assert {r.path for r in api.requests} == {"/v1/messages"}


async def test_async_round_trip_and_resume(tmp_path: Path, api: FakeMessagesAPI) -> None:
    api.enqueue(Reply(text="first answer"), Reply(text="second answer"))
    common: dict[str, Any] = {
        "home": tmp_path / "home",
        "base_url": api.base_url,
        "cwd": tmp_path / "proj",
        "timeout": 60,
    }
    first = await arun_claude("remember PINEAPPLE", **common)
    assert first.ok and first.text == "first answer"
    second = await arun_claude("what did I say?", resume=first.session_id, **common)
    assert second.ok and second.text == "second answer"
    assert second.session_id == first.session_id
    last = api.message_requests()[-1]
    assert "remember PINEAPPLE" in text_of(last) and "first answer" in text_of(last)


def test_stream_json_output_and_tool_use(tmp_path: Path, api: FakeMessagesAPI) -> None:
    api.enqueue(
        Reply(
            tool_uses=[ToolUse("Bash", {"command": "echo TOOL-OUTPUT-77", "description": "echo"})]
        ),
        Reply(text="done"),
    )
    res = _runner(tmp_path, api, output_format="stream-json")("run the echo")
    assert res.ok, res.stderr
    assert res.text == "done"
    kinds = [m.get("type") for m in res.messages]
    assert kinds[-1] == "result" and "assistant" in kinds
    first, second = api.message_requests()
    assert "TOOL-OUTPUT-77" not in text_of(first)
    tool_results = [
        b
        for m in second.body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert len(tool_results) == 1 and "TOOL-OUTPUT-77" in text_of(second)


def test_timeout_kills_the_cli(tmp_path: Path, api: FakeMessagesAPI) -> None:
    api.enqueue(Reply(text="too late", delay=8))
    runner = _runner(tmp_path, api)
    runner.timeout = 3
    start = time.monotonic()
    with pytest.raises(ClaudeTimeout):
        runner("hang")
    assert time.monotonic() - start < 7


# --------------------------------------------------------------------------- hooks


def test_settings_hooks_context_reaches_next_request(
    tmp_path: Path, api: FakeMessagesAPI, hook_script: Path, hook_log: Path
) -> None:
    settings = command_hooks(
        {
            "SessionStart": _hook_cmd(hook_script, "SessionStart", hook_log, "PLANTED-FACT-42"),
            "UserPromptSubmit": _hook_cmd(
                hook_script, "UserPromptSubmit", hook_log, "PROMPT-FACT-7"
            ),
        }
    )
    res = _runner(tmp_path, api, settings=settings)("what do you know?")
    assert res.ok, res.stderr

    events = _events(hook_log)
    assert [e["event"] for e in events] == ["SessionStart", "UserPromptSubmit"]
    start, prompt = events
    assert start["input"]["source"] == "startup"
    assert start["input"]["session_id"] == res.session_id
    assert start["input"]["transcript_path"].endswith(f"{res.session_id}.jsonl")
    assert Path(start["project_dir"]).resolve() == (tmp_path / "project").resolve()
    assert prompt["input"]["prompt"] == "what do you know?"

    [req] = api.message_requests()
    system = "\n".join(_system_texts(req))
    assert "SessionStart hook additional context: PLANTED-FACT-42" in system
    assert "UserPromptSubmit hook additional context: PROMPT-FACT-7" in system
    # not smuggled into the system prompt or the user's own message
    assert "PLANTED-FACT-42" not in json.dumps(req.body["system"])
    assert "PLANTED-FACT-42" not in json.dumps(req.body["messages"][0])


def test_plugin_dir_hooks_run_and_validate(
    tmp_path: Path, api: FakeMessagesAPI, hook_script: Path, hook_log: Path
) -> None:
    plugin = tmp_path / "plugins" / "memtest"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / "hooks").mkdir()
    (plugin / "hook.py").write_text(hook_script.read_text())
    (plugin / ".claude-plugin" / "plugin.json").write_text(
        json.dumps(
            {
                "name": "memtest",
                "version": "0.1.0",
                "description": "test plugin",
                "author": {"name": "tests"},
            }
        )
    )
    command = (
        f'{shlex.quote(sys.executable)} "${{CLAUDE_PLUGIN_ROOT}}/hook.py" '
        f"SessionStart {shlex.quote(str(hook_log))} PLUGIN-FACT-9"
    )
    (plugin / "hooks" / "hooks.json").write_text(
        json.dumps(
            {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": command}]}]}}
        )
    )

    report = validate_plugin(plugin)
    assert report.ok, report.stdout
    assert report.errors == []
    assert report.report["provides"]["hooks"][0]["event"] == "SessionStart"

    res = _runner(tmp_path, api, plugin_dirs=[plugin])("hi")
    assert res.ok, res.stderr
    [event] = _events(hook_log)
    assert event["input"]["source"] == "startup"
    assert Path(event["plugin_root"]).resolve() == plugin.resolve()
    [req] = api.message_requests()
    assert any(
        "SessionStart hook additional context: PLUGIN-FACT-9" in t for t in _system_texts(req)
    )

    # an invalid manifest is refused
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "Bad Name"}))
    bad = validate_plugin(plugin)
    assert not bad.ok and any("name" in e for e in bad.errors)


# --------------------------------------------------------------------------- compaction


def _compaction_settings(script: Path, log: Path) -> dict[str, Any]:
    return command_hooks(
        {
            event: _hook_cmd(
                script, event, log, "RESTORED-AFTER-COMPACT" if event == "SessionStart" else ""
            )
            for event in LIFECYCLE
        }
    )


def test_manual_compact_on_resumed_session(
    tmp_path: Path, api: FakeMessagesAPI, hook_script: Path, hook_log: Path
) -> None:
    runner = _runner(tmp_path, api, settings=_compaction_settings(hook_script, hook_log))
    assert runner("remember the code word PINEAPPLE").ok

    hook_log.unlink()
    compacted = runner.resume("/compact keep the code word")
    assert compacted.ok, compacted.stderr
    assert compacted.result is not None and compacted.result.get("local_command") == "compact"
    assert _labels(hook_log) == [
        "SessionStart(resume)",
        "PreCompact(manual)",
        "SessionStart(compact)",
        "PostCompact(manual)",
    ]
    events = _events(hook_log)
    assert events[1]["input"]["custom_instructions"] == "keep the code word"
    assert DEFAULT_COMPACTION_SUMMARY in events[3]["input"]["compact_summary"]

    # exactly one request, the summarization prompt, between PreCompact and SessionStart(compact)
    _, compaction = api.message_requests()
    assert is_compaction_prompt(compaction.body)
    assert events[1]["at"] <= compaction.received_at <= events[2]["at"]
    assert "keep the code word" in text_of(compaction)
    assert "PINEAPPLE" in text_of(compaction)  # the conversation being summarized

    # the next turn sees the summary, not the original conversation, plus restored context
    after = runner.resume("what is the code word?")
    assert after.ok
    last = api.message_requests()[-1]
    assert f"Summary:\n{DEFAULT_COMPACTION_SUMMARY}" in text_of(last)
    assert "PINEAPPLE" not in text_of(last)
    assert "SessionStart hook additional context: RESTORED-AFTER-COMPACT" in "\n".join(
        _system_texts(last)
    )


def test_auto_compaction_trigger(
    tmp_path: Path, api: FakeMessagesAPI, hook_script: Path, hook_log: Path
) -> None:
    runner = _runner(
        tmp_path, api, settings=_compaction_settings(hook_script, hook_log), autocompact=100_000
    )
    assert runner("remember the code word PINEAPPLE").ok  # establishes a small fixed prefix
    api.enqueue(Reply(text="noted", input_tokens=90_000))
    assert runner.resume("second turn").ok
    assert "PreCompact(auto)" not in _labels(hook_log)

    hook_log.unlink()
    before = len(api.message_requests())
    third = runner.resume("third turn")
    assert third.ok, third.stderr
    assert _labels(hook_log) == [
        "SessionStart(resume)",
        "UserPromptSubmit",
        "PreCompact(auto)",
        "SessionStart(compact)",
        "PostCompact(auto)",
    ]
    assert _events(hook_log)[2]["input"]["custom_instructions"] is None
    compaction, final = api.message_requests()[before:]
    assert is_compaction_prompt(compaction.body)
    assert "PINEAPPLE" in text_of(compaction)
    assert not is_compaction_prompt(final.body)
    assert DEFAULT_COMPACTION_SUMMARY in text_of(final)
    assert "PINEAPPLE" not in text_of(final)
    assert "SessionStart hook additional context: RESTORED-AFTER-COMPACT" in "\n".join(
        _system_texts(final)
    )
