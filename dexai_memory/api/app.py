"""The Starlette application: the API under ``/api/``, the panel at ``/``.

:func:`build_app` wires the routes of :mod:`.memories`, :mod:`.upkeep`, :mod:`.context`,
:mod:`.activity` and :mod:`.history`, the token middleware (:mod:`.auth`), JSON errors and the
OpenAPI schema (``GET /api/openapi.json``, generated from the routes'
docstrings). The provider is started with the app (its lifespan) and closed
with it, unless one already started is handed in (the daemon's).

Errors are ``{"error": "..."}``: 400 for a bad body or value (hostile JSON
included), 413 for a body over the cap, 401 without the token, 404 for a memory or contradiction that is not this user's, 409 for the
11th pin, a clear confirmed for another count and nothing to undo.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.schemas import SchemaGenerator
from starlette.staticfiles import StaticFiles

from .. import panel
from ..errors import DexaiMemoryError, InvalidMemory, MemoryNotFound, PinLimitReached, ProviderError
from ..lifecycle.clear import NothingToUndo
from ..version import __version__
from . import activity, context, history, memories, upkeep
from .auth import TokenMiddleware
from .requests import ApiState, BodyTooLarge, StateConflict

if TYPE_CHECKING:
    from ..config import Settings
    from ..providers.base import MemoryProvider

logger = logging.getLogger(__name__)

SCHEMA = SchemaGenerator({
    "openapi": "3.0.3",
    "info": {"title": "dexai-memory local API", "version": __version__,
             "description": "Served by `dexai panel` on 127.0.0.1 only. Every request needs "
                            "'Authorization: Bearer <token>' (the token is in <home>/api-token). "
                            "`user_id` (query or body) defaults to the panel's user."},
    "servers": [{"url": "http://127.0.0.1"}],
    "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    "security": [{"bearer": []}],
})

API_ROUTES: list[BaseRoute] = [*memories.ROUTES, *upkeep.ROUTES, *context.ROUTES, *activity.ROUTES, *history.ROUTES]


def status_of(exc: DexaiMemoryError) -> int:
    """The HTTP status of one of our errors."""
    if isinstance(exc, PinLimitReached | NothingToUndo | StateConflict):
        return 409
    if isinstance(exc, BodyTooLarge):
        return 413
    if isinstance(exc, MemoryNotFound | LookupError):
        return 404
    if isinstance(exc, InvalidMemory | ValueError):
        return 400
    if isinstance(exc, ProviderError):
        return 501
    return 500


async def _our_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, DexaiMemoryError)
    status = status_of(exc)
    if status >= 500:
        logger.error("API request failed: %s", exc)
    return JSONResponse({"error": str(exc)}, status_code=status)


async def _http_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    message = {404: "no such endpoint (see GET /api/openapi.json)",
               405: "method not allowed on this endpoint (see GET /api/openapi.json)"}.get(exc.status_code, exc.detail)
    return JSONResponse({"error": message}, status_code=exc.status_code, headers=exc.headers)


async def openapi(request: Request) -> Response:
    """The OpenAPI schema of this API.
    ---
    summary: OpenAPI schema
    responses:
      200: {description: the schema}
    """
    return JSONResponse(SCHEMA.get_schema(routes=API_ROUTES + [Route("/api/openapi.json", openapi)]))


#: Headers of the page: its own scripts and styles only, never framed, no referrer (the URL holds the token).
PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                               "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
}


async def index(_request: Request) -> Response:
    """The panel's page (it takes the token from its URL)."""
    return FileResponse(panel.static_dir() / "index.html", headers=PAGE_HEADERS)


#: POST routes that only read (they must not wait behind an extraction batch).
READ_POSTS = frozenset({"/api/recall", "/api/context/assemble"})


class WriteLockMiddleware:
    """ASGI middleware: a request that may write (any method but GET and HEAD) holds ``lock``, the
    daemon's write lock, so the API writes one at a time with the daemon's queue worker and jobs."""

    def __init__(self, app: Any, lock: asyncio.Lock) -> None:
        self.app = app
        self.lock = lock

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD") or scope.get("path") in READ_POSTS:
            await self.app(scope, receive, send)
            return
        async with self.lock:
            await self.app(scope, receive, send)


def build_app(settings: Settings, user_id: str, token: str, *, provider: MemoryProvider | None = None,
              project: str | None = None, write_lock: asyncio.Lock | None = None) -> Starlette:
    """The API and the panel for ``user_id`` (the default of every request's ``user_id``) and
    ``project`` (the default of every request's ``project``; None = every project).

    Without ``provider`` the configured one is made (:func:`dexai_memory.providers.make_provider`),
    started with the app and closed with it. ``write_lock`` (the daemon's, when it serves the
    API over its provider) is held by every request that may write.
    """

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if provider is not None:
            app.state.api = ApiState(provider, settings, user_id, project)
            yield
            return
        from ..datadir import ensure_home
        from ..providers import make_provider

        ensure_home(settings.home)
        async with make_provider(settings) as started:
            app.state.api = ApiState(started, settings, user_id, project)
            yield

    routes: list[Any] = [
        *API_ROUTES,
        Route("/api/openapi.json", openapi, methods=["GET"]),
        Route("/", index, methods=["GET"]),
        Mount("/static", StaticFiles(directory=panel.static_dir()), name="static"),
    ]
    middleware = [Middleware(TokenMiddleware, token=token)]
    if write_lock is not None:
        middleware.append(Middleware(WriteLockMiddleware, lock=write_lock))
    return Starlette(routes=routes, middleware=middleware,
                     exception_handlers={DexaiMemoryError: _our_error, HTTPException: _http_error},
                     lifespan=lifespan)
