"""Fixtures of the API and panel tests: a real SQLite store (no embedder: FTS search) behind the app."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from dexai_memory.api.app import build_app
from dexai_memory.config import load_settings

USER = "sam"
TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(autouse=True)
def no_embedder(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "memory.yaml").write_text("embedding:\n  backend: none\n")


class Api:
    """A TestClient that sends the token, and answers as JSON."""

    def __init__(self, client: TestClient) -> None:
        self.client = client

    def call(self, method: str, path: str, expect: int = 200, **kw: Any) -> Any:
        kw.setdefault("headers", AUTH)
        response = self.client.request(method, path, **kw)
        assert response.status_code == expect, (method, path, response.status_code, response.text)
        assert response.headers["content-type"].startswith("application/json")
        return response.json()

    def get(self, path: str, expect: int = 200, **kw: Any) -> Any:
        return self.call("GET", path, expect, **kw)

    def post(self, path: str, body: Any = None, expect: int = 200, **kw: Any) -> Any:
        return self.call("POST", path, expect, json=body, **kw)

    def add(self, content: str, category: str | None = None, **extra: Any) -> dict[str, Any]:
        body = {"content": content, **({"category": category} if category else {}), **extra}
        response = self.client.post("/api/memories", json=body, headers=AUTH)
        assert response.status_code in (200, 201), response.text
        memory: dict[str, Any] = response.json()["memory"]
        return memory

    def run(self, fn: Any, *args: Any) -> Any:
        """Run ``await fn(provider, *args)`` on the app's own event loop and started provider."""
        portal = self.client.portal
        assert portal is not None
        return portal.call(fn, self.client.app.state.api.provider, *args)  # type: ignore[attr-defined]


@pytest.fixture
def api() -> Iterator[Api]:
    app = build_app(load_settings(), USER, TOKEN)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield Api(client)
