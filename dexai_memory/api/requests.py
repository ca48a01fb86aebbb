"""Reading a request: its JSON body, typed fields, the user and project it is about.

Every problem becomes :class:`BadRequest` (an
:class:`~dexai_memory.errors.InvalidMemory`), answered 400 with
``{"error": "..."}`` naming the field, and a body over :data:`MAX_BODY_BYTES`
:class:`BodyTooLarge` (413, read no further). Bodies are decoded by
:func:`~dexai_memory.text.json_input.loads`: nesting 100,000 deep is a 400, a lone
surrogate becomes U+FFFD; :func:`memory_json` is how a memory
looks in every answer (its fields and its ``category``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from ..agent_tools.tools import category_of
from ..errors import DexaiMemoryError, InvalidMemory
from ..models import Memory
from ..text.json_input import JsonInputError, loads

if TYPE_CHECKING:
    from ..config import Settings
    from ..providers.base import MemoryProvider


class BadRequest(InvalidMemory):
    """A request the API cannot act on: bad JSON, a missing or mistyped field (answered 400)."""


class BodyTooLarge(BadRequest):
    """A body over :data:`MAX_BODY_BYTES` (answered 413)."""


#: Largest request body read (a long session's messages to assemble fit; the token is checked first).
MAX_BODY_BYTES = 16 * 1024 * 1024


class StateConflict(DexaiMemoryError):
    """A request that no longer fits the stored state, e.g. a clear confirmed for another count (409)."""


@dataclass(frozen=True)
class ApiState:
    """What every route works with: the started provider, the settings, the default user."""

    provider: MemoryProvider
    settings: Settings
    user_id: str
    #: The default ``project`` of every request (None = every project).
    project: str | None = None


def default_user() -> str:
    """``$DEXAI_MEMORY_USER``, else the login name, else 'default' (as the CLI and the hooks)."""
    return os.environ.get("DEXAI_MEMORY_USER") or os.environ.get("USER") or "default"


def state(request: Request) -> ApiState:
    """The app's :class:`ApiState`."""
    api: ApiState = request.app.state.api
    return api


async def body(request: Request, *, required: bool = True) -> dict[str, Any]:
    """The JSON object sent; ``{}`` for an empty body unless ``required``."""
    too_large = BodyTooLarge(f"the body is over {MAX_BODY_BYTES} bytes")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise too_large
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        if required:
            raise BadRequest("this request needs a JSON object body")
        return {}
    try:
        data = loads(raw)
    except JsonInputError as exc:
        raise BadRequest(f"the body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise BadRequest(f"the body must be a JSON object, not {type(data).__name__}")
    return data


def text(data: dict[str, Any], key: str, *, required: bool = False) -> str | None:
    """A string field (None when absent and not ``required``)."""
    value = data.get(key)
    if value is None:
        if required:
            raise BadRequest(f"'{key}' is required")
        return None
    if not isinstance(value, str):
        raise BadRequest(f"'{key}' must be a string")
    if required and not value.strip():
        raise BadRequest(f"'{key}' cannot be empty")
    return value


def number(data: dict[str, Any], key: str, *, kind: type = int, low: float | None = None,
           high: float | None = None) -> Any:
    """An int (or float with ``kind=float``) field within ``[low, high]``; None when absent."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or (kind is int and not isinstance(value, int)):
        raise BadRequest(f"'{key}' must be {'an integer' if kind is int else 'a number'}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = " and ".join(x for x in (f"at least {low:g}" if low is not None else "",
                                          f"at most {high:g}" if high is not None else "") if x)
        raise BadRequest(f"'{key}' must be {bounds}")
    return kind(value)


def flag(data: dict[str, Any], key: str, default: bool = False) -> bool:
    """A boolean field."""
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise BadRequest(f"'{key}' must be true or false")
    return value


def ids(data: dict[str, Any], key: str = "ids") -> list[str]:
    """A non-empty list of memory ids."""
    value = data.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(i, str) and i for i in value):
        raise BadRequest(f"'{key}' must be a non-empty list of memory ids")
    return list(dict.fromkeys(value))


def query_flag(request: Request, key: str) -> bool:
    """A boolean query parameter (``1``, ``true``, ``yes``)."""
    return request.query_params.get(key, "").strip().lower() in ("1", "true", "yes", "on")


def query_int(request: Request, key: str, default: int, low: int, high: int) -> int:
    """An integer query parameter within ``[low, high]``."""
    raw = request.query_params.get(key)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"query parameter '{key}' must be an integer") from None
    if not low <= value <= high:
        raise BadRequest(f"query parameter '{key}' must be between {low} and {high}")
    return value


def user_of(request: Request, data: dict[str, Any] | None = None) -> str:
    """The user the request is about: ``user_id`` of the body, else of the query, else the
    panel's user. Another user's id sees only that user's memories."""
    value = (data or {}).get("user_id", request.query_params.get("user_id"))
    if value is None or value == "":
        return state(request).user_id
    if not isinstance(value, str) or not value.strip():
        raise BadRequest("'user_id' must be a non-empty string")
    return value.strip()


def project_of(request: Request, data: dict[str, Any] | None = None) -> str | None:
    """``project`` of the body, else of the query, else the panel's (``--project``); None = every project."""
    value = (data or {}).get("project", request.query_params.get("project"))
    if value is None or value == "":
        return state(request).project
    if not isinstance(value, str):
        raise BadRequest("'project' must be a string")
    return value


def memory_json(m: Memory) -> dict[str, Any]:
    """A memory in an answer: :meth:`Memory.to_dict` and its ``category``."""
    return {**m.to_dict(), "category": category_of(m)}
