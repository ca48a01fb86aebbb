"""The words the offline classifier compares two statements on.

Built on the one tokenizer (:func:`dexai_memory.text.words.split_words`), so
non-ASCII letters stay in their words ("Café Zürich": ``café``, ``zürich``).
:mod:`.rules` (the classifier) and :mod:`.changes` (change detection) share them.
"""

from __future__ import annotations

import re
from collections.abc import Set

from ..text.words import split_words

#: Words two statements are compared on: contractions kept, compounds split ("co-founder": "co",
#: "founder"). Filler is this module's own short list, not the one stop list: "not", "no", "more",
#: "before" change what a statement says.
JOINERS = "'"
FILLER = frozenset("a an the is are was were be been am to of in on at for and or but now also still really very "
                    "just that this it its".split())
#: Reporting and hedging words: a statement means the same with or without them.
SOFT = frozenset("said says say saying mentioned mentions mention told tells tell noted notes stated states "
                  "explained explains shared shares added reported reports reportedly really actually again "
                  "currently recently apparently".split())
_MENTIONED = re.compile(r"\s*\(mentioned on [^)]*\)", re.IGNORECASE)
_POSSESSIVE = re.compile(r"['’]s?$")


def content_words(text: str) -> set[str]:
    """Lower-cased words of ``text`` without filler words."""
    return {w for w in split_words(text, JOINERS) if w not in FILLER}


def jaccard(a: Set[str], b: Set[str]) -> float:
    """Jaccard overlap of two word sets (0 when both are empty)."""
    return len(a & b) / len(a | b) if a or b else 0.0


def fold(word: str) -> str:
    """A word with its possessive and plural ending removed ("user's" -> "user", "trips" -> "trip")."""
    word = _POSSESSIVE.sub("", word.replace("’", "'"))
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    return word


def comparable(text: str) -> str:
    """``text`` without the parts that do not change what it states (the "(mentioned on ...)" stamp)."""
    return _MENTIONED.sub("", text).strip()


def statement_words(text: str) -> set[str]:
    """The normalised content words the offline classifier compares: filler and reporting words
    ("said", "mentioned") removed, possessives and plurals folded."""
    folded = {fold(w) for w in split_words(comparable(text), JOINERS)}
    return {w for w in folded if w and w not in FILLER and w not in SOFT}
