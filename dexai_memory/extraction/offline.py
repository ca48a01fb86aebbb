"""The offline extractor: rules and patterns, no model, no network.

It turns first-person chat into durable third-person notes naming the
speaker, with relative dates resolved against the turn's timestamp::

    Caroline (8 May 2023): "I went to a LGBTQ support group yesterday."
    -> "Caroline went to a LGBTQ support group on 7 May 2023."  (EVENT, 2023-05-07)

Per turn: redact secrets, split into sentences, drop filler and pure
questions (a leading statement clause of a question is kept), resolve dates,
rewrite pronouns (I/me/my/mine/myself/I'm/I've/I'll/I'd -> the speaker;
you/your -> the other speaker when known; we/us/our -> the speaker and the
other speaker, or the speaker's family/group), classify the type, score the
importance (1-10) with the heuristic gate, and attach a commitment (what,
who, due date) to promises and reminders. A short answer to the previous
speaker's question is kept together with that question. An image caption in
``turn.metadata["caption"]`` becomes "<speaker> shared a photo of ...".

The session's user
------------------
The user of an assistant session (a turn with role ``user`` and no speaker
name, as the Claude Code hooks send it) speaks to an agent about their work
and life; their sentences are read with rules of their own, each note a
clean, self-contained sentence that keeps their exact names, paths, numbers
and `commands`:

* **warnings** ("Never ...", "Don't ...", "Avoid ...", "Careful with ...",
  "Watch out: ...", "Heads up: ...", and statements of a hazard: "X crashes
  if ...", "..., so don't ...") and **standing instructions** ("Always ...",
  "From now on, ...", "Make sure ...", "Please use X instead of Y", "When you
  ..., ...", "In the changelog, group ...", and a habit verb with a bare
  object: "Use tabs in the Makefile", "Name feature branches ...") are kept
  in the imperative they were given in ("Run `make check` before every
  push."), with a marker such as "Heads up:" or "Remember to" dropped:
  INSIGHT, ``category`` "warning" / "instruction", importance 8.
  Encouragement ("don't worry"), requests for now ("Run the tests again",
  "Add type hints to the config loader") and errands with a date are not;
* **decisions** ("We decided / chose / settled on / are going with ...",
  "Let's go with X", "Decision: ...", "The architecture review agreed ...")
  are FACTs with ``category`` "decision", importance >= 7, their reason kept;
* **goals** ("My goal this quarter is ...", "New goal: ...", "I'm trying to
  ...", "I want to ...") take one shape, "The user's goal is to X (this
  quarter)." ("The team's" for "our"), so that the next goal reads as a new
  value of the same attribute: COMMITMENT with an open commitment,
  ``category`` "goal", importance 7;
* **facts** about the project, its environment and people ("The orders
  service runs on port 8443", "Priya owns the billing service", "Our CI runs
  on Buildkite") are stored as said, "we/our" read as "the team"; facts about
  themselves in the third person ("The user lives in Lisbon and works at
  ..."). Importance at least 6 when the sentence names a tool, path, version,
  host, person or owner, preferences at least 7; confidence 0.8; nothing of
  theirs above 8, so no statement outranks a standing instruction;
* **dates** point forward unless the sentence is about the past: "I have a
  dentist appointment on Friday" said on a Monday is the coming Friday, and a
  statement with a coming date is a COMMITMENT due that day;
* no note for labels ("Remember this:", "FYI,"), framing ("Some context
  before we start."), questions, thinking aloud ("Sorry, I meant the second
  file"), vague subjects ("It works now!") or a sentence that alone would not
  pass the gate.

Named speakers (LoCoMo-style conversations) keep the general rules: advice
between people is not stored, and "we decided ..." stays a dated event.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, time

from ..dates import ResolvedDate, find_dates, format_day, is_future, rewrite_dates
from ..models import Commitment, ExtractedNote, MemoryType, Turn
from ..privacy import redact
from .base import Extractor
from .signals import SignalScorer, is_filler, regex_entities

__all__ = ["OfflineExtractor"]

#: Turns handled inline; larger batches go to a worker thread.
_INLINE_TURNS = 32
#: Least importance of a warning or standing instruction of the session's user.
WARNING_IMPORTANCE = 7
#: Least importance of a decision of the session's user.
DECISION_IMPORTANCE = 7
#: Importance of the session user's current goal.
GOAL_IMPORTANCE = 7
#: Most importance of the session user's other notes: no statement outranks a standing instruction.
SESSION_MAX_IMPORTANCE = 8

_ABBREVIATIONS = re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof|St|Sr|Jr|vs|etc|e\.g|i\.e|approx|Mt|No)\.$", re.I)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\s*\n+\s*")
_SPACES = re.compile(r"\s+")
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
_WH_START = re.compile(
    r"^(?:what|who|whom|whose|where|when|why|how|which|do|does|did|is|are|was|were|can|could|will|would|should|"
    r"have|has|had|any|anything|ever|wanna|got|shall|may|might|isn't|aren't|don't|didn't|won't|hasn't|haven't)\b(?!')",
    re.I,
)
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|me|my|mine|myself|we|we're|we've|we'll|we'd|us|our|ours)\b",
                           re.I)
_SECOND_PERSON = re.compile(r"\b(?:you|you're|you've|you'll|you'd|your|yours|yourself)\b", re.I)
_CONTENT_WORD = re.compile(r"[A-Za-z][a-z'\-]{2,}")
_STOP = frozenset(
    "the and that this with for was were are is it's its you your yours our ours they them their there here "
    "have has had been being but not just really very so too also what when where who how why which would could "
    "should will can did does doing done get got gets getting some any all one more much many such than then "
    "thats that's it'll i'll i'm i've i'd me my mine myself we we're we've we'd us out about from into onto over "
    "like totally definitely absolutely sure yeah wow cool nice great awesome amazing thanks thank looks look "
    "sounds sound seems seem good well know think glad love lovely happy super pretty kinda things thing stuff "
    "lot lots always never ever even still yes yep nope check pic pics picture photo peek".split()
)
_SUBJECTLESS = re.compile(
    r"^(?:(?P<past>just |recently |finally |also )?(?P<verb>been|got|went|joined|started|picked|finished|had|made|"
    r"took|bought|visited|tried|learned|learnt|signed up|spent|saw|met|found|did|came back|moved|adopted|"
    r"decided|gonna|going to|planning|thinking|working|heading|hoping|looking forward|currently|still|off to|"
    r"can't wait|cannot wait|have to|need to|want to|love|loved|hope|wish)\b)",
    re.I,
)
_SHARED_PIC = re.compile(
    r"^(?:here(?:'s| is)|this is|check (?:out|this out)|take a look at|look at|sharing|i'm sharing|i found)\s+"
    r"(?:a |an |the |my |this )?(?:(?:quick |little |recent |old |cute )?(?:pic|picture|photo|snap|shot|screenshot|"
    r"image|selfie)s?)\s+(?:of|from)\s+(?P<what>.+)$",
    re.I,
)
_PURE_PROMPTS = re.compile(
    r"^(?:take a look(?: at this)?|check (?:it|this) out|look at this|see this|here you go|here ya go|"
    r"here it is|here's (?:a pic|a picture|a photo|one|this)|talk (?:to you )?soon|take care|bye|"
    r"good luck|keep (?:it up|going|at it|up the good work)|you got this|have fun|enjoy|me too|same here|"
    r"same|you too|no worries|no problem)\b[\s\w']{0,12}[.!?]*$",
    re.I,
)

_GROUP_WORDS = ("family", "kids", "children", "husband", "wife", "partner", "boyfriend", "girlfriend", "friends",
                "team", "parents", "class", "group", "club", "band", "colleagues", "son", "daughter", "dogs",
                "siblings", "brother", "sister", "mom", "dad", "fiance", "fiancee", "crew", "roommates")
_GROUP_RE = re.compile(r"\b(?:my|our)\s+(?:\w+\s+)?(?P<g>" + "|".join(_GROUP_WORDS) + r")\b", re.I)
_RELATIONSHIP = re.compile(
    r"\b(?:my|our)\s+(?:\w+\s+)?(?:sister|brother|siblings?|friend|friends|bff|husband|wife|partner|boyfriend|"
    r"girlfriend|fianc[eé]e?|kids?|children|son|daughter|mom|mum|mother|dad|father|parents?|grand(?:ma|pa|mother|"
    r"father|parents?|kids?|children)|aunt|uncle|cousin|niece|nephew|family|neighbou?r|roommate|colleague|"
    r"coworker|boss|mentor|teammates?|buddy|pal)\b|\b(?:married|engaged|dating|divorced|broke up|"
    r"adopted|pregnant|baby|newborn)\b",
    re.I,
)
_PREFERENCE = re.compile(
    r"\b(?:I|we)(?:\s+(?:really|also|just|absolutely|totally|truly|kinda|still|do))*\s+(?:like|love|enjoy|prefer|hate|"
    r"dislike|adore|can't stand|don't like|am (?:a |a big )?fan of|'m (?:a |a big )?fan of)\b|\bfavou?rite\b|"
    r"\bI(?:'m| am)\s+(?:really\s+|so\s+)?(?:into|keen on|passionate about|obsessed with|a (?:big |huge )?fan of)\b",
    re.I,
)
_COMMITMENT = re.compile(
    r"\b(?:I|we)\s+promise\b|(?<!to )\bremind\s+(?:me|us)\s+(?:to|about|that|when)\b|"
    r"\bdon'?t\s+(?:let\s+me\s+)?forget\b|\b(?:I|we)(?:'ll|\s+will|\s+shall)\b|\b(?:I|we)(?:'m|\s+am|'re|\s+are)\s+(?:going\s+to|planning\s+(?:to|on))\b|"
    r"\b(?:I|we)\s+plan\s+to\b|^\s*(?:going\s+to|planning\s+to)\b",
    re.I,
)
_STRONG_COMMITMENT = re.compile(r"\b(?:I|we)\s+promise\b|\bwants? to be reminded\b|(?<!to )\bremind\s+(?:me|us)\s+(?:to|about|that|when)\b|\bdon'?t\s+(?:let\s+me\s+)?forget\b", re.I)
_TASK = re.compile(r"\b(?:I|we)\s+(?:really\s+|still\s+)?(?:need|have|has|got)\s+to\b|\bI\s+must\b|\bI\s+should\b|"
                   r"\bto-?do\b", re.I)
_INSIGHT = re.compile(r"\b(?:I|we)\s+(?:\w+\s+)?(?:realized|realised|learned|learnt|discovered|figured out|noticed|"
                      r"understood|now understand|came to understand)\b|\btaught\s+(?:me|us)\b|\blesson\b", re.I)
_PAST = re.compile(
    r"\b(?:I|we)(?:\s+(?:just|recently|finally|also|actually|even|first|once|already))*\s+(?:\w{3,}ed|went|got|made|"
    r"took|saw|met|had|began|bought|built|ran|won|lost|found|wrote|did|gave|came|left|heard|taught|sang|drove|flew|"
    r"ate|became|broke|brought|caught|chose|drew|fell|grew|kept|rode|sold|sent|spent|swam|told|wore|paid|quit|"
    r"spoke|sat|slept|woke|threw|held|led|felt|thought|dug)\b|\b(?:I|we)(?:'ve|\s+have)\s+(?:just\s+)?(?:been|\w{3,}ed|"
    r"got|gone|done|made|seen|met|won|found|written|bought|built|taken|begun)\b",
    re.I,
)
_STRONG_EMOTION = re.compile(
    r"\b(?:passed away|died|diagnosed|cancer|divorce|married|engaged|pregnant|born|funeral|hospital|accident|"
    r"surgery|fired|laid off|promoted|graduated|adopted|moved|new job|important|life-changing|dream)\b",
    re.I,
)

_IRREGULAR_3RD = {"am": "is", "are": "is", "was": "was", "were": "was", "have": "has", "do": "does",
                  "don't": "doesn't", "haven't": "hasn't", "aren't": "isn't", "wasn't": "wasn't",
                  "weren't": "wasn't", "go": "goes", "wanna": "wants to", "gotta": "has to", "gonna": "is going to"}
_NO_CONJUGATION = frozenset(
    "can could will would should shall might must may can't couldn't won't wouldn't shouldn't mustn't didn't "
    "did had was also just really always never still often usually sometimes totally definitely actually finally "
    "recently already even too kinda kind sort truly absolutely honestly so all both only first once probably "
    "certainly mostly rarely barely hardly literally seriously personally myself and or but, then".split()
)
_PAST_IRREGULAR = frozenset(
    "went got made took saw met had began bought built ran won lost found wrote did gave came left heard taught "
    "sang drove flew ate became broke brought caught chose drew fell forgot grew kept knew rode sold sent spent "
    "stood swam told wore read paid put set quit spoke sat slept woke threw held led lent felt thought dug hit "
    "cut lit meant dealt hung shut let fed fought sought bought wound understood".split()
)
#: Base forms that end in "ed".
_ED_BASE = frozenset("need feed seed bleed speed proceed succeed exceed breed heed weed shred embed".split())
_ADVERBS = frozenset(
    "just really also always never still often usually sometimes totally definitely actually finally recently "
    "already even kinda truly absolutely honestly so all both only first once probably certainly mostly rarely "
    "barely hardly literally seriously personally too".split()
)
_PRONOUNS = re.compile(
    r"\b(?P<w>I'm|I've|I'll|I'd|I|me|my|mine|myself|we're|we've|we'll|we'd|we|us|our|ours|ourselves|"
    r"you're|you've|you'll|you'd|you|your|yours|yourself|yourselves)\b"
    r"(?P<rest>(?:\s+(?:" + "|".join(sorted(_ADVERBS)) + r"))*)(?P<sp>\s+)?(?P<next>[A-Za-z']+)?",
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


def _possessive(name: str) -> str:
    return f"{name}'s"


class _Rewriter:
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
            return f"{_possessive(name)}{tail}"
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
            return f"{_possessive(we)}{tail}"
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
            return f"{_possessive(other)}{tail}"
        aux = {"you're": "is", "you've": "has", "you'll": "will", "you'd": "would"}[low]
        return f"{other} {aux}{tail}"


_INLINE_CAPTION = re.compile(r"\[(?:(?:shares?|shared) (?:an image|a photo|a picture)|image)(?::|\s+of)\s*([^\]]+)\]",
                             re.I)
_EMOJI = re.compile(r"\s*[\U0001F300-\U0001FAFF\u2600-\u27BF\uFE0F]+\s*")
_IMPERATIVE = re.compile(
    r"^(?:go|keep|stay|check|take|let's|lets|make sure|don't|do not|remember|try|have|enjoy|hang|never|always|"
    r"believe|trust|look|be|give|tell|let|come|say|see|imagine|congrats|good luck|well done|way to go)\b",
    re.I,
)


#: Encouragement and reassurance: commands that warn about nothing.
_NOT_A_WARNING = re.compile(
    r"^(?:please\s+)?(?:never|don'?t|do not|always)\s+(?:ever\s+)?(?:worry|give up|mind|hesitate|stress|panic|"
    r"forget|let (?:me|us) forget|apologi[sz]e|be (?:shy|sorry|sad|afraid|scared|silly|hard on|a stranger)|"
    r"stop (?:believing|dreaming|trying|smiling)|change|lose hope|doubt yourself|believe)\b",
    re.I,
)
#: Requests to the assistant: work for now, not a durable fact.
_REQUEST = re.compile(
    r"^(?:please\s+|now\s+|also\s+|then\s+)*(?:add|fix|write|explain|refactor|rename|sort|replace|summari[sz]e|"
    r"make|split|convert|tidy|update|remove|delete|create|implement|run|show|list|check|find|change|move|clean|"
    r"format|generate|build|test|debug|review|describe|help|give|tell|open|read|edit|improve|optimi[sz]e|rewrite|"
    r"document|print|install|set|bump|merge|revert|commit|push|translate|compare|draft|outline|search|look|"
    r"try|continue|go|start|stop|undo|redo|paste|copy|extract|port|migrate|wrap|rerun|re-run|see|ship|let)\b",
    re.I,
)
_DECISION = re.compile(
    r"^(?:so\s+|ok\s+|okay\s+)?(?:I|we)(?:'ve|\s+have|\s+(?:all|finally|just|now|already))*\s+(?:decided|chose|"
    r"chosen|settled on|agreed|opted|went with|picked|are going with|will go with|'re going with)\b",
    re.I,
)

# --------------------------------------------------------------------------- the session's user
#: A label in front of the fact ("Remember this:", "FYI,", "Note that"): not part of it.
_LABEL = re.compile(
    r"^(?:remember(?: this| that)?(?!\s+to\b)|note(?: that)?|fyi|for the record|just so you know|"
    r"keep in mind(?: that)?|for context|context|btw|by the way|ps|p\.s\.|reminder)\s*(?:[:,-]\s*|\s+(?=\S))"
    r"(?P<body>.+)$",
    re.I,
)
#: A warning: a marker with what it warns about (``body``), or a prohibition said whole.
_WARNING_LEAD = re.compile(
    r"^(?:please\s+)?(?:(?:be careful|careful|watch out|heads[- ]up|warning|caution|beware|important|gotcha|"
    r"be aware|danger)\s*(?:[:,!-]\s*|\s+that\s+)(?P<body>.+)|(?P<whole>(?:never|don'?t|do not|avoid|beware of|"
    r"(?:be )?careful (?:with|when|not|about)|watch out (?:for|when)|be aware of|stay away from)\b.+))$",
    re.I,
)
#: A standing instruction said whole ("Always ...", "From now on, ...", "When you ..., ...").
_STANDING_LEAD = re.compile(
    r"^(?:please\s+)?(?:always|make sure|be sure|from now on|going forward|from here on|whenever|"
    r"when(?:ever)? you|every time|each time|by default|default to|remember to|prefer)\b",
    re.I,
)
#: A scope in front of an instruction ("In the changelog, group ...").
_SCOPE = re.compile(r"^(?:in|for|on|with|inside|within)\s+(?:the|this|all|every|any|our|new|each)\s+[^,;:]{1,40},\s*"
                    r"(?P<rest>.+)$", re.I)
_IMPERATIVE_VERB = re.compile(
    r"^(?:please\s+|also\s+)*(?P<verb>use|run|write|keep|put|store|name|prefix|format|add|test|group|answer|reply|respond|"
    r"log|tag|label|document|commit|push|merge|squash-merge|rebase|deploy|review|lint|pin|bump|ask|send|mention|"
    r"include|sign|follow|stick|default|place|wrap|return|raise|validate|quote|indent|sort|limit|cap|target|"
    r"install|import|configure|set|call|check|make|give|cite|link|spell|treat|assume|mark|notify|email|book|"
    r"order|pay|cc|back up|encrypt|save|lock|pass|print|comment|respect|target|upgrade|downgrade|prefer)\b"
    r"(?P<after>\s+[^\s]+)?",
    re.I,
)
#: What makes an imperative a standing order rather than a request for now.
_STANDING_CUE = re.compile(
    r"\b(?:every|each|all|any|always|never|whenever|from now on|going forward|instead of|rather than|everywhere|"
    r"by default|at most|at least|no more|unless|in this (?:repo|project|codebase)|new)\b|,\s*(?:not|no|never)\b",
    re.I,
)
_TRANSIENT = re.compile(r"\b(?:again|now|for now|right now|first|then|this|that|these|those|it|here|above|below|"
                        r"today|quickly|later|the (?:last|previous|next|following|above|same))\b", re.I)
_DETERMINERS = frozenset("the a an this that these those it them me us my our your his her their its some one "
                         "him".split())
#: Verbs whose bare imperative ("Use tabs ...", "Name feature branches ...") states a habit, not an errand.
_HABIT_VERBS = frozenset("use keep name prefix format prefer write store put log tag label spell quote indent sort "
                         "default treat assume respect stick follow answer reply respond sign cite link".split())
_PREPOSITIONS = frozenset("with to for on at in from about by into over under of up down out off".split())
_DECISION_LABEL = re.compile(r"^(?:decision|decided|we decided)\s*:\s*(?P<body>.+)$", re.I)
_LETS = re.compile(r"^let'?s\s+(?P<verb>go with|use|stick with|pick|choose|adopt|switch to|keep)\s+(?P<rest>.+)$", re.I)
_SESSION_DECISION = re.compile(
    r"^(?:so\s+|ok\s+|okay\s+|after [^,]{1,60}?,?\s+|in the end,?\s+|finally,?\s+)?(?:I|we|the team|"
    r"the [\w-]+(?:\s+[\w-]+)? (?:review|meeting|team|group|committee|board))(?:'ve|\s+have|'re|\s+are|"
    r"\s+(?:all|finally|just|now|already))*\s+(?:decided|chose|chosen|settled on|agreed|opted|went with|picked|"
    r"going with|switching|switched|will go with)\b|,\s*(?:as\s+)?decided\b|\bwas decided\b",
    re.I,
)
_GOAL_LEAD = re.compile(r"^(?:my|our|the)\s+(?:[\w-]+\s+){0,2}(?:goal|objective|aim|target|priority)s?\b", re.I)
_GOAL_NORMAL = re.compile(r"^(?P<who>my|our|the)\s+(?:main\s+|current\s+|big\s+|top\s+)?(?:goal|objective|aim|target)"
                          r"(?P<qual>\s+(?:for\s+|this\s+|of\s+)[^,]{1,30}?)?,?\s+is\s+(?P<rest>.+)$", re.I)
_GOAL_LABEL = re.compile(r"^(?:new\s+|current\s+|main\s+|my\s+|our\s+)?(?:goal|objective|target|aim)\s*:\s*(?P<body>.+)$",
                         re.I)
_GOAL_SELF = re.compile(
    r"^(?P<who>I'm|I am|we're|we are|I|we)\s+(?:really\s+)?(?:(?:trying|aiming|working)\s+(?:to|towards?)|"
    r"want\s+to(?!\s+be\s+reminded)|aim\s+to)\s+(?P<body>.+)$|"
    r"^what (?P<who2>I'm|I am|we're|we are) (?:working towards?|aiming for) is\s+(?P<body2>.+)$",
    re.I,
)
#: Statements of fact that warn ("X crashes if ...", "..., so don't ...").
_HAZARD = re.compile(
    r"\b(?:crash(?:es|ed)?|breaks?|broke|fails?|locks?|wipes?|wiped|corrupts?|silently|only copy|bug|leaks?|"
    r"hangs?|times? out|flaky|rotates?|expires? often|costs? (?:us )?money|don'?t|do not|never|dangerous|unsafe|"
    r"not safe)\b",
    re.I,
)
#: Rules stated as facts ("Every query must go through ...").
_RULE = re.compile(r"\b(?:must|mustn't|should always|should never|(?:has|have|needs?) to go|is not allowed|"
                   r"are not allowed)\b", re.I)
#: "It works now", "That's weird": no self-contained subject.
_VAGUE_SUBJECT = re.compile(
    r"^(?:it|that|this|there|they|he|she|these|those|which|everything|nothing|something)(?:'s|'re|\s+(?:\w+ly\s+)?"
    r"(?:is|was|are|were|does|did|has|had|works?|worked|looks?|seems?|still|should|will|would|could|can|might|"
    r"makes?|sounds?|fails?|failed|broke|just|needs?))\b|^whatever\b",
    re.I,
)
#: The session's user thinking aloud: no fact.
_CHATTER = re.compile(
    r"^(?:I\s+(?:meant|mean|think|guess|see|suppose|wonder|was wondering|tried|was just|just wanted|have a question)|"
    r"I'm\s+(?:just\s+)?(?:curious|confused|not sure|wondering|looking|checking|back|here|done|ready|stuck|lost|"
    r"trying it|testing)|let me|let's see|oops|my bad|one sec|hold on|looks|sounds|seems)\b",
    re.I,
)
_SESSION_COMMITMENT = re.compile(
    r"\b(?:I|we)(?:'ll|\s+will|\s+shall)\b|\b(?:I|we)(?:'m|\s+am|'re|\s+are)\s+going\s+to\b|"
    r"\b(?:I|we)\s+(?:promised?|committed to|owe)\b|\btold\s+\w+\s+(?:I|we)(?:'d|\s+would)\b|"
    r"\bwants? to be reminded\b|\bI\s+want to be reminded\b|\b(?:I|we)\s+(?:really\s+|still\s+)?(?:need|have|got)\s+to\b|"
    r"\bI\s+must\b",
    re.I,
)
#: Fenced blocks (```...```, ~~~...~~~) and indented lines (stack frames, pasted code) of a prompt.
_FENCED = re.compile(r"(?:```|~~~).*?(?:```|~~~|$)", re.S)
_INDENTED = re.compile(r"^(?: {2,}|\t)(?![-*•]\s|\d+[.)]\s)\S")
#: A line of a log, a traceback or code: no statement of the user's.
_CODE_OR_LOG = re.compile(
    r"^(?:File \"|Traceback\b|During handling|[\w.]+(?:Error|Exception|Warning)\b:|at [\w.$<>]+\(|"
    r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|\[\d{2}:\d{2}|\[?(?:DEBUG|INFO|WARN|WARNING|ERROR|FATAL|CRITICAL|TRACE)\b|"
    r"\$ |>>> |[{}\[\]#|]|(?:def|class|import|from \S+ import|return|raise|const|let|var|function|public|private|"
    r"async def|await|if \(|for \(|echo|sudo|npm|pip|git|curl|cd|ls)\s)"
)
_SYMBOLS = frozenset('{}[]()=;"\\|')


def _symbol_heavy(text: str) -> bool:
    """Whether ``text`` has the punctuation of code rather than of prose."""
    stripped = text.strip()
    return len(stripped) > 0 and sum(c in _SYMBOLS for c in stripped) / len(stripped) > 0.06


_REMIND = re.compile(r"^(?:please\s+)?(?:remind|ping|nudge)\s+me\s+(to|about|that)\b|"
                     r"^(?:please\s+)?don'?t\s+let\s+me\s+forget\s+(to|about|that)\b", re.I)
_SESSION_PREFERENCE = re.compile(r"\bI(?:'d| would)\s+(?:rather|like)\b(?!\s+to\b)|\bI(?:'m| am)\s+(?:a\s+)?"
                                 r"(?:vegetarian|vegan)\b", re.I)
_RECURRING = re.compile(r"\b(?:birthday|anniversary|every|each|weekly|daily|monthly|yearly|annual)\b", re.I)
#: A sentence about the past (its "on Friday" is the last Friday); else the session's user means the coming one.
_PAST_WORDS = re.compile(r"\b(?:was|were|had|did|went|came|left|ran|ago|yesterday|earlier|happened)\b", re.I)
_PAST_VERB = re.compile(r"\b(?:I|we|he|she|it|they|[A-Z]\w+)\s+(?:just\s+|already\s+)?\w{2,}ed\b")
_TO_VERB = re.compile(r"\bto\s+(?!the\b|a\b|an\b|my\b|our\b|be\b)[a-z]{3,}\b")
#: Base verbs conjugated after "and" ("The user lives in Lisbon and works at ...").
_AND_VERBS = ("work|live|have|use|go|play|love|like|teach|study|run|own|speak|drive|prefer|want|need|write|read|"
              "make|take|enjoy|help|hate|cook|train|volunteer|travel|manage|lead|maintain|know|build|keep|spend")
_AND_VERB = re.compile(r"\b((?:The|the) (?:user|team)\s+\w+s\b[^,.;!?]{1,60}?\band\s+)(" + _AND_VERBS + r")\b")
#: Least importance of the session user's notes by type (preferences rank with instructions).
_SESSION_FLOORS = {MemoryType.COMMITMENT: 6, MemoryType.TASK: 6, MemoryType.PREFERENCE: 7,
                   MemoryType.RELATIONSHIP: 6, MemoryType.FACT: 5, MemoryType.INSIGHT: 6, MemoryType.EVENT: 4}
_FRAMING = re.compile(
    r"^(?:(?:here(?:'s| is| are)|just)\s+)?(?:some|a (?:bit|little) of|a little|quick|more|a few)?\s*"
    r"(?:context|background|notes?|details?|info(?:rmation)?)\b[\w\s,'-]*$",
    re.I,
)
_BEFORE_WE_START = re.compile(r",?\s*before (?:we|I) (?:start|begin|get started|dive in|go on|continue)\b", re.I)


def _split_sentences(text: str) -> list[str]:
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


def _clean_sentence(sentence: str, *, keep_code: bool = False) -> str:
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
    return _SPACES.sub(" ", s).strip(" ,;-")


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _warning_body(sentence: str) -> tuple[str | None, str]:
    """("warning", what to store) for a warning of the session's user, else (None, sentence)."""
    if _NOT_A_WARNING.match(sentence):
        return None, sentence
    m = _WARNING_LEAD.match(sentence)
    if m is None:
        return None, sentence
    if m.group("body"):
        return "warning", _upper_first(m.group("body").strip())
    whole = re.sub(r"^please\s+", "", m.group("whole"), flags=re.I)
    return "warning", _upper_first(re.sub(r"^careful\b", "be careful", whole, flags=re.I))


