"""The one tokenizer and stop list (dexai_memory.text.words) and the text package's exports."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import dexai_memory.text as text
from dexai_memory.text import STOP_WORDS, content_words, normalize, search_terms, split_words
from dexai_memory.text.words import REQUEST_WORDS

PACKAGE = Path(text.__file__).parent


@pytest.mark.parametrize(("given", "expected"), [
    ("Café Zürich", ["café", "zürich"]),                        # Unicode letters, never "caf", "rich"
    ("Straße in Köln, Ørsted, São Paulo", ["straße", "in", "köln", "ørsted", "são", "paulo"]),
    ("東京 and Москва", ["東京", "and", "москва"]),
    ("cafe\u0301", ["café"]),                                   # a decomposed accent is one letter (NFKC)
    ("ﬁle", ["file"]),                                          # a ligature is its letters
    ("I don't know", ["i", "don't", "know"]),                   # contractions stay whole
    ("the user’s dog", ["the", "user's", "dog"]),               # typographic apostrophe -> '
    ("'quoted' words", ["quoted", "words"]),                    # quotes are not apostrophes
    ("my co-founder, a follow-up", ["my", "co-founder", "a", "follow-up"]),
    ("snake_case and __init__", ["snake_case", "and", "init"]),  # identifiers whole, outer _ trimmed
    ("edit file.py in src/app", ["edit", "file", "py", "in", "src", "app"]),  # dots and slashes split
    ("v1.2.3 in 2024, 3.14 and 10:30", ["v1", "2", "3", "in", "2024", "3", "14", "and", "10", "30"]),
    ("C++ & C# -- ok!! 🎉", ["c", "c", "ok"]),                  # symbols and emoji are no words
    ("", []),
], ids=["latin", "accents", "scripts", "decomposed", "ligature", "contraction", "curly-apostrophe", "quotes",
        "hyphen", "identifiers", "paths", "numbers", "symbols", "empty"])
def test_words(given: str, expected: list[str]) -> None:
    assert split_words(given) == expected


def test_joiners_choose_how_fine_words_are() -> None:
    given = "co-founder's snake_case"
    assert split_words(given, joiners="'") == ["co", "founder's", "snake", "case"]
    assert split_words(given, joiners="") == ["co", "founder", "s", "snake", "case"]
    assert split_words(given, joiners="_") == ["co", "founder", "s", "snake_case"]


def test_normalize() -> None:
    assert normalize("Zürich’S") == "zürich's"
    assert normalize("PLAIN ascii") == "plain ascii"


def test_content_words_drop_stop_words_and_single_letters() -> None:
    assert content_words("The user wants a 5 star café, doesn't he?") == ["user", "wants", "5", "star", "café"]
    assert content_words("please tell me what the user wants", STOP_WORDS | REQUEST_WORDS) == ["wants"]


def test_stop_list_holds_contractions_whole_not_their_fragments() -> None:
    assert {"don't", "won't", "isn't", "i'm"} <= STOP_WORDS
    assert {"s", "t", "ll", "ve", "re"} <= STOP_WORDS       # what a split contraction leaves
    assert not {"won", "don", "isn"} & STOP_WORDS           # "won" the verb, "Don" the name
    assert not REQUEST_WORDS & STOP_WORDS                    # the extension only adds


@pytest.mark.parametrize(("given", "expected"), [
    ('What did she do about the "pottery" class?', ["pottery", "class"]),
    ("Caroline's co-founder won't go", ["caroline", "co", "founder", "go"]),  # split as FTS5 splits
    ("Who won the race? Don did.", ["won", "race", "don"]),
    ("rename user_id in models.py", ["rename", "user_id", "models", "py"]),  # FTS5 phrase "user id"
    ("Zürich café", ["zürich", "café"]),
    ("the and of", []),
], ids=["question", "possessive-compound", "won-don", "identifier", "unicode", "only-stop-words"])
def test_search_terms(given: str, expected: list[str]) -> None:
    assert search_terms(given) == expected


def test_search_terms_without_joiners_and_capped() -> None:
    assert search_terms("rename user_id", joiners="") == ["rename", "user", "id"]
    assert search_terms("alpha beta gamma alpha delta", max_terms=3) == ["alpha", "beta", "gamma"]


def test_package_exports_every_name_of_all_lazily() -> None:
    for name in text.__all__:
        assert getattr(text, name) is not None
    with pytest.raises(AttributeError):
        _ = text.no_such_name  # type: ignore[attr-defined]


def test_text_imports_only_the_standard_library() -> None:
    """The command hook's fast path imports text/: no third-party or heavier package module."""
    allowed = {"dexai_memory.lazy"}
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    names = [] if node.level == 1 else [f"dexai_memory.{node.module}"]
                else:
                    names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or name in allowed, f"{path.name} imports {name}"
