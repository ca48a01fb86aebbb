"""The configuration reference is complete and current: every key of the settings has a type, a default
and a description in ``docs/configuration.md``, and the page is exactly what the code renders."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from dexai_memory.cli.reference import keys, render
from dexai_memory.config import Settings, settings_as_dict

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "configuration.md"


def _dotted(data: dict[str, object], prefix: str = "") -> set[str]:
    out: set[str] = set()
    for name, value in data.items():
        if isinstance(value, dict):
            out |= _dotted(value, f"{prefix}{name}.")  # type: ignore[arg-type]
        else:
            out.add(f"{prefix}{name}")
    return out


def test_the_reference_lists_every_setting() -> None:
    listed = {key.name for key in keys()}
    assert listed == _dotted(settings_as_dict(Settings())), "the reference and the settings disagree"


def test_every_key_has_a_type_and_a_description() -> None:
    missing = [key.name for key in keys() if not key.description.strip() or not key.type]
    assert not missing, (f"no description for {missing}: add a `#:` comment above the field in "
                         "dexai_memory/config.py (or limits.py), or a line to MORE in cli/reference.py")


def test_docs_configuration_md_is_current() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), (
        "docs/configuration.md is out of date: run `python -m dexai_memory.cli.reference --write`")


def test_every_key_is_on_the_page() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert not [key.name for key in keys() if f"`{key.name}`" not in text]


def test_sections_are_the_settings_sections() -> None:
    text = PAGE.read_text(encoding="utf-8")
    sections = [f.name for f in dataclasses.fields(Settings) if f.name != "home"]
    assert all(f"## `{name}`" in text for name in sections)
