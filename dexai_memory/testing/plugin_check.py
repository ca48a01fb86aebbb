"""Checking a plugin directory with the real Claude Code CLI: ``claude plugin validate``."""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .harness import build_env, claude_binary


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
