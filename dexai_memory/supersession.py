"""Classifying a new note against existing memories: ADD / UPDATE / SUPERSEDE / NOOP.

:class:`OfflineClassifier` is deterministic and needs no model:

* near-duplicate (content words nearly the same) -> NOOP;
* the new note contains the old one and adds to it -> UPDATE (merged content);
* same subject and attribute, different value ("X prefers A" vs "X prefers B",
  "X lives in A" vs "X lives in B") -> SUPERSEDE;
* anything else -> ADD.

The Haiku classifier (used when an API key is set) lives in
:mod:`dexai_memory.extraction` and implements the same
:class:`~dexai_memory.providers.base.UpdateClassifier` interface.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .models import Memory, UpdateAction, UpdateDecision
from .providers.base import UpdateClassifier

_WORD = re.compile(r"[a-z0-9']+")
_FILLER = frozenset("a an the is are was were be been am to of in on at for and or but now also still really very "
                    "just that this it its".split())
#: Verbs/relations that name an attribute with one current value.
_ATTRIBUTES = (
    r"prefers?", r"likes?", r"loves?", r"hates?", r"dislikes?", r"lives? in", r"moved to", r"works? (?:at|for|as)",
    r"is (?:married to|dating|engaged to)", r"(?:favou?rite \w+) is", r"uses?", r"drives?", r"is (?:a|an)",
    r"studies", r"is studying", r"wants? to", r"plans? to", r"is called", r"named",
)
_ATTR_RE = re.compile(r"^(?P<subject>.{1,60}?)\s+(?:now\s+|currently\s+|no longer\s+)?(?P<attr>" + "|".join(_ATTRIBUTES)
                      + r")\s+(?P<value>.+?)[.!]?$", re.IGNORECASE)


def content_words(text: str) -> set[str]:
    """Lower-cased words of ``text`` without filler words."""
    return {w for w in _WORD.findall(text.lower()) if w not in _FILLER}


def jaccard(a: set[str], b: set[str]) -> float:
    """Jaccard overlap of two word sets (0 when both are empty)."""
    return len(a & b) / len(a | b) if a or b else 0.0


def subject_attribute(text: str) -> tuple[str, str, str] | None:
    """(subject, attribute, value) of a simple attribute statement, lower-cased, or None."""
    m = _ATTR_RE.match(text.strip())
    if not m:
        return None
    attr = re.sub(r"s\b", "", m.group("attr").lower().split()[0])
    return m.group("subject").lower().strip(), attr, m.group("value").lower().strip()


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
        if new_sa and old_sa and new_sa[0] == old_sa[0] and new_sa[1] == old_sa[1] and new_sa[2] != old_sa[2]:
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
