"""What the agent is focused on, from context assembly's ``signals``: files, task, activity, errors.

``signals`` is a JSON object (the ``/context/assemble`` body). Keys read
here, every one optional:

==================  ========================================================
key                 meaning
==================  ========================================================
``query``,          free text about the moment (a user prompt)
``prompt``
``current_file``    the file the agent has open (``src/auth/login.ts``);
``files``,          more files (a string or a list of strings)
``open_files``
``task``            the task in a few words
``activity``        ``debugging``, ``coding``, ``planning``, ... (see
                    :func:`activity_of`)
``recent_errors``   error texts (a string or a list of strings)
==================  ========================================================

Any other string (or list of strings) value is free text too. Every string
value but the activity, in order, forms the recall query (:attr:`Focus.query`). Numbers,
booleans and null are ignored; anything else raises
:class:`~dexai_memory.errors.InvalidSignals`.

A memory is *about a file* (:meth:`Focus.mentions_file`) when its content or
its ``metadata`` keys ``file``, ``files``, ``paths`` or ``artifacts`` name
the path, the file name (``login.ts``), the module path (``auth/login``,
``auth.login``), or, for a specific enough stem (4+ characters, not
``index``/``main``/``utils``...), the stem as a word (``login``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidSignals
from ..models import Memory

#: Keys whose values name files.
FILE_KEYS = ("current_file", "files", "open_files")
#: Keys whose values are error texts.
ERROR_KEYS = ("recent_errors", "errors", "error")
#: Activity names, by what callers send.
ACTIVITIES = {
    "debugging": ("debug", "debugging", "bugfix", "fixing", "fix", "troubleshooting", "error"),
    "planning": ("plan", "planning", "design", "designing", "architecture", "reviewing", "review"),
    "coding": ("code", "coding", "implementing", "writing", "refactoring", "editing", "testing"),
}
#: Metadata keys that may name files (episodes' artifacts, notes' files).
FILE_METADATA = ("file", "files", "paths", "artifacts")
#: File stems too common to identify a module by themselves.
GENERIC_STEMS = frozenset({"index", "main", "init", "__init__", "utils", "util", "helpers", "common", "base",
                           "test", "tests", "app", "setup", "config", "types", "readme", "mod", "lib"})
#: Folder names that say nothing about the module.
GENERIC_DIRS = frozenset({"", ".", "..", "src", "lib", "app", "pkg", "source", "packages"})


def _strings(key: str, value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        if not all(isinstance(v, str) for v in value):
            raise InvalidSignals(f"signal '{key}' must be a string or a list of strings")
        return list(value)
    if value is None or isinstance(value, int | float | bool):
        return []
    raise InvalidSignals(f"signal '{key}' must be a string or a list of strings")


def activity_of(text: str) -> str:
    """The activity named by ``text``: ``debugging``, ``planning`` or ``coding`` (the default, also
    for anything unknown)."""
    low = text.strip().lower()
    for name, words in ACTIVITIES.items():
        if low in words:
            return name
    return "coding"


@dataclass(frozen=True, slots=True)
class FileKey:
    """The ways a memory may name one file."""

    path: str
    phrases: tuple[str, ...]
    stem: str | None

    @classmethod
    def of(cls, path: str) -> FileKey:
        p = path.strip().replace("\\", "/").lower()
        name = p.rsplit("/", 1)[-1]
        stem = name.split(".", 1)[0]
        dirs = [d for d in p.split("/")[:-1] if d not in GENERIC_DIRS]
        phrases = {p, name} if "." in name else {p}
        if dirs and stem:
            phrases |= {f"{dirs[-1]}/{stem}", f"{dirs[-1]}.{stem}"}
        specific = stem if len(stem) >= 4 and stem not in GENERIC_STEMS else None
        return cls(p, tuple(sorted(x for x in phrases if x)), specific)

    def named_in(self, text: str) -> bool:
        low = text.lower()
        if any(phrase in low for phrase in self.phrases):
            return True
        return self.stem is not None and re.search(rf"(?<![\w-]){re.escape(self.stem)}(?![\w-])", low) is not None


@dataclass(frozen=True, slots=True)
class Focus:
    """The parsed signals (see the module docstring)."""

    query: str = ""
    files: tuple[str, ...] = ()
    task: str = ""
    activity: str = "coding"
    errors: tuple[str, ...] = ()

    @classmethod
    def parse(cls, signals: Mapping[str, Any] | None) -> Focus:
        """Parse ``signals``; raises :class:`InvalidSignals` for a value of the wrong shape."""
        if signals is None:
            return cls()
        if not isinstance(signals, Mapping):
            raise InvalidSignals("'signals' must be an object")
        parts: list[str] = []
        files: list[str] = []
        errors: list[str] = []
        for key, value in signals.items():
            texts = [t.strip() for t in _strings(str(key), value) if t.strip()]
            if key != "activity":
                parts.extend(texts)
            if key in FILE_KEYS:
                files.extend(texts)
            elif key in ERROR_KEYS:
                errors.extend(texts)
        task = " ".join(_strings("task", signals.get("task")))
        activity = " ".join(_strings("activity", signals.get("activity")))
        return cls(" ".join(parts), tuple(dict.fromkeys(files)), task.strip(), activity_of(activity),
                   tuple(dict.fromkeys(errors)))

    @property
    def file_keys(self) -> tuple[FileKey, ...]:
        return tuple(FileKey.of(f) for f in self.files)

    def mentions_file(self, m: Memory, keys: tuple[FileKey, ...] | None = None) -> str | None:
        """The first focused file ``m`` is about (see the module docstring), else None. Pass
        :attr:`file_keys` as ``keys`` when asking about many memories."""
        if not self.files:
            return None
        meta = m.metadata or {}
        named = " ".join(str(meta[k]) for k in FILE_METADATA if meta.get(k))
        for key in self.file_keys if keys is None else keys:
            if key.named_in(m.content) or (named and key.named_in(named)):
                return key.path
        return None
