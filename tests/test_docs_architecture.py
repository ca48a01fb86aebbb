"""docs/architecture.md's layout names every module and sub-package of the library and the command
line, so it stays the map of the code: a new module fails here until the page says what it holds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "architecture.md"
PACKAGE = REPO / "dexai_memory"


def layout() -> str:
    text = PAGE.read_text(encoding="utf-8")
    match = re.search(r"```\ndexai_memory/\n(.*?)```", text, flags=re.S)
    assert match, "docs/architecture.md has no layout block starting with dexai_memory/"
    return match.group(1)


def names() -> list[str]:
    """Every module (``name.py``) and package (``name/``) under dexai_memory/, by path."""
    out = []
    for path in sorted(PACKAGE.rglob("*")):
        rel = path.relative_to(PACKAGE)
        if "__pycache__" in rel.parts or "static" in rel.parts[:-1] or rel.parts[0] == "data":
            continue
        if path.is_dir() and (path / "__init__.py").exists():
            out.append(f"{rel}/")
        elif path.suffix == ".py" and path.name != "__init__.py":
            out.append(str(rel))
    return out


@pytest.mark.parametrize("name", names())
def test_every_module_is_on_the_map(name: str) -> None:
    stem = Path(name.rstrip("/")).stem  # named as `ann.py`, `native/` or, in a list, plain `ann`
    assert re.search(rf"(?<![\w.]){re.escape(stem)}(?![\w])", layout()), (
        f"docs/architecture.md's layout does not name {name}: say what it holds")
