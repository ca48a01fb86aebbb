"""The command hook's Python client: one hook event to the daemon, its answer to stdout.

The plugin's launcher (``hooks/dexai-hook``) sends each event to the running daemon with
``curl --unix-socket`` (no interpreter starts). This client runs only when that cannot
work: no daemon answering yet (the first event after a start or an idle exit), or no
``curl``. It translates and forwards, like every door (:mod:`dexai_memory.daemon.executor`
decides):

* a daemon answers: the event goes to it (``hook.event``) and its answer is printed;
* none answers: one is started (``daemon.autostart``) and waited for, up to
  ``hooks.cold_start_wait_seconds`` (PreCompact: ``hooks.precompact_wait_seconds``);
* still none (autostart off, a slow start): the event is committed to ``queue.db``
  (:func:`~dexai_memory.capture.queue_file.save_event`) for the daemon to replay when it
  starts, and the hook answers a no-op at once. Nothing said is lost.

Bounded: the client reads at most ``limits.max_hook_input_bytes`` of its stdin (the rest is
read and thrown away; what the cut JSON still holds is used, :func:`salvage_object`), holds
every string of the event to ``limits.max_turn_chars`` before sending it, and answers within
the hook's time limit (:data:`HOOK_SECONDS`) whatever the daemon does.

Stdlib only (config, the socket client, the queue file): no model, no provider here. A hook
never fails the agent: every error is logged to ``<home>/hooks.log`` and the hook still
prints valid output and exits 0.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from ..config import Settings, load_user_settings
from ..daemon.event import BadEvent, HookEvent, empty_answer
from ..daemon.session_state import EVENTS, compaction_instructions, redact_for_state
from ..limits import clip_strings
from ..version import __version__

logger = logging.getLogger("dexai_memory.hooks.client")  # not __name__: "__main__" under -m

#: Seconds a daemon that answers may take for an event (the hook's own limit is 30; PreCompact 60).
ANSWER_SECONDS = 25.0
#: The hooks' time limits in ``hooks/hooks.json`` (seconds): Claude Code kills a hook past it.
HOOK_SECONDS = 30.0
PRECOMPACT_SECONDS = 60.0
#: Seconds kept in hand under the limit to print the answer and exit.
MARGIN_SECONDS = 2.0
#: Seconds the client spends reading and discarding the input beyond its cap (a writer that
#: never closes stdin must not hold the hook past its limit).
DRAIN_SECONDS = 5.0
#: Characters read at a time from stdin.
_CHUNK = 1 << 20


def read_bounded(stdin: IO[str], limit: int) -> tuple[str, int]:
    """(at most ``limit`` characters of ``stdin``, how many more it held). What is beyond the
    cap is read and thrown away (for at most :data:`DRAIN_SECONDS`), never kept."""
    text = stdin.read(limit)
    more = 0
    if len(text) < limit:
        return text, 0
    deadline = time.monotonic() + DRAIN_SECONDS
    while time.monotonic() < deadline:
        chunk = stdin.read(_CHUNK)
        if not chunk:
            break
        more += len(chunk)
    return text, more


def _partial_string(body: str) -> str:
    """The text of a JSON string cut before its closing quote (``body``: what follows the opening
    quote); a cut escape sequence at the end is dropped."""
    for drop in range(7):  # the longest escape, \uXXXX, is six characters
        try:
            value = json.loads('"' + body[:len(body) - drop] + '"')
        except ValueError:
            continue
        return str(value)
    return ""


def salvage_object(text: str) -> dict[str, Any]:
    """The members of a JSON object cut short (hook input beyond its cap), in order: every
    complete member, and the start of a string member cut in the middle; a cut member of any
    other kind is dropped. {} when ``text`` does not start an object."""
    decoder = json.JSONDecoder()
    out: dict[str, Any] = {}
    i = len(text) - len(text.lstrip())
    if not text.startswith("{", i):
        return out
    i += 1
    n = len(text)
    while i < n:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n or text[i] != '"':
            break
        try:
            key, i = decoder.raw_decode(text, i)
        except ValueError:
            break
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n or text[i] != ":":
            break
        i += 1
        while i < n and text[i] in " \t\r\n":
            i += 1
        try:
            value, i = decoder.raw_decode(text, i)
        except ValueError:
            if text.startswith('"', i):
                out[key] = _partial_string(text[i + 1:])
            break
        out[key] = value
    return out


def hook_input(raw: str, more: int) -> Any:
    """The hook's JSON input from what was read of stdin (``more``: characters cut beyond it)."""
    if not raw.strip():
        return {}
    if not more:
        return json.loads(raw)
    payload = salvage_object(raw)
    logger.warning("hook input over its cap: %d characters read, %d more thrown away; %d member(s) kept",
                   len(raw), more, len(payload))
    last = next(reversed(payload), None) if payload else None
    if last is not None and isinstance(payload[last], str):
        payload[last] += f"\n[... {more} characters cut ...]"
    return payload


