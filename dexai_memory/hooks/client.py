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
from ..version import __version__

logger = logging.getLogger("dexai_memory.hooks.client")  # not __name__: "__main__" under -m

#: Seconds a daemon that answers may take for an event (the hook's own limit is 30; PreCompact 60).
ANSWER_SECONDS = 25.0


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


def deliver(settings: Settings, event: HookEvent) -> dict[str, Any] | str:
    """The daemon's answer to ``event``; when no daemon answers in time, the event is queued for
    replay and the no-op answer returned (PreCompact: the compaction instructions)."""
    from ..daemon.control import ensure_daemon, lock_held, wait_until_answering

    budget = settings.hooks.precompact_wait_seconds if event.name == "pre-compact" \
        else settings.hooks.cold_start_wait_seconds
    answer_time = max(ANSWER_SECONDS, budget) if event.name == "pre-compact" else ANSWER_SECONDS
    started = time.monotonic()
    if _connects(settings.socket_path):
        reply = _ask(settings, event, answer_time)
        if reply is not None:
            return reply["answer"]
        logger.warning("the daemon took longer than %.0fs for %s; answering a no-op", answer_time, event.name)
        return _noop(settings, event)
    starting = ensure_daemon(settings, reason=f"no daemon answered {event.name}") or lock_held(settings)
    if starting and wait_until_answering(settings, budget - (time.monotonic() - started)):
        reply = _ask(settings, event, answer_time)
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

    private_umask()  # hooks.log, the queue: 0600 in a 0700 data dir
    _setup_logging(home_dir())
    answer: dict[str, Any] | str = empty_answer(event)
    try:
        settings = load_user_settings()
        raw = stdin.read()
        payload = json.loads(raw) if raw.strip() else {}
        answer = deliver(settings, HookEvent.make(event, payload, background=background))
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
