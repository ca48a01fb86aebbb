"""Every command of ``dexai`` (the whole click tree, walked) is in the README's CLI table, and has a
``--help`` that works; every ``dexai ...`` line of the README's and docs' shell blocks names a real
command with options it has."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from dexai_memory.cli.main import cli

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))


def commands(cmd: click.Command = cli, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command under ``cmd``, groups included, with its path of names."""
    yield path, cmd
    if isinstance(cmd, click.Group):
        ctx = click.Context(cmd)
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            assert sub is not None, name
            yield from commands(sub, (*path, name))


ALL = [path for path, _cmd in commands() if path]


def test_the_tree_is_walked() -> None:
    assert ("memory", "consolidate") in ALL and ("daemon", "start") in ALL and ("sessions", "show") in ALL


@pytest.mark.parametrize("path", ALL, ids=" ".join)
def test_every_command_is_in_the_readme_table(path: tuple[str, ...]) -> None:
    table = [line for line in README.read_text(encoding="utf-8").splitlines() if line.startswith("| `dexai ")]
    name = "dexai " + " ".join(path)
    assert any(re.search(re.escape(name) + r"(?![\w-])", line) for line in table), (
        f"`{name}` is not in the README's CLI table")


def _shell_lines(text: str) -> Iterator[str]:
    """The ``dexai ...`` commands of a Markdown text's bash blocks (comments and continuations joined)."""
    for block in re.findall(r"```(?:bash|sh)\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            for part in re.split(r"&&|\|\||;|\$\(|\)", line.split(" #")[0]):
                part = part.strip()
                if part.startswith("dexai "):
                    yield part


SHELL = sorted({(doc.name, line) for doc in [README, *DOCS] for line in _shell_lines(doc.read_text(encoding="utf-8"))})


def _resolve(words: list[str]) -> tuple[click.Command, list[str]]:
    cmd: click.Command = cli
    rest = words
    while isinstance(cmd, click.Group) and rest and not rest[0].startswith("-"):
        sub = cmd.get_command(click.Context(cmd), rest[0])
        if sub is None:
            break
        cmd, rest = sub, rest[1:]
    return cmd, rest


def test_the_readme_has_shell_snippets() -> None:
    assert any(name == "README.md" for name, _line in SHELL)


@pytest.mark.parametrize(("doc", "line"), SHELL, ids=[f"{d}: {line}" for d, line in SHELL])
def test_shell_snippet_names_a_real_command_and_real_options(doc: str, line: str) -> None:
    words = shlex.split(line.replace("[", "").replace("]", ""))[1:]
    cmd, rest = _resolve(words)
    if isinstance(cmd, click.Group) and rest and not rest[0].startswith("-"):
        pytest.fail(f"{doc}: `{line}`: no command {rest[0]!r}")
    known = {opt for param in cmd.params for opt in (*param.opts, *param.secondary_opts)} | {"--help", "-h"}
    used = {w.split("=")[0] for w in rest if w.startswith("-") and w != "--"}
    assert used <= known, f"{doc}: `{line}`: unknown options {sorted(used - known)}"


@pytest.mark.parametrize("path", ALL, ids=" ".join)
def test_help_works(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