def _connects(path: Path) -> bool:
    """A daemon listens on ``path`` (a connect succeeds)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(0.5)
        sock.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        sock.close()


def _ask(settings: Settings, event: HookEvent, timeout: float) -> dict[str, Any] | None:
    from ..daemon.ipc import ipc_request

    reply = ipc_request(settings.socket_path, {"op": "hook.event", **event.to_json()}, timeout)
    if reply is None or "answer" not in reply:
        return None
    if reply.get("version") not in (None, __version__):
        from ..daemon.control import replace_if_stale

        replace_if_stale(settings, reply)  # answered all the same; the next event meets the new one
    return reply


def deliver(settings: Settings, event: HookEvent, *, started: float | None = None) -> dict[str, Any] | str:
    """The daemon's answer to ``event``; when no daemon answers in time, the event is queued for
    replay and the no-op answer returned (PreCompact: the compaction instructions). ``started``:
    when the hook process began (monotonic), so the answer comes within the hook's limit."""
    from ..daemon.control import ensure_daemon, lock_held, wait_until_answering

    budget = settings.hooks.precompact_wait_seconds if event.name == "pre-compact" \
        else settings.hooks.cold_start_wait_seconds
    answer_time = max(ANSWER_SECONDS, budget) if event.name == "pre-compact" else ANSWER_SECONDS
    started = time.monotonic() if started is None else started
    limit = (PRECOMPACT_SECONDS if event.name == "pre-compact" else HOOK_SECONDS) - MARGIN_SECONDS
    answer_time = min(answer_time, max(0.5, limit - (time.monotonic() - started)))
    if _connects(settings.socket_path):
        reply = _ask(settings, event, answer_time)
        if reply is not None:
            return reply["answer"]
        logger.warning("the daemon took longer than %.0fs for %s; answering a no-op", answer_time, event.name)
        return _noop(settings, event)
    starting = ensure_daemon(settings, reason=f"no daemon answered {event.name}") or lock_held(settings)
    if starting and wait_until_answering(settings, budget - (time.monotonic() - started)):
        reply = _ask(settings, event, min(answer_time, max(0.5, limit - (time.monotonic() - started))))
        if reply is not None:
            return reply["answer"]
    from ..capture.queue_file import queue_path, save_event

    # redacted like every other file we write (secrets and <private> text never reach queue.db)
    save_event(queue_path(settings.home), redact_for_state(event.to_json()))
    logger.warning("no daemon answered %s within %.1fs: queued for it to replay", event.name,
                   time.monotonic() - started)
    return _noop(settings, event)


def _noop(settings: Settings, event: HookEvent) -> dict[str, Any] | str:
    return compaction_instructions(settings) if event.name == "pre-compact" else empty_answer(event.name)


def _setup_logging(home: Path) -> None:
    root = logging.getLogger("dexai_memory")
    if root.handlers:
        return
    level = logging.DEBUG if os.environ.get("DEXAI_MEMORY_HOOK_DEBUG") else logging.WARNING
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        handler: logging.Handler = logging.FileHandler(home / "hooks.log", encoding="utf-8")
    except OSError:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"))
    root.addHandler(handler)
    root.setLevel(level)


def run(event: str, stdin: IO[str], stdout: IO[str], *, background: bool = False) -> int:
    """Read the hook JSON from ``stdin``, deliver ``event``, write the answer to ``stdout``
    (``background``: an async hook, nobody waits for the answer).

    Always returns 0 and always writes valid output (``{}`` when anything failed;
    PreCompact: the compaction instructions): a hook must never break the agent.
    """
    from ..datadir import home_dir, private_umask

    started = time.monotonic()
    private_umask()  # hooks.log, the queue: 0600 in a 0700 data dir
    _setup_logging(home_dir())
    answer: dict[str, Any] | str = empty_answer(event)
    try:
        settings = load_user_settings()
        raw, more = read_bounded(stdin, settings.limits.max_hook_input_bytes)
        payload = clip_strings(hook_input(raw, more), settings.limits.max_turn_chars)
        answer = deliver(settings, HookEvent.make(event, payload, background=background), started=started)
    except BadEvent as exc:
        logger.warning("hook %s: %s", event, exc)
    except Exception:  # a hook never fails the agent: log and answer a no-op
        logger.exception("hook %s failed", event)
        if event == "pre-compact":
            with contextlib.suppress(Exception):
                answer = compaction_instructions(Settings())
    text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    # half an emoji (a lone surrogate) from a transcript must not make the answer unprintable
    text = text.encode("utf-8", "replace").decode("utf-8")
    try:
        if text:
            stdout.write(text + "\n")
        stdout.flush()
    except (OSError, ValueError):  # stdout closed: nothing more a hook can do
        logger.warning("hook %s could not write its answer", event)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dexai_memory.hooks.client <event> [--async]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    background = args[1:] == ["--async"]
    if len(args) != 1 and not background:
        sys.stderr.write(f"usage: python -m dexai_memory.hooks.client <{'|'.join(EVENTS)}> [--async]\n")
        return 2
    import io

    # undecodable bytes in the hook input become U+FFFD instead of failing the hook
    stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    stdout = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", errors="replace")
    return run(args[0], stdin, stdout, background=background)


if __name__ == "__main__":
    sys.exit(main())
