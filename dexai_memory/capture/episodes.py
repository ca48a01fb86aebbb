"""Episodes: a session, or the stretch of one since its last compaction, told as one memory.

At PreCompact and SessionEnd the hooks read Claude Code's transcript (the JSONL
file at the payload's ``transcript_path``) and turn the current *stretch* (the
entries after the last ``compact_boundary``, or the whole session when there is
none) into an :class:`Episode`: a title, a summary, a compressed line, an index
key, the full narrative, and its artifacts:

* ``files``: paths edited (``Edit`` / ``Write`` / ``MultiEdit`` / ``NotebookEdit`` inputs);
* ``commands``: ``Bash`` commands run, in order, without repeats;
* ``commits``: ``git commit`` commands, with the hash and subject from their output
  (``[main 1a2b3c4] subject``) when it is there, else the ``-m`` message;
* ``errors_fixed``: a ``Bash`` command that failed and later succeeded, with its first
  error line.

Offline rules only (no model). Every string passes :func:`~dexai_memory.text.redaction.redact`
(commands can carry tokens). The episode's id is derived from the session and the
stretch's first entry, so a repeated PreCompact of the same stretch, or SessionEnd after
it, updates the one episode instead of adding another (:func:`store_episode`).

It is stored as a :class:`~dexai_memory.models.MemoryType` ``EPISODE`` memory: ``content``
is the full form, ``metadata["forms"]`` holds ``summary`` / ``compressed`` / ``index``,
``metadata["artifacts"]`` the lists above. Searches skip episodes unless they ask for
the type, so they never fill the L1 block or the persistent context; the file-aware
prefetch (:mod:`dexai_memory.daemon.prefetch_items`) looks them up by file, command and error.

Stdlib only at import time (the command hook builds episodes itself).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..models import Memory, MemoryType
from ..text.words import search_terms

if TYPE_CHECKING:
    from ..providers.base import MemoryProvider

#: Largest transcript read for an episode (bytes); a bigger one gives the episode of its last part.
MAX_TRANSCRIPT_BYTES = 16 * 1024 * 1024  # ~10 s of parsing: PreCompact answers within its 60 s
#: Tools whose ``file_path`` input is an edited file.
EDIT_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
#: Most entries kept per artifact list, and characters per command.
MAX_ITEMS = 40
MAX_COMMAND = 300
#: ``[main 1a2b3c4] subject`` in ``git commit`` output.
_COMMIT_OUT = re.compile(r"^\[([^\]\s]+)(?: \(root-commit\))? ([0-9a-f]{7,40})\] (.+)$", re.M)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class Episode(NamedTuple):
    """One episode: its forms and artifacts (see the module docstring)."""

    id: str
    session_id: str | None
    title: str
    summary: str
    compressed: str
    #: The index form (a short key the ``recall`` tool can expand).
    key: str
    full: str
    artifacts: dict[str, list[Any]]
    started_at: str | None = None
    ended_at: str | None = None

    def memory(self, user_id: str, project: str | None = None) -> Memory:
        """The episode as an ``EPISODE`` memory (content: the full form)."""
        return Memory(id=self.id, content=self.full, user_id=user_id, type=MemoryType.EPISODE,
                      project=project, session_id=self.session_id, importance=4,
                      metadata={"title": self.title, "forms": {"summary": self.summary,
                                                               "compressed": self.compressed,
                                                               "index": self.key},
                                "artifacts": self.artifacts, "started_at": self.started_at,
                                "ended_at": self.ended_at, "source": "episode"})

    def to_dict(self) -> dict[str, Any]:
        """The episode as JSON-ready fields (the daemon's ``hook.episode`` request)."""
        return self._asdict()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Episode:
        """The episode of :meth:`to_dict`'s fields (missing ones None)."""
        fields: dict[str, Any] = {k: data.get(k) for k in cls._fields}
        return cls(**fields)


# --------------------------------------------------------------------------- reading the transcript


def stretch_entries(real: str | None, *, max_bytes: int = MAX_TRANSCRIPT_BYTES) -> list[dict[str, Any]]:
    """The transcript entries after the last ``compact_boundary`` (all of them when there is none);
    [] for a missing or unreadable file. ``real``: a path already checked by the caller
    (:func:`dexai_memory.daemon.session_state.transcript_file`: a regular ``.jsonl`` file)."""
    if not real:
        return []
    raw: list[bytes] = []
    try:
        with open(real, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > max_bytes:
                fh.seek(size - max_bytes)
                fh.readline()  # a cut line
            for line in fh:
                if b'"compact_boundary"' in line:
                    raw = []
                    continue
                if line.strip():
                    raw.append(line)
    except OSError:
        return []
    out = []
    for line in raw:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out


def _blocks(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = (entry.get("message") or {}).get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _result_text(block: Mapping[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text") or "") for b in content if isinstance(b, dict))
    return ""


def user_text(entry: Mapping[str, Any]) -> str:
    """What the user typed in a transcript entry of type ``user``: '' for tool results, slash
    commands and their output, system reminders, and Claude Code's own entries (meta lines, the
    compaction summary, a subagent's instructions)."""
    content = (entry.get("message") or {}).get("content")
    if isinstance(content, str):
        text = content
    else:
        text = "\n".join(str(b.get("text") or "") for b in _blocks(entry) if b.get("type") == "text")
    text = text.strip()
    if text.startswith(("<command-", "<local-command", "<system-reminder")):
        return ""
    # Claude Code's own entries: meta lines, the compaction summary, a subagent's instructions
    if entry.get("isMeta") or entry.get("isCompactSummary") or entry.get("isVisibleInTranscriptOnly") \
            or entry.get("isSidechain"):
        return ""
    return text


def _first_error_line(text: str) -> str:
    lines = [re.sub(r"^E\s+", "", " ".join(ln.split())) for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):  # tracebacks end with the error (pytest marks its lines "E   ")
        if re.search(r"(error|exception|failed|fatal|not found|denied)", ln, re.I):
            return ln[:200]
    return (lines[-1] if lines else "")[:200]


def _commit_from_command(command: str) -> str | None:
    if not re.search(r"\bgit\b(?:\s+-\S+(?:\s+\S+)?)*\s+commit\b", command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    for i, w in enumerate(words):
        if w in ("-m", "--message") and i + 1 < len(words):
            return (words[i + 1].strip().splitlines() or ["(commit)"])[0][:200]  # -m "" is a commit too
        if w.startswith("--message="):
            return w.split("=", 1)[1][:200]
    return "(commit)"


def _relative(path: str, cwd: str | None) -> str:
    if cwd and os.path.isabs(path):
        try:
            rel = os.path.relpath(path, cwd)
        except ValueError:
            return path
        if not rel.startswith(".."):
            return rel
    return path


def _add(items: list[Any], value: Any) -> None:
    if value and value not in items and len(items) < MAX_ITEMS:
        items.append(value)


def artifacts_of(entries: Sequence[Mapping[str, Any]]) -> tuple[dict[str, list[Any]], list[str]]:
    """``(artifacts, user prompts)`` of transcript ``entries`` (see the module docstring)."""
    files: list[str] = []
    commands: list[str] = []
    commits: list[str] = []
    errors_fixed: list[dict[str, str]] = []
    prompts: list[str] = []
    pending: dict[str, tuple[str, str]] = {}  # tool_use_id -> (tool, command or path)
    failed: dict[str, str] = {}  # command -> first error line, until it succeeds
    for entry in entries:
        kind = entry.get("type")
        cwd = entry.get("cwd") if isinstance(entry.get("cwd"), str) else None
        if kind == "assistant":
            for block in _blocks(entry):
                if block.get("type") != "tool_use":
                    continue
                name, args = str(block.get("name") or ""), block.get("input") or {}
                if not isinstance(args, dict):
                    continue
                if name in EDIT_TOOLS:
                    path = args.get("file_path") or args.get("notebook_path")
                    if isinstance(path, str):
                        _add(files, _relative(path, cwd))
                elif name == "Bash" and isinstance(args.get("command"), str):
                    command = " ".join(args["command"].split())[:MAX_COMMAND]
                    _add(commands, command)
                    pending[str(block.get("id"))] = ("Bash", command)
        elif kind == "user":
            blocks = _blocks(entry)
            results = [b for b in blocks if b.get("type") == "tool_result"]
            if not results:
                text = user_text(entry)
                if text:
                    prompts.append(text)
                continue
            for block in results:
                tool, command = pending.pop(str(block.get("tool_use_id")), ("", ""))
                if tool != "Bash":
                    continue
                output = _result_text(block)
                extra = entry.get("toolUseResult")
                if isinstance(extra, dict):
                    output = "\n".join(str(extra.get(k) or "") for k in ("stdout", "stderr")) or output
                if block.get("is_error"):
                    failed.setdefault(command, _first_error_line(output))
                    continue
                if command in failed:
                    _add(errors_fixed, {"command": command, "error": failed.pop(command)})
                subject = _commit_from_command(command)
                if subject is not None:
                    found = _COMMIT_OUT.search(output)
                    _add(commits, f"{found.group(2)[:12]} {found.group(3)[:200]}" if found else subject)
    return {"files": files, "commands": commands, "commits": commits, "errors_fixed": errors_fixed}, prompts


# --------------------------------------------------------------------------- forms


def _title(prompts: Sequence[str], artifacts: Mapping[str, list[Any]]) -> str:
    if prompts:
        first = _SENTENCE.split(" ".join(prompts[0].split()), 1)[0]
        return first[:80].rstrip(" ,;:.!?") + ("..." if len(first) > 80 else "")
    files = artifacts.get("files") or []
    if files:
        return "Edited " + ", ".join(os.path.basename(f) for f in files[:3])
    return "Session"


def _names(paths: Sequence[str], n: int) -> str:
    names = [os.path.basename(p) or p for p in paths[:n]]
    return ", ".join(names) + (f" +{len(paths) - n}" if len(paths) > n else "")


def forms_of(prompts: Sequence[str], artifacts: Mapping[str, list[Any]]) -> tuple[str, str, str, str, str]:
    """``(title, summary, compressed, index, full)`` of an episode (offline rules)."""
    title = _title(prompts, artifacts)
    files, commands = artifacts.get("files") or [], artifacts.get("commands") or []
    commits, fixed = artifacts.get("commits") or [], artifacts.get("errors_fixed") or []
    parts = []
    if files:
        parts.append(f"edited {_names(files, 5)}")
    if commits:
        parts.append("committed " + "; ".join(c for c in commits[:3]))
    if fixed:
        parts.append("fixed " + "; ".join(f"`{f['command'][:60]}` ({f['error'][:80]})" for f in fixed[:3]))
    if commands and not commits and not fixed:
        parts.append(f"ran {len(commands)} command{'s' * (len(commands) != 1)}")
    summary = f"{title}: " + ("; ".join(parts) if parts else "discussion only") + "."
    bits = [title[:40]]
    if files:
        bits.append("files " + _names(files, 3))
    if commits:
        bits.append(f"{len(commits)} commit{'s' * (len(commits) != 1)}")
    if fixed:
        bits.append(f"{len(fixed)} fix{'es' * (len(fixed) != 1)}")
    compressed = " | ".join(bits)
    words = [w for w in search_terms(title, joiners="") if len(w) > 2][:4]
    if files:
        words.append(os.path.splitext(os.path.basename(files[0]))[0].lower())
    index = " ".join(dict.fromkeys(words)) or "session"  # spaced like every index key: recall finds it
    lines = [f"Episode: {title}", summary, ""]
    if prompts:
        lines.append("Asked:")
        lines.extend(f"- {' '.join(p.split())[:300]}" for p in prompts[:12])
    for label, key in (("Files edited", "files"), ("Commands run", "commands"), ("Commits", "commits")):
        if artifacts.get(key):
            lines.append(f"{label}:")
            lines.extend(f"- {v}" for v in artifacts[key][:MAX_ITEMS])
    if fixed:
        lines.append("Errors fixed:")
        lines.extend(f"- {f['command']}: {f['error']}" for f in fixed)
    return title, summary, compressed, index, "\n".join(lines).strip()


def episode_id(session_id: str | None, entries: Sequence[Mapping[str, Any]]) -> str:
    """The id of the episode of a stretch: the session and the stretch's first entry."""
    first = next((str(e.get("uuid")) for e in entries if e.get("uuid")), "start")
    digest = hashlib.sha256(f"{session_id or ''}\0{first}".encode()).hexdigest()[:20]
    return f"episode_{digest}"


#: A stretch with no artifact (no file edited, command run, commit, fix) becomes an episode only from
#: this many distinct prompts of three words or more on: a short exchange ("remember that I prefer
#: pnpm") is already kept as its facts, and "hi", "whoami", "/exit" repeated tell nothing.
MIN_DISCUSSION_PROMPTS = 3


def build_episode(entries: Sequence[Mapping[str, Any]], session_id: str | None) -> Episode | None:
    """The episode of a stretch's transcript ``entries``; None when too little happened in it
    (no artifact and under :data:`MIN_DISCUSSION_PROMPTS` prompts)."""
    from ..text.redaction import redact_all

    artifacts, prompts = artifacts_of(entries)
    artifacts, prompts = redact_all(artifacts), redact_all(prompts)
    said = {" ".join(p.split()).lower() for p in prompts if len(p.split()) > 2}  # "hi", "/exit", "whoami" say nothing
    if not any(artifacts.values()) and len(said) < MIN_DISCUSSION_PROMPTS:
        return None
    title, summary, compressed, index, full = forms_of(prompts, artifacts)
    stamps = [str(e["timestamp"]) for e in entries if isinstance(e.get("timestamp"), str)]
    return Episode(id=episode_id(session_id, entries), session_id=session_id, title=title, summary=summary,
                   compressed=compressed, key=index, full=full, artifacts=artifacts,
                   started_at=stamps[0] if stamps else None, ended_at=stamps[-1] if stamps else None)


def episode_from_transcript(path: str | None, session_id: str | None) -> Episode | None:
    """The episode of the current stretch of the transcript at ``path`` (checked by the caller,
    see :func:`stretch_entries`); None when there is nothing to tell."""
    return build_episode(stretch_entries(path), session_id)


# --------------------------------------------------------------------------- storing


async def store_episode(provider: MemoryProvider, episode: Episode, *, user_id: str,
                        project: str | None = None) -> tuple[Memory, bool]:
    """Add the episode, or update the stored one of the same stretch. Returns ``(memory, created)``."""
    from ..errors import MemoryNotFound

    memory = episode.memory(user_id, project)
    try:
        await provider.get(memory.id, user_id=user_id)
    except MemoryNotFound:
        return await provider.add(memory), True
    return await provider.update(memory.id, user_id=user_id, content=memory.content,
                                 metadata=dict(memory.metadata)), False

