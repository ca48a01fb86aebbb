"""The Claude Code CLI, run fully offline against :mod:`dexai_memory.demo.fakeapi`.

``dexai demo`` drives a real session with it; the tests and benchmarks use the
same runner (:class:`ClaudeRun`). The CLI used is the one bundled with
``claude-agent-sdk`` (``claude_agent_sdk/_bundled/claude``; version in
``claude.version``), or the file named by ``$DEXAI_CLAUDE_BINARY``.  Every run
gets a throw-away ``HOME`` so the real ``~/.claude`` is never read or written.

What the CLI does offline (Claude Code 2.1.330, fake API on 127.0.0.1; the rest
of what was established by experiment, hooks and compaction, is in the test
harness, ``testing/harness.py`` in the repository)
======================================================================================

Offline, non-interactive invocation
    ``claude -p PROMPT --output-format json --permission-mode bypassPermissions``
    with env ``HOME=<tmp>``, ``ANTHROPIC_BASE_URL=http://127.0.0.1:PORT``,
    ``ANTHROPIC_API_KEY=<anything>`` and
    ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``.  The only network traffic
    is then ``POST /v1/messages?beta=true`` to the base URL (always
    ``"stream": true``, ``x-api-key`` header, ``user-agent: claude-cli/<ver>``,
    ``x-claude-code-session-id`` header).  A ``-p "hello"`` round trip takes
    about 1 s.  As root, bypass mode (``--permission-mode bypassPermissions``
    or ``--dangerously-skip-permissions``) exits 1 with "cannot be used with
    root/sudo privileges" unless ``IS_SANDBOX=1`` is set; this module sets it.
    ``--output-format json`` prints one ``result`` object (``session_id``,
    ``result`` text, ``usage``, ``is_error``, ``num_turns``; a slash command
    such as ``/compact`` adds ``"local_command": "compact"`` and has
    ``num_turns: 0``).  ``--output-format stream-json`` needs ``--verbose``
    and emits ``system/hook_started``, ``system/hook_response``,
    ``system/init``, ``assistant`` ... ``result`` lines.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..extraction.claude_code import bundled_cli
from ..lazy import has_extra, install_hint

__all__ = [
    "DUMMY_API_KEY",
    "ClaudeBinaryNotFound",
    "ClaudeResult",
    "ClaudeRun",
    "ClaudeTimeout",
    "build_args",
    "build_env",
    "claude_binary",
    "claude_version",
]

#: API key handed to the CLI; the fake server accepts anything.
DUMMY_API_KEY = "sk-ant-offline-dexai-0000"

#: Environment variable naming a Claude Code binary to use instead of the bundled one.
BINARY_ENV = "DEXAI_CLAUDE_BINARY"

# Inherited variables that could point the CLI at real accounts, real config
# or a parent Claude Code session; they are dropped from the child env.
_SCRUBBED_PREFIXES = ("ANTHROPIC_", "CLAUDE", "AWS_BEARER_TOKEN_BEDROCK")
_SCRUBBED_NAMES = frozenset(
    {"IS_SANDBOX", "DISABLE_AUTO_COMPACT", "DISABLE_COMPACT", "XDG_CONFIG_HOME"}
)


class ClaudeBinaryNotFound(FileNotFoundError):
    """The Claude Code CLI could not be located."""


class ClaudeTimeout(TimeoutError):
    """The CLI did not finish in time (it and its hook processes were killed)."""

    def __init__(self, args: Sequence[str], timeout: float, stdout: str, stderr: str) -> None:
        super().__init__(f"claude did not finish within {timeout:g}s: {' '.join(args[:3])} ...")
        self.args_list = list(args)
        self.timeout = timeout
        self.stdout = stdout
        self.stderr = stderr


def claude_binary() -> Path:
    """Path of the Claude Code CLI: ``$DEXAI_CLAUDE_BINARY`` or the SDK-bundled one."""
    override = os.environ.get(BINARY_ENV)
    if override:
        path = Path(override)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ClaudeBinaryNotFound(f"${BINARY_ENV}={override} is not an executable file")
        return path
    if not has_extra("sdk"):
        raise ClaudeBinaryNotFound(
            "claude-agent-sdk is not installed, so there is no bundled Claude Code CLI; "
            f"{install_hint('sdk')} (from a checkout: pip install '.[sdk]') or set ${BINARY_ENV}"
        )
    bundled = bundled_cli()
    if bundled is not None:
        return bundled
    raise ClaudeBinaryNotFound(
        "claude-agent-sdk is installed without its bundled CLI (_bundled/claude); "
        f"install a platform wheel of claude-agent-sdk or set ${BINARY_ENV}"
    )


def claude_version() -> str:
    """Version string of the CLI, e.g. ``"2.1.330"``."""
    bundled = claude_binary().with_name("claude.version")
    if bundled.is_file():
        return bundled.read_text().split()[0]
    out = subprocess.run(
        [str(claude_binary()), "--version"], capture_output=True, text=True, timeout=30, check=True
    )
    return out.stdout.split()[0]


def build_env(home: Path, base_url: str, env: Mapping[str, str] | None = None, *,
              auth: str = "api_key") -> dict[str, str]:
    """Environment for an offline CLI run: scrubbed parent env + fake-API settings.

    ``auth``: ``api_key`` hands the CLI ``ANTHROPIC_API_KEY`` (which hooks inherit, so
    dexai-memory extracts with Haiku against the fake API); ``token`` hands it
    ``ANTHROPIC_AUTH_TOKEN`` instead, like a user signed in with a Claude account: no
    ``ANTHROPIC_API_KEY`` anywhere, so dexai-memory runs its offline extractor."""
    child = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_SCRUBBED_PREFIXES) and k not in _SCRUBBED_NAMES
    }
    child.update(
        HOME=str(home),
        ANTHROPIC_BASE_URL=base_url,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
    )
    if auth == "token":
        child["ANTHROPIC_AUTH_TOKEN"] = DUMMY_API_KEY
    else:
        child["ANTHROPIC_API_KEY"] = DUMMY_API_KEY
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        # Claude Code refuses bypassPermissions as root outside a sandbox.
        child["IS_SANDBOX"] = "1"
    if env:
        child.update(env)
    return child


def build_args(
    prompt: str,
    *,
    plugin_dirs: Sequence[Path | str] = (),
    settings: Mapping[str, Any] | None = None,
    resume: str | None = None,
    session_id: str | None = None,
    autocompact: int | None = None,
    output_format: str = "json",
    permission_mode: str = "bypassPermissions",
    extra_args: Sequence[str] = (),
) -> list[str]:
    """Command-line arguments (without the binary) for one ``-p`` run."""
    args = ["-p", prompt, "--output-format", output_format, "--permission-mode", permission_mode]
    if output_format == "stream-json":
        args.append("--verbose")
    for plugin_dir in plugin_dirs:
        args += ["--plugin-dir", str(plugin_dir)]
    if settings is not None:
        args += ["--settings", json.dumps(settings)]
    if resume is not None:
        args += ["--resume", resume]
    if session_id is not None:
        args += ["--session-id", session_id]
    if autocompact is not None:
        args += ["--autocompact", str(autocompact)]
    args += list(extra_args)
    return args



@dataclass(frozen=True)
class ClaudeResult:
    """Outcome of one CLI run."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    duration: float
    result: dict[str, Any] | None
    """The ``type: "result"`` object (``None`` if the CLI printed none)."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    """Every JSON line of stdout (one for ``json``, many for ``stream-json``)."""

    @property
    def session_id(self) -> str | None:
        if self.result and isinstance(self.result.get("session_id"), str):
            return str(self.result["session_id"])
        for message in self.messages:
            if isinstance(message.get("session_id"), str):
                return str(message["session_id"])
        return None

    @property
    def text(self) -> str:
        """The final assistant text (``result.result``)."""
        value = (self.result or {}).get("result")
        return value if isinstance(value, str) else ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.result is not None and not self.result.get("is_error")

    def check(self) -> ClaudeResult:
        """Return ``self`` or raise ``RuntimeError`` with stderr when the run failed."""
        if not self.ok:
            raise RuntimeError(
                f"claude exited {self.returncode}: {self.stderr.strip() or self.stdout.strip()}"
            )
        return self


def _parse_output(stdout: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    messages: list[dict[str, Any]] = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            messages.append(obj)
    result = next((m for m in reversed(messages) if m.get("type") == "result"), None)
    return result, messages


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass
class ClaudeRun:
    """Reusable configuration for offline CLI runs; remembers the last session.

    >>> run = ClaudeRun(home=tmp/"home", base_url=api.base_url, cwd=tmp/"proj")  # doctest: +SKIP
    >>> run("remember PINEAPPLE"); run.resume("/compact")                      # doctest: +SKIP
    """

    home: Path
    base_url: str
    cwd: Path
    plugin_dirs: Sequence[Path | str] = ()
    settings: Mapping[str, Any] | None = None
    autocompact: int | None = None
    output_format: str = "json"
    permission_mode: str = "bypassPermissions"
    extra_args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    timeout: float = 120.0
    last_session_id: str | None = None
    #: ``api_key`` or ``token`` (a signed-in user with no API key): see :func:`build_env`.
    auth: str = "api_key"

    def command(
        self,
        prompt: str,
        *,
        resume: str | None = None,
        session_id: str | None = None,
        extra_args: Sequence[str] = (),
    ) -> list[str]:
        """Full argv (binary first)."""
        return [
            str(claude_binary()),
            *build_args(
                prompt,
                plugin_dirs=self.plugin_dirs,
                settings=self.settings,
                resume=resume,
                session_id=session_id,
                autocompact=self.autocompact,
                output_format=self.output_format,
                permission_mode=self.permission_mode,
                extra_args=[*self.extra_args, *extra_args],
            ),
        ]

    def _prepare(self) -> dict[str, str]:
        Path(self.home).mkdir(parents=True, exist_ok=True)
        Path(self.cwd).mkdir(parents=True, exist_ok=True)
        return build_env(Path(self.home), self.base_url, self.env, auth=self.auth)

    def _finish(self, argv: list[str], rc: int, out: str, err: str, t0: float) -> ClaudeResult:
        result, messages = _parse_output(out)
        res = ClaudeResult(argv, rc, out, err, time.monotonic() - t0, result, messages)
        if res.session_id:
            self.last_session_id = res.session_id
        return res

    def __call__(
        self,
        prompt: str,
        *,
        resume: str | None = None,
        session_id: str | None = None,
        extra_args: Sequence[str] = (),
    ) -> ClaudeResult:
        """Run ``claude -p prompt`` and wait for it."""
        argv = self.command(prompt, resume=resume, session_id=session_id, extra_args=extra_args)
        env = self._prepare()
        t0 = time.monotonic()
        with subprocess.Popen(
            argv,
            cwd=self.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        ) as proc:
            try:
                out, err = proc.communicate(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                _kill_group(proc.pid)
                out, err = proc.communicate()
                raise ClaudeTimeout(argv, self.timeout, out or "", err or "") from None
        return self._finish(argv, proc.returncode, out, err, t0)

    run = __call__

    def resume(self, prompt: str, **kwargs: Any) -> ClaudeResult:
        """Continue the last session of this runner (``--resume``)."""
        if self.last_session_id is None:
            raise RuntimeError("no session to resume yet")
        return self(prompt, resume=self.last_session_id, **kwargs)

    async def arun(
        self,
        prompt: str,
        *,
        resume: str | None = None,
        session_id: str | None = None,
        extra_args: Sequence[str] = (),
    ) -> ClaudeResult:
        """Async :meth:`run` (``asyncio.create_subprocess_exec``)."""
        argv = self.command(prompt, resume=resume, session_id=session_id, extra_args=extra_args)
        env = self._prepare()
        t0 = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=self.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out_b, err_b = await asyncio.wait_for(proc.communicate(), self.timeout)
        except (TimeoutError, asyncio.CancelledError) as exc:
            _kill_group(proc.pid)
            out_b, err_b = await proc.communicate()
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise ClaudeTimeout(
                argv, self.timeout, out_b.decode(errors="replace"), err_b.decode(errors="replace")
            ) from None
        rc = proc.returncode if proc.returncode is not None else await proc.wait()
        return self._finish(
            argv, rc, out_b.decode(errors="replace"), err_b.decode(errors="replace"), t0
        )