def _instruction_body(sentence: str, anchor: datetime | None = None) -> tuple[str | None, str]:
    """("instruction", the imperative to store) for a standing order, else (None, sentence).

    "Always ...", "From now on ...", "When you ..., ..." are standing orders
    as said; a bare imperative ("Use tabs in the Makefile", "Run `make check`
    before every push") is one when something marks it as standing (every,
    instead of, "..., not X", a habit verb with an object and no article)
    rather than a request for now ("Run the tests again", "Add type hints to
    the config loader").
    """
    if _STANDING_LEAD.match(sentence):
        body = re.sub(r"^(?:please\s+)?(?:remember to\s+)?", "", sentence, flags=re.I)
        return "instruction", _upper_first(body)
    scope = _SCOPE.match(sentence)
    verb = _IMPERATIVE_VERB.match(scope.group("rest") if scope else sentence)
    if verb is None:
        return None, sentence
    after = (verb.group("after") or "").strip().lower()
    habit = verb.group("verb").lower() in _HABIT_VERBS
    bare = habit and after.isalpha() and after not in _DETERMINERS and after not in _PREPOSITIONS
    if find_dates(sentence, anchor):
        return None, sentence  # "Call the bank on Friday": an errand with a date, not a standing order
    if _STANDING_CUE.search(sentence) or scope or bare and not _TRANSIENT.search(sentence):
        return "instruction", _upper_first(re.sub(r"^(?:please\s+|also\s+)+", "", sentence, flags=re.I))
    return None, sentence


