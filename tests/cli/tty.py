"""Run the real ``dexai`` command on a pseudo-terminal (stdin, stdout and stderr all a TTY), as a
user at a terminal runs it, feeding it typed answers."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path


def run_on_tty(args: list[str], *, answers: str = "", env: dict[str, str] | None = None,
               timeout: float = 120.0, cwd: Path | None = None, columns: int = 100) -> tuple[int, str]:
    """``python -m dexai_memory.cli.main ARGS`` on a new pty; ``answers`` is typed once it waits
    for input (a prompt shown). ``columns`` is the width the terminal reports (0: none, as some
    terminals, containers and editors' shells report). Returns the exit code and everything it printed (\\r removed)."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24 if columns else 0, columns, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "dexai_memory.cli.main", *args], stdin=child, stdout=child,
                            stderr=child, env={**os.environ, **(env or {})}, cwd=cwd, close_fds=True)
    os.close(child)
    out = b""
    typed = not answers
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(main, 65536)
                except OSError:  # the child closed its side
                    break
                if not chunk:
                    break
                out += chunk
                if not typed and (b"?" in out or b"[y/N]" in out):
                    os.write(main, answers.encode())
                    typed = True
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        os.close(main)
        if proc.poll() is None:
            proc.kill()
    return code, out.decode("utf-8", "replace").replace("\r", "")
