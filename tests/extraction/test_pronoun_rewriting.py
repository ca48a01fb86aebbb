"""The offline extractor's person rewriting writes what a person would: verbs in the third person,
adverbs kept whole, names as written."""

from __future__ import annotations

import pytest

from dexai_memory.extraction.offline.pronouns import Rewriter


@pytest.mark.parametrize(
    ("said", "written"),
    [
        ("I sold the Corolla", "Robin sold the Corolla"),  # "so" is an adverb only as a whole word
        ("I so love it", "Robin so loves it"),
        ("I no longer use Slack", "Robin no longer uses Slack"),
        ("I now use pnpm", "Robin now uses pnpm"),
        ("I currently work at Café Zürich", "Robin currently works at Café Zürich"),
        ("I misspoke: the API runs on port 8080", "Robin misspoke: the API runs on port 8080"),
        ("I rewrote the parser", "Robin rewrote the parser"),
        ("I broke up with Joe", "Robin broke up with Joe"),
        ("I noticed Marco took over", "Robin noticed Marco took over"),
    ],
)
def test_statements_read_as_written(said: str, written: str) -> None:
    assert Rewriter("Robin", None, "the team", we_singular=True)(said) == written
