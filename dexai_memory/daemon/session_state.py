"""The daemon's per-session hook state: who and where (user, project, from the hook's
environment), per-session state files, the compaction marker, and reading the transcript.

Stdlib only: the command hook's client imports the identity helpers.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..config import Settings
from ..models import utcnow

EVENTS = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "pre-compact": "PreCompact",
    "post-compact": "PostCompact",
    "post-tool-use": "PostToolUse",
    "stop": "Stop",
    "session-end": "SessionEnd",
}
USER_ENV = "DEXAI_MEMORY_USER"
PROJECT_ENV = "DEXAI_MEMORY_PROJECT"
#: Longest transcript tail read for recent messages (bytes).
TRANSCRIPT_TAIL_BYTES = 256 * 1024
#: Recent messages used for continuation and visibility checks.
RECENT_MESSAGES = 6
#: Longest tool result text enqueued (characters).
MAX_TOOL_TEXT = 4000

# --------------------------------------------------------------------------- identity
#: The hook process's environment variables that decide who and where (passed to the daemon
#: with every event: the daemon's own environment is not the session's).
HOOK_ENV = (USER_ENV, "USER", PROJECT_ENV, "DEXAI_MEMORY_DISABLED", "CLAUDE_PROJECT_DIR")

Env = Mapping[str, str]


def hook_env(environ: Env | None = None) -> dict[str, str]:
    """The :data:`HOOK_ENV` variables set in ``environ`` (default: this process's)."""
    source = os.environ if environ is None else environ
    return {k: str(source[k]) for k in HOOK_ENV if source.get(k)}


def user_id_for(env: Env | None = None) -> str:
    """``$DEXAI_MEMORY_USER``, else the login name, else 'default' (like the CLI)."""
    env = os.environ if env is None else env
    return env.get(USER_ENV) or env.get("USER") or "default"


def project_for(env: Env | None = None) -> str | None:
    """Recall scope: ``$DEXAI_MEMORY_PROJECT`` if set, else None (all of the user's memories)."""
    env = os.environ if env is None else env
    return env.get(PROJECT_ENV) or None


def project_dir(payload: Mapping[str, Any], env: Env | None = None) -> str:
    env = os.environ if env is None else env
    return str(payload.get("cwd") or env.get("CLAUDE_PROJECT_DIR") or os.getcwd())


def project_key(payload: Mapping[str, Any], env: Env | None = None) -> str:
    """The project captured memories are stored under, the same on every path:
    ``$DEXAI_MEMORY_PROJECT`` when set (recall filters by it too), else the git root of the
    session's directory, else that directory's full path (so ``/work/a/app`` and
    ``/work/b/app`` stay apart)."""
    env = os.environ if env is None else env
    scoped = env.get(PROJECT_ENV)
    if scoped:
        return scoped
    cwd = os.path.abspath(project_dir(payload, env))
    path = cwd
    for _ in range(64):
        if os.path.exists(os.path.join(path, ".git")):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return cwd


def memory_disabled(settings: Settings, payload: Mapping[str, Any], env: Env | None = None) -> str | None:
    """Why memory is off for this hook call (None when it is on).

    ``hooks.enabled: false``; the project directory (or its name) listed in
    ``hooks.disabled_projects``; a subagent's hook (``agent_id`` in the input)
    unless ``hooks.subagents: true``; ``$DEXAI_MEMORY_DISABLED`` set in the hook's environment.
    """
    env = os.environ if env is None else env
    if not settings.hooks.enabled or env.get("DEXAI_MEMORY_DISABLED"):
        return "disabled"
    cwd = project_dir(payload, env)
    names = {cwd, os.path.basename(cwd.rstrip("/")), env.get("CLAUDE_PROJECT_DIR", "")}
    for entry in settings.hooks.disabled_projects:
        entry_path = os.path.expanduser(entry).rstrip("/")
        if entry in names or entry_path in names or (entry_path.startswith("/") and cwd.startswith(entry_path + "/")):
            return "project disabled"
    if (payload.get("agent_id") or payload.get("agent_type")) and not settings.hooks.subagents:
        return "subagent"
    return None


# --------------------------------------------------------------------------- state files


def state_dir(settings: Settings) -> Path:
    path = settings.home / "hooks"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def safe_id(session_id: str | None) -> str:
    sid = session_id or "default"
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in sid)[:100]


