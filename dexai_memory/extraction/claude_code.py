"""Extraction through the user's Claude Code sign-in: :class:`ClaudeCodeCall`.

Most Claude Code users sign in with a Claude account and have no
``ANTHROPIC_API_KEY``. For them the Haiku extractor, the update classifier and
the summarizer ask their question through the Claude Agent SDK's ``query()``:
the signed-in CLI runs one turn with a small model, no tools, no settings
(so no plugins and no hooks: our own hooks never see these calls), no session
saved, no extended thinking, and answers with JSON in text.

Which CLI: ``extraction.claude_code_cli`` (or ``$DEXAI_CLAUDE_CODE_CLI``) when
set, else ``claude`` on ``PATH``, else the one bundled in ``claude-agent-sdk``;
``none`` turns the sign-in path off. Whether it is signed in is asked with
``claude auth status --json`` (cached for :data:`STATUS_TTL_SECONDS`).

A call that fails (CLI missing, signed out, an API error, a malformed answer
twice) raises :class:`~dexai_memory.errors.ModelUnavailable`; the offline
implementation answers that batch (:mod:`dexai_memory.extraction.fallback`),
and for :data:`COOL_DOWN_SECONDS` after a failure no call is tried.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..datadir import ensure_home
from ..errors import MissingExtra, ModelUnavailable
from ..lazy import has_extra, install_hint, needs_extra
from .model_call import Answer, MalformedAnswer, ModelCall, schema_prompt, text_input
from .usage import Usage

if TYPE_CHECKING:
    from .usage import DailyBudget

__all__ = ["CLI_ENV", "COOL_DOWN_SECONDS", "INTERNAL_ENV", "ClaudeCodeCall", "SignIn", "bundled_cli", "find_cli",
           "sign_in"]

logger = logging.getLogger(__name__)

#: Environment variable overriding ``extraction.claude_code_cli`` (a path, or ``none``).
CLI_ENV = "DEXAI_CLAUDE_CODE_CLI"
#: Set in the environment of the CLI we run, so a hook of ours that still runs there does nothing
#: (the hooks' own off switch).
INTERNAL_ENV = "DEXAI_MEMORY_DISABLED"
#: Seconds a ``claude auth status`` answer is trusted.
STATUS_TTL_SECONDS = 600.0
#: Seconds after a failed call during which the offline implementation answers without trying.
COOL_DOWN_SECONDS = 600.0
#: Seconds one call may take (CLI start, the model's answer).
CALL_TIMEOUT_SECONDS = 120.0


def bundled_cli() -> Path | None:
    """The Claude Code CLI bundled in ``claude-agent-sdk`` (found without importing the SDK), if any."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = Path(location) / "_bundled" / "claude"
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def find_cli(configured: str = "") -> Path | None:
    """The CLI to extract with: ``$DEXAI_CLAUDE_CODE_CLI``, then ``configured``, then ``claude`` on
    ``PATH``, then :func:`bundled_cli`; None when it is ``none`` or nothing executable is found."""
    choice = os.environ.get(CLI_ENV, configured).strip()
    if choice.lower() == "none":
        return None
    if choice:
        path = Path(choice).expanduser()
        return path if path.is_file() and os.access(path, os.X_OK) else None
    found = shutil.which("claude")
    return Path(found) if found else bundled_cli()


@dataclass(frozen=True)
class SignIn:
    """Whether a Claude Code CLI can run model calls for us, and why (for ``doctor``)."""

    cli: Path | None
    signed_in: bool
    method: str
    reason: str


_status_cache: dict[str, tuple[float, SignIn]] = {}


