"""Checking a plugin directory with the real Claude Code CLI (``claude plugin validate``), and which
of its hooks Claude Code runs and waits for (:func:`user_waits`: async hooks are not waited for)."""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dexai_memory.demo.claude_cli import build_env, claude_binary


@dataclass(frozen=True)
class PluginValidation:
    """Result of ``claude plugin validate --json DIR``."""

    returncode: int
    report: dict[str, Any]
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def errors(self) -> list[str]:
        return self._collect("errors")

    @property
    def warnings(self) -> list[str]:
        return self._collect("warnings")

    def _collect(self, key: str) -> list[str]:
        sections = [self.report.get("manifest") or {}, *(self.report.get("contents") or [])]
        return [
            f"{item.get('path')}: {item.get('message')}"
            for section in sections
            for item in section.get(key) or []
        ]


def validate_plugin(
    plugin_dir: Path | str, *, strict: bool = False, home: Path | None = None, timeout: float = 60
) -> PluginValidation:
    """Run ``claude plugin validate --json [--strict] DIR`` with a throw-away HOME."""
    argv = [str(claude_binary()), "plugin", "validate", "--json"]
    if strict:
        argv.append("--strict")
    argv.append(str(plugin_dir))
    with tempfile.TemporaryDirectory(prefix="dexai-claude-home-") as tmp:
        env = build_env(Path(home) if home else Path(tmp), "http://127.0.0.1:9")
        proc = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        report = {}
    return PluginValidation(
        proc.returncode, report if isinstance(report, dict) else {}, proc.stdout, proc.stderr
    )


def _matcher_matches(matcher: str | None, tool: str) -> bool:
    """A hooks.json ``matcher`` against a tool name as Claude Code 2.1.330 applies it: none, ``""``
    or ``"*"`` match every tool; names and ``|`` only (``Read|Edit``) match those names exactly;
    anything else is a regular expression searched in the name (a negative lookahead works:
    ``^(?!(Read|Edit)$).*``)."""
    if not matcher or matcher == "*":
        return True
    if re.fullmatch(r"[A-Za-z0-9_|]+", matcher):
        return tool in matcher.split("|")
    return re.search(matcher, tool) is not None


def _if_matches(rule: str | None, tool: str, tool_input: dict[str, Any]) -> bool:
    """A hook's ``if`` (permission-rule syntax, ``Bash(git checkout *)``): the tool's name and, for
    Bash, its command against the glob. Approximate: Claude Code also splits compound commands."""
    if not rule:
        return True
    name, _, pattern = rule.partition("(")
    if name != tool:
        return False
    pattern = pattern.removesuffix(")")
    return not pattern or fnmatch.fnmatchcase(str(tool_input.get("command") or ""), pattern)


def hooks_for(hooks_json: dict[str, Any], event: str, payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The hooks of a plugin's ``hooks/hooks.json`` (parsed) that Claude Code runs for ``event``
    (``"PostToolUse"``, ...) with ``payload`` (``tool_name`` / ``tool_input`` for tool events)."""
    tool = str(payload.get("tool_name") or "")
    raw = payload.get("tool_input")
    tool_input: dict[str, Any] = raw if isinstance(raw, dict) else {}
    out = []
    for group in (hooks_json.get("hooks") or {}).get(event) or []:
        if tool and not _matcher_matches(group.get("matcher"), tool):
            continue
        out += [h for h in group.get("hooks") or [] if not tool or _if_matches(h.get("if"), tool, tool_input)]
    return out


def user_waits(hooks_json: dict[str, Any], event: str, payload: dict[str, Any]) -> bool:
    """Whether Claude Code waits for the plugin's hooks of ``event`` with ``payload``: True when
    one of them is synchronous (no ``"async": true`` / ``"asyncRewake": true``)."""
    return any(not (h.get("async") or h.get("asyncRewake")) for h in hooks_for(hooks_json, event, payload))