def marker_path(settings: Settings, session_id: str | None) -> Path:
    """The compaction marker of a session: ``<home>/hooks/compact-<session>.json``."""
    return state_dir(settings) / f"compact-{safe_id(session_id)}.json"


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` atomically, mode 0600; on failure (disk full) no temporary
    file is left behind and the error is raised."""
    from ..datadir import write_private

    write_private(path, json.dumps(data, default=str, ensure_ascii=False).encode("utf-8", "replace"))


def write_marker(settings: Settings, session_id: str | None, data: dict[str, Any]) -> Path:
    """Write the compaction marker atomically (trigger, time, snapshot, last prompt)."""
    path = marker_path(settings, session_id)
    write_json(path, data)
    return path


def read_marker(settings: Settings, session_id: str | None) -> dict[str, Any] | None:
    """The marker's data, or None when no compaction is pending re-injection."""
    path = marker_path(settings, session_id)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


#: State files (session state, markers) untouched for this long are removed at startup.
STATE_MAX_AGE_SECONDS = 7 * 86400


def prune_state(settings: Settings, max_age: float = STATE_MAX_AGE_SECONDS) -> int:
    """Remove session state files and markers of sessions idle for ``max_age`` seconds
    (SessionEnd removes its own; crashed or killed sessions leave theirs). Returns the count."""
    import time

    cutoff = time.time() - max_age
    removed = 0
    for path in state_dir(settings).glob("*.json"):
        with contextlib.suppress(OSError):
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
    return removed


def clear_marker(settings: Settings, session_id: str | None) -> None:
    with contextlib.suppress(FileNotFoundError):
        marker_path(settings, session_id).unlink()


def session_file(settings: Settings, session_id: str | None) -> Path:
    """A session's hook state: ``<home>/hooks/session-<session>.json`` (removed at SessionEnd)."""
    return state_dir(settings) / f"session-{safe_id(session_id)}.json"


def load_session(settings: Settings, session_id: str | None) -> dict[str, Any]:
    """Per-session hook state: ``injected`` memory ids, ``last_prompt``."""
    try:
        data = json.loads(session_file(settings, session_id).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def save_session(settings: Settings, session_id: str | None, data: dict[str, Any]) -> None:
    write_json(session_file(settings, session_id), data)


#: Most prompts kept in a session's ``pending`` list (prompts no Stop has queued yet).
MAX_PENDING = 20
#: Most keys kept in a session's ``handled`` list (prompts queued or gated: the transcript
#: catch-up skips them; a transcript tail holds fewer prompts).
MAX_HANDLED = 400
#: Session state key: the ids of the recall blocks injected with the prompts no reply has answered
#: yet; the next Stop counts those its reply did not use as ignored (:mod:`dexai_memory.lifecycle.usage`).
AWAITING = "awaiting_reply"
#: Most ids kept in :data:`AWAITING`.
MAX_AWAITING = 200


@contextlib.contextmanager
def state_lock(settings: Settings) -> Iterator[None]:
    """Hold ``<home>/hooks/state.lock`` (flock): read-modify-write of a session's state by hooks
    that may run at once (an async Stop or PostToolUse beside the next UserPromptSubmit). Held
    for microseconds, never across a queue write or a daemon request."""
    import fcntl

    fd = os.open(state_dir(settings) / "state.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def remember_injected(settings: Settings, session_id: str | None, ids: Sequence[str], *,
                      reset: bool = False, prompt: str | None = None, prompt_id: str | None = None,
                      extra: dict[str, Any] | None = None, at: float | None = None,
                      awaiting: Sequence[str] = ()) -> None:
    """Record injected memory ids (``reset`` after compaction: the old injections are gone),
    the last prompt of the session (already redacted by the caller, :func:`redact_for_state`)
    and ``extra`` keys. The prompt is also added to ``pending`` (with the time it was
    submitted) for the turn's Stop, or SessionEnd's catch-up, to queue. ``awaiting``: the ids of
    the prompt's recall block, which the next reply used or ignored (:data:`AWAITING`)."""
    with state_lock(settings):
        state = load_session(settings, session_id)
        state.update(extra or {})
        if reset:
            state["injected"] = []
        injected = list(dict.fromkeys([*(state.get("injected") or []), *ids]))[-500:]
        state["injected"] = injected
        if awaiting:
            state[AWAITING] = list(dict.fromkeys([*(state.get(AWAITING) or []), *awaiting]))[-MAX_AWAITING:]
        if prompt is not None:
            pending = pending_prompts(state)
            state["last_prompt"] = prompt[:4000]
            state.pop("prompt_id", None)  # kept in ``pending`` now (read only from older state files)
            if prompt.strip():
                pending.append({"prompt": prompt[:4000], "prompt_id": prompt_id,
                                "at": time.time() if at is None else at})
            state["pending"] = pending[-MAX_PENDING:]
        save_session(settings, session_id, state)


def pending_prompts(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The prompts of ``state`` no Stop has queued yet, oldest first (a state file written before
    ``pending`` existed: its ``last_prompt`` unless ``queued_prompt`` says it was queued)."""
    if "pending" in state:
        return [p for p in state.get("pending") or [] if isinstance(p, dict) and p.get("prompt")]
    last = state.get("last_prompt")
    if isinstance(last, str) and last.strip() and state.get("queued_prompt") != last:
        return [{"prompt": last, "prompt_id": state.get("prompt_id"), "at": 0.0}]
    return []


def forget_pending(settings: Settings, session_id: str | None, done: Sequence[dict[str, Any]],
                   handled: Sequence[str] = (), answered: Sequence[str] = (), **fields: Any) -> None:
    """Drop the ``done`` prompts from the session's ``pending`` list (they are queued), add
    ``handled`` to its ``handled`` prompt keys (what the transcript catch-up skips), drop the
    ``answered`` ids from :data:`AWAITING` (a reply came) and set ``fields``; a state file
    SessionEnd already removed is not written again."""
    keys = {(p.get("prompt_id"), p.get("prompt")) for p in done}
    with state_lock(settings):
        path = session_file(settings, session_id)
        if not path.exists():
            return
        state = load_session(settings, session_id)
        state["pending"] = [p for p in pending_prompts(state) if (p.get("prompt_id"), p.get("prompt")) not in keys]
        state.pop("queued_prompt", None)
        if handled:
            state["handled"] = list(dict.fromkeys([*(state.get("handled") or []), *handled]))[-MAX_HANDLED:]
        if answered:
            gone = set(answered)
            state[AWAITING] = [i for i in state.get(AWAITING) or [] if i not in gone]
        state.update(fields)
        save_session(settings, session_id, state)


def process_start_time() -> float:
    """Wall-clock time this process started (Linux: from ``/proc/self/stat``, so a hook knows which
    prompts were submitted before it was started, however long its imports took; rounded up to
    the clock tick, 10 ms); elsewhere now."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        since_boot = (int(fields[19]) + 1) / os.sysconf("SC_CLK_TCK")  # the tick after: not before the start
        return time.time() - (time.clock_gettime(time.CLOCK_BOOTTIME) - since_boot)
    except (OSError, ValueError, IndexError, AttributeError):
        return time.time()


# --------------------------------------------------------------------------- transcript


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    return ""


#: Bytes of one transcript line read at a time by the backup (a longer line is backed up in
#: pieces, each as ``{"unparsed": ...}``): a file without newlines never sits whole in memory.
MAX_BACKUP_LINE = 1024 * 1024


def transcript_file(path: Any) -> str | None:
    """``path`` when it can be a Claude Code transcript: a regular ``.jsonl`` file (not a FIFO,
    a device or ``/etc/shadow``), resolved; else None (logged)."""
    if not path or not isinstance(path, str):
        return None
    import stat

    try:
        real = os.path.realpath(path)
        st = os.stat(real)  # never blocks, unlike open() on a FIFO
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode) or not real.endswith(".jsonl"):
        import logging

        logging.getLogger("dexai_memory.daemon.session_state").warning(
            "ignored transcript_path %r: not a regular .jsonl file", path)
        return None
    return real


def transcript_tail(path: Any, *, max_bytes: int = TRANSCRIPT_TAIL_BYTES) -> list[bytes]:
    """The whole lines of the last ``max_bytes`` of a transcript JSONL (a line cut by the start
    of the window left out); [] when there is no readable transcript."""
    real = transcript_file(path)
    if not real:
        return []
    try:
        with open(real, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            data = fh.read()
    except OSError:
        return []
    lines = data.split(b"\n")
    return lines[1:] if size > max_bytes else lines  # the first line is probably cut


def read_transcript(path: str | None, *, max_bytes: int = TRANSCRIPT_TAIL_BYTES) -> list[tuple[str, str]]:
    """``(role, text)`` of the user/assistant messages at the end of a transcript JSONL."""
    lines = transcript_tail(path, max_bytes=max_bytes)
    out: list[tuple[str, str]] = []
    for raw in lines:
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant") or entry.get("isMeta"):
            continue
        message = entry.get("message") or {}
        text = text_of(message.get("content")).strip()
        if text and not text.startswith("<command-") and not text.startswith("<local-command"):
            out.append((str(message.get("role") or entry["type"]), text))
    return out


def recent_texts(payload: dict[str, Any], n: int = RECENT_MESSAGES) -> list[str]:
    return [t for _, t in read_transcript(payload.get("transcript_path"))][-n:]


def redact_for_state(value: Any) -> Any:
    """``value`` fit for a hook state file (session state, compaction marker, transcript backup):
    :func:`~dexai_memory.text.redaction.redact_all` (``<private>`` text and secrets never reach our files)."""
    from ..text.redaction import redact_all

    return redact_all(value)


def backup_transcript(settings: Settings, payload: dict[str, Any]) -> Path | None:
    """Back up the transcript to ``<home>/transcripts/<session>-<time>-<trigger>.jsonl`` (L3),
    redacted: every string of every line goes through :func:`redact_for_state`
    (secrets and ``<private>`` text never reach our files). At most ``limits.max_backup_bytes``
    (the end of a bigger file), streamed, every string first held to ``limits.max_turn_chars``
    (:func:`~dexai_memory.limits.clip_strings`); mode 0600."""
    from ..limits import clip_strings

    src = transcript_file(payload.get("transcript_path"))
    if not src:
        return None
    dest_dir = settings.home / "transcripts"
    dest_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = utcnow().strftime("%Y%m%dT%H%M%S%f")
    dest = dest_dir / f"{safe_id(payload.get('session_id'))}-{stamp}-{payload.get('trigger') or 'manual'}.jsonl"
    try:
        with open(src, "rb") as fh, os.fdopen(os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w",
                                              encoding="utf-8") as out:
            size = os.fstat(fh.fileno()).st_size
            cap, chars = settings.limits.max_backup_bytes, settings.limits.max_turn_chars
            if size > cap:
                fh.seek(size - cap)
                fh.readline(MAX_BACKUP_LINE)  # drop the cut line (or its first piece)
            while raw := fh.readline(MAX_BACKUP_LINE):
                line = raw.decode("utf-8", "replace").rstrip("\n")
                if not line.strip():
                    continue
                try:
                    clean = json.dumps(redact_for_state(clip_strings(json.loads(line), chars)), ensure_ascii=False)
                except (ValueError, RecursionError):
                    clean = json.dumps(redact_for_state({"unparsed": clip_strings(line, chars)}), ensure_ascii=False)
                out.write(clean.encode("utf-8", "replace").decode("utf-8") + "\n")
    except OSError:
        with contextlib.suppress(OSError):
            dest.unlink()
        raise
    return dest


def snapshot_text(messages: Sequence[tuple[str, str]]) -> str | None:
    """A short working-state snapshot from the transcript: the current task and last action."""
    last_user = next((t for r, t in reversed(messages) if r == "user"), None)
    last_assistant = next((t for r, t in reversed(messages) if r == "assistant"), None)
    if not last_user and not last_assistant:
        return None
    parts = []
    if last_user:
        parts.append(f"Current task: {' '.join(last_user.split())[:400]}")
    if last_assistant:
        parts.append(f"Last action: {' '.join(last_assistant.split())[:300]}")
    return " | ".join(parts)


def recent_prompts(messages: Sequence[tuple[str, str]], n: int = 3) -> list[str]:
    """The last ``n`` user prompts of the transcript, oldest first (each cut to 1,000 characters)."""
    prompts = [" ".join(t.split())[:1000] for r, t in messages if r == "user" and t.strip()]
    return prompts[-n:]


def compaction_instructions(settings: Settings) -> str:
    """Plain-text instructions a PreCompact command hook prints for the compaction prompt."""
    return (f"{settings.compaction.instructions} "
            "Long-term facts, preferences and commitments are kept by dexai-memory and re-injected "
            "after compaction, so the summary should focus on the current task and its state.")



def turn_id(session_id: str | None, kind: str, text: str) -> str:
    """A stable id for a captured turn (the queue and the store stay idempotent on retries)."""
    try:  # CPython's built-in SHA-1: hashlib would load OpenSSL (3-12 ms here) for one digest
        from _sha1 import sha1
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import sha1

    digest = sha1(text.encode("utf-8", "replace")).hexdigest()[:16]
    return f"{safe_id(session_id)}:{kind}:{digest}"
