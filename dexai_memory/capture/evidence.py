"""Evidence, not memories: the turns of a coding session that are never extracted.

A Claude Code session is mostly machine text: tool results (file dumps, diffs, listings,
progress lines, build and test logs), the assistant's narration of what it is doing, slash
commands, interruptions. Stored as memories they drown what the user said (real sessions
replayed before this rule: ~14 memories a prompt, about three quarters of them junk). So a
session's turns are read by who said them:

* **the user** is the source: instructions, preferences, corrections, decisions, warnings,
  names, commitments. A prompt that is only pasted output (a log, a stack trace, a diff), a
  slash command, or an interruption notice is evidence;
* **the assistant's replies** are evidence: the user's answer to them is what counts ("yes,
  use pnpm" is read with the question before it, which stays in the context);
* **tool results** are evidence.

Evidence is not queued for extraction, by any extractor (the model and the offline rules see
the same turns); it stays the context the next turns are read with, it is in the transcript
backup taken before compaction, and the file-aware prefetch still finds what memory holds
about the files and errors it names.

Named speakers (a chat between people, ``dexai memory ingest`` of a conversation) are not a
coding session: everything they say is read. Standard library only (runs in every capture).
"""

from __future__ import annotations

import re

from ..models import TOOL_SOURCES, Turn

__all__ = ["evidence_kind", "is_session_turn", "pasted_output"]

#: Hook sources: the turn came from an agent session (Claude Code, the Agent SDK).
SESSION_SOURCES = ("claude-code:", "agent-sdk:")

_COMMAND = re.compile(r"^\s*/[\w:-]+(\s|$)")
_INTERRUPTED = re.compile(r"^\s*\[Request interrupted by user.*\]\s*$|^\s*<(local-)?command-|^\s*Caveat: ", re.S)
#: A line of machine output: log levels, stack frames, test runner lines, prompts, diff and
#: listing lines, progress counters, key=value dumps.
_OUTPUT_LINE = re.compile(
    r"""^\s*(
        (?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[\d\d:\d\d)            # timestamps
      | (?:DEBUG|INFO|WARN(?:ING)?|ERROR|CRITICAL|FATAL|TRACE)\b[:\s]  # log levels
      | Traceback\ \(most\ recent | File\ "[^"]+",\ line\ \d+ | at\ [\w.$<>]+\(.*:\d+\)  # stack frames
      | \w*(?:Error|Exception)(?::|\s*$)                          # exception lines
      | (?:platform\ \w+\ --|rootdir:|cachedir:|configfile:|plugins:|collected\ \d+|=+\ .*\ =+$)  # pytest
      | (?:PASSED|FAILED|SKIPPED|ERROR)\b | \S+::\S+                   # test ids
      | [$#>]\ \S | \S+@\S+:\S*[$#]\                                # shell prompts
      | (?:diff\ --git|index\ [0-9a-f]+\.\.|@@\ |\+\+\+\ |---\ )     # diffs
      | [+-](?![-+\s]*$)\S                                          # diff lines
      | [d\-l][rwx-]{9}\s | total\ \d+$                            # ls -l
      | \d+\s*[|│→]                                                 # numbered file lines
      | (?:Downloading|Installing|Collecting|Building|Compiling|Resolved|Prepared|Installed|Uninstalled)\b
      | [\w./-]+\.\w+:\d+(?::\d+)?[:\s]                             # path:line: messages
      | [{}\[\]<>]                                                  # code, JSON, markup
    )""", re.X)


def is_session_turn(turn: Turn) -> bool:
    """Whether ``turn`` came from an agent session's hooks (no speaker name; a hook source)."""
    if turn.speaker:
        return False
    source = turn.metadata.get("source") if turn.metadata else None
    return isinstance(source, str) and source.startswith(SESSION_SOURCES)


def pasted_output(text: str) -> bool:
    """Whether ``text`` is mostly machine output (most of its non-empty lines look like logs,
    code, diffs or listings, or a fenced block holds most of it)."""
    stripped = text.strip()
    if not stripped:
        return True
    fenced = sum(len(m.group(0)) for m in re.finditer(r"```.*?(```|\Z)", stripped, re.S))
    if fenced > 0.7 * len(stripped):
        return True
    lines = [ln for ln in stripped.splitlines() if ln.strip()]
    if len(lines) < 2:
        return bool(_OUTPUT_LINE.match(stripped)) and len(stripped.split()) > 2 and not _prose(stripped)
    output = sum(1 for ln in lines if _OUTPUT_LINE.match(ln))
    return output >= 0.6 * len(lines)


def _prose(line: str) -> bool:
    words = re.findall(r"[A-Za-z]{2,}", line)
    return len(words) >= 6 and sum(1 for w in words if w.islower()) >= 0.6 * len(words)


def evidence_kind(turn: Turn) -> str | None:
    """Why ``turn`` is evidence and not a source of memories ("tool", "assistant", "command",
    "interruption", "pasted output"), or None when it is read for memories."""
    source = turn.metadata.get("source") if turn.metadata else None
    if turn.role == "tool" or (isinstance(source, str) and source.startswith(TOOL_SOURCES)):
        return "tool"
    if not is_session_turn(turn):
        return None
    if turn.role == "assistant":
        return "assistant"
    text = turn.content or ""
    if _INTERRUPTED.match(text):
        return "interruption"
    if _COMMAND.match(text) and len(text.split()) <= 2:
        return "command"
    if pasted_output(text):
        return "pasted output"
    return None