def _session_decision(sentence: str) -> str | None:
    """The decision the session's user reports, as a statement to store, or None."""
    m = _DECISION_LABEL.match(sentence)
    if m:
        return _upper_first(m.group("body").strip())
    m = _LETS.match(sentence)
    if m:
        return f"We decided to {m.group('verb').lower()} {m.group('rest')}"
    return sentence if _SESSION_DECISION.search(sentence) else None


def _goal_body(sentence: str) -> str | None:
    """The goal the session's user states, in one shape: "My goal is ..." (or "Our goal is ..."), any
    qualifier moved to the end ("My goal this quarter is to X" -> "My goal is to X this quarter"), so
    that a new goal reads as the same attribute with a new value."""
    lead = _GOAL_NORMAL.match(sentence)
    if lead:
        who = "Our" if lead.group("who").lower() == "our" else "My"
        qualifier = (lead.group("qual") or "").strip(" ,")
        rest = lead.group("rest").rstrip(" .!")
        return f"{who} goal is {rest}" + (f" {qualifier}" if qualifier else "") + "."
    if _GOAL_LEAD.match(sentence):
        return sentence
    m = _GOAL_LABEL.match(sentence)
    who, body = "my", None
    if m:
        body = m.group("body").strip()
    else:
        g = _GOAL_SELF.match(sentence)
        if g is None:
            return None
        who = "our" if (g.group("who") or g.group("who2") or "").lower().startswith("we") else "my"
        body = (g.group("body") or g.group("body2") or "").strip()
        if g.group("body2"):
            return f"{_upper_first(who)} goal is {body}"
    first = body.split(" ", 1)[0]
    if first.lower() in _DETERMINERS or first[:1].isupper() and first.lower() not in ("replace", "ship", "get"):
        return f"{_upper_first(who)} goal is {body}"
    return f"{_upper_first(who)} goal is to {body[:1].lower()}{body[1:]}"


