"""Pattern triggers on user messages: a cheap nudge for the agent to call ``remember``.

When to extract facts, the second trigger: a lightweight regex check on
every user message. When the user corrects the agent, states a preference or
explicitly asks for something to be remembered, the agent's next turn gets a
short reflection hint such as::

    [dexai-memory hint] The user just stated a preference. If it is durable,
    save it with the remember tool (category "preference").

Three kinds, checked in this order (the first that matches wins):

* **explicit** - "remember this/that", "please remember", "keep in mind",
  "don't forget", "important:", "note:", "for future reference", "make a note";
* **correction** - "no, I meant", "no, actually", "that's wrong", "that's not
  what I asked", "actually, ...", "I told you", "stop doing", "don't do that";
* **preference** - "I prefer", "I like/love/hate", "I don't like", "always ..."
  / "never ..." as an instruction or habit, "from now on", "going forward".

Fenced code blocks, inline code and quoted lines (``> ...``) are ignored, so
a pasted log that contains "Note:" does not fire. Only the first
:data:`MAX_SCAN_CHARS` characters are scanned.

This module imports only the standard library: command hooks run it in a
fresh process on every prompt and must stay fast.

Hook usage (UserPromptSubmit)::

    hints = ReflectionHints()                 # one per session
    hint = hints.on_user_prompt(prompt)       # hint for the turn about to run, or None
    if hint:
        additional_context.append(hint)

A command hook (a new process per event) can keep the holder's small state in
a file between events with :meth:`ReflectionHints.to_json` / :meth:`from_json`.
"""

from __future__ import annotations

import enum
import functools
import json
import re
from collections.abc import Iterable
from typing import NamedTuple

from .text.words import split_words

#: Characters of a user message that are scanned (long pastes are mostly data).
MAX_SCAN_CHARS = 4000
#: A kind of hint is not repeated within this many user prompts.
DEFAULT_MIN_GAP_PROMPTS = 2
#: Prefix of every hint, so the model (and tests) can tell it apart from the user's words.
HINT_PREFIX = "[dexai-memory hint]"


class TriggerKind(enum.StrEnum):
    """Why a user message deserves reflection."""

    EXPLICIT = "explicit"
    CORRECTION = "correction"
    PREFERENCE = "preference"


_EXPLICIT = (
    r"\bremember (?:this|that|these|it)\b",
    r"\bplease remember\b",
    r"\bkeep (?:this |that )?in mind\b",
    r"\bdon'?t forget\b",
    r"\bdo not forget\b",
    r"\bimportant:",
    r"(?:^|\s)note:",
    r"\bfor (?:future|later) reference\b",
    r"\bmake a note\b",
)
_CORRECTION = (
    r"\bno,?\s+(?:actually|i meant|i mean|i want|i said|that'?s not|not that|wrong)\b",
    r"\bthat'?s (?:wrong|incorrect|not (?:right|correct|true|what i (?:asked|meant|wanted|said)))\b",
    r"\bthat is (?:wrong|incorrect|not (?:right|correct|what i (?:asked|meant|wanted)))\b",
    r"\bnot what i (?:asked|meant|wanted|said)\b",
    r"(?:^|[.!?]\s+)actually,",
    r"\bi (?:already )?told you\b",
    r"\bstop doing\b",
    r"\bdon'?t do that\b",
    r"\byou(?:'re| are) wrong\b",
)
_PREFERENCE = (
    r"\bi (?:really |much |strongly |generally |usually )?(?:prefer|like|love|hate|dislike|can'?t stand)\b",
    r"\bi (?:don'?t|do not) (?:like|want|use)\b",
    r"(?:^|[.!?:;]\s*|\bplease\s+|\byou should\s+|\bi\s+|\bwe\s+)(?:always|never)\s+\w+",
    r"\bfrom now on\b",
    r"\bgoing forward\b",
    r"\bmy (?:favou?rite|preferred)\b",
)

#: A word every trigger pattern above needs (one of them, lower case), or a phrase: the cheap
#: check that lets most prompts skip compiling the patterns (hooks are a new process per prompt).
_KEYWORDS = frozenset({
    "remember", "mind", "forget", "important", "note", "reference",
    "no", "wrong", "incorrect", "actually", "told", "stop", "don't", "dont",
    "prefer", "like", "love", "hate", "dislike", "stand", "always", "never", "forward",
    "favourite", "favorite", "preferred",
})
_KEY_PHRASES = ("not right", "not correct", "not true", "not what", "do not", "from now on")


def _might_trigger(text: str) -> bool:
    lowered = text[:MAX_SCAN_CHARS].lower().replace("\u2019", "'")
    if any(p in lowered for p in _KEY_PHRASES):
        return True
    return not _KEYWORDS.isdisjoint(split_words(lowered, joiners="'"))


@functools.cache
def _compiled() -> tuple[tuple[TriggerKind, tuple[re.Pattern[str], ...]], ...]:
    return tuple(
        (kind, tuple(re.compile(p, re.IGNORECASE | re.MULTILINE) for p in patterns))
        for kind, patterns in (
            (TriggerKind.EXPLICIT, _EXPLICIT),
            (TriggerKind.CORRECTION, _CORRECTION),
            (TriggerKind.PREFERENCE, _PREFERENCE),
        )
    )