def sign_in(configured: str = "", *, refresh: bool = False) -> SignIn:
    """Ask the CLI (``claude auth status --json``) whether it is signed in; cached for
    :data:`STATUS_TTL_SECONDS` per CLI path unless ``refresh``."""
    cli = find_cli(configured)
    if cli is None:
        off = os.environ.get(CLI_ENV, configured).strip().lower() == "none"
        return SignIn(None, False, "none", "turned off (claude_code_cli: none)" if off
                      else "no Claude Code CLI (neither `claude` on PATH nor claude-agent-sdk's bundled one)")
    if not has_extra("sdk"):  # the calls go through the SDK's query(): no use asking the CLI
        return SignIn(cli, False, "none", f"the sign-in path needs claude-agent-sdk: {install_hint('sdk')}")
    cached = _status_cache.get(str(cli))
    if cached and not refresh and time.monotonic() - cached[0] < STATUS_TTL_SECONDS:
        return cached[1]
    try:
        out = subprocess.run([str(cli), "auth", "status", "--json"], capture_output=True, text=True, timeout=20,
                             stdin=subprocess.DEVNULL, env={**os.environ, INTERNAL_ENV: "1"})
        data = json.loads(out.stdout or "{}")
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        status = SignIn(cli, False, "none", f"`{cli} auth status` failed: {exc}")
    else:
        method = str(data.get("authMethod") or "none") if isinstance(data, dict) else "none"
        logged_in = isinstance(data, dict) and data.get("loggedIn") is True
        status = SignIn(cli, logged_in, method, f"signed in ({method})" if logged_in else "not signed in")
    _status_cache[str(cli)] = (time.monotonic(), status)
    return status


class ClaudeCodeCall(ModelCall):
    """Structured calls through the signed-in Claude Code CLI (see the module docstring)."""

    failure = ModelUnavailable
    source = "claude_code"

    def __init__(self, model: str, cli: Path, *, cwd: Path | None = None, max_tokens: int = 2048,
                 budget: DailyBudget | None = None, timeout: float = CALL_TIMEOUT_SECONDS, retries: int = 2):
        super().__init__(model, max_tokens=max_tokens, budget=budget)
        self.cli = cli
        self.retries = retries
        self.cwd = cwd
        self.timeout = timeout
        self._down_until = 0.0

    async def send(self, system: str, prompt: str, tool: Mapping[str, Any], what: str) -> Answer:
        if time.monotonic() < self._down_until:
            raise ModelUnavailable(f"{what}: Claude Code failed a moment ago; trying again later")
        try:
            return await self._query(system, prompt, tool, what)
        except ModelUnavailable:
            self._down_until = time.monotonic() + COOL_DOWN_SECONDS
            raise

    async def _query(self, system: str, prompt: str, tool: Mapping[str, Any], what: str) -> Answer:
        import asyncio  # local: only a model call needs it

        try:
            with needs_extra("sdk", "the extraction through a Claude Code sign-in"):
                from claude_agent_sdk import (
                    ClaudeAgentOptions,
                    ClaudeSDKError,
                    ResultMessage,
                    query,
                )
        except MissingExtra as exc:
            raise ModelUnavailable(f"{what}: {exc}") from exc
        if self.cwd is not None:
            ensure_home(self.cwd)
        options = ClaudeAgentOptions(
            model=self.model, system_prompt=schema_prompt(system, tool), tools=[], setting_sources=[],
            max_turns=1, cli_path=self.cli, cwd=self.cwd, thinking={"type": "disabled"},
            env={INTERNAL_ENV: "1", "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(self.max_tokens),
                 "CLAUDE_CODE_MAX_RETRIES": str(self.retries)},
            extra_args={"no-session-persistence": None},
        )
        result: Any = None
        try:
            async with asyncio.timeout(self.timeout):
                async for message in query(prompt=prompt, options=options):
                    if isinstance(message, ResultMessage):
                        result = message
        except (ClaudeSDKError, OSError, TimeoutError) as exc:
            raise ModelUnavailable(f"{what}: Claude Code failed: {type(exc).__name__}: {exc}") from exc
        if result is None:
            raise ModelUnavailable(f"{what}: Claude Code ended without a result")
        usage = Usage.of(result.usage or {})
        if result.is_error:
            if self.budget is not None and usage.total:
                self.budget.charge(self.source, usage)
            detail = result.api_error_status or "; ".join(result.errors or []) or result.subtype
            raise ModelUnavailable(f"{what}: Claude Code answered with an error ({detail}): {result.result or ''}")
        try:
            return Answer(text_input(result.result or "", str(tool["name"])), usage)
        except MalformedAnswer as exc:
            return Answer(None, usage, str(exc))
