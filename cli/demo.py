"""``dexai demo``: watch facts survive ``/compact`` in a real Claude Code session, offline.

Everything happens in a throw-away directory: a fake Anthropic Messages API on
127.0.0.1 plays the model, the Claude Code CLI bundled with claude-agent-sdk
runs with the dexai-memory plugin loaded, and a fresh, empty memory store. Your own data directory and ``~/.claude`` are never touched.

Steps, as a user lives them: the user states facts in the first prompt -> the
plugin's hooks queue the turn and start the memory daemon themselves (with
``daemon.autostart: false`` the events wait in the queue for a daemon you run) -> ``/compact``
whose summary keeps none of them -> the next prompt, whose request must carry
the facts again (re-injected after compaction). Nothing is written to the store
by the demo and no API key is used. Exit 0 when every fact made it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from dexai_memory.cli.common import fail
from dexai_memory.datadir import private_umask

#: What the user says in the first prompt, and the words of it memory must bring back.
FACTS_PROMPT = ("Some context before we start. My name is Sam. The project codename is BLUE-HERON. "
                "Deploys happen on Thursdays at 14:00 UTC. I prefer pytest over unittest.")
KEYS = ("Sam", "BLUE-HERON", "Thursdays", "pytest")
FILLER = "OK, let's look at the failing test first."
NEXT_PROMPT = "Thanks. Let's write the release checklist."
SUMMARY = "The user and assistant chatted."  # what the fake model's compaction summary says: nothing useful
REPO_PLUGIN = Path(__file__).resolve().parents[1]
HOOK_EVENTS = {"SessionStart": "session-start", "UserPromptSubmit": "user-prompt-submit",
               "PreCompact": "pre-compact", "PostToolUse": "post-tool-use", "Stop": "stop",
               "SessionEnd": "session-end"}


def _plugin_dir(tmp: Path) -> tuple[Path, str]:
    """The repo's plugin when this is a checkout, else an equivalent one written to ``tmp``."""
    if (REPO_PLUGIN / ".claude-plugin" / "plugin.json").is_file() and (REPO_PLUGIN / "hooks" / "hooks.json").is_file():
        return REPO_PLUGIN, "the repository's plugin"
    plugin = tmp / "plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / "hooks").mkdir()
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps(
        {"name": "dexai-memory", "version": "0.1.0", "description": "dexai-memory (demo copy)"}))
    hooks = {ev: [{"hooks": [{"type": "command", "timeout": 60,
                              "command": f'"{sys.executable}" -m dexai_memory.hook_runtime {cmd}'}]}]
             for ev, cmd in HOOK_EVENTS.items()}
    (plugin / "hooks" / "hooks.json").write_text(json.dumps({"hooks": hooks}))
    return plugin, "a generated copy of the plugin (this is an installed package, not a checkout)"


def _memory_blocks(text: str) -> list[str]:
    return re.findall(r"<dexai-memory>.*?</dexai-memory>", text, flags=re.S)


async def _stored(home: Path) -> list[tuple[str, str]]:
    """(type, content) of what the hooks stored, for the report."""
    from dexai_memory.config import load_settings
    from dexai_memory.models import MemoryType, SearchFilters
    from dexai_memory.providers import make_provider

    settings = load_settings(home=home)
    if not settings.db_path.exists():
        return []
    async with make_provider(settings) as provider:
        memories = await provider.list(user_id="demo", filters=SearchFilters(), limit=50)
    return [(m.type.value, m.content) for m in memories
            if m.type not in (MemoryType.SNAPSHOT, MemoryType.TRANSCRIPT)]


class _Out:
    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.n = 0

    def step(self, text: str) -> None:
        self.n += 1
        if not self.quiet:
            click.secho(f"\n{self.n}. {text}", bold=True)

    def info(self, text: str) -> None:
        if not self.quiet:
            click.echo(f"   {text}")

    def block(self, text: str) -> None:
        if not self.quiet:
            for line in text.splitlines():
                click.secho(f"   │ {line}", fg="cyan")


