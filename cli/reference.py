"""The configuration reference, ``docs/configuration.md``, rendered from the settings themselves.

Every key of :class:`dexai_memory.config.Settings` is listed with its type, its default (the
dataclass field's, which the packaged ``memory.yaml`` repeats) and its description. The
description is the ``#:`` comment right above the field in its dataclass; for the few
fields with no comment, the trailing comment of the key in the packaged ``memory.yaml``; then
:data:`MORE`, written here. ``tests/test_docs_config.py`` fails when a key has no description
or when ``docs/configuration.md`` is not what :func:`render` gives.

``python -m dexai_memory.cli.reference`` prints the page; ``--write`` rewrites
``docs/configuration.md`` of the checkout (run it after changing a setting).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
import types
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from dexai_memory.config import RETIRED_KEYS, Settings, default_config_text

#: Descriptions of fields that have no ``#:`` comment in the code nor in the packaged ``memory.yaml``.
MORE = {
    "search.bm25_weight": "Weight of the BM25 (keyword) ranking in reciprocal rank fusion.",
    "extraction.batch_size": "Turns processed per batch.",
    "l1_block.profile_tokens": "Tokens of the block's profile section (pinned memories, strong preferences).",
    "l1_block.memories_tokens": "Tokens of the block's relevant-memories section.",
    "l1_block.commitments_tokens": "Tokens of the block's \"Coming up\" section (commitments due soon).",
    "l1_block.session_tokens": "Tokens of the block's last-session-state section.",
    "consolidation.enabled": "The daemon runs consolidation (clusters of similar L2 memories merged into L3 "
                             "abstracts) on its schedule.",
    "consolidation.interval_hours": "Hours between the daemon's consolidation runs.",
    "consolidation.min_cluster_size": "Fewest similar memories merged into one abstract.",
    "consolidation.cluster_similarity": "Cosine similarity at or above which two memories join a cluster.",
    "consolidation.min_age_days": "Only memories older than this many days are consolidated.",
    "consolidation.consolidation_model": "Model that writes abstracts and compression forms when extraction "
                                         "has a model (an API key or the Claude Code sign-in).",
    "supersession.enabled": "Compare each new note with similar stored memories and decide ADD / UPDATE / "
                            "SUPERSEDE / NOOP; off, every note is added.",
    "supersession.comparison_top_k": "Most similar current memories a new note is compared with.",
    "supersession.classification_model": "Model that classifies a note against similar memories when an API "
                                         "key is set (otherwise the offline rules).",
    "lifecycle.preference_weight": "Eviction weight of preferences (standing instructions and warnings included).",
    "lifecycle.identity_weight": "Eviction weight of identity memories (people).",
    "lifecycle.preference_expiry_days": "Days without a reference after which a preference is archived (0 = never).",
    "lifecycle.identity_expiry_days": "Days without a reference after which an identity memory (a person) is "
                                      "archived (0 = never).",
    "hooks.enabled": "Memory hooks run at all; false turns memory off everywhere.",
    "auto_recall.enabled": "Inject relevant memories on each prompt (extraction goes on when off).",
    "persistent_context.enabled": "Open every session-start and post-compaction block with the persistent "
                                  "context; false: the profile-only block.",
    "persistent_context.CATEGORY.max_items": "At most this many memories of the category.",
    "persistent_context.CATEGORY.max_tokens": "At most this many tokens of the category's lines (its title "
                                              "included).",
    "mem0.collection": "Name of Mem0's vector-store collection.",
    "zep.api_key_env": "Environment variable holding the Zep API key.",
    "postgres.dsn_env": "Environment variable holding the PostgreSQL connection string (never written to a "
                        "file nor logged).",
    "postgres.statement_timeout_seconds": "Seconds after which a statement is cancelled (0: never).",
    "retention.TYPE": "Days before a current memory of this type is archived to L3 (null: kept forever; "
                      "pinned memories never are).",
}


@dataclasses.dataclass(frozen=True)
class Key:
    """One configuration key as the reference shows it."""

    name: str  #: dotted, as in ``memory.yaml``: ``search.rrf_k``
    type: str
    default: Any
    description: str


def _field_comments(cls: type) -> dict[str, str]:
    """``#:`` comments of a dataclass's fields, read from its source (the comment right above a field)."""
    out: dict[str, str] = {}
    pending: list[str] = []
    for line in inspect.getsource(cls).splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        match = re.match(r"^    (\w+)\s*:", line)
        if match and pending:
            out[match.group(1)] = " ".join(pending).replace("``", "`")
        if stripped:
            pending = []
    return out


def _yaml_comments() -> dict[str, str]:
    """Trailing comments of the packaged ``memory.yaml``, by dotted key."""
    out: dict[str, str] = {}
    path: list[tuple[int, str]] = []
    for line in default_config_text().splitlines():
        match = re.match(r"^( *)([\w-]+):(.*)$", line)
        if not match:
            continue
        indent, name, rest = len(match.group(1)), match.group(2), match.group(3)
        path = [(i, n) for i, n in path if i < indent] + [(indent, name)]
        comment = re.search(r"\s#\s*(.+)$", rest)
        if comment and not rest.strip().startswith("#"):
            out[".".join(n for _i, n in path)] = comment.group(1).strip()
    return out


