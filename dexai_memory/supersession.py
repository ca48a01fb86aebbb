"""Classifying a new note against existing memories: ADD / UPDATE / SUPERSEDE / NOOP.

:class:`OfflineClassifier` is deterministic and needs no model:

* near-duplicate (content words nearly the same) -> NOOP;
* the new note contains the old one and adds to it -> UPDATE (merged content);
* same subject and attribute, different value -> SUPERSEDE, under the
  slot rule below;
* anything else -> ADD.

The slot rule (when a new value replaces the old one)
-----------------------------------------------------
*Single-valued* attributes hold one current value at a time: "lives in",
"moved to", "works at/for/as", "is married to / dating / engaged to",
"favourite X is", "is called", "named", "drives", "studies". A different
value always supersedes ("Caroline lives in Boston" -> "... now lives in
Denver").

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

Pinned memories
---------------
A pinned memory changes only by explicit user action (unpin, forget, edit).
:func:`protect_pinned` turns any SUPERSEDE or UPDATE aimed at a pinned
memory into an ADD, with a reason that says so; the provider applies it to
every classifier's output (offline or Haiku) in
:meth:`~dexai_memory.providers.base.MemoryProvider.classify_update`, and
:meth:`~dexai_memory.providers.base.MemoryProvider.apply_decision` refuses
to overwrite a pinned memory as a last guard. NOOP (a repeat of the pinned
statement) stays NOOP: it only counts a mention.

The Haiku classifier (used when an API key is set) lives in
:mod:`dexai_memory.extraction` and implements the same
:class:`~dexai_memory.providers.base.UpdateClassifier` interface.
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set

from .models import Memory, UpdateAction, UpdateDecision
from .providers.base import UpdateClassifier

_WORD = re.compile(r"[a-z0-9']+")
_FILLER = frozenset("a an the is are was were be been am to of in on at for and or but now also still really very "
                    "just that this it its".split())
#: Verbs/relations that name an attribute of the subject.
_ATTRIBUTES = (
    r"prefers?", r"likes?", r"loves?", r"enjoys?", r"hates?", r"dislikes?", r"lives? in", r"moved to",
    r"works? (?:at|for|as)", r"is (?:married to|dating|engaged to)", r"(?:favou?rite \w+) is", r"uses?", r"drives?",
    r"is (?:a|an)", r"studies", r"is studying", r"wants? to", r"plans? to", r"is called", r"named",
)
#: Attributes (as :func:`subject_attribute` names them) that hold many values at once.
MULTI_VALUED = frozenset({"prefer", "like", "love", "enjoy", "hate", "dislike", "use", "want to", "plan to", "is a"})
#: Words that never make two values "the same slot".
_VALUE_FILLER = _FILLER | frozenset(
    "every each all any some with without by from into onto than rather more less most my our your their his her "
    "over under about as not no so when where which who what whenever instead other one".split())
_ATTR_RE = re.compile(r"^(?P<subject>.{1,60}?)\s+(?:now\s+|currently\s+|no longer\s+)?(?P<attr>" + "|".join(_ATTRIBUTES)
                      + r")\s+(?P<value>.+?)[.!]?$", re.IGNORECASE)


def content_words(text: str) -> set[str]:
    """Lower-cased words of ``text`` without filler words."""
    return {w for w in _WORD.findall(text.lower()) if w not in _FILLER}


def jaccard(a: Set[str], b: Set[str]) -> float:
    """Jaccard overlap of two word sets (0 when both are empty)."""
    return len(a & b) / len(a | b) if a or b else 0.0


def subject_attribute(text: str) -> tuple[str, str, str] | None:
    """(subject, attribute, value) of a simple attribute statement, lower-cased, or None."""
    m = _ATTR_RE.match(text.strip())
    if not m:
        return None
    words = m.group("attr").lower().replace("favorite", "favourite").split()
    if words[0] == "studies":
        words[0] = "study"
    elif words[0] != "is":
        words[0] = re.sub(r"s$", "", words[0])
    attr = " ".join("a" if w == "an" else w for w in words)
    return m.group("subject").lower().strip(), attr, m.group("value").lower().strip()


def value_words(value: str) -> set[str]:
    """Content words of an attribute value (function words and quantifiers removed)."""
    return {w for w in _WORD.findall(value.lower()) if w not in _VALUE_FILLER}


def same_slot(attribute: str, old_value: str, new_value: str) -> bool:
    """Whether ``new_value`` replaces ``old_value`` for ``attribute`` (the slot rule of the module docstring)."""
    if old_value == new_value:
        return False
    if attribute not in MULTI_VALUED:
        return True
    old_words, new_words = value_words(old_value), value_words(new_value)
    if old_words & new_words:
        return True
    return len(old_words) == 1 and len(new_words) == 1


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
    """Deterministic rules (see the module docstring); thresholds are parameters."""

    def __init__(self, duplicate_threshold: float = 0.8, update_threshold: float = 0.6):
        self.duplicate_threshold = duplicate_threshold
        self.update_threshold = update_threshold

    def decide(self, new_fact: str, memory: Memory) -> UpdateDecision:
        """The decision for one existing memory."""
        new_words, old_words = content_words(new_fact), content_words(memory.content)
        overlap = jaccard(new_words, old_words)
        if overlap >= self.duplicate_threshold:
            return UpdateDecision(UpdateAction.NOOP, memory.id, f"near-duplicate (word overlap {overlap:.2f})")
        new_sa, old_sa = subject_attribute(new_fact), subject_attribute(memory.content)
        if (new_sa and old_sa and new_sa[0] == old_sa[0] and new_sa[1] == old_sa[1]
                and same_slot(new_sa[1], old_sa[2], new_sa[2])):
            return UpdateDecision(UpdateAction.SUPERSEDE, memory.id,
                                  f"same subject and attribute ({new_sa[0]} {new_sa[1]}), new value "
                                  f"{new_sa[2]!r} replaces {old_sa[2]!r}")
        if old_words and old_words <= new_words and len(new_words) > len(old_words):
            return UpdateDecision(UpdateAction.UPDATE, memory.id, "refines the existing memory with more detail",
                                  merged_content=new_fact)
        if old_words and overlap >= self.update_threshold:
            return UpdateDecision(UpdateAction.UPDATE, memory.id, f"mostly the same statement (overlap {overlap:.2f})",
                                  merged_content=new_fact)
        return UpdateDecision(UpdateAction.ADD, None, "no existing memory says this")

    async def classify(self, new_fact: str, existing: Sequence[Memory]) -> list[UpdateDecision]:
        if not existing:
            return [UpdateDecision(UpdateAction.ADD, None, "nothing similar stored")]
        return [self.decide(new_fact, m) for m in existing]


def resolve(decisions: Sequence[UpdateDecision]) -> UpdateDecision:
    """The one action to carry out for a note: NOOP beats SUPERSEDE beats UPDATE beats ADD."""
    order = {UpdateAction.NOOP: 0, UpdateAction.SUPERSEDE: 1, UpdateAction.UPDATE: 2, UpdateAction.ADD: 3}
    if not decisions:
        return UpdateDecision(UpdateAction.ADD, None, "nothing similar stored")
    return min(decisions, key=lambda d: order[d.action])
