"""The memory-value signals of a text: what the capture gate admits turns by and the
offline extractor rates importance with.

Cheap by design (the gate runs it on every turn: p99 well under 1 ms without
NER): every pattern is compiled once at import, and this module imports
nothing heavy. The signals and weights:

=====================  ======  ===============================================
signal                 weight  examples
=====================  ======  ===============================================
commitment             0.4     I'll, I promise, remind me to, don't forget
preference             0.3     I prefer, I like, I always, my favourite
temporal               0.2     tomorrow, next week, at 3pm, last Friday
specific_day           +0.1    one named day (Friday, tomorrow, the 24th, May 31), on top of temporal
entities               0.2     capitalised names mid-sentence, Dr. Smith, NER
factual                0.2     I am a, I work at, I live in, I have, I went
possessive             0.2     my doctor, our project (no antecedent)
emotional              0.1     I'm worried, I'm excited, this is important
novelty                0.3 x   share of names not seen in recent turns: entities,
                               and the paths, file names, `code` and
                               snake_case identifiers a coding prompt names
=====================  ======  ===============================================

and, for what a coding agent must not forget:

=====================  ======  ===============================================
signal                 weight  examples
=====================  ======  ===============================================
instruction            0.4     from now on, always/never, don't, make sure,
                               please use, watch out, heads up, whenever
decision               0.3     we decided, chose, settled on, going with
ownership              0.3     owns, maintains, is led by, tech lead, on-call
goal                   0.3     the goal is, our target, I'm trying to
project                0.3     the repo uses, our CI runs on, the API is
technical              0.3     `code`, paths, versions, hosts, ports, sizes
deadline               0.2     due, by the 15th, has to be ready by, the review
                               is on March 12, the plumber is coming
=====================  ======  ===============================================

and, for short statements of how things are and how they changed (each only in a
statement: never in a question or a request such as "run the tests now"):

=====================  ======  ===============================================
signal                 weight  examples
=====================  ======  ===============================================
change                 0.3     I quit coffee, we renamed develop to trunk, I no
                               longer play, I'm not vegan anymore, switched,
                               moved to, gave up, staging now points to db-7
habit                  0.2     every morning, on weekends, weekly, twice a week,
                               in the evenings, runs at midnight
statement              0.1     a first-person present-tense statement of three
                               words or more: I take the bus to work, we use npm
amount                 0.3     a sum of money: 5000 euros, $40 a month
=====================  ======  ===============================================

Novelty is only computed once the fast signals reach 0.2 (in the daemon, against the
session's recent turns it keeps: :mod:`dexai_memory.capture.recent`). Filler ("ok",
"thanks", "got it", emoji only) scores exactly 0. The daemon may add one more signal,
semantic divergence from the recent turns (an embedding distance, off the hooks' path:
:mod:`dexai_memory.capture.divergence`).

:func:`is_filler` and :func:`regex_entities` are the text features the capture
gate and the offline extractor share; :class:`SignalScorer` adds the signals up
(:class:`~dexai_memory.capture.gate.Gate` is the scorer built from the settings).
Entities are regular-expression matches (capitalised runs not at a sentence start,
acronyms, titles such as "Dr. Smith"): no NER model is loaded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from ..config import DEFAULT_GATE_THRESHOLD
from ..text.words import split_words

__all__ = [
    "NOVELTY_MIN_SCORE", "STATEMENT_ONLY", "WEIGHTS", "GateResult", "SignalScorer", "is_filler",
    "is_question_or_request", "regex_entities", "session_cue",
]

#: Score added by each signal; novelty is multiplied by its weight.
WEIGHTS: dict[str, float] = {
    "commitment": 0.4,
    "preference": 0.3,
    "temporal": 0.2,
    "entities": 0.2,
    "factual": 0.2,
    "possessive": 0.2,
    "emotional": 0.1,
    "novelty": 0.3,
    "instruction": 0.4,
    "decision": 0.3,
    "ownership": 0.3,
    "goal": 0.3,
    "project": 0.3,
    "technical": 0.3,
    "deadline": 0.2,
    "specific_day": 0.1,
    "change": 0.3,
    "habit": 0.2,
    "statement": 0.1,
    "amount": 0.3,
}
#: Signals that only count in a statement: a question or a request ("move the meeting to 4pm",
#: "run it now") says nothing about how things are.
STATEMENT_ONLY = frozenset(("change", "habit", "statement", "amount"))
#: Fast-signal score from which entity novelty is computed.
NOVELTY_MIN_SCORE = 0.2

class _Source(NamedTuple):
    """A signal pattern before it is compiled (each is compiled once, lower-cased: see :func:`_lowered`)."""

    pattern: str
    flags: int = 0


_I = r"\b(?:I|we)"
_ADV = r"(?:\s+(?:really|also|just|always|never|still|usually|often|sometimes|totally|definitely|actually|"
_ADV += r"finally|recently|already|even|kinda|kind of|sort of|truly|absolutely|honestly|so|all))*"

_IRREGULAR_PAST = (
    "went|got|made|took|saw|met|had|began|bought|built|ran|won|lost|found|wrote|did|gave|came|left|heard|"
    "taught|sang|drove|flew|ate|became|broke|brought|caught|chose|drew|fell|forgot|grew|kept|knew|rode|sold|"
    "sent|spent|stood|swam|told|wore|read|paid|put|set|quit|spoke|sat|slept|woke|threw|won|held|led|lent|felt|"
    "thought|tried|dug|hit|cut|lit|meant|dealt"
)

#: Each signal as written (case-insensitive); compiled once, by :func:`_lowered`, for lower-cased text.
_SIGNAL_SOURCES: dict[str, _Source] = {
    "commitment": _Source(
        r"\b(?:I|we)(?:'ll|\s+will|\s+shall)\b|\bI\s+promise\b|\bremind\s+(?:me|us)\b|\bdon'?t\s+(?:let\s+me\s+)?forget\b|"
        r"\b(?:I|we)(?:'m|\s+am|'re|\s+are)\s+(?:going\s+to|gonna|planning\s+(?:to|on))\b|\b(?:I|we)\s+plan\s+to\b|"
        r"\b(?:I|we)\s+(?:need|have|got)\s+to\b|\bI\s+must\b|\bI\s+(?:committed|agreed)\s+to\b|\bmake\s+sure\s+(?:to|I)\b|"
        r"\b(?:to-?do|deadline|due\s+(?:on|by|date))\b|\b(?:I|we)\s+promised\b|^\s*(?:gonna|going\s+to|planning\s+to)\b|\blet'?s\s+(?:meet|catch\s+up|schedule)\b",
        re.I,
    ),
    "preference": _Source(
        rf"{_I}{_ADV}\s+(?:like|love|enjoy|prefer|hate|dislike|adore|detest|can'?t\s+stand|don'?t\s+like|"
        rf"(?:always|never)\s+\w+)\b|\bmy\s+fav(?:ou?rite)?s?\b|\b(?:I|we)(?:'m|\s+am|'re|\s+are){_ADV}\s+(?:a\s+)?(?:big\s+|huge\s+)?"
        r"(?:fan\s+of|into|keen\s+on|passionate\s+about|obsessed\s+with|allergic\s+to|(?:a\s+)?(?:type\s+\d\s+)?diabetic|"
        r"vegan|vegetarian|lactose\s+intolerant)\b|\bI'd\s+(?:rather|like)\b|"
        r"\b(?:is|are)\s+my\s+(?:thing|jam|go-to|passion)\b|\b(?:I|we)(?:'d|\s+would)\s+love\s+to\b|"
        rf"{_I}{_ADV}\s+(?:want|wanna|hope|wish|dream|miss)\b|\bmy\s+(?:passion|dream|goal|hobby|hobbies)\b",
        re.I,
    ),
    "temporal": _Source(
        r"\b(?:yesterday|today|tonight|tomorrow|weekend|(?:last|next|this|past|coming)\s+"
        r"(?:week|month|year|time|monday|tuesday|wednesday|thursday|friday|saturday|sunday|morning|night|evening)|"
        r"(?:on|by|until|since)\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
        r"\d+\s*(?:am|pm)|at\s+\d{1,2}(?::\d{2})?|\d{1,2}:\d{2}|\d{4}-\d{2}-\d{2}|"
        r"(?:\d+|a|an|one|two|three|four|five|six|few|couple\s+of)\s+(?:days?|weeks?|months?|years?)\s+ago|"
        r"in\s+(?:\d+|a|an|one|two|three|a\s+few)\s+(?:days?|weeks?|months?|years?)|"
        r"(?:january|february|march|april|june|july|august|september|october|november|december)|"
        r"(?:19|20)\d{2}|midnight|noon|deadline|birthday|anniversary|recently|lately|soon|since\s+(?:we|I)\s+last|the\s+other\s+day|ago|years?\s+old|"
        r"the\s+\d{1,2}(?:st|nd|rd|th)|end\s+of\s+(?:the\s+)?(?:day|week|month|quarter|year))\b",
        re.I,
    ),
    "factual": _Source(
        rf"\bI(?:'m|\s+am){_ADV}(?:\s+not)?\s+(?:a|an|the|from|at|in|on|married|single|divorced|engaged|pregnant|retired|"
        r"vegan|vegetarian|\d+|studying|working|learning|training|volunteering|taking|starting|moving|writing|"
        r"reading|building|doing|running|playing|teaching)\b|"
        rf"{_I}{_ADV}\s+(?:work|live|have|own|study|teach|volunteer|take|go|play|run|do|make|use|help|write|"
        r"read|paint|cook|bake|train|practice|practise|walk|hike|visit|attend|spend|try|collect|keep|"
        r"drink|eat|commute|drive|cycle|bike|ride|wear|speak|smoke|swim|meditate|sleep|wake|"
        r"(?:was|were)\s+born|grew\s+up|"
        r"'ve\s+(?:been|got|had|started|finished|decided|always|never)|\w{3,}ed|" + _IRREGULAR_PAST + r")\b|"
        rf"\bI(?:'m|\s+am){_ADV}\s+\w{{2,}}ing\b|\b(?:I|we)(?:'ve|\s+have|'d|\s+had)\s+(?:been|got|had|\w{{3,}}ed|done|made|taken|seen|"
        r"met|gone|bought|built|won|found|written|read|started|learned|learnt)\b|"
        r"\b(?:I|we)\s+(?:was|were)\s+(?:a|an|the|in|at|on|born|raised|\w{3,}ing|\w{3,}ed)\b|"
        r"(?:^|[.!?]\s+)(?:just\s+|recently\s+|finally\s+|also\s+)?(?:been|got|joined|started|picked|finished|went|"
        r"had|made|took|bought|visited|tried|learned|signed\s+up)\b|"
        r"\bmy\s+name\s+is\b|\bmy\s+(?:[a-z]+\s+){1,2}(?:now\s+)?(?:is|are)\s+(?:a|an|the|on|in|at|with|from|called|named)\b|\bI(?:'ve|\s+have)\s+(?:got|been)\b|\b(?:I|we)\s+(?:just\s+)?(?:started|joined|moved|graduated|adopted)\b",
        re.I,
    ),
    # "my doctor", "our project": any possessed noun except set phrases ("my god", "my pleasure")
    "possessive": _Source(
        r"\b(?:my|our)\s+(?!(?:god|gosh|goodness|pleasure|bad|fault|turn|mind|heart|thoughts|apologies|"
        r"condolences|word|bet|guess|point|take|two\s+cents)\b)[a-z][a-z\-]{2,}",
        re.I,
    ),
    "emotional": _Source(
        r"\b(?:I(?:'m|\s+am|\s+was|\s+feel|\s+felt)|we(?:'re|\s+are|\s+were))" + _ADV +
        r"\s+(?:so\s+|really\s+|very\s+|super\s+|a\s+bit\s+|kinda\s+)?"
        r"(?:worried|excited|scared|afraid|anxious|nervous|stressed|sad|upset|happy|thrilled|proud|grateful|"
        r"thankful|heartbroken|devastated|overwhelmed|depressed|lonely|angry|frustrated|relieved|terrified|"
        r"ecstatic|blessed|hurt|exhausted|burnt\s+out|burned\s+out)\b|"
        r"\b(?:this|it|that)\s+(?:is|was)\s+(?:really\s+|so\s+|very\s+)?(?:important|crucial|critical|urgent|"
        r"a\s+big\s+deal|life-changing|huge)\b|\b(?:means|meant)\s+(?:a\s+lot|so\s+much|the\s+world)\b|"
        r"\b(?:passed\s+away|died|diagnosed|divorce|breakup|broke\s+up|miscarriage|funeral|hospital|accident|"
        r"love|loved|passion|passionate|joy|proud|scary|scared|tough|rough|struggl\w*|inspir\w*|grateful|"
        r"thankful|amazing|awesome|incredible|exciting|excited|thrilled|stressful|stressed|lonely|heartbreaking|"
        r"meaningful|rewarding|special|miss|missed|worry|worried|fear|afraid|nervous|anxious|blessed)\b",
        re.I,
    ),
    # standing orders, warnings and gotchas: at a sentence start, or a standing marker anywhere
    "instruction": _Source(
        r"(?:^|[.!?;:\n]\s*)(?:please\s+)?(?:always|never|don'?t|do\s+not|make\s+sure|be\s+sure|avoid|careful|"
        r"be\s+careful|be\s+aware|watch\s+out|heads[\s-]up|warning|gotcha|beware|remember\s+to|note\s+that)\b|"
        r"\b(?:from\s+now\s+on|going\s+forward|from\s+here\s+on|whenever|every\s+time|(?:before|after)\s+(?:every|each|any)|"
        r"in\s+this\s+(?:repo|project|codebase)|instead\s+of|rather\s+than|no\s+more|at\s+most|default\s+to|"
        r"please\s+(?:use|keep|prefer|answer|write|name)|,\s+(?:no|not|never)\s+\w+)\b",
        re.I,
    ),
    "decision": _Source(
        r"\b(?:decided|decision|chose|chosen|opted|settled\s+on|agreed\s+(?:to|on|that)|(?:going|went)\s+with|"
        r"let'?s\s+go\s+with|switching\s+(?:to|from)|switched\s+to)\b",
        re.I,
    ),
    "ownership": _Source(
        r"\b(?:owns|owner|maintains|maintainer|responsible\s+for|in\s+charge\s+of|leads|led\s+by|tech\s+lead|"
        r"team\s+lead|manager|on-call|on\s+call|reviews|belongs\s+to|approves?|cofounder|co-founder|"
        r"(?:took|takes|taking|has\s+taken)\s+over|(?:on|in|joined|part\s+of)\s+the\s+(?:[\w-]+\s+){1,2}(?:team|squad|shift|"
        r"crew|group|committee|board|band|club|choir|league))\b",
        re.I,
    ),
    "goal": _Source(r"\b(?:goal|objective|aim|target|working\s+towards?|trying\s+to)\b", re.I),
    # a statement about the project or its environment
    "project": _Source(
        r"\b(?:the|this|our)\s+(?:[\w-]+\s+){0,2}(?:repo|repository|project|codebase|app|service|api|cluster|server|"
        r"database|db|pipeline|build|ci|frontend|backend|config|bucket|index|pool|worker|queue|cache|branch|suite|"
        r"system|gateway|schema|site|sdk|cli|stack|infra|environment|staging|prod|production)s?\s+"
        r"(?:(?:for|of)\s+(?:the\s+)?(?:[\w-]+\s+){1,3})?(?:is|are|uses?|runs?|lives?|has|have|needs?|handles?|"
        r"targets?|takes?|keeps?|sits?|goes|depends|was|were|expires?)\b",
        re.I,
    ),
    # names a machine reads: `code`, paths, files, versions, hosts, sizes and limits
    "technical": _Source(
        r"`[^`\n]{1,200}`|(?:^|[\s(])[~.]{0,2}/?[\w.-]+/[\w.<>*-]*|\b[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|rb|java|kt|"
        r"md|txt|toml|ya?ml|json|lock|sh|sql|cfg|ini|conf|graphql|html|css|production)\b|\.env\b|\b\d+(?:\.\d+)+\b|"
        r"\b\d+\s*(?:[a-z]+\s+)?(?:mb|gb|tb|kb|ms|seconds?|minutes?|hours?|days?|requests?|rps|%|percent|nodes?|replicas?|cores?|"
        r"lines?|jobs?|ids?|workers?|agents?)\b|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:io|com|net|org|internal|local|dev)\b|"
        r"\bport\s+\d+|https?://|\b(?:python|node|postgres|java|go|django|rails|react|android|ios)\s+\d",
        re.I,
    ),
    "deadline": _Source(
        r"\b(?:due|deadline|expires?|(?:by|on)\s+the\s+(?:\d{1,2}(?:st|nd|rd|th)|end\s+of)|(?:has|have)\s+to\s+be|"
        r"must\s+(?:be|go)|by\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight|noon|eod)|"
        r"(?:appointment|interview|meeting|flight|call|review|exam|offsite|dinner|lunch|party|wedding|trip|visit|"
        r"haircut|test)\b[^.!?]{0,40}\b(?:on|at|next|this|tomorrow|in)|(?:is|are)\s+coming\s+(?:on|at|next|this|tomorrow)|"
        r"(?:is|are)\s+on\s+(?:the\s+\d|monday|tuesday|wednesday|thursday|friday|saturday|sunday|jan|feb|mar|apr|"
        r"may|jun|jul|aug|sep|oct|nov|dec))\b",
        re.I,
    ),
    # a change of how things are: a new value, an end, a rename, a move ("now" only after a subject that
    # is not "it" / "that": "it works now" is an acknowledgement)
    "change": _Source(
        r"(?<!\bto\s)(?<!then\s)(?<!\band\s)(?<!please\s)(?<![(\[])\b(?:quit|quits|quitting)\b|\b(?:renamed|renaming|no\s+longer|not\b[^.!?,;]{0,40}\bany\s?more|anymore|"
        r"switched|moved\s+(?:to|from|in|into|out|over|back|away|up|down)|(?:given|gave|giving)\s+up|"
        r"stopped\s+\w+ing|replaced|rescheduled|postponed|"
        r"changed\s+(?:jobs?|teams?|careers?|(?:my|our)\s+mind|(?:(?:my|our|the)\s+)?[\w-]+\s+(?:\w+\s+)?(?:to|from))|"
        r"(?<!\bit\s)(?<!that\s)(?<!this\s)(?<!there\s)(?:is|are|am)\s+now|"
        r"(?<!\bit)(?<!that)(?<!there)(?:'s|'re)\s+now|(?<!\bit\s)(?<!that\s)(?<!this\s)now\s+(?:is|are|runs?|points?|uses?|lives?|works?|goes|meets?|starts?|"
        r"happens?|takes?|has|have|owns?|leads?|handles?|belongs?|sits?|costs?|drives?|ships?|deploys?)|"
        r"these\s+days)\b|"
        r"^(?:i|we|i'm|we're|my|our)\s+(?!(?:see|get|got|know|understand|think|guess|done|back|ready|good|fine|ok|"
        r"okay|here|sure|confused|stuck|lost|going|gonna|need|want)\b)[^?]*(?<!\bfor)(?<!right)(?<!\bjust)\s+now\s*[.!,]?\s*$",
        re.I,
    ),
    # routines and schedules: how often, at what time of day
    "habit": _Source(
        r"\b(?:every|each)\s+(?:other\s+)?(?:morning|afternoon|evening|night|day|week|month|year|weekend|weekday|"
        r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|sprint|quarter|hour|\d+\s+\w+)|"
        r"\bon\s+(?:the\s+)?(?:weekends|weekdays|mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)|"
        r"\b(?:daily|weekly|monthly|nightly|fortnightly|biweekly|yearly|annually)\b|"
        r"\b(?:once|twice|\w+\s+times)\s+a\s+(?:day|week|month|year)\b|"
        r"\bin\s+the\s+(?:mornings?|afternoons?|evenings?)|\b(?:mornings|evenings|nights)\b|"
        r"\b(?:runs?|starts?|meets?|happens?|is|are|opens?|closes?)\s+(?:now\s+)?at\s+(?:\d|midnight|noon)",
        re.I,
    ),
    # "I take the bus to work", "we use npm": a first-person statement in the present tense (not a
    # thought, a wish, a question or a report on the task at hand: "I think", "I have a question")
    "statement": _Source(
        rf"(?:^|[.!?;]\s+)(?:i|we){_ADV}\s+(?!(?:think|guess|mean|see|know|agree|wonder|suppose|understand|believe|feel|hope|"
        r"want|need|get|got|can|could|would|should|will|might|must|may|did|do|does|don't|dont|didn't|can't|"
        r"cannot|won't|just|am|was|were|\w+ed|" + _IRREGULAR_PAST + r"|"
        r"have\s+(?:a|an|one|two|some|no|another)\s+(?:\w+\s+)?(?:question|idea|issue|problem|error|bug|doubt|"
        r"concern|clue|request|suggestion)))[a-z]{2,}(?:\s+[\w'-]+){1,}|"
        rf"(?:^|[.!?;]\s+)i(?:'m|\s+am){_ADV}\s+(?:learning|studying|training|practicing|practising|volunteering|teaching|"
        r"working\s+(?:as|at|for))\b",
        re.I,
    ),
    "amount": _Source(
        r"[$€£]\s?\d|\b\d[\d,.]*\s*k?\s*(?:euros?|eur|dollars?|usd|gbp|pounds|bucks|yen|francs?|chf|kr|sek|nok|dkk)\b",
        re.I,
    ),
}

def _lowered(source: _Source) -> re.Pattern[str]:
    """The pattern for lower-cased text, without re.I (about twice as fast to match)."""
    if re.search(r"\\[A-Z]", source.pattern):
        raise ValueError(f"upper-case escape in a signal pattern: {source.pattern[:60]}")
    return re.compile(source.pattern.lower())


_SIGNALS = {name: _lowered(source) for name, source in _SIGNAL_SOURCES.items()}

#: A named day (a weekday, tomorrow, the 24th, May 31, 2026-05-31): a statement pinned to one day is an
#: appointment, a deadline or an event, worth keeping on that alone.
_SPECIFIC_DAY = re.compile(
    r"\b(?:yesterday|tomorrow|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"the\s+\d{1,2}(?:st|nd|rd|th)|\d{4}-\d{2}-\d{2}|"
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?|"
    r"\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*)\b")
#: Goodbyes that name a day ("see you tomorrow", "have a good weekend, bye Monday"): nothing to keep.
_SIGN_OFF = re.compile(r"\b(?:see|talk to|catch|speak to)\s+(?:you|ya)\b|\bbye\b|\bhave a (?:nice|good|great)\b|"
                       r"\buntil (?:tomorrow|monday|tuesday|wednesday|thursday|friday)\b")
_TIME_WORDS = (
    "yesterday today tonight tomorrow weekend weekends week weeks month months year years time day days morning "
    "night evening monday tuesday wednesday thursday friday saturday sunday january february march april june "
    "july august september october november december midnight noon deadline birthday anniversary recently lately soon ago "
    "old other last end"
)
#: A signal's regex only runs when the text holds one of its trigger words (cheap set test).
_TRIGGERS: dict[str, frozenset[str]] = {
    "commitment": frozenset(
        "i'll we'll will shall promise remind forget don't dont going gonna planning plan need have got must "
        "committed agreed sure to-do todo deadline due let's lets promised".split()),
    "preference": frozenset("i we i'm we're i'd we'd my is are".split()),
    "temporal": frozenset(_TIME_WORDS.split()),
    "factual": frozenset(
        "i i'm i've i'd we we've we'd my been got joined started picked finished went had made took bought "
        "visited tried learned signed just recently finally also".split()),
    "possessive": frozenset(("my", "our")),
    "emotional": frozenset(
        "worried excited scared afraid anxious nervous stressed sad upset happy thrilled proud grateful thankful "
        "heartbroken devastated overwhelmed depressed lonely angry frustrated relieved terrified ecstatic blessed "
        "hurt exhausted burnt burned important crucial critical urgent deal life-changing huge means meant passed "
        "died diagnosed divorce breakup broke miscarriage funeral hospital accident love loved passion passionate "
        "joy scary tough rough struggle struggles struggled struggling struggling inspire inspired inspiring "
        "inspiration inspires amazing awesome incredible exciting stressful heartbreaking meaningful rewarding "
        "special miss missed worry fear".split()),
    "instruction": frozenset(
        "always never don't dont do make be avoid careful watch heads heads-up warning gotcha beware remember note "
        "now forward here whenever every before after this instead rather no not most default please".split()),
    "decision": frozenset(
        "decided decision chose chosen opted settled agreed going went let's lets switching switched".split()),
    "ownership": frozenset(
        "owns owner maintains maintainer responsible charge leads led lead manager on-call on reviews belongs "
        "approve approves cofounder co-founder over in joined part".split()),
    "goal": frozenset("goal objective aim target working trying".split()),
    "deadline": frozenset(
        "due deadline expire expires by on has have must appointment interview meeting flight call review exam "
        "offsite dinner lunch party wedding trip visit haircut test is are".split()),
    "project": frozenset(
        "repo repos repository project codebase app apps service services api cluster server servers database db "
        "pipeline build ci frontend backend config bucket index pool worker workers queue cache branch suite "
        "system gateway schema site sdk cli stack infra environment staging prod production".split()),
}
_TRIGGERS.update({
    "change": frozenset(
        "quit quits quitting renamed renaming longer anymore any switched moved given gave giving stopped replaced "
        "rescheduled postponed changed now days".split()),
    "habit": frozenset(
        "every each weekends weekdays mondays tuesdays wednesdays thursdays fridays saturdays sundays daily weekly "
        "monthly nightly fortnightly biweekly yearly annually once twice times mornings afternoons evenings nights "
        "morning afternoon evening at".split()),
    "statement": frozenset("i we i'm".split()),
})
#: The technical signal's cues are not words: its regex runs when the text holds a backtick, a slash,
#: a digit or a dot inside a word.
_TECHNICAL_HINT = re.compile(r"[`/\d]|\.\w")
_AMOUNT_HINT = re.compile(r"[$€£\d]")
#: A question: a question mark, or a question word first.
_QUESTION = re.compile(r"\?|^(?:what|why|how|when|where|who|which|whose|can|could|would|should|will|shall|is|are|"
                       r"was|were|do|does|did|have|has|may|might|am|any|anything)\b")
#: A request for now: the text opens with a verb in the imperative (after "ok", "so", "now" ...).
_REQUEST = re.compile(
    r"^(?:please|pls|kindly|let's|lets|run|rerun|re-run|fix|try|show|make|check|add|remove|delete|update|change|use|"
    r"go|open|read|write|create|move|rename|switch|install|test|build|deploy|look|find|explain|tell|give|put|set|"
    r"stop|start|keep|continue|undo|revert|commit|push|merge|do|don't|reschedule|cancel|replace|drop|quit|send|"
    r"call|book|schedule|help|take|get|print|list|refactor|implement|debug|skip|ignore|wait|hold|retry|redo|"
    r"clean|format|lint|review|compare|summarize|summarise|describe|document|generate|search|grep|can|could|"
    r"would|will|remember|note|save|store|forget)\b")
_LEAD_IN = re.compile(r"^(?:(?:ok(?:ay)?|so|and|but|well|oh|hey|yeah|alright|now|then|also|just|great|cool|thanks)"
                      r"\b[\s,.!:;-]*)+")


def is_question_or_request(low: str) -> bool:
    """Whether lower-cased ``low`` asks something or asks for something now (a question, an imperative)
    rather than stating how things are."""
    low = low.strip()
    if _QUESTION.search(low):
        return True
    return bool(_REQUEST.match(_LEAD_IN.sub("", low)))
_DIGIT = re.compile(r"\d")


_FILLER_WORDS = (
    r"ok(?:ay)?|k|kk|thanks?(?:\s+(?:you|so\s+much|a\s+lot))?|thank\s+you(?:\s+(?:so|very)\s+much)?|thx|ty|"
    r"got\s+it|sure(?:\s+thing)?|yes|yeah|yep|yup|no|nope|nah|cool|nice|great|awesome|perfect|sounds\s+good|"
    r"lol|lmao|haha+|hehe+|hmm+|uh+|um+|ah+|oh+|wow|alright|right|fine|good|np|no\s+problem|you'?re\s+welcome|"
    r"hi|hey|hello|bye|goodbye|see\s+you|later|cheers|will\s+do|done|agreed|exactly|indeed|true|yes\s+please|"
    r"no\s+thanks|makes\s+sense|i\s+see|understood|noted|roger|ack|good\s+night|good\s+morning|morning|night"
)
_FILLER = re.compile(rf"^(?:(?:{_FILLER_WORDS})[\s,.!?;:~\-]*)+$", re.I)
#: Text with no letters or digits at all (emoji, punctuation).
_NO_WORDS = re.compile(r"^[\W_]*$")

_TITLE = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Miss|Prof|Sir|Dame|Rev|Capt|Sgt|St)\.?\s+[A-Z][a-z]+")
_CAPITALISED_RUN = re.compile(r"\b[A-Z][\w'’\-]*(?:[ \t]+[A-Z][\w'’\-]*)*")
_SENTENCE_ENDERS = frozenset('.!?\n"“(:;-')
#: Capitalised words that are not names.
_NOT_NAMES = frozenset(
    "I I'm I've I'll I'd OK Ok Okay Yes No Yeah Hey Hi Hello Thanks Thank Wow Oh Ah Lol Haha Congrats Yay "
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June July "
    "August September October November December The A An And But Or So Also Dr Mr Mrs Ms Prof St".split()
)
#: A vocative after a greeting or thanks ("Hey Mel!", "Thanks, Caroline!") is not new information.
_VOCATIVE = re.compile(
    r"\b(?:hey|hi|hello|thanks|thank\s+you|congrats|congratulations|wow|yeah|yes|sure|bye|ok|okay|oh|aw+|"
    r"haha|great|cool|nice|sorry|morning|night)[\s,!.]+(?:[A-Z][a-z]+)\b|,\s*[A-Z][a-z]+\s*[!?.]", re.I
)


_VOCATIVE_HINT = re.compile(r"[,!.]\s*[A-Z]|\b(?:hey|hi|hello|thanks|thank|congrats|congratulations|wow|yeah|yes|"
                            r"sure|bye|ok|okay|oh|aw+|haha|great|cool|nice|sorry|morning|night)\s+[A-Z]", re.I)


def is_filler(text: str) -> bool:
    """True for text with no memory value: acknowledgements, greetings, emoji only."""
    stripped = text.strip()
    return not stripped or bool(_NO_WORDS.match(stripped)) or bool(_FILLER.match(stripped))


def _char_before(text: str, pos: int) -> str:
    """The last non-blank character of ``text`` before ``pos`` ("" at the start).

    Walks back over the blanks only: the text is never sliced, so finding
    entities stays linear in the text (slicing the text before every
    capitalised word made a 5 MB reply take over 35 s).
    """
    i = pos - 1
    while i >= 0 and text[i].isspace():
        i -= 1
    return text[i] if i >= 0 else ""


def regex_entities(text: str) -> list[str]:
    """Named-entity candidates found by regex: titled names ("Dr. Smith"), capitalised
    words that do not start a sentence, and acronyms. Adjacent capitalised words
    are joined ("New York")."""
    if _VOCATIVE_HINT.search(text):
        text = _VOCATIVE.sub(" ", text)
    found: list[str] = [m.group(0) for m in _TITLE.finditer(text)]
    for m in _CAPITALISED_RUN.finditer(text):
        words = [w for w in m.group(0).split() if w not in _NOT_NAMES]
        if not words:
            continue
        before = _char_before(text, m.start())
        if (not before or before in _SENTENCE_ENDERS) and m.group(0).split()[0] == words[0]:
            if not (len(words[0]) > 1 and words[0].isupper()):
                words = words[1:]  # sentence-initial capital: not evidence of a name
        if words:
            found.append(" ".join(words))
    return list(dict.fromkeys(found))


#: What a coding session's user says that lasts, in the terse lower-case words prompts are typed in:
#: a standing order ("always verify and run hooks", "never commit without signing", "ignore lack of
#: backup config", "prompt me for sudo", "lets be cautious"), what they use, have or want ("I use hyper
#: v", "I only want one version, preferably brew", "I dont want unlock to be only a password"), and an
#: order that changes what is installed or set up ("install gh (CLI)", "disable and uninstall the
#: cellular modules of slate", "move the files into projects/Zima", "call it Claude Tmux").
_SESSION_CUE = re.compile(
    r"\b(?:always|never|from now on|by default|every time|whenever|preferabl[ye]|perferabl[ye]|instead of|rather than|"
    r"make sure|be sure|be careful|be cautious|careful with)\b|"
    r"(?:^|[.!?,;]\s*|\b(?:yes|ok|okay|and|also|then)\s+)(?:please\s+)?(?:ignore|install|reinstall|uninstall|remove|disable|"
    r"enable|configure|config|set up|setup|move|rename|migrate|switch to|replace|purge|call it|name it|"
    r"(?:prompt|ask) me|let'?s be|lets be)\b|"
    r"\bI\s+(?:only\s+|really\s+|always\s+|never\s+)?(?:use|have|run|own|want|need|prefer|dont want|don'?t want|do not want|"
    r"sign in|log in|work)\b|"
    # how the user works and writes code: a workflow ("to release, I ...", "release process:", "1. ..."),
    # a convention ("we name tests ...", "errors derive from FooError", "use snake_case for ...")
    r"(?:^|[.!?]\s+|\b(?:so|ok|okay|and|also)\s+)(?:to|when(?:ever)?\s+(?:I|we)|every time\s+(?:I|we))\s+[^,:;.?]{3,60}"
    r"[,:]|\b(?:process|workflow|routine|"
    r"checklist|runbook|steps)\b[^.?]{0,40}:|\b(?:I|we)\s+(?:always\s+|usually\s+|normally\s+)?(?:name|"
    r"prefix|suffix)\b|\b(?:derive|derives|inherit|inherits|subclass)\s+(?:\w+\s+)?from\b|\b(?:snake|camel|pascal|kebab)"
    r"[_-]?case\b|\b(?:tests?|fixtures?|test files?)\s+(?:live|lives|go|goes|belong|belongs|are named|mirror)\b",
    re.I | re.M)


def session_cue(text: str) -> bool:
    """Whether a coding session's user prompt says something that lasts (a standing order, what
    the user uses, has or wants, an order that installs, removes or sets up something): read by
    the extractor even when the gate's chat signals (names, dates, possessives) score it low."""
    return bool(_SESSION_CUE.search(text))


