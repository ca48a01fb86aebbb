"""Config loading: defaults declared once, user overrides, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dexai_memory.config import (
    Settings,
    default_config_text,
    home_dir,
    load_settings,
    settings_as_dict,
)
from dexai_memory.errors import ConfigError


def test_packaged_yaml_lists_every_default() -> None:
    """args/memory.yaml carries every key with exactly the dataclass defaults."""
    packaged = yaml.safe_load(default_config_text())
    defaults = settings_as_dict(Settings())

    def norm(value: object) -> object:
        if isinstance(value, dict):
            return {k: norm(v) for k, v in value.items()}
        if isinstance(value, tuple | list):
            return [norm(v) for v in value]
        return value

    assert norm(packaged) == norm(defaults)


def test_home_env_override(isolated_home: Path) -> None:
    assert home_dir() == isolated_home
    assert load_settings().db_path == isolated_home / "memory.db"


def test_home_default_without_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DEXAI_MEMORY_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert home_dir() == tmp_path / "xdg" / "dexai-memory"


def test_user_file_overrides_only_what_it_names(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    (isolated_home / "memory.yaml").write_text("auto_recall:\n  max_memories: 3\nretention:\n  EVENT: 30\n")
    s = load_settings()
    assert s.auto_recall.max_memories == 3
    assert s.auto_recall.max_tokens == 800
    assert s.retention["EVENT"] == 30 and s.retention["TASK"] == 30 and s.retention["FACT"] is None


def test_explicit_file_wins(tmp_path: Path, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    (isolated_home / "memory.yaml").write_text("extraction:\n  gate_threshold: 0.5\n")
    extra = tmp_path / "x.yaml"
    extra.write_text("extraction:\n  gate_threshold: 0.7\n")
    assert load_settings(extra).extraction.gate_threshold == 0.7


def test_settings_are_frozen() -> None:
    s = load_settings()
    with pytest.raises(AttributeError):
        s.auto_recall.max_tokens = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "key", "reason"),
    [
        pytest.param("extraction:\n  gate_threshold: 2\n", "extraction.gate_threshold", "<= 1.0", id="out-of-range"),
        pytest.param("extraction:\n  gate_threshold: high\n", "extraction.gate_threshold", "expected a number", id="not-a-number"),
        pytest.param("auto_recall:\n  max_memories: 2.5\n", "auto_recall.max_memories", "whole number", id="not-int"),
        pytest.param("auto_recall:\n  enabled: yes please\n", "auto_recall.enabled", "true or false", id="not-bool"),
        pytest.param("storage:\n  provider: redis\n", "storage.provider", "one of", id="bad-choice"),
        pytest.param("auto_recal:\n  enabled: true\n", "auto_recal", "unknown key", id="unknown-section"),
        pytest.param("auto_recall:\n  max_memorys: 3\n", "auto_recall.max_memorys", "unknown key", id="unknown-key"),
        pytest.param("retention:\n  WORKFLOW: 3\n", "retention.WORKFLOW", "unknown memory type", id="bad-retention-type"),
        pytest.param("retention:\n  EVENT: -1\n", "retention.EVENT", "whole days", id="bad-retention-days"),
        pytest.param("- just a list\n", None, "mapping", id="not-a-mapping"),
        pytest.param("extraction: [unclosed\n", None, "invalid YAML", id="bad-yaml"),
    ],
)
def test_bad_values_name_file_key_and_reason(tmp_path: Path, text: str, key: str | None, reason: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    message = str(info.value)
    assert str(path) in message
    assert reason in message
    if key:
        assert key in message and info.value.key == key


def test_missing_explicit_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "nope.yaml")


def test_keys_of_earlier_versions_still_load(tmp_path: Path) -> None:
    """A memory.yaml tuned for the inline extraction of earlier versions still loads (an error
    here would turn memory off in every hook); the new waits have their defaults."""
    path = tmp_path / "old.yaml"
    path.write_text("hooks:\n  daemon_timeout_seconds: 0.2\n  inline_flush_seconds: 5\n  prefetch_tokens: 90\n")
    settings = load_settings(path)
    assert settings.hooks.prefetch_tokens == 90
    assert settings.hooks.cold_start_wait_seconds == 8.0 and settings.hooks.precompact_wait_seconds == 50.0
    assert settings.daemon.cold_recall_wait_seconds == 3.0
    assert not hasattr(settings.hooks, "inline_flush_seconds")


def test_retired_spacy_keys_load_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The spaCy keys did nothing (no pipeline was ever loaded): a file setting them still
    loads, and the log says they are ignored and what finds entities instead."""
    path = tmp_path / "old.yaml"
    path.write_text("extraction:\n  spacy: always\n  spacy_model: en_core_web_sm\n  batch_size: 7\n")
    with caplog.at_level("WARNING", logger="dexai_memory.config"):
        settings = load_settings(path)
    assert settings.extraction.batch_size == 7
    assert not hasattr(settings.extraction, "spacy")
    warned = [r.getMessage() for r in caplog.records]
    assert any("extraction.spacy is retired" in m and "regex" in m and str(path) in m
               for m in warned)
