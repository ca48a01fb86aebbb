"""The MCP server (a real ``python -m dexai_memory.mcp_server`` subprocess over stdio) answers every
hostile message: JSON nested 100,000 deep, lone surrogates in a tool call, a message over the cap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from dexai_memory.mcp_server import MAX_MESSAGE


class Server:
    def __init__(self, home: Path) -> None:
        env = {**os.environ, "DEXAI_MEMORY_HOME": str(home), "DEXAI_MEMORY_USER": "alice",
               "DEXAI_DAEMON_AUTOSTART": "0"}
        self.proc = subprocess.Popen([sys.executable, "-m", "dexai_memory.mcp_server"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)

    def send(self, line: bytes) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        assert answer, "the server answered nothing (and ended)"
        return json.loads(answer)

    def close(self) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=20)
        self.proc.stdout.close()
        return code


def test_hostile_messages_always_get_an_answer(isolated_home: Path) -> None:
    server = Server(isolated_home)
    for line in (b"[" * 100_000, b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": ' + b"[" * 100_000,
                 b"{" * 100_000):
        answer = server.send(line)
        assert answer["error"]["code"] == -32700
    answer = server.send(b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "remember", '
                         b'"arguments": {"content": "half an emoji \\ud83d and \\udc00"}}}')
    assert answer["id"] == 2 and answer["result"]["isError"] is True  # no daemon here: a tool error, answered
    answer = server.send(b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "\\ud800"}}')
    assert answer["id"] == 3
    answer = server.send(b'{"jsonrpc": "2.0", "id": 4, "method": "ping"}' + b" " * (MAX_MESSAGE + 10))
    assert answer["error"]["code"] == -32700 and "at most" in answer["error"]["message"]
    assert server.send(b'{"jsonrpc": "2.0", "id": 5, "method": "ping"}') == {"jsonrpc": "2.0", "id": 5, "result": {}}
    assert server.close() == 0