@dataclass(frozen=True, slots=True)
class GateResult:
    """The gate's verdict on one turn."""

    score: float
    passed: bool
    #: Contribution of each signal that fired (name -> score added).
    signals: dict[str, float] = field(default_factory=dict)


class SignalScorer:
    """Scores a text's memory value (see the module docstring).

    ``threshold`` is ``extraction.gate_threshold`` (0.3 by default).
    """

    def __init__(self, threshold: float = DEFAULT_GATE_THRESHOLD, *, code_names: bool = True):
        self.threshold = threshold
        #: Whether paths, file names, `code` and snake_case identifiers count as names for novelty.
        self.code_names = code_names

    def entities(self, text: str) -> list[str]:
        """Entities of ``text`` (:func:`regex_entities`)."""
        return regex_entities(text)

    def score(self, text: str, recent: Sequence[str] = ()) -> GateResult:
        """Score ``text`` against the recent turns ``recent`` (oldest first)."""
        if is_filler(text):
            return GateResult(0.0, False, {})
        signals: dict[str, float] = {}
        low = text.lower().replace("’", "'")
        tokens = {w for w in split_words(low, joiners="'-") if w[0].isalpha()}
        for name, pattern in _SIGNALS.items():
            if name == "technical":
                if not _TECHNICAL_HINT.search(low):
                    continue
            elif name == "amount":
                if not _AMOUNT_HINT.search(low):
                    continue
            elif tokens.isdisjoint(_TRIGGERS[name]) and not (name == "temporal" and _DIGIT.search(low)):
                continue
            if pattern.search(low):
                signals[name] = WEIGHTS[name]
        if not STATEMENT_ONLY.isdisjoint(signals) and is_question_or_request(low):
            for name in STATEMENT_ONLY:
                signals.pop(name, None)
        if _SPECIFIC_DAY.search(low) and len(tokens) >= 4 and not _SIGN_OFF.search(low):
            signals.setdefault("temporal", WEIGHTS["temporal"])
            signals["specific_day"] = WEIGHTS["specific_day"]
        entities = self.entities(text)
        if entities:
            signals["entities"] = WEIGHTS["entities"]
        score = sum(signals.values())
        names = entities + code_names(text) if self.code_names and score >= NOVELTY_MIN_SCORE else entities
        if score >= NOVELTY_MIN_SCORE and names:
            novelty = _novelty(names, recent)
            if novelty > 0:
                signals["novelty"] = round(novelty * WEIGHTS["novelty"], 4)
                score += signals["novelty"]
        score = round(min(score, 1.0), 4)
        return GateResult(score, score >= self.threshold, signals)


#: What a coding prompt names besides people and products: `code`, paths, file names, snake_case identifiers.
_CODE_NAME = re.compile(
    r"`([^`\n]{2,60})`|(?<![\w/.:-])((?:[\w.-]+/)+[\w.-]*\w)|"
    r"\b([\w-]+\.(?:py|pyi|ts|tsx|js|jsx|rs|go|rb|java|kt|c|h|cc|cpp|hpp|cs|md|toml|yaml|yml|json|sh|sql|ini|cfg|"
    r"lock|txt|html|css))\b|\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b")


def code_names(text: str) -> list[str]:
    """The `code`, paths, file names and snake_case identifiers ``text`` names (for novelty)."""
    if "`" not in text and "/" not in text and "." not in text and "_" not in text:
        return []
    return list(dict.fromkeys(next(g for g in m.groups() if g) for m in _CODE_NAME.finditer(text)))


def _novelty(entities: Sequence[str], recent: Sequence[str]) -> float:
    """Share of ``entities`` that no recent turn mentions."""
    if not recent:
        return 1.0
    context = " ".join(recent).lower()
    new = sum(1 for e in entities if e.lower() not in context)
    return new / len(entities)
