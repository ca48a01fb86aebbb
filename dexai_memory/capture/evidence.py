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
from ..text.output import pasted_output

__all__ = ["evidence_kind", "is_session_turn", "is_tool_turn"]

#: Hook sources: the turn came from an agent session (Claude Code, the Agent SDK).
SESSION_SOURCES = ("claude-code:", "agent-sdk:")

_COMMAND = re.compile(r"^\s*/[\w:-]+(\s|$)")
_INTERRUPTED = re.compile(r"^\s*\[Request interrupted by user.*\]\s*$|^\s*<(local-)?command-|^\s*Caveat: ", re.S)


def is_tool_turn(turn: Turn) -> bool:
    """Whether ``turn`` is a tool result (PostToolUse: role "tool", or a ``claude-code:tool-...`` /
    ``agent-sdk:tool-...`` source) rather than something the user or the assistant said."""
    source = turn.metadata.get("source") if turn.metadata else None
    return turn.role == "tool" or (isinstance(source, str) and source.startswith(TOOL_SOURCES))


def is_session_turn(turn: Turn) -> bool:
    """Whether ``turn`` came from an agent session's hooks (no speaker name; a hook source)."""
    if turn.speaker:
        return False
    source = turn.metadata.get("source") if turn.metadata else None
    return isinstance(source, str) and source.startswith(SESSION_SOURCES)


def evidence_kind(turn: Turn) -> str | None:
    """Why ``turn`` is evidence and not a source of memories ("tool", "assistant", "command",
    "interruption", "pasted output"), or None when it is read for memories."""
    if is_tool_turn(turn):
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
