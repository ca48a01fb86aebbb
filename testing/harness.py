"""Drive the real Claude Code CLI fully offline, for tests and benchmarks.

The runner itself (:class:`~dexai_memory.demo.claude_cli.ClaudeRun`, the environment, the
binary) ships with the package for ``dexai demo``; this module adds the test-only helpers:
:func:`command_hooks`, :func:`run_claude` / :func:`arun_claude`, :func:`queue_drained`, and the
facts below.

Facts established by experiment (Claude Code 2.1.330, fake API on 127.0.0.1)
============================================================================

Offline, non-interactive invocation
    See :mod:`dexai_memory.demo.claude_cli` (the binary, the flags, the environment).

Request shape
    ``system`` is a list of text blocks (billing header, "You are a Claude
    agent...", the main prompt).  ``messages[0]`` is the user turn (a
    ``<system-reminder>`` text block, then the prompt).  After each user turn
    the CLI appends a ``{"role": "system", "content": ...}`` message holding
    environment info *and hook context*.  The CLI never uses the server-side
    ``compact_20260112`` edit (its ``context_management`` only carries
    ``clear_thinking_20251015``).

Hooks (``--settings '{"hooks": {...}}'`` and ``--plugin-dir DIR``)
    Shape: ``{"hooks": {"SessionStart": [{"matcher": "...", "hooks":
    [{"type": "command", "command": "...", "timeout": 30}]}]}}`` (matcher
    optional).  A plugin is a directory with ``.claude-plugin/plugin.json``
    (``{"name": "kebab-name", "version": ..., "description": ...}``) and
    ``hooks/hooks.json`` (same ``{"hooks": {...}}`` shape); its commands see
    ``CLAUDE_PLUGIN_ROOT`` (``${CLAUDE_PLUGIN_ROOT}`` is expanded; quote it).
    Settings hooks and plugin hooks both run, per event.  Hooks get JSON on
    stdin with ``session_id``, ``transcript_path``
    (``$HOME/.claude/projects/<cwd-slug>/<session>.jsonl``), ``cwd``,
    ``hook_event_name`` plus:

    * SessionStart: ``source`` = ``startup`` | ``resume`` | ``compact``
      (``resume`` adds ``context_tokens``; ``compact`` adds ``model``);
    * UserPromptSubmit: ``prompt``, ``prompt_id``, ``permission_mode``;
    * PreCompact: ``trigger`` = ``manual`` | ``auto``, ``custom_instructions``
      (the text after ``/compact``, or ``null``);
    * PostCompact: ``trigger``, ``compact_summary`` (the model's full
      ``<analysis>...<summary>...`` reply);
    * Stop: ``last_assistant_message``, ``stop_hook_active``;
      SessionEnd: ``reason`` (``other`` in ``-p`` mode).

    Env seen by hooks: ``CLAUDE_PROJECT_DIR``, ``CLAUDE_CODE_SESSION_ID``,
    ``CLAUDE_ENV_FILE`` (SessionStart only), ``CLAUDECODE=1``.

Where ``additionalContext`` lands
    Printing ``{"hookSpecificOutput": {"hookEventName": "SessionStart",
    "additionalContext": "X"}}`` makes the next request carry a
    ``role: "system"`` message whose text contains
    ``"SessionStart hook additional context: X"`` (several hooks: the first
    is prefixed, the others follow on their own lines).  UserPromptSubmit
    context appears as ``"UserPromptSubmit hook additional context: X"`` in
    the system message after that user turn.  The messages stay in the
    transcript, so later requests of the session repeat them.

Manual compaction (``--resume SID -p "/compact INSTRUCTIONS"``)
    Order: SessionStart(resume) -> PreCompact(trigger=manual,
    custom_instructions=INSTRUCTIONS) -> one ordinary streaming
    ``/v1/messages`` request (same system prompt and tools) whose last user
    message is the summarization prompt ("CRITICAL: Respond with TEXT ONLY
    ... an <analysis> block followed by a <summary> block", with the
    instructions embedded) -> SessionStart(source=compact) -> PostCompact ->
    SessionEnd.  The next turn's first user message is "This session is being
    continued from a previous conversation ... Summary:\\n<text inside
    <summary>>"; the original turns are gone from the request.
    SessionStart(compact) context shows up in the system message after the
    next user prompt.  ~1.5 s.

Auto-compaction
    Window: ``--autocompact TOKENS`` (at least 100000) or env
    ``CLAUDE_CODE_AUTO_COMPACT_WINDOW``; ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE``
    lowers the threshold; ``DISABLE_AUTO_COMPACT`` / ``DISABLE_COMPACT`` turn
    it off.  With ``--autocompact 100000`` the effective window is 80000 and
    the threshold 67000 tokens.  Trigger recipe: turn 1 normal (establishes a
    ~4.4k-token fixed prefix), turn 2 replies with ``usage.input_tokens =
    90000``, turn 3 (``--resume``) runs PreCompact(trigger=auto,
    custom_instructions=null) -> compaction request -> SessionStart(compact)
    -> PostCompact(auto) before sending its own request.  Reporting 90000 on
    the very first turn does *not* compact ("fixed prefix > threshold —
    compaction cannot help").  Auto-compaction keeps the most recent messages
    verbatim after the summary.

Plugin validation
    ``claude plugin validate DIR [--json] [--strict]``: exit 0 when valid
    (warnings allowed), 1 on errors (e.g. a name with spaces) or, with
    ``--strict``, on warnings (missing ``author``, unquoted
    ``${CLAUDE_PLUGIN_ROOT}``, unknown hook event names).  ``--json`` prints
    ``{"success", "manifest": {"errors", "warnings"}, "contents": [...],
    "provides": {"hooks": [...]}, ...}``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dexai_memory.capture.queue import ExtractionQueue
from dexai_memory.config import load_settings
from dexai_memory.demo.claude_cli import ClaudeResult, ClaudeRun

__all__ = ["arun_claude", "command_hooks", "queue_drained", "run_claude"]


def queue_drained(home: Path, timeout: float = 60.0) -> bool:
    """Wait until the daemon of data directory ``home`` extracted every queued turn (nothing
    pending in ``queue.db``; dead letters aside); False when ``timeout`` seconds pass first."""
    settings = load_settings(home=home)
    if not (settings.home / "queue.db").exists():
        return True
    deadline = time.monotonic() + timeout
    while True:
        with ExtractionQueue.from_settings(settings) as queue:
            if queue.pending_count() == 0:
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)


def command_hooks(
    commands: Mapping[str, str | Sequence[str]],
    *,
    matcher: str | None = None,
    timeout: int | None = None,
) -> dict[str, Any]:
    """Build ``{"hooks": {...}}`` settings from ``{event: command(s)}``.

    >>> command_hooks({"SessionStart": "echo hi"})["hooks"]["SessionStart"][0]["hooks"][0]
    {'type': 'command', 'command': 'echo hi'}
    """
    hooks: dict[str, Any] = {}
    for event, cmds in commands.items():
        entries = []
        for cmd in [cmds] if isinstance(cmds, str) else cmds:
            hook: dict[str, Any] = {"type": "command", "command": cmd}
            if timeout is not None:
                hook["timeout"] = timeout
            entries.append(hook)
        group: dict[str, Any] = {"hooks": entries}
        if matcher is not None:
            group["matcher"] = matcher
        hooks[event] = [group]
    return {"hooks": hooks}



def run_claude(
    prompt: str,
    *,
    home: Path,
    base_url: str,
    cwd: Path,
    plugin_dirs: Sequence[Path | str] = (),
    settings: Mapping[str, Any] | None = None,
    resume: str | None = None,
    session_id: str | None = None,
    autocompact: int | None = None,
    output_format: str = "json",
    extra_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> ClaudeResult:
    """Run ``claude -p prompt`` offline against ``base_url`` and wait for it."""
    runner = ClaudeRun(
        home=home,
        base_url=base_url,
        cwd=cwd,
        plugin_dirs=plugin_dirs,
        settings=settings,
        autocompact=autocompact,
        output_format=output_format,
        extra_args=extra_args,
        env=env,
        timeout=timeout,
    )
    return runner(prompt, resume=resume, session_id=session_id)


async def arun_claude(
    prompt: str,
    *,
    home: Path,
    base_url: str,
    cwd: Path,
    plugin_dirs: Sequence[Path | str] = (),
    settings: Mapping[str, Any] | None = None,
    resume: str | None = None,
    session_id: str | None = None,
    autocompact: int | None = None,
    output_format: str = "json",
    extra_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,  # noqa: ASYNC109 - a subprocess deadline, mirrors run_claude
) -> ClaudeResult:
    """Async :func:`run_claude`."""
    runner = ClaudeRun(
        home=home,
        base_url=base_url,
        cwd=cwd,
        plugin_dirs=plugin_dirs,
        settings=settings,
        autocompact=autocompact,
        output_format=output_format,
        extra_args=extra_args,
        env=env,
        timeout=timeout,
    )
    return await runner.arun(prompt, resume=resume, session_id=session_id)


if __name__ == "__main__":  # pragma: no cover - manual smoke test
    from dexai_memory.demo.fakeapi import FakeMessagesAPI

    with FakeMessagesAPI() as _api, tempfile.TemporaryDirectory() as _tmp:
        _res = run_claude(
            " ".join(sys.argv[1:]) or "hello",
            home=Path(_tmp) / "home",
            base_url=_api.base_url,
            cwd=Path(_tmp) / "work",
        )
        sys.stdout.write(json.dumps(_res.result, indent=2) + "\n")