@click.command()
@click.option("--keep", is_flag=True, help="Keep the temporary directory (transcripts, hook log) and print its path.")
@click.option("--timeout", default=180.0, show_default=True, help="Seconds allowed per Claude Code run.")
@click.option("--json", "as_json", is_flag=True, help="No narration: one JSON report at the end.")
def demo(as_json: bool, keep: bool, timeout: float) -> None:
    """Show facts said in a real Claude Code session survive /compact (offline, in a temp dir).

    Nothing is set up behind the session's back: the plugin's hooks capture what the user
    says, start the memory daemon themselves, and put the facts back after compaction. No API
    key is used. It runs in its own throw-away data directory and user, so it takes none of the
    --user/--project/--home/--config options of the other commands.
    """
    private_umask()
    try:
        from dexai_memory.daemon.control import lock_held, stop
        from dexai_memory.demo.claude_cli import (
            ClaudeBinaryNotFound,
            ClaudeRun,
            claude_binary,
            claude_version,
        )
        from dexai_memory.demo.fakeapi import FakeMessagesAPI, is_compaction_prompt, text_of
    except ImportError as exc:  # pragma: no cover - packaging problem
        fail(f"the demo needs dexai_memory.demo (the fake Messages API and the CLI runner): {exc}")
    try:
        binary = claude_binary()
        version = claude_version()
    except (ClaudeBinaryNotFound, OSError) as exc:
        fail(f"no Claude Code CLI to drive: {exc}")
    from dexai_memory.config import load_settings

    out = _Out(as_json)
    tmp = Path(tempfile.mkdtemp(prefix="dexai-demo-"))
    home = tmp / "memory"
    settings = load_settings(home=home)
    ok = False
    report: dict[str, Any] = {"claude_version": version, "said": FACTS_PROMPT, "keys": list(KEYS)}
    try:
        plugin, plugin_note = _plugin_dir(tmp)
        with FakeMessagesAPI(compaction_summary=SUMMARY) as api:
            out.step("Start Claude Code against a local fake Messages API (no network, no API key)")
            out.info(f"claude {version} ({binary.name} bundled with claude-agent-sdk), {plugin_note} loaded")
            out.info(f"fake API on {api.base_url}; signed in with a token, no ANTHROPIC_API_KEY")
            out.info("extraction: the offline extractor (DEXAI_EXTRACTOR=offline). A signed-in user's daemon asks "
                     "Haiku through Claude Code within extraction.daily_token_budget, and falls back to these "
                     "rules; the fake API cannot play Haiku")
            out.info(f"an empty memory store in {home}; nothing else is started by this demo")
            # autostart on, as a user's default (the demo's daemon is stopped at the end)
            env = {"DEXAI_MEMORY_HOME": str(home), "DEXAI_MEMORY_USER": "demo", "DEXAI_EXTRACTOR": "offline",
                   "DEXAI_DAEMON_AUTOSTART": "1",
                   "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
            run = ClaudeRun(home=tmp / "claude-home", base_url=api.base_url, cwd=tmp / "project",
                            plugin_dirs=[plugin], env=env, timeout=timeout, auth="token")

            out.step(f'The user says: "{FACTS_PROMPT}"')
            first = run(FACTS_PROMPT)
            if not first.ok:
                raise click.ClickException(f"Claude Code failed on the first prompt: {first.stderr.strip()[-500:]}")
            started = lock_held(settings)
            report["daemon_started_by_hooks"] = started
            out.info("the Stop hook queued the turn for extraction"
                     + ("; the hooks started the memory daemon (detached) to extract it" if started else
                        " (daemon.autostart is off: it waits in the queue for a daemon)"))
            out.step(f'Another turn: "{FILLER}"')
            if not run.resume(FILLER).ok:
                raise click.ClickException("Claude Code failed on the second prompt")

            out.step("/compact: the conversation is summarised and the facts are dropped from it")
            compacted = run.resume("/compact")
            if not compacted.ok:
                raise click.ClickException(f"/compact failed: {compacted.stderr.strip()[-500:]}")
            requests = api.message_requests()
            if not any(is_compaction_prompt(r.body) for r in requests):
                raise click.ClickException("Claude Code did not send a compaction request")
            out.info(f"summary: {SUMMARY!r}")
            stored = asyncio.run(_stored(home))
            report["stored"] = [c for _, c in stored]
            out.info("PreCompact hook: queued turns extracted, transcript backed up, task snapshot taken; "
                     "memory now holds:")
            for kind, content in stored:
                out.info(f"  + [{kind.lower()}] {content}")

            out.step(f'Next prompt: "{NEXT_PROMPT}"')
            after = run.resume(NEXT_PROMPT)
            if not after.ok:
                raise click.ClickException(f"the prompt after /compact failed: {after.stderr.strip()[-500:]}")
            requests = api.message_requests()
            idx = max(i for i, r in enumerate(requests) if is_compaction_prompt(r.body))
            first_after = text_of(requests[idx + 1]) if idx + 1 < len(requests) else ""
            blocks = _memory_blocks(first_after)
            outside = re.sub(r"<dexai-memory>.*?</dexai-memory>", "", first_after, flags=re.S)
            outside = outside.replace(FACTS_PROMPT, "")
            out.info("the first request after compaction carried (SessionStart(compact) re-injection):")
            for b in blocks:
                out.block(b)
            survived = [k for k in KEYS if any(k in b for b in blocks)]
            from_summary = [k for k in KEYS if k in outside]
            report.update(survived=survived, from_summary=from_summary, requests=len(requests))
            ok = len(survived) == len(KEYS) and not from_summary

        out.step("Result")
        if ok:
            out.info(click.style(f"✓ all {len(KEYS)} facts said before /compact reached the model again after it, "
                                 "from dexai-memory (the summary kept none of them)", fg="green"))
        else:
            missing = [k for k in KEYS if k not in report.get("survived", [])]
            out.info(click.style(f"✗ {len(missing)} fact(s) did not come back after /compact: {missing}", fg="red"))
            log = home / "hooks.log"
            if log.exists() and log.read_text().strip():
                out.info(f"hook log ({log}):")
                out.info(log.read_text()[-2000:])
    except click.ClickException as exc:
        report["error"] = exc.message
        if not as_json:
            click.secho(f"\n✗ {exc.message}", fg="red", err=True)
            log = home / "hooks.log"
            if log.exists():
                click.echo(log.read_text()[-2000:], err=True)
    finally:
        stop(settings, timeout=15)  # the daemon the hooks started lives in the temp dir
        if keep:
            report["dir"] = str(tmp)
            if not as_json:
                click.echo(f"\n   kept {tmp} (transcripts in memory/transcripts, hook and daemon logs in memory/)")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    report["ok"] = ok
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False))
    sys.exit(0 if ok else 1)
