"""The API token: one per install, in ``<home>/api-token`` (mode 0600), asked of every ``/api/`` request.

The page the panel serves carries the token from its URL (``?token=...``) and
sends it as ``Authorization: Bearer <token>``; a request to ``/api/`` without
it, or with another, is answered 401. No CORS header is ever sent, so no other
origin can read an answer, and requests whose ``Host`` is not this machine are
refused (a DNS-rebinding page cannot reach the API by name either).
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

from ..errors import DexaiMemoryError

#: The token file's name in the data directory.
TOKEN_FILE = "api-token"
#: Host names the API answers to.
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost"})


def token_path(home: Path) -> Path:
    """``<home>/api-token``."""
    return home / TOKEN_FILE


def load_token(home: Path, *, create: bool = True) -> str:
    """The install's API token, created (random, 32 bytes, mode 0600) on first use.

    Raises :class:`DexaiMemoryError` when the file cannot be read or written, or
    is missing and ``create`` is False.
    """
    path = token_path(home)
    try:
        token = path.read_text(encoding="utf-8").strip()
        if token:
            if path.stat().st_mode & 0o077:
                os.chmod(path, 0o600)
            return token
    except FileNotFoundError:
        if not create:
            raise DexaiMemoryError(f"no API token yet ({path}); `dexai panel` creates one") from None
    except OSError as exc:
        raise DexaiMemoryError(f"cannot read the API token {path}: {exc}") from exc
    token = secrets.token_urlsafe(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(token + "\n")
        os.chmod(path, 0o600)
    except OSError as exc:
        raise DexaiMemoryError(f"cannot write the API token {path}: {exc}") from exc
    return token


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers") or ():
        if key == name:
            return bytes(value).decode("latin-1")
    return ""


async def _reply(send: Any, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="dexai-memory"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class TokenMiddleware:
    """ASGI middleware: local ``Host`` only; every ``/api/`` request needs the bearer token."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host").rsplit(":", 1)[0].strip("[]").lower()
        if host and host not in LOCAL_HOSTS:
            await _reply(send, 403, f"this API answers to 127.0.0.1 only, not to host {host!r}")
            return
        if scope["path"].startswith("/api/") or scope["path"] == "/api":
            auth = _header(scope, b"authorization")
            scheme, _, given = auth.partition(" ")
            if scheme.lower() != "bearer" or not given:
                await _reply(send, 401, "missing token: send 'Authorization: Bearer <token>' "
                                        "(the token is in <home>/api-token and in the URL `dexai panel` prints)")
                return
            if not hmac.compare_digest(given.strip().encode(), self.token.encode()):
                await _reply(send, 401, "wrong token (see <home>/api-token)")
                return
        await self.app(scope, receive, send)