def _type_name(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        return " or ".join("null" if a is type(None) else _type_name(a) for a in typing.get_args(hint))
    if origin is tuple:
        return f"list of {_type_name(typing.get_args(hint)[0])}"
    if isinstance(hint, type):
        return {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}.get(hint.__name__,
                                                                                          hint.__name__)
    return str(hint)


def _bounds(meta: Mapping[str, Any]) -> str:
    if meta.get("choices"):
        return "one of " + ", ".join(f"`{c}`" for c in meta["choices"])
    lo, hi = meta.get("min"), meta.get("max")
    if lo is None and hi is None:
        return ""
    return f"{lo if lo is not None else ''} .. {hi if hi is not None else ''}".strip()


def keys(settings_cls: type = Settings) -> Iterator[Key]:
    """Every key of the settings, in the order of the dataclasses, ``home`` left out (it is the data directory,
    set by ``$DEXAI_MEMORY_HOME``, not a key)."""
    yaml_comments = _yaml_comments()
    defaults = settings_cls()
    yield from _walk(settings_cls, defaults, "", yaml_comments)


def _walk(cls: type, value: Any, prefix: str, yaml_comments: Mapping[str, str]) -> Iterator[Key]:
    comments = _field_comments(cls)
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name == "home":
            continue
        name = f"{prefix}{f.name}"
        current = getattr(value, f.name)
        hint = hints[f.name]
        if dataclasses.is_dataclass(current):
            yield from _walk(type(current), current, name + ".", yaml_comments)
            continue
        if isinstance(current, Mapping):  # retention: one key per memory type
            for sub, days in current.items():
                yield Key(f"{name}.{sub}", "integer or null", days, MORE[f"{name}.TYPE"])
            continue
        generic = re.sub(r"^persistent_context\.\w+\.", "persistent_context.CATEGORY.", name)
        description = comments.get(f.name) or yaml_comments.get(name) or MORE.get(name) or MORE.get(generic, "")
        limits = _bounds(f.metadata)
        type_text = _type_name(hint) + (f" ({limits})" if limits else "")
        yield Key(name, type_text, current, description)


def _default_text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(value, str):
        return f'"{value}"' if value == "" else value
    return str(value)


def _plain(text: str) -> str:
    """Sphinx roles (``:mod:`x```, ``:func:`~x```) as plain code, double backticks as single ones."""
    return re.sub(r":\w+:`~?([^`]+)`", r"`\1`", text).replace("``", "`")


def _cell(text: str) -> str:
    return _plain(text).replace("|", "\\|").replace("\n", " ")


def render() -> str:
    """The whole page, Markdown."""
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated by `python -m dexai_memory.cli.reference --write` from dexai_memory/config.py and",
        "     dexai_memory/limits.py; do not edit by hand (tests/test_docs_config.py checks it is current). -->",
        "",
        "[Back to the README](../README.md) · how settings are loaded, the data directory and the keys",
        "people change most: [configuration-guide.md](configuration-guide.md)",
        "",
        "Settings are read from the packaged defaults ([`args/memory.yaml`](../args/memory.yaml), every key",
        "below), then `<data dir>/memory.yaml`, then `--config FILE`; a file overrides only the keys it names,",
        "and a bad value fails at load time naming the file, the key and the reason. The data directory is",
        "`$DEXAI_MEMORY_HOME`, else `$XDG_DATA_HOME/dexai-memory` (`~/.local/share/dexai-memory`).",
        "",
    ]
    section = None
    for key in keys():
        top = key.name.split(".")[0]
        if top != section:
            section = top
            doc = _section_doc(top)
            lines += ["", f"## `{top}`", ""] + ([doc, ""] if doc else []) + [
                "| key | type | default | description |", "|---|---|---|---|"]
        lines.append(f"| `{key.name}` | {_cell(key.type)} | `{_cell(_default_text(key.default))}` "
                     f"| {_cell(key.description)} |")
    lines += ["", "## Retired keys", "",
              "Keys of earlier versions a file may still set: they load, and are ignored.", ""]
    lines += [f"* `{name}`" + (f": {why}" if why else "") for name, why in RETIRED_KEYS.items()]
    return "\n".join(lines) + "\n"


def _section_doc(top: str) -> str:
    hint = typing.get_type_hints(Settings)[top]
    if dataclasses.is_dataclass(hint) and hint.__doc__:
        return _plain(" ".join(hint.__doc__.split()))
    comments = _field_comments(Settings)
    return comments.get(top, "")


def main(argv: list[str] | None = None) -> None:
    """Print the reference, or with ``--write`` write it to ``docs/configuration.md`` of this checkout."""
    args = sys.argv[1:] if argv is None else argv
    text = render()
    if "--write" in args:
        target = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
        target.write_text(text, encoding="utf-8")
        sys.stdout.write(f"wrote {target}\n")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