def _session_grammar(text: str) -> str:
    """The session user's rewritten sentence: "the user" / "the team" in lower case inside the
    sentence, and a verb after "and" in the third person ("lives in Lisbon and works at")."""
    text = re.sub(r"(?<=\S)(\s+)The (user|team)\b", r"\1the \2", text)
    if re.match(r"^The user\b", text):  # "The user ran the user's first 10k" -> "... their first 10k"
        text = text[:8] + re.sub(r"\bthe user's\b", "their", text[8:])
    text = re.sub(r"\bthe team's own\b", "its own", text)
    return _AND_VERB.sub(lambda m: m.group(1) + _third_person(m.group(2)), text)


def _content_words(text: str) -> list[str]:
    return [w for w in _CONTENT_WORD.findall(text) if w.lower() not in _STOP]


def _statement_of_question(sentence: str) -> str | None:
    """The statement clause leading a question ("I just got back from Paris, have you been?")."""
    clauses = re.split(r"\s*(?:[,;:]|\s-\s|\s–\s|\s—\s)\s*", sentence.rstrip("?!. "))
    if len(clauses) < 2:
        return None
    kept: list[str] = []
    for clause in clauses:
        if _WH_START.match(clause) or clause.lower().startswith(("and ", "or ", "right", "huh")):
            break
        kept.append(clause)
    statement = ", ".join(kept).strip()
    if not statement or not _FIRST_PERSON.search(statement) or len(_content_words(statement)) < 2:
        return None
    return statement + "."


