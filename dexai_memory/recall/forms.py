"""Compression levels of a memory: full, summary, compressed, index.

Every durable memory (and every episode) can be shown at four levels, richest
first:

===========  ==============================================================
level        what it is
===========  ==============================================================
full         the memory's own ``content``
summary      its first sentence, at most :data:`SUMMARY_TOKENS` tokens
compressed   its key terms, telegraphic: stop and filler words dropped, at
             most :data:`COMPRESSED_WORDS` words ("team chose PostgreSQL JSON
             support"); a procedure's purpose and steps as a chain ("release:
             bump version pyproject.toml -> tag commit -> push tag")
index        a few-word topic key the ``recall`` tool can expand
             ("postgresql json support"), at most :data:`INDEX_WORDS` words,
             separated by spaces so that a search for the key matches each
             word (``a_b`` would be one search term)
===========  ==============================================================

The three short forms are stored in ``memory.metadata["forms"]`` as
``{"summary": str, "compressed": str, "index": str}``; consolidation writes
them (:func:`dexai_memory.consolidation.store_forms`): written by the model
when one is configured (:mod:`dexai_memory.extraction.form_writer`, answers
checked by :func:`checked_forms`), else, and for every answer that fails the
check, with the offline rules of :func:`build_forms` (deterministic, no model
call). ``metadata["forms_by"]`` says which (``"model"`` or ``"rules"``): forms
the rules built are rebuilt by the model at a later consolidation that has one
(:func:`wants_model_forms`), unless the model was already asked about that very
content and gave nothing usable (``metadata["forms_asked"]`` = its
:func:`content_key`). Whoever writes a
memory may also write its forms (episodes do); forms written without
``metadata["forms_of"]`` are kept as they are. Forms built here carry
``metadata["forms_of"]`` = :func:`content_key` of the content they were
built from, so an edited memory gets new forms at the next consolidation and
is never shown stale forms meanwhile (:func:`forms_of` rebuilds them on the
fly, as it does for memories without forms).

Each level is never longer (in tokens) than the one above it: a short
memory's summary is its content, and so on.

Stdlib-only (models, tokens, ranking's word lists).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..models import Memory
from ..text.tokens import count_tokens, truncate_to_tokens
from ..text.words import REQUEST_WORDS, STOP_WORDS, normalize

#: The levels, richest first.
LEVELS = ("full", "summary", "compressed", "index")
#: The metadata key of the stored forms, and of the content key they were built from.
FORMS_KEY = "forms"
FORMS_OF_KEY = "forms_of"
#: Most tokens of a summary.
SUMMARY_TOKENS = 40
#: What ends a cut summary (ASCII: the block's normalisation would turn "…" into "..." anyway).
ELLIPSIS = "..."
#: Most words of a compressed form.
COMPRESSED_WORDS = 12
#: Most words of an index key.
INDEX_WORDS = 3
#: Most words of an index key the model writes (it is asked for 2-4).
MODEL_INDEX_WORDS = 4
#: The metadata key saying who wrote the stored forms, and its values.
FORMS_BY_KEY = "forms_by"
BY_MODEL = "model"
BY_RULES = "rules"
#: The metadata key of the content key the model was asked about and gave no usable forms for.
FORMS_ASKED_KEY = "forms_asked"

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
#: The tokens a form is written from, spelled as in the text: words (Unicode letters and digits, with
#: the inner apostrophes, paths, dots and symbols of ``don't``, ``src/app.py``, ``v1.2``, ``a@b.io``) and
#: arrows. Which of them are stop words is decided on their :func:`~dexai_memory.text.words.normalize`
#: form against the one stop list.
_TOKEN = re.compile(r"[^\W_][\w'’./:#@+-]*[^\W_]|[^\W_]|[→<>=]+")
#: The recall stop words (:mod:`dexai_memory.recall.ranking`'s).
_STOP = STOP_WORDS | REQUEST_WORDS
#: Words a telegraphic form does without, on top of the recall stop words.
_FILLER = frozenset(
    """decided decide decision chose choose chosen using uses used use going go prefer prefers preferred
    always never should must will would could might may think thinks thought said says say told
    mentioned noted note important currently actually basically really instead""".split()
) - {"never", "always", "instead"}
#: Words kept in the compressed form although they are stop words: they carry the meaning.
_KEEP = frozenset({"not", "no", "never", "always", "instead", "over", "before", "after", "without"})
#: Words an index key skips (they say nothing about the topic).
_INDEX_SKIP = _FILLER | frozenset({"never", "always", "not", "no", "instead", "over", "before", "after",
                                   "without", "team", "project", "user", "we"})


def content_key(content: str) -> str:
    """A short hash of ``content``: which text stored forms were built from."""
    return hashlib.sha1(content.encode("utf-8")).hexdigest()[:12]


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (all of it when it has one)."""
    text = " ".join(text.split())
    parts = _SENTENCE_END.split(text, maxsplit=1)
    return parts[0].strip()


