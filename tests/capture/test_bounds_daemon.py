"""A megabyte turn through a real daemon: held to ``limits.max_turn_chars`` before redaction,
the gate, the queue and extraction, and extracted off the event loop: the daemon's socket
answers while the extraction runs."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dexai_memory.capture.gate import Gate
from dexai_memory.config import load_settings
from dexai_memory.daemon.ipc import ipc_request
from dexai_memory.extraction.offline import OfflineExtractor
from dexai_memory.models import ExtractedNote, Turn
from dexai_memory.providers.native import NativeProvider
from tests.hook_daemon import queued_turns, running_daemon

SENTENCES = ("I prefer pnpm over npm for package {i}.", "My colleague Priya{i} leads billing at Globex.",
             "We decided to deploy release {i} on Friday.", "Never run migration {i} without a backup.")
MEGABYTE = " ".join(SENTENCES[i % 4].format(i=i) for i in range(26_000))[:1_000_000]


class TimedExtractor(OfflineExtractor):
    """The offline extractor, noting when each extraction ran and on how many characters."""

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[tuple[float, float, int]] = []

    def extract_sync(self, turns: Sequence[Turn], context: Sequence[Turn | str] = ()) -> list[ExtractedNote]:
        start = time.monotonic()
        try:
            return super().extract_sync(turns, context)
        finally:
            self.runs.append((start, time.monotonic(), sum(len(t.content) for t in turns)))


class Pinger(threading.Thread):
    """Pings the daemon's socket every 10 ms from another thread: (sent, answered or None)."""

    def __init__(self, socket_path: Path):
        super().__init__(daemon=True)
        self.socket_path = socket_path
        self.pings: list[tuple[float, float | None]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            sent = time.monotonic()
            reply = ipc_request(self.socket_path, {"op": "ping"}, timeout=10)
            self.pings.append((sent, time.monotonic() if reply is not None else None))
            self.stop.wait(0.01)


async def test_megabyte_turns(isolated_home: Path) -> None:
    settings = load_settings(home=isolated_home)
    cap = settings.limits.max_turn_chars
    extractor = TimedExtractor()
    sock = settings.socket_path

    def ask(request: dict[str, Any]) -> Any:
        return ipc_request(sock, request, timeout=120)

    async with NativeProvider(settings.db_path, embedder=None) as provider, \
            running_daemon(settings, provider, serve_socket=True, extractor=extractor, gate=Gate(0.0)) as daemon:
        pinger = Pinger(sock)
        pinger.start()
        try:
            env = {"DEXAI_MEMORY_USER": "dana"}
            # a megabyte assistant reply through the Stop hook, then the prompt it is the context of
            for name, payload in (("stop", {"session_id": "s1", "last_assistant_message": MEGABYTE}),
                                  ("user-prompt-submit", {"session_id": "s1", "prompt": "I prefer pnpm, always."}),
                                  ("stop", {"session_id": "s1", "last_assistant_message": "Done."})):
                reply = await asyncio.to_thread(ask, {"op": "hook.event", "event": name, "payload": payload,
                                                      "env": env})
                assert reply is not None and "answer" in reply
            # a megabyte chat turn (read for memories) through the socket's enqueue
            turn = {"id": "big", "user_id": "dana", "content": MEGABYTE, "speaker": "Sam"}
            assert (await asyncio.to_thread(ask, {"op": "enqueue", "turn": turn}))["queued"]
            flushed = await asyncio.to_thread(ask, {"op": "flush", "timeout": 120})
            assert flushed is not None and flushed["flushed"]
        finally:
            pinger.stop.set()
            await asyncio.to_thread(pinger.join, 30)
        notes = await daemon.provider.list(user_id="dana", limit=1000)

    assert all(answered is not None for _, answered in pinger.pings), "a ping went unanswered"
    # every text the daemon kept and extracted is held to the cap
    assert all(len(text) <= cap for text in queued_turns(isolated_home).values())
    assert "characters cut" in queued_turns(isolated_home)["big"]
    big = [run for run in extractor.runs if run[2] > 1000]
    assert big and all(chars <= cap for _, _, chars in big)
    assert any("pnpm" in m.content for m in notes)
    # the socket answered while the long extraction ran in its worker thread
    start, end, _ = max(big, key=lambda run: run[1] - run[0])
    during = [(s, a) for s, a in pinger.pings if a is not None and start <= s and a <= end]
    assert during, f"no ping was answered during the {end - start:.2f}s extraction"