def _lower_first(text: str, names: Sequence[str], source: str) -> str:
    """``text`` with its first letter lower-cased unless the first word is a name or acronym."""
    first = text.split(" ", 1)[0].rstrip(",.!?;:'s")
    if not first or first in names or first.isupper() or first == "I" or \
            re.search(rf"(?<![.!?]\s)(?<!^)\b{re.escape(first)}\b", source[1:] if source.startswith(first) else source):
        return text
    return text[0].lower() + text[1:]


def _finish(text: str) -> str:
    text = _SPACES.sub(" ", text).strip(" ,;-")
    text = re.sub(r"[!?.…]+$", "", text).rstrip(" ,;-")
    text = re.sub(r"\s+([,.;:!?])(?=\s|$)", r"\1", text)
    if not text:
        return text
    return text[0].upper() + text[1:] + "."


def _speaker_name(turn: Turn) -> str:
    if turn.speaker:
        return turn.speaker.strip()
    return {"assistant": "The assistant", "user": "The user"}.get(turn.role, turn.role.capitalize() or "The user")


def _context_speaker(item: Turn | str) -> tuple[str | None, str]:
    if isinstance(item, Turn):
        return _speaker_name(item), item.content
    m = re.match(r"^\s*([A-Z][\w .'-]{0,40}):\s+(.*)$", item, re.S)
    if m:
        return m.group(1).strip(), m.group(2)
    return None, item


