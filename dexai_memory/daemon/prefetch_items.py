"""File-aware prefetch in Claude Code: PostToolUse (and PostToolUseFailure) add what is known
about the file, failing command or branch the tool just touched.

* ``Read`` / ``Edit`` / ``Write`` / ``MultiEdit`` / ``NotebookEdit`` of a file: memories and
  episodes naming its path, file name or module;
* a failing ``Bash`` command (PostToolUseFailure's ``error``, or a PostToolUse result with a
  non-zero exit code): memories and episodes naming its exception, quoted names or words;
* ``git checkout <branch>`` / ``git switch <branch>``: memories and episodes naming the branch.

The lookup is :func:`dexai_memory.recall.prefetch.prefetch`, run by the daemon's executor; the answer is the hook's ``hookSpecificOutput.additionalContext``, at most
``hooks.prefetch_tokens`` tokens (0 = off) and ``hooks.prefetch_items`` memories. Each item is
looked up once per session, and memories already in the conversation (the L1 block, auto-recall,
earlier prefetches: the session state's ``injected`` ids) are never repeated. What it shows is
added to those ids, so auto-recall does not repeat it either, and Stop counts it when the reply
cites it (:mod:`dexai_memory.lifecycle.usage`: how often a prefetch was used). Memories of
another project (another repository's ``src/app.py``) are left out, those of no project kept.
The items looked up are kept in ``<home>/hooks/prefetch-<session>.json`` (0600), cleared after a
compaction (the context it was in is gone), pruned with the other hook state after 7 idle days
(kept at SessionEnd: a resumed session still shows what was prefetched).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shlex
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import Settings
from .session_state import load_session, remember_injected, safe_id, state_dir, write_json

if TYPE_CHECKING:
    from ..recall.prefetch import PrefetchItem

#: ``lookup(items, project=, local=, exclude_ids=, max_tokens=, max_items=)`` -> a block with
#: ``text`` and ``memory_ids`` (:func:`dexai_memory.recall.prefetch.prefetch` on the store).
Lookup = Callable[..., Awaitable[Any]]


#: Tools whose ``file_path`` names the file they read or change.
FILE_TOOLS = ("Read", "Edit", "Write", "MultiEdit", "NotebookEdit")
#: Most item keys and memory ids kept per session.
MAX_REMEMBERED = 500
_SWITCH = re.compile(r"\bgit\s+(?:-C\s+\S+\s+)?(checkout|switch)\b(.*)")


def prefetch_file(settings: Settings, session_id: str | None) -> Path:
    """A session's prefetch state: ``<home>/hooks/prefetch-<session>.json``."""
    return state_dir(settings) / f"prefetch-{safe_id(session_id)}.json"


def load_state(settings: Settings, session_id: str | None) -> dict[str, Any]:
    """``{"items": [keys looked up]}`` of a session."""
    try:
        data = json.loads(prefetch_file(settings, session_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def clear_state(settings: Settings, session_id: str | None) -> None:
    """Forget what was prefetched (after a compaction, at SessionEnd)."""
    with contextlib.suppress(OSError):
        prefetch_file(settings, session_id).unlink()


def branch_of(command: str) -> str | None:
    """The branch ``git checkout`` / ``git switch`` in ``command`` goes to (None for file checkouts)."""
    for part in re.split(r"&&|\|\||;", command):
        found = _SWITCH.search(part)
        if not found:
            continue
        try:
            words = shlex.split(found.group(2))
        except ValueError:
            words = found.group(2).split()
        if "--" in words:
            continue  # git checkout -- file: files, not a branch
        args = [w for w in words if not w.startswith("-")]
        if len(args) == 1:
            return args[0]
    return None


def _error_text(payload: dict[str, Any]) -> str | None:
    if payload.get("hook_event_name") == "PostToolUseFailure" or isinstance(payload.get("error"), str):
        return str(payload.get("error") or "")
    response = payload.get("tool_response")
    if isinstance(response, dict):
        code = response.get("exitCode", response.get("exit_code", response.get("returnCode")))
        if isinstance(code, int) and code != 0 or response.get("is_error") is True:
            return "\n".join(str(response.get(k) or "") for k in ("stdout", "stderr"))
    return None


def items_for(payload: dict[str, Any], *, branches: bool = True) -> list[PrefetchItem]:
    """What a PostToolUse / PostToolUseFailure ``payload`` asks to look up ([] for most tool calls,
    decided before anything is imported; no branch item when not ``branches``)."""
    tool = str(payload.get("tool_name") or "")
    raw = payload.get("tool_input")
    args: dict[str, Any] = raw if isinstance(raw, dict) else {}
    item: PrefetchItem | None = None
    if tool in FILE_TOOLS:
        from ..recall.prefetch import file_item

        cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
        item = file_item(str(args.get("file_path") or args.get("notebook_path") or ""), cwd)
    elif tool == "Bash":
        error = _error_text(payload)
        if error is not None:
            from ..recall.prefetch import error_item

            item = error_item(error)
        elif branches and (branch := branch_of(str(args.get("command") or ""))) is not None:
            from ..recall.prefetch import branch_item

            item = branch_item(branch)
    return [item] if item is not None else []


async def run_prefetch(settings: Settings, lookup: Lookup, payload: dict[str, Any], *, project: str | None,
                       local: str, branches: bool = True) -> str:
    """The prefetch text for one tool call ("" when off, nothing new, or nothing known), and the
    session's prefetch state updated. ``lookup`` is the provider's
    :func:`~dexai_memory.recall.prefetch.prefetch` bound to the user; ``local`` the session's
    project key. ``branches=False``: no branch item (the plugin's async PostToolUse entry leaves
    ``git checkout``/``git switch`` to its synchronous entry, whose answer reaches the very next
    request)."""
    sid = payload.get("session_id")
    budget = settings.hooks.prefetch_tokens
    if budget <= 0:
        return ""
    items = items_for(payload, branches=branches)
    if not items:
        return ""
    state, session = await asyncio.to_thread(lambda: (load_state(settings, sid), load_session(settings, sid)))
    done = set(state.get("items") or [])
    items = [i for i in items if i.key not in done]
    if not items:
        return ""
    exclude = [str(i) for i in session.get("injected") or []]
    block = await lookup(items, project=project, local=local, exclude_ids=exclude, max_tokens=budget,
                         max_items=settings.hooks.prefetch_items)
    state["items"] = [*(state.get("items") or []), *(i.key for i in items)][-MAX_REMEMBERED:]

    def save() -> None:
        from ..text.redaction import redact_all

        # the items' keys are built from redacted text; the whole state is redacted again for any other
        write_json(prefetch_file(settings, sid), redact_all(state))
        if block.memory_ids:
            # shown now: auto-recall does not repeat them, and Stop counts their citations in the reply
            remember_injected(settings, sid, block.memory_ids)

    await asyncio.to_thread(save)
    return str(block.text)
