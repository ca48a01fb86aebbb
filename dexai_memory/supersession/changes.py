"""Change detection: when a new statement says an older one no longer holds.

The offline classifier (:mod:`.rules`) asks this module three questions about
a new statement and one stored memory. Words are compared as light stems
(:func:`stem`: "takes", "taking" and "take" are one word) of the statement's
content words (:func:`~.statements.statement_words`: the one tokenizer of
:mod:`dexai_memory.text.words`, so "Café Zürich" stays ``café``, ``zürich``).

:func:`named_change`: the new statement names what it replaces
    * "from X to Y" after a verb of change ("switched / moved / migrated /
      changed / upgraded / renamed ... from PostgreSQL to MySQL");
    * "replaced X with Y", "swapped X for Y", "renamed X to Y" (a rename replaces X in
      any statement that names it as written, whatever its subject: "the main branch is
      develop" after "we renamed develop to trunk");
    * "Y instead of X";
    * "Y took over (Z) from X" (X held it before);
    * a correction "Y, not X" ("I live in Berlin, not Munich");
    * an ending: "no longer X", "quit / stopped / gave up / sold / left /
      dropped / broke up with X", "not X anymore".

    The memory is replaced when it names X (at least half of X's words, one
    of them at least) and does not already say Y.

:func:`reversed_order`: the same words in another order around a comparison
    ("prefers spaces over tabs" after "prefers tabs over spaces").

:func:`frame_change`: the same frame with another value. Both statements
    start with the same subject and share at least two other words (the
    frame: "the user's manager is", "the staging server is"); each has words
    the other does not (the values). With a marker of change in the new
    statement ("now", "new", "these days", "anymore", "actually", "I
    misspoke", or a verb of change: "switched", "upgraded", "promoted",
    "rewrote"...) it is a change; without one, and when one word on one side
    stands for one or two on the other, it may be a change or a second value: the answer is
    "unsure" and the caller records an open contradiction for review, both
    kept.

What these rules do not do: resolve "he", "she", "it" or "there" to what they
name; see that "cycle" and "bike", or "job" and "works at", mean the same;
read a change spread over two sentences; know that a city and a country are
one place. A statement with "also", "too", "as well", "another" or
"additionally" adds a value and never replaces one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set
from dataclasses import dataclass

from ..text.words import split_words
from .statements import comparable, statement_words
from .statements import fold as _fold


def stem(word: str) -> str:
    """A light stem: "takes", "taking", "take" -> "tak"; "cycles" -> "cycl"; short words unchanged."""
    for suffix in ("ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


#: Words that mark the new statement as a change of what was true before.
_MARKER_WORDS = (
    "now nowadays anymore currently new newly actually misspoke misspeak mistake correction correct sorry instead "
    "longer")
#: Verbs of change: a statement with one of them reports a change.
_CHANGE_VERB_WORDS = (
    "switch switched moved mov migrat migrated chang changed replac replaced renam renamed upgrad upgraded downgrad "
    "relocat relocated promot promoted rewrot rewrote rewritten started start join joined took quit stopp stopped "
    "sold gave given broke left transferr transferred convert converted swapp swapped dropp dropped ditch ditched "
    "became")
#: Words that add a value next to the old one ("I also love swimming").
ADDITIVE = frozenset("also too another additionally".split())
#: Possessive and personal pronouns of the third person: the same subject whoever's words they are.
_PRONOUNS = frozenset("your their his her its they them he she".split())
#: First-person words read as the extractor writes them ("I use Emacs" added by hand is "the user uses Emacs").
_FIRST_PERSON = {"i": "user", "me": "user", "my": "user", "mine": "user", "myself": "user", "i'm": "user",
                 "i've": "user", "we": "team", "us": "team", "our": "team", "ours": "team", "we're": "team"}
#: Words naming someone by their relation to the subject: "the user's sister" is not "the user".
_RELATIONS = frozenset(stem(w) for w in (
    "sister brother wife husband partner mom mum mother dad father parents parent son daughter kids kid child children "
    "friend colleague coworker boss cousin aunt uncle grandma grandpa grandmother grandfather neighbour neighbor "
    "roommate girlfriend boyfriend fiance fiancee family").split())
#: Words too general to identify what a value names ("uses Slack": "slack" identifies, "use" does not).
_GENERIC = frozenset("use us using user team thing stuff one".split())

#: The stems (:func:`stem`) of the words above.
CHANGE_MARKERS = frozenset(stem(w) for w in _MARKER_WORDS.split())
CHANGE_VERBS = frozenset(stem(w) for w in _CHANGE_VERB_WORDS.split())

_STOP = r"(?=\s*(?:[,;.!?]|\band\b|\bbut\b|\bso\b|\bnow\b|\bthese days\b|\banymore\b|\bany more\b|$))"
_CHANGE_PATTERNS = (
    re.compile(r"\b(?:switch(?:ed)?|mov(?:ed|e)|migrat(?:ed|e)|chang(?:ed|e)|went|upgrad(?:ed|e)|transferr?(?:ed)?|"
               r"convert(?:ed)?|renamed?|shift(?:ed)?|port(?:ed)?|relocat(?:ed|e)|downgrad(?:ed|e))\b[^,;.]*?"
               r"\bfrom\s+(?P<old>[^,;]+?)\s+(?:to|into|for)\s+(?P<new>[^,;]+?)" + _STOP, re.I),
    re.compile(r"\b(?:replac(?:ed|e|ing)|swapp?(?:ed)?|exchang(?:ed|e))\s+(?P<old>[^,;]+?)\s+(?:with|for|by)\s+"
               r"(?P<new>[^,;]+?)" + _STOP, re.I),
    re.compile(r"\brenamed?\s+(?P<old>[^,;]+?)\s+(?:to|as|into)\s+(?P<new>[^,;]+?)" + _STOP, re.I),
    re.compile(r"(?P<new>[^,;]+?)\s+instead\s+of\s+(?P<old>[^,;]+?)" + _STOP, re.I),
    re.compile(r"^(?P<new>.+?)\s+(?:has\s+|have\s+)?(?:took|taken|takes|take)\s+over\b[^,;]*?\bfrom\s+"
               r"(?P<old>[^,;]+?)(?=\s*(?:[,;.!?]|\bas\b|$))", re.I),
    re.compile(r"^(?P<new>[^,;]+?),\s*(?:and\s+)?not\s+(?:in\s+|at\s+|on\s+|with\s+|for\s+)?(?P<old>[^,;]+?)"
               + _STOP, re.I),
    re.compile(r"\b(?:no\s+longer|stopped|quit|quits|quitting|gave\s+up|given\s+up|giving\s+up|sold|left|ditched|"
               r"dropped|broke\s+up\s+with|got\s+rid\s+of)\s+(?:using\s+|drinking\s+|eating\s+|playing\s+|"
               r"working\s+(?:at|for|on)\s+|to\s+)?(?P<old>[^,;]+?)" + _STOP, re.I),
    re.compile(r"\b(?:is|are|am)\s+not\s+(?P<old>[^,;]+?)\s+(?:anymore|any\s+more)\b", re.I),
)
_COMPARISON = re.compile(r"\b(?:over|than|rather|instead|before|to|versus|vs)\b", re.I)
_UPGRADES = re.compile(r"\b(?:upgraded|updated|bumped|moved|migrated)\b[^,;]*\bto\b", re.I)


def stems(text: str) -> set[str]:
    """The stems of ``text``'s statement words, third-person pronouns left out, "I" and "my" read as
    "user", "we" and "our" as "team"."""
    return {stem(_FIRST_PERSON.get(w, w)) for w in statement_words(text) if w not in _PRONOUNS}


def _ordered(text: str) -> list[str]:
    """The stems of every word of ``text``, in order (possessives folded, pronouns left out)."""
    words = (_FIRST_PERSON.get(w, w) for w in split_words(comparable(text), "'"))
    return [stem(_fold(w)) for w in words if w not in _PRONOUNS]


def _key(value: str) -> set[str]:
    return {w for w in stems(value) if w not in _GENERIC and w not in CHANGE_MARKERS}


@dataclass(frozen=True, slots=True)
class Change:
    """A change the new statement names: the value it replaces, and the new one (may be empty)."""

    old: str
    new: str
    #: "renamed X to Y": every statement naming X now names Y, whatever its subject.
    renamed: bool = False


def changes_named(text: str) -> list[Change]:
    """Every "X to Y" change ``text`` names (see :func:`named_change`), in the order of the patterns."""
    plain = comparable(text)
    found = []
    for pattern in _CHANGE_PATTERNS:
        for m in pattern.finditer(plain):
            groups = m.groupdict()
            old = (groups.get("old") or "").strip()
            if old:
                found.append(Change(old, (groups.get("new") or "").strip(),
                                    renamed=re.match(r"renam", m.group(0).lstrip(), re.I) is not None))
    return found


def names_value(memory: str, value: str) -> bool:
    """Whether ``memory`` names ``value``: at least half of its identifying words, one at least."""
    wanted = _key(value)
    if not wanted:
        return False
    have = stems(memory)
    shared = wanted & have
    return bool(shared) and 2 * len(shared) >= len(wanted)


def _same_subject(new_order: Sequence[str], old_order: Sequence[str], old_value: Set[str]) -> bool:
    """Whether two statements speak of one subject: the same first word and the same relations
    ("the user's sister" is not "the user"), or the old statement's subject is named in the new one
    (its old value: "Priya owns ..." and "... took over from Priya"; or elsewhere: "the team rewrote
    the mobile app")."""
    if set(new_order) & _RELATIONS != set(old_order) & _RELATIONS:
        return False
    subject = _subject(old_order)
    return subject == _subject(new_order) or subject in old_value or subject in new_order


def named_change(new_fact: str, memory: str) -> Change | None:
    """The change of ``new_fact`` that replaces ``memory`` (it names the old value, not the new one), or None."""
    new_order, old_order = _ordered(new_fact), _ordered(memory)
    for change in changes_named(new_fact):
        if not names_value(memory, change.old):
            continue
        if not _same_subject(new_order, old_order, _key(change.old)) and not (
                change.renamed and re.search(rf"(?<![\w-])(?<!\bto ){re.escape(change.old)}(?![\w-])", memory)):
            continue  # another subject's; a renamed name is replaced wherever it stands, as written, not as a verb
        if change.new and _key(change.new) and _key(change.new) <= stems(memory):
            continue  # the memory already says the new value
        if _key(change.old) <= _key(change.new):
            continue
        return change
    return None


def reversed_order(new_fact: str, memory: str) -> bool:
    """Whether ``new_fact`` has ``memory``'s words in another order around a comparison
    ("prefers spaces over tabs" after "prefers tabs over spaces")."""
    if not _COMPARISON.search(comparable(new_fact)):
        return False
    new, old = _ordered(new_fact), _ordered(memory)
    new = [w for w in new if w not in CHANGE_MARKERS]
    old = [w for w in old if w not in CHANGE_MARKERS]
    content = [w for w in new if w in stems(new_fact)]
    before = [w for w in old if w in stems(memory)]
    return sorted(content) == sorted(before) and content != before


def additive(text: str) -> bool:
    """Whether ``text`` adds a value ("also", "too", "as well", "another", "additionally")."""
    words = set(split_words(comparable(text), "'"))
    return bool(words & ADDITIVE) or re.search(r"\bas well\b", comparable(text), re.I) is not None


def _subject(words: Sequence[str]) -> str | None:
    skip = {"the", "a", "an", "actually", "sorry", "so", "well", "ok", "now", "misspoke"}
    return next((w for w in words if w not in skip), None)


@dataclass(frozen=True, slots=True)
class FrameChange:
    """Two statements of one frame with different values: ``sure`` when the new one marks a change."""

    sure: bool
    frame: Set[str]
    old: Set[str]
    new: Set[str]


def frame_change(new_fact: str, memory: str) -> FrameChange | None:
    """The frame rule of the module docstring, or None when the two statements are not one frame."""
    if additive(new_fact):
        return None
    new_order, old_order = _ordered(new_fact), _ordered(memory)
    if not _same_subject(new_order, old_order, frozenset()):
        return None
    same_subject = _subject(new_order) == _subject(old_order)
    raw_new = set(new_order)
    marked = bool(raw_new & CHANGE_MARKERS) or bool(raw_new & CHANGE_VERBS) or bool(_UPGRADES.search(new_fact))
    new_words = stems(new_fact) - CHANGE_MARKERS
    old_words = stems(memory) - CHANGE_MARKERS
    frame = (new_words & old_words) - CHANGE_VERBS
    added = new_words - old_words - CHANGE_VERBS
    removed = old_words - new_words
    # besides the subject, the frame holds at least half of the shorter statement's other words
    others = min(len(new_words), len(old_words)) - 1
    if len(frame) < 2 or len(frame - {_subject(new_order)}) < max(1, others // 2) or not added or not removed:
        return None
    if marked:
        return FrameChange(True, frame, removed, added)
    # one word for one (or two): another value of the same thing, not another value and another scope
    if same_subject and min(len(added), len(removed)) == 1 and max(len(added), len(removed)) <= 2 \
            and len(frame) >= 2:
        return FrameChange(False, frame, removed, added)
    return None


def marks_change(added: Set[str]) -> bool:
    """Whether words a refinement adds ("sold", "now", "instead") make it a change, not more detail."""
    return bool({stem(w) for w in added} & (CHANGE_MARKERS | CHANGE_VERBS) - {stem("new"), stem("started")})
