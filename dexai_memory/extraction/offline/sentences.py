"""Sentences for the offline extractor: splitting a turn, cleaning a sentence (quotes,
leading noise, vocatives, emoticons), finishing a note ("... ."), and telling pasted
code and logs from prose.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...text.words import STOP_WORDS, split_words

_ABBREVIATIONS = re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof|St|Sr|Jr|vs|etc|e\.g|i\.e|approx|Mt|No)\.$", re.I)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\s*\n+\s*")
SPACES = re.compile(r"\s+")
_LEADING_NOISE = re.compile(
    r"^(?:(?:yeah|yes|yep|yup|yea|wow|whoa|woah|oh|ooh|hey|hi|hello|well|and|but|haha+|hehe+|lol|totally|"
    r"definitely|absolutely|sure|ok|okay|aw+|omg|cool|nice|great|awesome|true|right|honestly|actually|btw|"
    r"by the way|anyway|anyways|also|plus|oh man|man|dude|gosh|hmm+|um+|thanks|thank you|congrats|"
    r"so(?=\s*,)|"
    r"congratulations|yay|woohoo|exactly|indeed|no way|of course|ah+|sorry|hah|ha)\b[\s,!.:;-]*)+",
    re.I,
)
_LEADING_VOCATIVE = re.compile(r"^[A-Z][a-z]+[,!]\s+")
_TRAILING_VOCATIVE = re.compile(r",\s+[A-Z][a-z]+(?=[.!?]*$)")
#: Words of chit-chat and reactions ("totally", "cool", "looks great", "pic"), on top of the one stop
#: list: a sentence made of them states nothing worth keeping.
_CHAT_FILLER = frozenset(
    "done gets getting one much many thats it'll i'll mine we're we've we'd us onto totally definitely "
    "absolutely sure wow cool nice great awesome amazing thanks thank looks look sounds sound seems seem good "
    "well know think glad love lovely happy super pretty kinda things thing stuff lot lots always never ever "
    "even still yes yep nope check pic pics picture photo peek".split()
)
_STOP = STOP_WORDS | _CHAT_FILLER
_EMOJI = re.compile(r"\s*[\U0001F300-\U0001FAFF\u2600-\u27BF\uFE0F]+\s*")
#: Fenced blocks (```...```, ~~~...~~~) and indented lines (stack frames, pasted code) of a prompt.
FENCED = re.compile(r"(?:```|~~~).*?(?:```|~~~|$)", re.S)
INDENTED = re.compile(r"^(?: {2,}|\t)(?![-*•]\s|\d+[.)]\s)\S")
_SYMBOLS = frozenset('{}[]()=;"\\|')


def symbol_heavy(text: str) -> bool:
    """Whether ``text`` has the punctuation of code rather than of prose."""
    stripped = text.strip()
    return len(stripped) > 0 and sum(c in _SYMBOLS for c in stripped) / len(stripped) > 0.06


def split_sentences(text: str) -> list[str]:
    parts = _SENTENCE_SPLIT.split(_EMOJI.sub(". ", text))
    out: list[str] = []
    for part in parts:
        part = part.strip()
        if not part:
            continue
        if out and _ABBREVIATIONS.search(out[-1]):
            out[-1] = f"{out[-1]} {part}"
        else:
            out.append(part)
    return out


#: Words that look like a vocative ("Careful, ...") but mark what follows.
_MARKERS = frozenset("careful warning gotcha note important also decision goal context caution reminder fyi "
                     "remember heads danger please".split())


def clean_sentence(sentence: str, *, keep_code: bool = False) -> str:
    """``sentence`` without quotes, leading noise, vocatives and emoticons; ``keep_code`` (the session's
    user) keeps backticks and any name at the end ("..., not gofmt")."""
    s = sentence.strip().strip("\"“”'")
    s = _LEADING_NOISE.sub("", s)
    vocative = _LEADING_VOCATIVE.match(s)
    if vocative and not (keep_code and vocative.group(0).strip(" ,!").lower() in _MARKERS):
        s = s[vocative.end():]
    if keep_code:
        s = re.sub(r",\s+Claude(?=[.!?]*$)", "", s)
    else:
        s = _TRAILING_VOCATIVE.sub("", s)
    s = re.sub(r"\b[Gg]onna\b", "going to", s)
    s = re.sub(r"\b[Ww]anna\b", "want to", s)
    s = re.sub(r"\b[Gg]otta\b", "have to", s)
    if not keep_code:
        s = s.replace("`", "'")
    s = re.sub(r"\b[Kk]inda\b", "kind of", s)
    s = re.sub(r"\s*[:;]-?[()DPp]\s*|[\U0001F300-\U0001FAFF\u2600-\u27BF]+", " ", s)
    return SPACES.sub(" ", s).strip(" ,;-")


def upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry content: 3+ characters, starting with a letter, not a stop
    word or chit-chat."""
    return [w for w in split_words(text, joiners="'-") if len(w) > 2 and w[0].isalpha() and w not in _STOP]


#: Capitalised words that open a sentence without being a name.
_OPENERS = frozenset("yesterday today tomorrow tonight everyone everybody everything nothing nobody someone "
                     "somebody something maybe perhaps please now then next last our my your their his her its "
                     "each every both all most few several other another no yes ok okay".split())
#: A verb right after a sentence's first word: "Marco took ...", "Priya owns ...", "Dana is ...".
_VERB_AFTER = re.compile(r"^\S+\s+(?:(?:is|was|has|had|will|can|could|would|should|must|did|does|took|went|got|"
                         r"made|said|told|left|joined|owns|runs|leads|moved|\w+ed|\w+s)\b)")


def _a_name(first: str, text: str) -> bool:
    """Whether ``first``, opening ``text``, reads as a name: capitalised, not a stop word or a common
    opener, followed by a verb ("Marco took over ...")."""
    word = first.lower()
    return (first[:1].isupper() and first.isalpha() and word not in _STOP and word not in _OPENERS
            and not word.endswith(("ing", "ly")) and _VERB_AFTER.match(text) is not None)


def lower_first(text: str, names: Sequence[str], source: str) -> str:
    """``text`` with its first letter lower-cased unless the first word is a name or acronym."""
    first = text.split(" ", 1)[0].rstrip(",.!?;:'s")
    if not first or first in names or first.isupper() or first == "I" or _a_name(first, text) or \
            re.search(rf"(?<![.!?]\s)(?<!^)\b{re.escape(first)}\b", source[1:] if source.startswith(first) else source):
        return text
    return text[0].lower() + text[1:]


def finish(text: str) -> str:
    text = SPACES.sub(" ", text).strip(" ,;-")
    text = re.sub(r"[!?.…]+$", "", text).rstrip(" ,;-")
    text = re.sub(r"\s+([,.;:!?])(?=\s|$)", r"\1", text)
    if not text:
        return text
    return text[0].upper() + text[1:] + "."
