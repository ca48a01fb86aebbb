"""Redaction over the shape table (:mod:`tests.security.secrets_table`): every secret shape is
redacted, redaction is idempotent, and sentences about secrets that hold none are left as they
are. The same table runs through every door in :mod:`tests.security.test_secrets_doors`."""

from __future__ import annotations

import pytest

from dexai_memory.text.redaction import REDACTED, contains_secret, redact, redact_all

from .secrets_table import ORDINARY, SHAPES


def test_the_table_is_large_and_its_ids_unique() -> None:
    assert len(SHAPES) >= 100 and len({s[0] for s in SHAPES}) == len(SHAPES)
    assert len(ORDINARY) >= 30


@pytest.mark.parametrize(("text", "secrets"), [pytest.param(t, s, id=i) for i, t, s in SHAPES])
def test_every_shape_is_redacted(text: str, secrets: tuple[str, ...]) -> None:
    out = redact(text)
    assert not [s for s in secrets if s in out], out
    assert contains_secret(text)
    assert redact(out) == out  # idempotent: what was redacted passes unchanged (an import of an export)


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_sentences_are_left_as_they_are(text: str) -> None:
    assert redact(text) == text


def test_a_shape_inside_a_sentence_keeps_the_sentence() -> None:
    out = redact("We deployed on Friday; the password for the staging database is Trx9pQ2mLw. Tests pass.")
    assert out == f"We deployed on Friday; the password for the staging database is {REDACTED} Tests pass."
    assert redact("my passphrase is velvet quokka marmalade tundra. I use it daily") == \
        f"my passphrase is {REDACTED}. I use it daily"


def test_redact_all_reaches_nested_strings() -> None:
    value = {"a": ["x", {"b": "my bank PIN is 738291"}], "n": 3}
    assert redact_all(value) == {"a": ["x", {"b": f"my bank PIN is {REDACTED}"}], "n": 3}