_FENCED = r"```.*?(?:```|\Z)"
_INLINE = r"`[^`\n]*`"
_QUOTED = r"^\s*>.*$"

HINTS: dict[TriggerKind, str] = {
    TriggerKind.EXPLICIT: (
        f"{HINT_PREFIX} The user asked you to remember something. Save it with the remember tool "
        "(pick the category: preference, fact, insight, warning or goal)."
    ),
    TriggerKind.CORRECTION: (
        f"{HINT_PREFIX} The user just corrected you. If the correction reflects a lasting preference "
        "or a mistake to avoid, save it with the remember tool (category \"preference\" or \"warning\")."
    ),
    TriggerKind.PREFERENCE: (
        f"{HINT_PREFIX} The user just stated a preference. If it is durable, save it with the "
        "remember tool (category \"preference\")."
    ),
}


class Trigger(NamedTuple):  # a NamedTuple: cheaper to define than a dataclass in a hook process
    """A matched trigger: its kind, the words that matched, and the hint to show."""

    kind: TriggerKind
    matched: str

    @property
    def hint(self) -> str:
        """The reflection hint for the agent's next turn."""
        return HINTS[self.kind]


def _scannable(text: str) -> str:
    text = text[:MAX_SCAN_CHARS]
    text = re.sub(_FENCED, " ", text, flags=re.DOTALL)
    text = re.sub(_INLINE, " ", text)
    return re.sub(_QUOTED, " ", text, flags=re.MULTILINE).replace("\u2019", "'")


def check_user_message(text: str) -> Trigger | None:
    """The first trigger (explicit, then correction, then preference) in ``text``, or None."""
    if not text or not text.strip() or not _might_trigger(text):
        return None
    scan = _scannable(text)
    for kind, patterns in _compiled():
        for pattern in patterns:
            m = pattern.search(scan)
            if m:
                return Trigger(kind, " ".join(m.group(0).split()))
    return None


class ReflectionHints:
    """Per-session holder of pending reflection hints.

    * :meth:`observe` checks a user message and queues its hint;
    * :meth:`pop` returns the queued hint text (joined if several) and clears it;
    * :meth:`on_user_prompt` does both for a UserPromptSubmit hook: the hint for
      the turn the agent is about to take, or None.

    A kind of hint is not repeated within ``min_gap_prompts`` prompts of the
    last time it was given, so a user who says "always" in every message is
    not nagged about it every turn.
    """

    def __init__(self, *, min_gap_prompts: int = DEFAULT_MIN_GAP_PROMPTS) -> None:
        self.min_gap_prompts = min_gap_prompts
        self.prompts = 0
        self._pending: list[TriggerKind] = []
        self._last_given: dict[TriggerKind, int] = {}

    def observe(self, text: str) -> Trigger | None:
        """Count one user prompt; queue its hint if it triggers (and is not on cool-down)."""
        self.prompts += 1
        trigger = check_user_message(text)
        if trigger is None:
            return None
        last = self._last_given.get(trigger.kind)
        if last is not None and self.prompts - last <= self.min_gap_prompts:
            return None
        if trigger.kind not in self._pending:
            self._pending.append(trigger.kind)
        self._last_given[trigger.kind] = self.prompts
        return trigger

    @property
    def pending(self) -> tuple[TriggerKind, ...]:
        """Kinds of hints waiting to be shown."""
        return tuple(self._pending)

    def pop(self) -> str | None:
        """The pending hint(s) as one text, cleared; None when nothing is pending."""
        if not self._pending:
            return None
        text = "\n".join(HINTS[k] for k in self._pending)
        self._pending.clear()
        return text

    def on_user_prompt(self, text: str) -> str | None:
        """:meth:`observe` then :meth:`pop`: the hint to add to this prompt's context."""
        self.observe(text)
        return self.pop()

    # ------------------------------------------------------------------ persistence (command hooks)
    def to_json(self) -> str:
        """The holder's state as a small JSON text."""
        return json.dumps({
            "prompts": self.prompts,
            "pending": [k.value for k in self._pending],
            "last_given": {k.value: n for k, n in self._last_given.items()},
            "min_gap_prompts": self.min_gap_prompts,
        })

    @classmethod
    def from_json(cls, text: str | None) -> ReflectionHints:
        """Restore a holder from :meth:`to_json` output; a fresh one for empty or invalid text."""
        if not text:
            return cls()
        try:
            data = json.loads(text)
            hints = cls(min_gap_prompts=int(data.get("min_gap_prompts", DEFAULT_MIN_GAP_PROMPTS)))
            hints.prompts = int(data.get("prompts", 0))
            hints._pending = _kinds(data.get("pending") or [])
            hints._last_given = {TriggerKind(k): int(n) for k, n in (data.get("last_given") or {}).items()
                                 if k in TriggerKind._value2member_map_}
        except (ValueError, TypeError, AttributeError):
            return cls()
        return hints


def _kinds(values: Iterable[str]) -> list[TriggerKind]:
    return [TriggerKind(v) for v in values if v in TriggerKind._value2member_map_]