def _words(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _is_key(word: str, first: bool = False) -> bool:
    """An identifier, a path, a name, a number: the words a topic is about (a capital that
    starts the text is no sign of a name)."""
    return (any(c in word for c in "_./:#@") or any(c.isdigit() for c in word)
            or (word[:1].isupper() and not first) or any(c.isupper() for c in word[1:]))


def compress(text: str, max_words: int = COMPRESSED_WORDS) -> str:
    """``text`` telegraphic: its content words in order (stop and filler words dropped, each word
    once, negations and "over"/"instead" kept), at most ``max_words``."""
    out: list[str] = []
    seen: set[str] = set()
    for word in _words(text):
        low = normalize(word)
        if low in seen:
            continue
        if low not in _KEEP and (low in _STOP or low in _FILLER or (len(low) < 2 and not low.isdigit())):
            continue
        seen.add(low)
        out.append(word)
    if not out:
        return first_sentence(text)
    while out and out[-1].lower() in _KEEP:
        out.pop()
    return " ".join(out[:max_words]) if out else first_sentence(text)


def index_key(text: str, max_words: int = INDEX_WORDS) -> str:
    """A topic key of a few words from ``text``: identifiers and names first, then the longest
    content words, in text order, lower-cased and joined by spaces ("postgresql json support")."""
    candidates: list[tuple[int, str]] = []
    seen: set[str] = set()
    for pos, word in enumerate(_words(text)):
        low = normalize(word).strip("./:#@+-")
        if not low or low in seen or low in _STOP or low in _INDEX_SKIP or len(low) < 2:
            continue
        seen.add(low)
        candidates.append((pos, word))
    if not candidates:
        return " ".join(w.lower() for w in _words(text)[:max_words]) or "memory"
    keyed = [c for c in candidates if _is_key(c[1], c[0] == 0)]
    rest = sorted((c for c in candidates if not _is_key(c[1], c[0] == 0)), key=lambda c: (-len(c[1]), c[0]))
    chosen = sorted((keyed + rest)[:max_words])
    parts = []
    for _, word in chosen:
        low = normalize(word).strip("./:#@+-")
        low = low.rsplit("/", 1)[-1]  # a path: its file name
        parts.append(re.sub(r"[^\w.-]+", "_", low)[:24].strip("_"))  # names keep their hyphens
    return " ".join(p for p in parts if p) or "memory"


#: A procedure's shape ("To release: a, then b, then c.", "Deploy process: ...", "Routine (...): ..."):
#: its compressed form is the purpose and the steps as a chain ("release: bump version -> tag -> push tag").
_RECIPE = re.compile(r"^(?:To (?P<goal>[^:]{2,60})|(?P<process>[^:]{2,40}) process|Routine \([^)]*\)): "
                     r"(?P<steps>.+?, then .+?)\.?$")
#: Most words of each step in a procedure's compressed chain.
STEP_WORDS = 3


def recipe_chain(content: str) -> str | None:
    """A procedure's compressed form: its purpose and each step in a few words, joined by "->"
    (None when ``content`` is not shaped as one)."""
    m = _RECIPE.match(content)
    if m is None:
        return None
    steps = [compress(s, STEP_WORDS) for s in m.group("steps").split(", then ")]
    goal = compress(m.group("goal") or m.group("process") or "routine", STEP_WORDS)
    return f"{goal}: " + " -> ".join(s for s in steps if s)


def build_forms(content: str) -> dict[str, str]:
    """The offline forms of ``content``: ``{"summary", "compressed", "index"}`` (see the module
    docstring). Deterministic; each form no longer in tokens than the level above it."""
    content = " ".join(content.split())
    summary = (truncate_to_tokens(first_sentence(content), SUMMARY_TOKENS, ELLIPSIS)
               or truncate_to_tokens(content, SUMMARY_TOKENS, ELLIPSIS))
    if count_tokens(summary) >= count_tokens(content):
        summary = content
    compressed = recipe_chain(content) or compress(summary)
    if count_tokens(compressed) > count_tokens(summary):
        compressed = summary
    index = index_key(compressed)
    if count_tokens(index) > count_tokens(compressed):
        index = compressed
    return {"summary": summary, "compressed": compressed, "index": index}


def valid_forms(value: Any) -> dict[str, str] | None:
    """``value`` as forms when it has the stored shape (three non-empty strings), else None."""
    if not isinstance(value, Mapping):
        return None
    out = {}
    for level in LEVELS[1:]:
        text = value.get(level)
        if not isinstance(text, str) or not text.strip():
            return None
        out[level] = " ".join(text.split())
    return out


def stored_forms(m: Memory) -> dict[str, str] | None:
    """The forms stored on ``m`` when they are current: well formed, and built from its present
    content (or written by another part without a content key, like an episode's). Else None."""
    meta = m.metadata or {}
    forms = valid_forms(meta.get(FORMS_KEY))
    if forms is None:
        return None
    built_from = meta.get(FORMS_OF_KEY)
    if built_from is not None and built_from != content_key(m.content):
        return None
    return forms


def needs_forms(m: Memory) -> bool:
    """Whether consolidation should (re)build ``m``'s forms: none stored, or stale."""
    return stored_forms(m) is None


@dataclass(frozen=True, slots=True)
class Forms:
    """A memory's four levels, richest first, with their token counts."""

    full: str
    summary: str
    compressed: str
    index: str
    #: True when they came from the memory's metadata, False when built on the fly.
    stored: bool = False

    def text(self, level: str) -> str:
        """The text at ``level`` (one of :data:`LEVELS`)."""
        value: str = getattr(self, level)
        return value

    def as_metadata(self) -> dict[str, str]:
        """The stored shape: ``{"summary", "compressed", "index"}``."""
        return {"summary": self.summary, "compressed": self.compressed, "index": self.index}


def forms_of(m: Memory) -> Forms:
    """``m`` at every level: the stored forms when current, else built now (:func:`build_forms`)."""
    stored = stored_forms(m)
    forms = stored if stored is not None else build_forms(m.content)
    return Forms(m.content, forms["summary"], forms["compressed"], forms["index"], stored is not None)


def wants_model_forms(m: Memory) -> bool:
    """Whether a model should (re)write ``m``'s forms: none stored or stale, or current ones the
    rules built (forms another part wrote without a content key are kept), unless the model was
    asked about this content already and gave nothing usable."""
    meta = m.metadata or {}
    key = content_key(m.content)
    if meta.get(FORMS_ASKED_KEY) == key:
        return stored_forms(m) is None
    if stored_forms(m) is None:
        return True
    return meta.get(FORMS_OF_KEY) is not None and meta.get(FORMS_BY_KEY) != BY_MODEL


def _index_word(word: str) -> str:
    low = normalize(word).strip("./:#@+-,;\"'()[]")
    low = low.rsplit("/", 1)[-1]
    return re.sub(r"[^\w.-]+", "_", low)[:24].strip("_")


def checked_forms(content: str, value: Any) -> dict[str, str] | None:
    """``value`` (forms a model wrote for ``content``) when usable, else None: three non-empty
    strings, the summary at most :data:`SUMMARY_TOKENS` tokens and no longer than ``content``,
    the compressed form at most :data:`COMPRESSED_WORDS` words and no longer than the summary,
    the index key 1 to :data:`MODEL_INDEX_WORDS` words (lower-cased, spaced like
    :func:`index_key`'s) and no longer than the compressed form."""
    forms = valid_forms(value)
    if forms is None:
        return None
    index = " ".join(w for w in (_index_word(w) for w in forms["index"].split()) if w)
    summary, compressed = forms["summary"], forms["compressed"]
    n_summary, n_compressed = count_tokens(summary), count_tokens(compressed)
    if (not index or len(index.split()) > MODEL_INDEX_WORDS or len(compressed.split()) > COMPRESSED_WORDS
            or n_summary > min(SUMMARY_TOKENS, count_tokens(" ".join(content.split())))
            or n_compressed > n_summary or count_tokens(index) > n_compressed):
        return None
    return {"summary": summary, "compressed": compressed, "index": index}


def forms_metadata(m: Memory, forms: Mapping[str, str] | None = None, *, by: str = BY_RULES,
                   asked: bool = False) -> dict[str, Any]:
    """``m``'s metadata with ``forms`` (default: freshly built offline ones), their content key,
    who wrote them (``by``) and, when ``asked`` and the rules wrote them, the note that the model
    was asked about this content (what consolidation writes)."""
    meta = {k: v for k, v in (m.metadata or {}).items() if k != FORMS_ASKED_KEY}
    key = content_key(m.content)
    meta.update({FORMS_KEY: dict(forms) if forms is not None else build_forms(m.content), FORMS_OF_KEY: key,
                 FORMS_BY_KEY: by})
    if asked and by != BY_MODEL:
        meta[FORMS_ASKED_KEY] = key
    return meta
