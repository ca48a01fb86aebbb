"""JSON from outside the process, decoded so that hostile input gets a clean error, never a crash.

Every door decodes through :func:`loads`: the daemon's socket and its HTTP hook port, the
local API's bodies and the MCP server's messages.

* **Nesting.** Python's decoder recurses once per level, so ``[`` × 100,000 raises
  :class:`RecursionError`, which is no :class:`ValueError` and so escaped every door's
  ``except ValueError`` (a 500, a dropped connection, a dead MCP server). :func:`loads`
  turns it, and anything nested deeper than :data:`MAX_DEPTH`, into :class:`JsonInputError`
  (a ``ValueError``), so a value that gets through is shallow enough for any code after it.
* **Lone surrogates.** ``"\\ud800"`` is valid JSON but no Unicode text: it cannot be encoded
  as UTF-8, so SQLite, the log and every writer fail on it later. JavaScript (Claude Code,
  the panel) emits one when a string is cut inside an emoji's pair, so it is replaced by
  U+FFFD (the replacement character) rather than refused: the prompt is still captured.

Standard library only (the MCP server and the command hook import it).
"""

from __future__ import annotations

import json
import re
from typing import Any

#: Deepest nesting accepted (hook inputs, API bodies and MCP messages use under 10 levels).
MAX_DEPTH = 64
#: What a lone surrogate becomes.
REPLACEMENT = "\ufffd"

_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonInputError(ValueError):
    """Input that is not JSON, or is nested deeper than :data:`MAX_DEPTH` levels."""


def loads(data: bytes | bytearray | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The value ``data`` holds, with every lone surrogate (in keys and strings) replaced by
    :data:`REPLACEMENT`. Raises :class:`JsonInputError` when ``data`` is not UTF-8 JSON or
    nests more than ``max_depth`` arrays and objects."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise JsonInputError(f"JSON nested deeper than {max_depth} levels") from None
    except ValueError as exc:  # UnicodeDecodeError included
        raise JsonInputError(str(exc)) from None
    return clean(value, max_depth=max_depth)


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by :data:`REPLACEMENT`."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(REPLACEMENT, text)


def clean(value: Any, *, max_depth: int = MAX_DEPTH) -> Any:
    """A decoded JSON ``value`` with lone surrogates replaced (lists and dicts changed in place),
    checked to nest at most ``max_depth`` levels; a loop, not recursion, so any depth is safe
    to check. Raises :class:`JsonInputError` when it nests deeper."""
    if isinstance(value, str):
        return clean_text(value)
    if not isinstance(value, dict | list):
        return value
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            raise JsonInputError(f"JSON nested deeper than {max_depth} levels")
        if isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str):
                    node[i] = clean_text(item)
                elif isinstance(item, dict | list):
                    stack.append((item, depth + 1))
            continue
        if any(not key.isascii() and _SURROGATE.search(key) for key in node):
            items = list(node.items())
            node.clear()
            node.update((clean_text(k), v) for k, v in items)
        for key, item in node.items():
            if isinstance(item, str):
                node[key] = clean_text(item)
            elif isinstance(item, dict | list):
                stack.append((item, depth + 1))
    return value
