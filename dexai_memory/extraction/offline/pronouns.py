"""Pronoun rewriting for the offline extractor: "I", "me", "my" become the speaker's
name, "you" the other speaker's, "we" the speaker and the other speaker (or their
family, group or team), with the verb put in the third person ("I live" -> "Caroline
lives").
"""

from __future__ import annotations

import re

_IRREGULAR_3RD = {"am": "is", "are": "is", "was": "was", "were": "was", "have": "has", "do": "does",
                  "don't": "doesn't", "haven't": "hasn't", "aren't": "isn't", "wasn't": "wasn't",
                  "weren't": "wasn't", "go": "goes", "wanna": "wants to", "gotta": "has to", "gonna": "is going to"}
_NO_CONJUGATION = frozenset(
    "can could will would should shall might must may can't couldn't won't wouldn't shouldn't mustn't didn't "
    "did had was also just really always never still often usually sometimes totally definitely actually finally "
    "recently already even too kinda kind sort truly absolutely honestly so all both only first once probably "
    "certainly mostly rarely barely hardly literally seriously personally myself and or but, then no not now "
    "currently later soon nowadays misspoke".split()
)
_PAST_IRREGULAR = frozenset(
    "went got made took saw met had began bought built ran won lost found wrote did gave came left heard taught "
    "sang drove flew ate became broke brought caught chose drew fell forgot grew kept knew rode sold sent spent "
    "stood swam told wore read paid put set quit spoke sat slept woke threw held led lent felt thought dug hit "
    "cut lit meant dealt hung shut let fed fought sought bought wound understood misspoke overtook took rewrote broke chose froze stole woke shook withdrew forgave undertook mistook "
    "rose swore tore".split()
)
#: Base forms that end in "ed".
_ED_BASE = frozenset("need feed seed bleed speed proceed succeed exceed breed heed weed shred embed".split())
_ADVERBS = frozenset(
    "just really also always never still often usually sometimes totally definitely actually finally recently "
    "already even kinda truly absolutely honestly so all both only first once probably certainly mostly rarely "
    "barely hardly literally seriously personally too now currently nowadays".split()
) | {"no longer"}
_PRONOUNS = re.compile(
    r"\b(?P<w>I'm|I've|I'll|I'd|I|me|my|mine|myself|we're|we've|we'll|we'd|we|us|our|ours|ourselves|"
    r"you're|you've|you'll|you'd|you|your|yours|yourself|yourselves)\b"
    r"(?P<rest>(?:\s+(?:" + "|".join(sorted(_ADVERBS)) + r")\b)*)(?P<sp>\s+)?(?P<next>[^\W\d_][\w']*)?",
    re.I,
)


def _third_person(verb: str) -> str:
    low = verb.lower()
    if low in _IRREGULAR_3RD:
        return _IRREGULAR_3RD[low]
    if low in _ED_BASE:
        return verb + "s"
    if low in _NO_CONJUGATION or low in _PAST_IRREGULAR or low.endswith(("ed", "n't", "ing", "s")) \
            or not low.isalpha():
        return verb
    if low.endswith(("sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(low) > 2 and low.endswith("y") and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def possessive(name: str) -> str:
    return f"{name}'s"


class Rewriter:
    """Pronoun rewriting for one speaker."""

    def __init__(self, name: str, other: str | None, we: str, *, we_singular: bool = False):
        self.name, self.other, self.we = name, other, we
        #: "we" is one subject ("the team"): its verb takes the third person singular.
        self.we_singular = we_singular

    def __call__(self, text: str) -> str:
        return _PRONOUNS.sub(self._replace, text)

    def _replace(self, m: re.Match[str]) -> str:
        word = m.group("w")
        low = word.lower()
        if low == "i" and word != "I":
            pass  # lower-case "i" in chat is still the speaker
        rest, sp, nxt = m.group("rest") or "", m.group("sp") or "", m.group("next") or ""
        tail = f"{rest}{sp}{nxt}"
        name, other, we = self.name, self.other, self.we
        if low in ("i", "i'm", "i've", "i'll", "i'd"):
            if low == "i'm":
                return f"{name} is{tail}"
            if low == "i've":
                return f"{name} has{tail}"
            if low == "i'll":
                return f"{name} will{tail}"
            if low == "i'd":
                return f"{name} would{tail}" if nxt.lower() not in _PAST_IRREGULAR and not nxt.endswith("ed") \
                    or nxt.lower() in ("love", "like") else f"{name} had{tail}"
            return f"{name}{rest}{sp}{_third_person(nxt) if nxt else ''}"
        if low == "me":
            return f"{name}{tail}"
        if low in ("my", "mine"):
            return f"{possessive(name)}{tail}"
        if low == "myself":
            return f"themselves{tail}" if name[0].isupper() else f"{name}{tail}"
        if low == "we" and self.we_singular and nxt:
            return f"{we}{rest}{sp}{_third_person(nxt)}"
        if low in ("we", "us", "ourselves"):
            return f"{we}{tail}"
        if low in ("we're", "we've", "we'll", "we'd"):
            aux = {"we're": "are", "we've": "have", "we'll": "will", "we'd": "would"}[low]
            if self.we_singular:
                aux = {"are": "is", "have": "has"}.get(aux, aux)
            return f"{we} {aux}{tail}"
        if low in ("our", "ours"):
            return f"{possessive(we)}{tail}"
        if other is None:
            return m.group(0)
        if low in ("you", "yourself", "yourselves"):
            before = m.string[:m.start()].rstrip().lower()
            subject = not before or before.endswith((",", ".", "!", "?", ";", "-", " that", " if", " when", " because",
                                                     " since", " and", " but", " so", " as"))
            if nxt and low == "you" and (subject or nxt.lower() in ("are", "were", "have", "haven't", "aren't")):
                return f"{other}{rest}{sp}{_third_person(nxt)}"
            return f"{other}{tail}"
        if low in ("your", "yours"):
            return f"{possessive(other)}{tail}"
        aux = {"you're": "is", "you've": "has", "you'll": "will", "you'd": "would"}[low]
        return f"{other} {aux}{tail}"


#: Base verbs conjugated after "and" ("The user lives in Lisbon and works at ...").
_AND_VERBS = ("work|live|have|use|go|play|love|like|teach|study|run|own|speak|drive|prefer|want|need|write|read|"
              "make|take|enjoy|help|hate|cook|train|volunteer|travel|manage|lead|maintain|know|build|keep|spend")
_AND_VERB = re.compile(r"\b((?:The|the) (?:user|team)\s+\w+s\b[^,.;!?]{1,60}?\band\s+)(" + _AND_VERBS + r")\b")


def session_grammar(text: str) -> str:
    """The session user's rewritten sentence: "the user" / "the team" in lower case inside the
    sentence, and a verb after "and" in the third person ("lives in Lisbon and works at")."""
    text = re.sub(r"(?<=\S)(\s+)The (user|team)\b", r"\1the \2", text)
    if re.match(r"^The user\b", text):  # "The user ran the user's first 10k" -> "... their first 10k"
        text = text[:8] + re.sub(r"\bthe user's\b", "their", text[8:])
    text = re.sub(r"\bthe team's own\b", "its own", text)
    return _AND_VERB.sub(lambda m: m.group(1) + _third_person(m.group(2)), text)
