"""Classifying a new note against existing memories: ADD / UPDATE / SUPERSEDE / NOOP.

:class:`OfflineClassifier` is deterministic and needs no model. It compares
the *normalised content words* of the two statements (:func:`statement_words`:
filler and reporting words such as "said" removed, possessives and plurals
folded) and never lets one fact swallow another:

* the same words (a rewording) -> NOOP; the new note says nothing the memory
  does not (its words are a subset, same names in the same order) -> NOOP;
* same subject and attribute, different value -> SUPERSEDE, under the slot
  rule below; an explicit change ("moved from Lisbon to Porto", "the dentist
  appointment moved to Friday") -> SUPERSEDE (the change rules below); a
  procedure for the same purpose with other steps ("To release: ..." twice)
  -> SUPERSEDE (one procedure per purpose);
* the new note contains every word of the old one and adds to it -> UPDATE
  (merged content), unless what it adds negates it ("no longer") -> SUPERSEDE;
* anything else -> ADD. In particular two statements of the same shape about
  a different person, place, object, number or date ("call Ana about the
  Tartu trip" / "call Victor about the Trieste trip") are two facts: the new
  one is added next to the old one, never merged into it.

No loss (the meaning guard)
---------------------------
UPDATE rewrites a memory in place and NOOP drops the new note, so both lose
text when the two statements differ in meaning. :func:`guard_meaning` is
applied to every classifier's output (offline or Haiku) by
:func:`dexai_memory.supersession.decide.decide`, and again by
:func:`dexai_memory.supersession.decide.apply` as a last guard:

* a NOOP whose new note names something the memory does not (a name,
  number, date: :func:`key_tokens`) becomes an ADD;
* an UPDATE whose merged content drops a name, number or date of the old
  memory becomes a SUPERSEDE, which keeps the old memory in history
  (``dexai memory history``, as-of queries) instead of overwriting it.

The slot rule (when a new value replaces the old one)
-----------------------------------------------------
*Single-valued* attributes hold one current value at a time: "lives in"
(and "moved / relocated (from X) to", the same slot), "works at/for/as", "is married to / dating / engaged to",
"favourite X is", "is called", "named", "drives", "studies". A different
value always supersedes ("Caroline lives in Boston" -> "... now lives in
Denver"); the same value with less detail ("a dog named Max from the
shelter" -> "a dog named Max") does not.

*Multi-valued* attributes accumulate: "prefers", "likes", "loves", "enjoys",
"hates", "dislikes", "uses", "wants to", "plans to", "is a". A person prefers
many things at once ("the Vellichor theme in screenshots" and "squash merges
in commit titles" are two preferences, not one changing), so a new value
supersedes only when it fills *the same slot*:

* the two values share a content word (beyond function words and
  quantifiers such as "every", "with", "than"): "prefers tea in the
  morning" -> "prefers coffee in the morning" share "morning";
* or both values are *bare*: one content word each, with no qualifier
  ("Sam prefers tea" -> "Sam prefers coffee", "tabs" -> "spaces"). A bare
  value states the subject's preference in general, so the newer general
  statement replaces the older one.

Otherwise the new note is ADDed next to the old one.

The change rules
----------------
* "<subject> moved / switched / changed from X to Y" supersedes the
  subject's statement whose current value is X ("lives in Lisbon", "uses
  Vim", an earlier "moved from Boston to Lisbon").
* "<event> was moved / rescheduled / postponed / pushed / brought forward to
  <date or time>" supersedes the one memory that names every word of the
  event and a different date or time ("The user has a dentist appointment on
  26 December 2023"). When several memories match, which one changed is
  unknown: the note is added and nothing is superseded.

Pinned memories
---------------
A pinned memory changes only by explicit user action (unpin, forget, edit).
:func:`protect_pinned` turns any SUPERSEDE or UPDATE aimed at a pinned
memory into an ADD, with a reason that says so; it is applied to every
classifier's output (offline or Haiku) by
:func:`dexai_memory.supersession.decide.decide`, and
:func:`dexai_memory.supersession.apply.apply_decision` refuses
to overwrite a pinned memory as a last guard. NOOP (a repeat of the pinned
statement) stays NOOP: it only counts a mention.

The Haiku classifier (used when an API key is set) lives in
:mod:`dexai_memory.extraction.haiku` and implements the same
:class:`~dexai_memory.supersession.classifier.UpdateClassifier` interface.
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set

from ..models import Memory, UpdateAction, UpdateDecision
from ..text.words import split_words
from . import changes
from .classifier import UpdateClassifier
from .contradictions import Unsure
from .statements import FILLER as _FILLER
from .statements import JOINERS as _JOINERS
from .statements import SOFT as _SOFT
from .statements import comparable, content_words, jaccard, statement_words
from .statements import fold as _fold

__all__ = ["MULTI_VALUED", "OfflineClassifier", "comparable", "content_words", "guard_meaning", "jaccard",
           "key_tokens", "moved_from", "procedure_goal", "protect_pinned", "rescheduled", "resolve", "same_slot", "statement_words",
           "subject_attribute", "value_words"]

#: Verbs/relations that name an attribute of the subject.
_ATTRIBUTES = (
    r"prefers?", r"likes?", r"loves?", r"enjoys?", r"hates?", r"dislikes?", r"lives? in",
    r"(?:moved|relocated)(?: from .{1,40}?)? to",
    r"works? (?:at|for|as)", r"(?:started|got|took|has) (?:a )?(?:new )?job (?:at|with|as)",
    r"is based in", r"is (?:married to|dating|engaged to)", r"(?:favou?rite \w+) is", r"uses?", r"drives?",
    r"is (?:a|an)", r"studies", r"is studying", r"wants? to", r"plans? to", r"is called", r"named",
    r"(?:main |primary |new |current )?(?:goal|objective|aim|target)(?: now| still)? is",
)
#: Words naming a goal: one slot, so a new goal replaces the old one.
_GOAL_WORDS = frozenset({"goal", "objective", "aim", "target"})
#: Attributes (as :func:`subject_attribute` names them) that hold many values at once.
MULTI_VALUED = frozenset({"prefer", "like", "love", "enjoy", "hate", "dislike", "use", "want to", "plan to", "is a"})
#: Words that never make two values "the same slot".
_VALUE_FILLER = _FILLER | frozenset(
    "every each all any some with without by from into onto than rather more less most my our your their his her "
    "over under about as not no so when where which who what whenever instead other one".split())
_ATTR_RE = re.compile(r"^(?P<subject>.{1,60}?)\s+(?:now\s+|currently\s+|no longer\s+)?(?P<attr>" + "|".join(_ATTRIBUTES)
                      + r")\s+(?P<value>.+?)[.!]?$", re.IGNORECASE)

#: Words that turn an added statement into a change of the old one ("no longer lives in ...").
_NEGATIONS = frozenset("not no never longer anymore n't stopped quit former formerly ex isn't aren't wasn't weren't "
                       "doesn't don't didn't won't can't cannot".split())
_MONTHS = frozenset("january february march april may june july august september october november december "
                    "jan feb mar apr jun jul aug sep sept oct nov dec".split())
_WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_RELATIVE_DAYS = frozenset("today tomorrow yesterday tonight weekend".split())
_NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million "
    "billion dozen half twice once first third fourth fifth sixth seventh eighth ninth tenth".split())
#: Capitalised words that start sentences and name nothing.
_NOT_NAMES = _VALUE_FILLER | _SOFT | frozenset(
    "i i'm i've i'll i'd he she they we you me him them us there here if then after before since until while "
    "user user's yes ok okay please".split())
_TOKEN = re.compile(r"\d+(?:[:./-]\d+)*|[^\W\d_][\w'’-]*")

_MOVED_FROM = re.compile(
    r"^(?P<subject>.{1,60}?)\s+(?:has\s+|have\s+|had\s+)?(?:just\s+)?(?:moved|relocated|switched|changed|"
    r"migrated|transferred|went)\s+from\s+(?P<old>.+?)\s+(?:to|for)\s+(?P<new>.+?)[.!]?$", re.IGNORECASE)
_RESCHEDULED = re.compile(
    r"^(?P<event>.{3,120}?)\s+(?:was\s+|were\s+|has\s+been\s+|have\s+been\s+|had\s+been\s+|is\s+|are\s+|got\s+|"
    r"gets\s+|will\s+be\s+)?(?:now\s+)?(?:moved|rescheduled|postponed|pushed(?:\s+back)?|brought\s+forward|"
    r"shifted|delayed|changed|bumped|put\s+off)\s+(?:to|until|till|for)\s+(?P<when>.+?)[.!]?$", re.IGNORECASE)


def key_tokens(text: str) -> list[str]:
    """The names, numbers and dates of ``text``, lower-cased, in order of appearance (repeats dropped).

    Names are capitalised words other than sentence starters such as "The";
    numbers are digits ("11:05", "2024") and number words; dates are month,
    weekday and relative day names.
    """
    out: dict[str, None] = {}
    for m in _TOKEN.finditer(comparable(text)):
        raw = m.group()
        word = _fold(raw.lower().replace("’", "'"))
        if raw[0].isdigit():
            out[raw] = None
        elif word in _MONTHS or word in _WEEKDAYS or word in _RELATIVE_DAYS or word in _NUMBER_WORDS:
            out[word] = None
        elif raw[0].isupper() and word not in _NOT_NAMES and word not in _FILLER and len(word) > 1:
            out[word] = None
    return list(out)


def _date_tokens(tokens: Sequence[str]) -> set[str]:
    return {t for t in tokens if t[0].isdigit() or t in _MONTHS or t in _WEEKDAYS or t in _RELATIVE_DAYS}


def _is_subsequence(short: Sequence[str], long: Sequence[str]) -> bool:
    it = iter(long)
    return all(any(x == y for y in it) for x in short)


def _names(text: str) -> list[str]:
    """The name tokens of :func:`key_tokens` (not numbers or dates), in order."""
    return [t for t in key_tokens(text) if not (_date_tokens([t]) or t in _NUMBER_WORDS)]


def subject_attribute(text: str) -> tuple[str, str, str] | None:
    """(subject, attribute, value) of a simple attribute statement, lower-cased, or None."""
    m = _ATTR_RE.match(comparable(text))
    if not m:
        return None
    words = m.group("attr").lower().replace("favorite", "favourite").split()
    if words[0] in ("moved", "relocated") or words[:2] == ["is", "based"]:  # the same slot as "lives in"
        words = ["live", "in"]
    elif "job" in words:  # "started a new job at": the same slot as "works at"
        words = ["work", words[-1]]
    elif _GOAL_WORDS & set(words):  # "main goal now is", "objective is": one goal slot
        words = ["goal", "is"]
    elif words[0] == "studies":
        words[0] = "study"
    elif words[0] != "is":
        words[0] = re.sub(r"s$", "", words[0])
    attr = " ".join("a" if w == "an" else w for w in words)
    return m.group("subject").lower().strip(), attr, m.group("value").lower().strip()


#: A procedure's shape ("To release: a, then b.", "Release process: a, then b."): one slot per purpose.
_PROCEDURE = re.compile(r"^(?:to (?P<goal>[^:]{2,60})|(?P<process>[^:]{2,40}) process): .+", re.IGNORECASE)


def procedure_goal(text: str) -> str | None:
    """What a procedure is for ("release"), lower-cased, or None when ``text`` is not one."""
    m = _PROCEDURE.match(text.strip())
    return " ".join((m.group("goal") or m.group("process")).lower().split()) if m else None


def value_words(value: str) -> set[str]:
    """Content words of an attribute value (function words and quantifiers removed)."""
    return {w for w in split_words(value, _JOINERS) if w not in _VALUE_FILLER}


def same_slot(attribute: str, old_value: str, new_value: str) -> bool:
    """Whether ``new_value`` replaces ``old_value`` for ``attribute`` (the slot rule of the module docstring)."""
    if old_value == new_value:
        return False
    old_words, new_words = value_words(old_value), value_words(new_value)
    if new_words and new_words <= old_words:  # the same value told with less detail
        return False
    if attribute not in MULTI_VALUED:
        return True
    if old_words & new_words:
        # one slot when only the value changed, not the value and its scope ("uv for Python projects",
        # "pnpm for JavaScript projects" are two)
        return min(len(old_words - new_words), len(new_words - old_words)) <= 1
    return len(old_words) == 1 and len(new_words) == 1


def _current_value(text: str) -> tuple[str, str] | None:
    """(subject, value) of a statement that holds one value: "S lives in X", "S uses X", "S moved from A to X"."""
    moved = _MOVED_FROM.match(comparable(text))
    if moved:
        return moved.group("subject").lower().strip(), moved.group("new").lower().strip()
    found = subject_attribute(text)
    return (found[0], found[2]) if found else None


def moved_from(new_fact: str, old: str) -> bool:
    """Whether ``new_fact`` ("S moved/switched from X to Y") replaces ``old`` (S's value was X)."""
    m = _MOVED_FROM.match(comparable(new_fact))
    current = _current_value(old)
    if not m or current is None or current[0] != m.group("subject").lower().strip():
        return False
    old_value, new_value = value_words(current[1]), value_words(m.group("new"))
    return bool(old_value) and old_value <= value_words(m.group("old")) and not new_value <= old_value


def rescheduled(new_fact: str, old: str) -> bool:
    """Whether ``new_fact`` ("<event> was moved to Friday") moves the event that ``old`` dates.

    ``old`` must name every word of the event and a date or time the new
    note does not; the new date must be a date or time.
    """
    m = _RESCHEDULED.match(comparable(new_fact))
    if not m:
        return False
    new_when = _date_tokens(key_tokens(m.group("when")))
    event = statement_words(m.group("event")) - {"user", "that"}
    if not new_when or not event:
        return False
    old_dates = _date_tokens(key_tokens(old))
    return event <= statement_words(old) and bool(old_dates - new_when)


def _adds_negation(added: Set[str]) -> bool:
    return bool(added & _NEGATIONS) or any(w.endswith("n't") for w in added)


def guard_meaning(decisions: Sequence[UpdateDecision], new_fact: str,
                  existing: Sequence[Memory]) -> list[UpdateDecision]:
    """``decisions`` with every NOOP / UPDATE that would lose a name, number or date made safe.

    A NOOP whose ``new_fact`` names something the memory does not becomes an
    ADD (the new fact is kept); an UPDATE whose merged content drops a name,
    number or date of the memory becomes a SUPERSEDE (the old memory stays
    in history). See "No loss" in the module docstring.
    """
    by_id = {m.id: m for m in existing}
    new_keys = set(key_tokens(new_fact))
    out = []
    for d in decisions:
        old = by_id.get(d.memory_id) if d.memory_id else None
        if old is not None and d.action is UpdateAction.NOOP:
            missing = new_keys - set(key_tokens(old.content))
            if missing:
                d = UpdateDecision(UpdateAction.ADD, None, f"not a repeat of memory {old.id}: the new note names "
                                   f"{', '.join(sorted(missing))}, which it does not ({d.reason})")
        elif old is not None and d.action is UpdateAction.UPDATE:
            merged = d.merged_content or new_fact
            dropped = set(key_tokens(old.content)) - set(key_tokens(merged))
            if dropped:
                d = UpdateDecision(UpdateAction.SUPERSEDE, old.id, f"the update drops {', '.join(sorted(dropped))}: "
                                   f"superseded, the old memory stays in history ({d.reason})",
                                   merged_content=d.merged_content)
        out.append(d)
    return out


def protect_pinned(decisions: Sequence[UpdateDecision], existing: Sequence[Memory]) -> list[UpdateDecision]:
    """``decisions`` with every SUPERSEDE / UPDATE of a pinned memory turned into an ADD (reason kept)."""
    pinned = {m.id for m in existing if m.pinned}
    out = []
    for d in decisions:
        if d.memory_id in pinned and d.action in (UpdateAction.SUPERSEDE, UpdateAction.UPDATE):
            d = UpdateDecision(UpdateAction.ADD, None, f"memory {d.memory_id} is pinned and changes only by explicit "
                               f"user action; stored as new instead of {d.action.value} ({d.reason})")
        out.append(d)
    return out


class OfflineClassifier(UpdateClassifier):
    """Deterministic rules (see the module docstring).

    A note whose words are a subset of a memory's is a NOOP only when their
    overlap (Jaccard) reaches ``update_threshold``. ``duplicate_threshold``
    is no longer used (a near-duplicate with other words is a different
    statement) and is kept so existing callers still construct it.
    """

    def __init__(self, duplicate_threshold: float = 0.8, update_threshold: float = 0.6):
        self.duplicate_threshold = duplicate_threshold
        self.update_threshold = update_threshold

    def decide(self, new_fact: str, memory: Memory) -> UpdateDecision:
        """The decision for one existing memory."""
        new_words, old_words = statement_words(new_fact), statement_words(memory.content)
        added, removed = new_words - old_words, old_words - new_words
        new_names, old_names = _names(new_fact), _names(memory.content)
        if not added and not removed and new_names == old_names:
            if changes.reversed_order(new_fact, memory.content):
                return UpdateDecision(UpdateAction.SUPERSEDE, memory.id, "the same words in the reverse order: "
                                      "the preference or comparison is reversed")
            return UpdateDecision(UpdateAction.NOOP, memory.id, "the same statement")
        named = changes.named_change(new_fact, memory.content)
        if named is not None:
            to = f" with {named.new!r}" if named.new else ""
            return UpdateDecision(UpdateAction.SUPERSEDE, memory.id,
                                  f"an explicit change: {named.old!r} replaced{to}")
        goal = procedure_goal(new_fact)
        if goal is not None and goal == procedure_goal(memory.content):
            return UpdateDecision(UpdateAction.SUPERSEDE, memory.id, f"the same procedure (to {goal}) with "
                                  "other steps: the newer replaces it, kept in history")
        new_sa, old_sa = subject_attribute(new_fact), subject_attribute(memory.content)
        if (new_sa and old_sa and new_sa[0] == old_sa[0] and new_sa[1] == old_sa[1]
                and same_slot(new_sa[1], old_sa[2], new_sa[2]) and not changes.additive(new_fact)):
            return UpdateDecision(UpdateAction.SUPERSEDE, memory.id,
                                  f"same subject and attribute ({new_sa[0]} {new_sa[1]}), new value "
                                  f"{new_sa[2]!r} replaces {old_sa[2]!r}")
        if moved_from(new_fact, memory.content):
            return UpdateDecision(UpdateAction.SUPERSEDE, memory.id, "an explicit change from the old value")
        if rescheduled(new_fact, memory.content):
            return UpdateDecision(UpdateAction.SUPERSEDE, memory.id, "rescheduled: the event has a new date")
        if (not added and jaccard(new_words, old_words) >= self.update_threshold
                and _is_subsequence(new_names, old_names)):
            return UpdateDecision(UpdateAction.NOOP, memory.id, "says nothing the existing memory does not")
        if old_words and not removed and _is_subsequence(old_names, new_names):
            if _adds_negation(added):
                return UpdateDecision(UpdateAction.SUPERSEDE, memory.id,
                                      f"negates the existing memory ({', '.join(sorted(added & _NEGATIONS))})")
            if changes.marks_change(added):
                return UpdateDecision(UpdateAction.SUPERSEDE, memory.id, "says the existing memory changed "
                                      f"({', '.join(sorted(added)[:4])}): superseded, kept in history")
            return UpdateDecision(UpdateAction.UPDATE, memory.id, "refines the existing memory with more detail",
                                  merged_content=new_fact)
        frame = changes.frame_change(new_fact, memory.content)
        if frame is not None:
            said = (f"same frame ({', '.join(sorted(frame.frame)[:4])}), {', '.join(sorted(frame.new)[:3])} "
                    f"instead of {', '.join(sorted(frame.old)[:3])}")
            if frame.sure:
                return UpdateDecision(UpdateAction.SUPERSEDE, memory.id, f"{said}, said as a change")
            return Unsure(UpdateAction.ADD, memory.id, f"{said}: a change or a second value? "
                          "Both kept, contradiction left open for review")
        if added and removed:
            return UpdateDecision(UpdateAction.ADD, None, f"a different statement ({', '.join(sorted(added)[:3])} "
                                  f"instead of {', '.join(sorted(removed)[:3])})")
        return UpdateDecision(UpdateAction.ADD, None, "no existing memory says this")

    async def classify(self, new_fact: str, existing: Sequence[Memory]) -> list[UpdateDecision]:
        return self.classify_now(new_fact, existing)

    def classify_now(self, new_fact: str, existing: Sequence[Memory]) -> list[UpdateDecision]:
        """:meth:`classify` without a coroutine: the rules need no I/O, so work off the event loop
        (the consolidation's contradiction scan, in a thread) calls them directly."""
        if not existing:
            return [UpdateDecision(UpdateAction.ADD, None, "nothing similar stored")]
        decisions = [self.decide(new_fact, m) for m in existing]
        moved = [d for d in decisions if d.reason.startswith("rescheduled")]
        if len(moved) > 1:  # which of several dated events moved is unknown: keep them all
            decisions = [UpdateDecision(UpdateAction.ADD, None, f"rescheduled, but {len(moved)} memories name "
                                        "that event: stored as new") if d in moved else d for d in decisions]
        return decisions


def resolve(decisions: Sequence[UpdateDecision]) -> UpdateDecision:
    """The one action to carry out for a note: NOOP beats SUPERSEDE beats UPDATE beats ADD (a sure
    SUPERSEDE beats one the rules are unsure of, which beats UPDATE)."""
    order = {UpdateAction.NOOP: 0, UpdateAction.SUPERSEDE: 1, UpdateAction.UPDATE: 3, UpdateAction.ADD: 4}
    if not decisions:
        return UpdateDecision(UpdateAction.ADD, None, "nothing similar stored")
    return min(decisions, key=lambda d: order[d.action] + (1 if isinstance(d, Unsure) else 0))
