"""Words: the one tokenizer and the one stop list of dexai-memory.

What a word is (:func:`split_words`):

* a run of Unicode letters and digits: ``"Café Zürich 2024"`` gives ``café``,
  ``zürich``, ``2024`` (never ``caf``, ``rich``);
* runs joined by an apostrophe, a hyphen or an underscore stay one word:
  contractions and possessives (``don't``, ``user's``), compounds
  (``co-founder``, ``follow-up``) and code identifiers (``snake_case``,
  ``__init__`` gives ``init``);
* every other character separates words, dots and slashes included:
  ``file.py`` gives ``file``, ``py``; ``src/app.ts`` gives ``src``, ``app``,
  ``ts``; ``v1.2.3`` gives ``v1``, ``2``, ``3``; ``C++`` gives ``c``; emoji
  and punctuation give nothing;
* text is NFKC-normalised (``ﬁ`` is ``fi``, a decomposed ``é`` is one
  letter), typographic apostrophes (``’``) become ``'``, and words are
  lower-cased.

A caller that needs finer words names the joiners it keeps: ``joiners="'"``
splits compounds and identifiers (``co``, ``founder``), ``joiners=""`` splits
at every one of them, as SQLite's FTS5 ``unicode61`` tokenizer and
PostgreSQL's parser do.

:data:`STOP_WORDS` is the one stop list: English function words, contractions
and chat interjections, which say nothing about what a text is about.
:data:`REQUEST_WORDS` extends it where a text is a request to the assistant or
a note about "the user" (recall ranking); see its comment for why the keyword
index keeps those words. Modules with a narrower need (comparing statements,
where "not" and "no" matter) keep their own small list beside their code and
say why.

Standard library only: the command hook's fast path imports this module.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["JOINERS", "REQUEST_WORDS", "STOP_WORDS", "content_words", "normalize", "search_terms", "split_words"]

#: The characters that join two runs of letters and digits into one word (see the module docstring).
JOINERS = "'-_"

#: English function words, contractions (whole, and the endings left when a tokenizer splits them at
#: the apostrophe: ``s``, ``t``, ``ll``...) and chat interjections.
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves also get got like really yeah oh ok okay hey hi
    i'm i've i'd it's that's what's can't don't didn't doesn't isn't aren't wasn't weren't hasn't haven't
    hadn't won't wouldn't shan't shouldn't mustn't couldn't s t ll ve re m d""".split()
)

#: Words of a request ("please tell me what I need") and of a note's framing ("The user wants ..."):
#: no topic, so recall ranking drops them with :data:`STOP_WORDS`. The keyword index does not: a
#: stored sentence's "make", "use" or "know" can be exactly what a question asks about, and BM25
#: already weighs a word found in every note ("user") near zero.
REQUEST_WORDS = frozenset("please thanks thank let lets let's tell know want need make use user user's".split())

_LETTERS = r"[^\W_]+"


def normalize(text: str) -> str:
    """``text`` NFKC-normalised, with typographic apostrophes as ``'``, lower-cased."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text).replace("\u2019", "'").replace("\u2018", "'")
    return text.lower()


@functools.lru_cache(maxsize=16)
def _word_re(joiners: str) -> re.Pattern[str]:
    if not joiners:
        return re.compile(_LETTERS)
    return re.compile(rf"{_LETTERS}(?:[{re.escape(joiners)}]{_LETTERS})*")


def split_words(text: str, joiners: str = JOINERS) -> list[str]:
    """The words of ``text``, normalised (:func:`normalize`), in order, repeats kept.

    ``joiners``: the characters that keep two runs of letters and digits one word
    (default apostrophe, hyphen, underscore; see the module docstring)."""
    return _word_re(joiners).findall(normalize(text))


def content_words(text: str, stop: frozenset[str] = STOP_WORDS, joiners: str = JOINERS) -> list[str]:
    """The :func:`split_words` of ``text`` that are not in ``stop`` and have 2+ characters or are a
    number, in order, repeats kept."""
    return [w for w in split_words(text, joiners) if w not in stop and (len(w) > 1 or w.isdigit())]


def search_terms(text: str, max_terms: int = 32, *, joiners: str = "_") -> list[str]:
    """The words a keyword index (SQLite FTS5, PostgreSQL full text) is asked for, unique, in order.

    A stop word is dropped whole (``won't``, so that "won" the verb stays searchable); the
    others are split at the apostrophes and hyphens the index splits at (``co-founder`` gives
    ``co``, ``founder``; ``Caroline's`` gives ``caroline``), keeping the ``joiners`` given
    (``_``: ``snake_case`` stays one FTS5 phrase); parts that are stop words or single letters go."""
    splitters = "".join(c for c in JOINERS if c not in joiners)
    split = re.compile(f"[{re.escape(splitters)}]") if splitters else None
    out: dict[str, None] = {}
    for word in split_words(text, JOINERS):
        if word in STOP_WORDS:
            continue
        for part in split.split(word) if split else (word,):
            if part and part not in STOP_WORDS and (len(part) > 1 or part.isdigit()):
                out[part] = None
    return list(out)[:max_terms]
