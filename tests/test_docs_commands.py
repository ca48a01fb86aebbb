"""The README's two commands are what CI runs (``.ci/run``, written identically), and the extras they
install exist in ``pyproject.toml``."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def two_commands() -> list[str]:
    """The commands of the README's "Two commands" section, one a bash block."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Two commands\n", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S)]


def test_there_are_two() -> None:
    assert two_commands() == ["pip install '.[sdk]' && dexai demo", "pip install -e '.[dev]' && python -m pytest"]


def test_ci_runs_them_as_written() -> None:
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    missing = [command for command in two_commands() if command not in ci]
    assert not missing, f".ci/run does not run the README's {missing} (a line of its own, written identically)"


def test_the_extras_they_install_exist() -> None:
    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
                 .get("optional-dependencies", {}))
    named = {extra for command in two_commands() for extra in re.findall(r"\.\[([\w-]+)\]", command)}
    assert named <= extras, f"pyproject.toml has no extra {sorted(named - extras)}"
