"""The limits of the daemon's socket and HTTP hook port with small settings, on real sockets: a slow
request line is answered and dropped, idle clients at the connection limit are displaced (a new
client is always served), and the HTTP port opens only while the http hooks are installed."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from dexai_memory.config import load_settings
from dexai_memory.daemon.http_hooks import (
    HookHttpServer,
    http_hook_settings,
    install,
    installed,
    uninstall,
)
from dexai_memory.daemon.ipc import IpcServer, ipc_request


async def pong(request: dict[str, Any]) -> dict[str, Any]:
    return {"pong": True}


async def test_a_slow_request_line_is_answered_and_dropped(tmp_path: Path) -> None:
    server = IpcServer(tmp_path / "d.sock", {"ping": pong})
    server.read_timeout = 1.0
    await server.start()
    try:
        reader, writer = await asyncio.open_unix_connection(str(server.path))
        for byte in b'{"op": "pi':
            writer.write(bytes([byte]))
            await asyncio.sleep(0.3)
            if reader.at_eof() or len(reader._buffer):  # type: ignore[attr-defined]
                break
        answer = json.loads(await asyncio.wait_for(reader.readline(), 5))
        assert answer["ok"] is False and "no whole request" in answer["error"]
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed
        writer.close()
    finally:
        await server.aclose()


async def test_idle_clients_at_the_limit_are_displaced_never_the_new_one(tmp_path: Path) -> None:
    server = IpcServer(tmp_path / "d.sock", {"ping": pong})
    server.max_connections = 8
    await server.start()
    try:
        idle = [await asyncio.open_unix_connection(str(server.path)) for _ in range(20)]
        await asyncio.sleep(0.1)
        assert server.connections <= 8  # the 12 beyond were told busy and closed: no descriptor held
        answer = await asyncio.to_thread(ipc_request, server.path, {"op": "ping"}, 5)  # retries while busy
        assert answer is not None and answer["pong"] is True
        assert server.displaced >= 1 and server.refused_busy >= 12
        for _, writer in idle:
            writer.close()
    finally:
        await server.aclose()


class _Daemon:
    """What HookHttpServer needs of a daemon to open its port (no event is sent here)."""

    def __init__(self) -> None:
        self.settings = load_settings()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def test_the_http_port_opens_only_while_installed(isolated_home: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    isolated_home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    claude = tmp_path / "settings.json"
    claude.write_text(json.dumps({"env": {"KEEP": "1"}, "hooks": {"Stop": [{"hooks": [{"type": "command",
                                                                                         "command": "x"}]}]}}))
    server = HookHttpServer(_Daemon(), port)
    assert "not installed" in installed(isolated_home, port)
    assert not await server.start_if_installed()
    install(isolated_home, claude, port)
    assert installed(isolated_home, port) == ""
    assert "another" in installed(isolated_home, port + 1)  # the config's port changed since: closed
    assert await server.start_if_installed()
    await server.aclose()
    # removed by hand: closed again
    kept = json.loads(claude.read_text())
    claude.write_text(json.dumps({"env": kept["env"], "hooks": {"Stop": kept["hooks"]["Stop"][:1]}}))
    assert "no http hook" in installed(isolated_home, port)
    install(isolated_home, claude, port)
    assert uninstall(isolated_home, claude) == 3
    after = json.loads(claude.read_text())
    assert after["env"] == {"KEEP": "1"} and after["hooks"]["Stop"][0]["hooks"][0]["type"] == "command"
    assert not await HookHttpServer(_Daemon(), port).start_if_installed()
    # printed and pasted by hand into ~/.claude/settings.json (no record): open
    pasted = tmp_path / "user" / ".claude" / "settings.json"
    pasted.parent.mkdir(parents=True)
    pasted.write_text(json.dumps(http_hook_settings(port, "t")))
    assert installed(isolated_home, port) == ""