class OfflineExtractor(Extractor):
    """Rule-based extraction (see the module docstring). ``gate`` scores importance."""

    def __init__(self, *, gate: SignalScorer | None = None, min_content_words: int = 2):
        self.gate = gate or SignalScorer()
        self.min_content_words = min_content_words

    async def extract(self, turns: Sequence[Turn], context: Sequence[Turn | str] = ()) -> list[ExtractedNote]:
        if len(turns) > _INLINE_TURNS:
            return await asyncio.to_thread(self.extract_sync, turns, context)
        return self.extract_sync(turns, context)

    # ------------------------------------------------------------------ sync core
    def extract_sync(self, turns: Sequence[Turn], context: Sequence[Turn | str] = ()) -> list[ExtractedNote]:
        """:meth:`extract` without the event loop (pure CPU, about a millisecond a turn)."""
        history: list[tuple[str | None, str, str | None]] = []  # (speaker, text, turn id)
        for item in context:
            speaker, text = _context_speaker(item)
            history.append((speaker, text, item.id if isinstance(item, Turn) else None))
        notes: list[ExtractedNote] = []
        for turn in turns:
            notes.extend(self.extract_turn(turn, history))
            history.append((_speaker_name(turn), turn.content, turn.id))
        return notes

    def extract_turn(self, turn: Turn, history: Sequence[tuple[str | None, str, str | None]] = ()
                     ) -> list[ExtractedNote]:
        """Notes of one turn; ``history`` is (speaker, text, turn id) of the turns before it."""
        name = _speaker_name(turn)
        other = self._other_speaker(turn, name, history)
        text = redact(turn.content or "").replace("’", "'").replace("‘", "'")
        inline = _INLINE_CAPTION.search(text)
        if inline and not (turn.metadata or {}).get("caption"):
            # "[shares an image: ...]" written into the text: treat it as the caption
            text = _INLINE_CAPTION.sub(" ", text).strip()
            turn = Turn(id=turn.id, user_id=turn.user_id, content=turn.content, role=turn.role, speaker=turn.speaker,
                        timestamp=turn.timestamp, session_id=turn.session_id, project=turn.project,
                        metadata={**(turn.metadata or {}), "caption": inline.group(1)})
        group = _GROUP_RE.search(text)
        if group:
            word = group.group("g").lower()
            we = f"{_possessive(name)} {word}" if word in ("family", "team", "group", "class", "club", "band",
                                                           "crew") else f"{name} and {_possessive(name)} {word}"
        elif other:
            we = f"{name} and {other}"
        else:
            we = f"{_possessive(name)} group"
        anchor = turn.timestamp
        notes: list[ExtractedNote] = []
        if turn.speaker is None and turn.role == "user":
            notes = self._session_notes(text, turn, anchor)
            answer = self._answer_note(turn, text, name, None, _Rewriter(name, None, "the team", we_singular=True),
                                       history)
            if answer is not None and not notes:
                notes = [answer]
            return notes
        rewrite = _Rewriter(name, other, we)
        for raw in _split_sentences(text):
            note = self._sentence_note(raw, turn, name, other, rewrite, anchor)
            if note is None:
                continue
            if notes and self._continues(raw) and len(notes[-1].content) < 240:
                prev = notes[-1]
                body = note.content.removeprefix(f"{name} said ")
                merged = prev.content.rstrip(".") + "; " + _lower_first(body, (name, other or ""), turn.content)
                notes[-1] = ExtractedNote(merged, prev.type, max(prev.importance, note.importance), prev.confidence,
                                          prev.source_ids, prev.event_date or note.event_date,
                                          tuple(dict.fromkeys(prev.entities + note.entities)),
                                          prev.commitment or note.commitment, prev.category or note.category)
                continue
            notes.append(note)
        answer = self._answer_note(turn, text, name, other, rewrite, history)
        if answer is not None and all(n.content.startswith(f"{name} said ") for n in notes):
            # the answer with its question replaces the answer's context-free fragments
            notes = [answer] + [n for n in notes if not n.content.startswith(f"{name} said ")]
        caption = self._caption_note(turn, name, anchor)
        if caption is not None:
            notes.append(caption)
        return notes

    # ------------------------------------------------------------------ pieces
    @staticmethod
    def _other_speaker(turn: Turn, name: str, history: Sequence[tuple[str | None, str, str | None]]) -> str | None:
        meta = turn.metadata or {}
        for key in ("other_speaker", "addressee"):
            if isinstance(meta.get(key), str) and meta[key]:
                return str(meta[key])
        participants = meta.get("participants") or meta.get("speakers")
        if isinstance(participants, Sequence) and not isinstance(participants, str):
            others = [str(p) for p in participants if str(p) != name]
            if len(others) == 1:
                return others[0]
        for speaker, _, _ in reversed(history):
            if speaker and speaker != name and speaker not in ("The user", "The assistant"):
                return speaker
        return None

    @staticmethod
    def _continues(raw: str) -> bool:
        """A sentence that leans on the previous one ("It was so powerful.")."""
        s = _clean_sentence(raw)
        return bool(re.match(r"^(?:it|it's|that|that's|this|they|they're|there|he|she|which|and|but)\b", s, re.I)) \
            and len(s.split()) <= 14

    def _sentence_note(self, raw: str, turn: Turn, name: str, other: str | None, rewrite: _Rewriter,
                       anchor: datetime | None) -> ExtractedNote | None:
        sentence = _clean_sentence(raw)
        if not sentence or is_filler(sentence) or _PURE_PROMPTS.match(sentence):
            return None
        if sentence.endswith("?") or _WH_START.match(sentence) and not _FIRST_PERSON.match(sentence):
            statement = _statement_of_question(sentence)
            if statement is None:
                return None
            sentence = statement
        if len(_content_words(sentence)) < self.min_content_words:
            return None
        sentence = re.sub(r"^(?:please\s+)?(?:remind|ping|nudge)\s+me\s+(to|about|that)\b", r"I want to be reminded \1",
                          sentence, flags=re.I)
        shared = _SHARED_PIC.match(sentence)
        if shared:
            sentence = f"I shared a photo of {shared.group('what')}"
        m = _SUBJECTLESS.match(sentence)
        if m and not _FIRST_PERSON.match(sentence):
            verb = m.group("verb").lower()
            if verb in ("going to", "planning", "thinking", "working", "heading", "hoping", "looking forward",
                        "currently", "still", "off to"):
                sentence = "I'm " + sentence[0].lower() + sentence[1:]
            elif verb == "been":
                sentence = "I've " + sentence[0].lower() + sentence[1:]
            else:
                sentence = "I " + sentence[0].lower() + sentence[1:]
        first_person = bool(_FIRST_PERSON.search(sentence))
        if not first_person and _IMPERATIVE.match(sentence):
            return None  # advice or encouragement, not a fact about anyone
        future = is_future(sentence)
        dated, dates = rewrite_dates(sentence, anchor, future=future)
        note_type = self._classify(sentence, dates, future)
        content = rewrite(dated)
        reported = not first_person
        if reported:
            if _SECOND_PERSON.search(sentence) and other is None:
                return None  # "you" with nobody to name: not self-contained
            content = f"{name} said {_lower_first(content, (name, other or ''), turn.content)}"
            if note_type is MemoryType.EVENT:
                note_type = MemoryType.FACT
        if note_type is MemoryType.EVENT and not dates and anchor is not None:
            content = _finish(content)[:-1] + f" (mentioned on {format_day(anchor.date())})"
        content = _finish(content)
        if len(content) < 8:
            return None
        entities = tuple(dict.fromkeys([name] + regex_entities(dated)))
        score = self.gate.score(sentence).score
        importance = self._importance(note_type, score, dates, entities, sentence, reported)
        commitment = self._commitment(note_type, content, name, other, dates, sentence) \
            if note_type is MemoryType.COMMITMENT else None
        event_date = dates[0].iso if dates else None
        return ExtractedNote(content=content, type=note_type, importance=importance,
                             confidence=0.5 if reported else 0.7, source_ids=(turn.id,), event_date=event_date,
                             entities=entities, commitment=commitment)

    # ------------------------------------------------------------------ the session's user
    def _session_notes(self, text: str, turn: Turn, anchor: datetime | None) -> list[ExtractedNote]:
        """Notes of a turn of an assistant session's user (role ``user``, no speaker name)."""
        rewrite = _Rewriter("The user", None, "the team", we_singular=True)
        notes: list[ExtractedNote] = []
        kept = False  # whether the previous sentence gave a note
        text = _FENCED.sub("\n", text)  # pasted code, configs and logs are not statements
        text = "\n".join(line for line in text.split("\n") if not _INDENTED.match(line))
        for raw in _split_sentences(text):
            if _CODE_OR_LOG.match(raw.strip()) or _symbol_heavy(raw):
                kept = False
                continue
            if kept and self._continues(raw) and len(notes[-1].content) < 240:
                prev = notes[-1]
                more = _finish(_session_grammar(rewrite(_clean_sentence(raw, keep_code=True))))
                if len(more) > 1:
                    notes[-1] = replace(prev, content=prev.content.rstrip(".") + "; " + more[:1].lower() + more[1:])
                continue
            note = self._session_note(raw, turn, rewrite, anchor)
            kept = note is not None
            if note is not None:
                notes.append(note)
        return notes

    def _session_note(self, raw: str, turn: Turn, rewrite: _Rewriter, anchor: datetime | None) -> ExtractedNote | None:
        """A note of one sentence of an assistant session's user (see "The session's user" in the module doc)."""
        sentence = _clean_sentence(raw, keep_code=True)
        while True:  # "Remember this: ...", "FYI, ...": the label is not part of the fact
            label = _LABEL.match(sentence)
            if label is None or not label.group("body").strip():
                break
            sentence = _upper_first(label.group("body").strip())
        if not sentence or is_filler(sentence) or _PURE_PROMPTS.match(sentence):
            return None
        sentence = _BEFORE_WE_START.sub("", sentence).strip()
        if not sentence or _FRAMING.match(sentence.rstrip(".!")):
            return None
        if len(_content_words(sentence)) < self.min_content_words:
            return None
        if not sentence.endswith("?"):
            for category, body in (_warning_body(sentence), _instruction_body(sentence, anchor)):
                if category is not None and len(_content_words(body)) >= self.min_content_words:
                    return self._rule_note(category, body, turn, rewrite)
            decision = _session_decision(sentence)
            if decision is not None:
                return self._fact_note(decision, turn, rewrite, anchor, category="decision",
                                       floor=DECISION_IMPORTANCE, past=True)
            goal = _goal_body(sentence)
            if goal is not None:
                return self._goal_note(goal, turn, rewrite, anchor)
        if sentence.endswith("?") or _WH_START.match(sentence) and not _FIRST_PERSON.match(sentence) \
                and not re.match(r"^(?:don'?t|do not)\b", sentence, re.I):
            statement = _statement_of_question(sentence)
            if statement is None:
                return None
            sentence = statement
        sentence = _REMIND.sub(lambda m: f"I want to be reminded {m.group(1) or m.group(2)}", sentence)
        if _CHATTER.match(sentence) or _IMPERATIVE.match(sentence) or _REQUEST.match(sentence):
            return None  # thinking aloud, advice, or a request for now ("Show me the diff")
        first_person = bool(_FIRST_PERSON.search(sentence))
        if not first_person:
            if _VAGUE_SUBJECT.match(sentence):
                return None  # "It works now": not a self-contained fact
            if _HAZARD.search(sentence):
                return self._rule_note("warning", sentence, turn, rewrite)
            if _RULE.search(sentence) and not find_dates(sentence, anchor):
                return self._rule_note("instruction", sentence, turn, rewrite)
        return self._fact_note(sentence, turn, rewrite, anchor)

    def _rule_note(self, category: str, body: str, turn: Turn, rewrite: _Rewriter) -> ExtractedNote:
        """A warning or standing instruction, kept in the words (and the mood) it was given in."""
        # no date rewriting: "on a Friday" in a warning is a habit, not a date
        content = _finish(_session_grammar(rewrite(body)))
        entities = tuple(dict.fromkeys(regex_entities(body)))
        importance = max(WARNING_IMPORTANCE + 1, self._importance(MemoryType.INSIGHT, self.gate.score(body).score, (),
                                                                  entities, body, False))
        return ExtractedNote(content=content, type=MemoryType.INSIGHT, importance=min(10, importance),
                             confidence=0.9, source_ids=(turn.id,), entities=("The user",) + entities,
                             category=category)

    def _goal_note(self, goal: str, turn: Turn, rewrite: _Rewriter, anchor: datetime | None) -> ExtractedNote:
        """The user's (or the team's) current goal: an open commitment the next goal replaces."""
        dated, dates = rewrite_dates(goal, anchor, future=True)
        content = _finish(_session_grammar(rewrite(dated)))
        entities = tuple(dict.fromkeys(regex_entities(goal)))
        due = dates[0] if dates else None
        what = re.sub(r"^(?:The user's|The team's|The)\s+(?:[\w-]+\s+){0,3}?(?:goal|objective|aim|target|priority|"
                      r"focus)\b[^,]*?\bis\s+(?:to\s+)?", "", content).rstrip(".")
        commitment = Commitment(what=what or content.rstrip("."), who=None,
                                due_at=datetime.combine(due.date, time(0, 0), tzinfo=UTC) if due else None,
                                due_text=due.text if due else None)
        return ExtractedNote(content=content, type=MemoryType.COMMITMENT, importance=GOAL_IMPORTANCE,
                             confidence=0.8, source_ids=(turn.id,), event_date=due.iso if due else None,
                             entities=("The user",) + entities, commitment=commitment, category="goal")

    def _fact_note(self, sentence: str, turn: Turn, rewrite: _Rewriter, anchor: datetime | None, *,
                   category: str | None = None, floor: int = 0, past: bool = False) -> ExtractedNote | None:
        """A statement of the session's user: about themselves, the team, the project or a person."""
        name = "The user"
        first_person = bool(_FIRST_PERSON.search(sentence))
        before = bool(_PAST_WORDS.search(sentence) or _PAST_VERB.search(sentence)) and not _TO_VERB.search(sentence)
        future = not past and (is_future(sentence) or not before)
        dated, dates = rewrite_dates(sentence, anchor, future=future)
        note_type = MemoryType.FACT if category == "decision" else self._classify(sentence, dates, future)
        recurring = bool(_RECURRING.search(sentence))
        upcoming = [d for d in dates if d.granularity == "day" and (anchor is None or d.date >= anchor.date())]
        if category is None:
            if _SESSION_COMMITMENT.search(sentence) or upcoming and future and not recurring:
                note_type = MemoryType.COMMITMENT
            elif note_type is MemoryType.EVENT and (recurring or not dates):
                note_type = MemoryType.FACT
            elif _SESSION_PREFERENCE.search(sentence):
                note_type = MemoryType.PREFERENCE
        content = _finish(_session_grammar(rewrite(dated)))
        if len(content) < 8:
            return None
        entities = tuple(dict.fromkeys(([name] if first_person else []) + regex_entities(dated)))
        verdict = self.gate.score(sentence)
        if category is None and verdict.score < self.gate.threshold and len(_split_sentences(turn.content)) > 1:
            # the sentence alone would not pass the gate: chatter inside a longer turn (a one-sentence
            # turn passed the gate already, with its context: "Emil's birthday is on 8 October.")
            return None
        importance = self._importance(note_type, verdict.score, dates, entities, sentence, False)
        durable = {"technical", "project", "ownership", "entities", "decision"} & set(verdict.signals)
        floor = max(floor, _SESSION_FLOORS.get(note_type, 5), 6 if durable else 0)
        commitment = None
        if note_type is MemoryType.COMMITMENT:
            commitment = self._commitment(note_type, content, name, None, upcoming or dates, sentence)
        event_date = (upcoming or dates)[0].iso if dates else None
        importance = min(SESSION_MAX_IMPORTANCE, max(floor, importance))
        return ExtractedNote(content=content, type=note_type, importance=importance, confidence=0.8, source_ids=(turn.id,), event_date=event_date, entities=entities,
                             commitment=commitment, category=category)

    @staticmethod
    def _classify(sentence: str, dates: Sequence[ResolvedDate], future: bool) -> MemoryType:
        if _STRONG_COMMITMENT.search(sentence) or _COMMITMENT.search(sentence) and (dates or re.search(
                r"\b(?:you|your)\b", sentence, re.I)):
            return MemoryType.COMMITMENT
        if _TASK.search(sentence):
            return MemoryType.TASK
        if _INSIGHT.search(sentence):
            return MemoryType.INSIGHT
        past = bool(_PAST.search(sentence))
        if dates and past:
            return MemoryType.EVENT
        if _PREFERENCE.search(sentence):
            return MemoryType.PREFERENCE
        if _RELATIONSHIP.search(sentence):
            return MemoryType.RELATIONSHIP
        if past or dates and not future:
            return MemoryType.EVENT
        return MemoryType.FACT

    @staticmethod
    def _importance(note_type: MemoryType, score: float, dates: Sequence[ResolvedDate], entities: Sequence[str],
                    sentence: str, reported: bool) -> int:
        base = {MemoryType.COMMITMENT: 6, MemoryType.TASK: 5, MemoryType.RELATIONSHIP: 5,
                MemoryType.PREFERENCE: 5, MemoryType.INSIGHT: 4, MemoryType.EVENT: 4}.get(note_type, 3)
        value = base + round(score * 3)
        if dates:
            value += 1
        if len(entities) > 1:
            value += 1
        if _STRONG_EMOTION.search(sentence):
            value += 1
        if reported:
            value -= 2
        return max(1, min(10, value))

    @staticmethod
    def _commitment(note_type: MemoryType, content: str, name: str, other: str | None,
                    dates: Sequence[ResolvedDate], sentence: str) -> Commitment:
        what = content.rstrip(".")
        m = re.search(rf"^{re.escape(name)}\s+(?:will|is going to|is planning to|plans to|promises to|promised to|"
                      rf"promises|needs to|has to)\s+(?P<what>.+)$", what)
        if m:
            what = m.group("what")
        else:
            r = re.search(rf"(?:remind\s+{re.escape(name)}|wants to be reminded)\s+(?:to|about)\s+(?P<what>.+)$", what,
                          re.I)
            if r:
                what = r.group("what")
        for d in dates:
            what = what.replace(d.phrase, "").replace(d.human, "")
        what = _SPACES.sub(" ", what).strip(" ,;")
        who = other if other and other in content.replace(f"{name} and {other}", "") else None
        due = dates[0] if dates else None
        due_at = datetime.combine(due.date, time(0, 0), tzinfo=UTC) if due else None
        return Commitment(what=what or content, who=who, due_at=due_at, due_text=due.text if due else None)

    def _answer_note(self, turn: Turn, text: str, name: str, other: str | None, rewrite: _Rewriter,
                     history: Sequence[tuple[str | None, str, str | None]]) -> ExtractedNote | None:
        """A short answer ("Yes, a dog named Max!") kept with the question it answers."""
        if not history:
            return None
        speaker, previous, previous_id = history[-1]
        if speaker == name or not previous.rstrip().endswith("?"):
            return None
        first = _split_sentences(text)[0] if text.strip() else ""
        short = len(text.split()) <= 12
        yes_no = bool(re.match(r"^(?:yes|yeah|yep|yup|no|nope|nah|sure|definitely|of course|absolutely|not really)\b",
                               first.strip(), re.I))
        if not (short or yes_no and len(text.split()) <= 25) or is_filler(text):
            return None
        question = _split_sentences(previous)[-1].strip()
        answer = rewrite_dates(_clean_sentence(text) or text.strip(), turn.timestamp)[0]
        if len(_content_words(question + " " + answer)) < 3:
            return None
        asker = speaker or other or "someone"
        content = _finish(f"Asked by {asker} \"{question}\", {name} answered: {rewrite(answer).rstrip('.!')}")
        sources = (previous_id, turn.id) if previous_id else (turn.id,)
        return ExtractedNote(content=content, type=MemoryType.FACT, importance=3, confidence=0.6,
                             source_ids=sources, entities=(name,) + ((asker,) if speaker else ()))

    @staticmethod
    def _caption_note(turn: Turn, name: str, anchor: datetime | None) -> ExtractedNote | None:
        meta = turn.metadata or {}
        caption = meta.get("caption") or meta.get("blip_caption")
        if not isinstance(caption, str) or not caption.strip():
            return None
        caption = redact(caption.strip().rstrip("."))
        if not re.match(r"^(?:a|an|the)\s+(?:photo|photograph|photography|picture|image|screenshot|pic|drawing)\b",
                        caption, re.I):
            caption = f"a photo of {caption}"
        when = f" on {format_day(anchor.date())}" if anchor else ""
        return ExtractedNote(content=_finish(f"{name} shared {caption}{when}"), type=MemoryType.EVENT, importance=3,
                             confidence=0.6, source_ids=(turn.id,),
                             event_date=anchor.date().isoformat() if anchor else None, entities=(name,))
