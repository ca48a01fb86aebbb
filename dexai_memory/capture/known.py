"""What Claude Code's own memory already says: ``CLAUDE.md`` and the auto memory.

Claude Code loads these files into every session itself, so a memory that repeats them costs
tokens twice and can drift from them. They are read as sources: a note they already state is
not stored again (:meth:`ClaudeMemory.says`). They are never written or disabled.

The files of a project (its directory: the memory's project when that is a path, the git root
the hooks capture under):

* ``<project>/CLAUDE.md``, ``<project>/.claude/CLAUDE.md``, ``<project>/CLAUDE.local.md``;
* the user's ``~/.claude/CLAUDE.md`` (``$CLAUDE_CONFIG_DIR`` when set);
* the auto memory: ``~/.claude/projects/<project path with every non-alphanumeric character
  as "-">/memory/*.md`` (``MEMORY.md`` and the topic files beside it).

A note is "already said" when one line (or sentence) of those files holds at least
:data:`COVERED` of its content words. Files are re-read when they change (size and mtime).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from ..text.words import content_words

__all__ = ["COVERED", "ClaudeMemory", "memory_files"]

#: Share of a note's content words one line of the files must hold for the note to be skipped.
COVERED = 0.8
#: Largest file read (bytes): Claude Code itself reads the first 200 lines of MEMORY.md.
MAX_BYTES = 256 * 1024


def _config_dir(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    return Path(env.get("CLAUDE_CONFIG_DIR") or Path(env.get("HOME") or Path.home()) / ".claude")


def memory_files(project: str, env: dict[str, str] | None = None) -> list[Path]:
    """The Claude Code memory files that apply to ``project`` (a directory), existing or not."""
    root = Path(project)
    config = _config_dir(env)
    files = [root / "CLAUDE.md", root / ".claude" / "CLAUDE.md", root / "CLAUDE.local.md", config / "CLAUDE.md"]
    auto = config / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(root)) / "memory"
    if auto.is_dir():
        files += sorted(auto.glob("*.md"))
    return files


def _statements(text: str) -> Iterable[str]:
    for line in text.splitlines():
        line = line.strip().lstrip("#-*> ").strip()
        if not line:
            continue
        yield line
        parts = re.split(r"(?<=[.!?])\s+", line)
        if len(parts) > 1:
            yield from parts


class ClaudeMemory:
    """The statements of Claude Code's memory files, per project, cached by file size and mtime."""

    def __init__(self, env: dict[str, str] | None = None):
        self.env = env
        self._files: dict[Path, tuple[tuple[int, int], list[frozenset[str]]]] = {}

    def _lines(self, path: Path) -> list[frozenset[str]]:
        try:
            st = path.stat()
        except OSError:
            self._files.pop(path, None)
            return []
        stamp = (st.st_size, st.st_mtime_ns)
        cached = self._files.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            with path.open("rb") as fh:
                text = fh.read(MAX_BYTES).decode("utf-8", "replace")
        except OSError:
            return []
        lines = [frozenset(words) for s in _statements(text) if (words := content_words(s))]
        self._files[path] = (stamp, lines)
        return lines

    def says(self, text: str, project: str | None) -> bool:
        """Whether the memory files of ``project`` already state ``text`` (see the module docstring).
        False when ``project`` is not a directory (a named scope, no project)."""
        if not project or not os.path.isabs(project) or not os.path.isdir(project):
            return False
        words = set(content_words(text)) - {"user", "user's", "project", "team"}
        if len(words) < 2:
            return False
        for path in memory_files(project, self.env):
            for line in self._lines(path):
                if len(words & line) >= COVERED * len(words):
                    return True
        return False
