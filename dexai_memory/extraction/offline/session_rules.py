"""The rules of an assistant session's user (a turn with role ``user`` and no speaker
name): labels and framing to drop, warnings and standing instructions, decisions,
goals, hazards, requests for now and thinking aloud, and the importance each kind
of note gets (see "The session's user" in :mod:`dexai_memory.extraction.offline.extractor`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from ...models import MemoryType
from ...text.dates import find_dates
from .sentences import upper_first

#: Least importance of a warning or standing instruction of the session's user.
WARNING_IMPORTANCE = 7
#: Least importance of a decision of the session's user.
DECISION_IMPORTANCE = 7
#: Importance of the session user's current goal.
GOAL_IMPORTANCE = 7
#: Most importance of the session user's other notes: no statement outranks a standing instruction.
SESSION_MAX_IMPORTANCE = 8


#: Encouragement and reassurance: commands that warn about nothing.
_NOT_A_WARNING = re.compile(
    r"^(?:please\s+)?(?:never|don'?t|do not|always)\s+(?:ever\s+)?(?:worry|give up|mind|hesitate|stress|panic|"
    r"forget|let (?:me|us) forget|apologi[sz]e|be (?:shy|sorry|sad|afraid|scared|silly|hard on|a stranger)|"
    r"stop (?:believing|dreaming|trying|smiling)|change|lose hope|doubt yourself|believe)\b",
    re.I,
)
#: Requests to the assistant: work for now, not a durable fact.
REQUEST = re.compile(
    r"^(?:please\s+|now\s+|also\s+|then\s+)*(?:add|fix|write|explain|refactor|rename|sort|replace|summari[sz]e|"
    r"make|split|convert|tidy|update|remove|delete|create|implement|run|show|list|check|find|change|move|clean|"
    r"format|generate|build|test|debug|review|describe|help|give|tell|open|read|edit|improve|optimi[sz]e|rewrite|"
    r"document|print|install|set|bump|merge|revert|commit|push|translate|compare|draft|outline|search|look|"
    r"try|continue|go|start|stop|undo|redo|paste|copy|extract|port|migrate|wrap|rerun|re-run|see|ship|let|analy[sz]e|"
    r"investigate|research|evaluate|audit|troubleshoot|diagnose|scan|resume|verify|validate|figure|plan|provide|"
    r"publish|sync|pull|fetch|upgrade|download|configure|config|setup|inspect|identify|summon|locate)\b",
    re.I,
)
#: A request addressed to the assistant for the task at hand ("I want you to ...", "can you ...",
#: "you run it"): not a statement about the user or the project.
ASK_YOU = re.compile(
    r"^(?:(?:and|so|ok|okay|now|then)\s+)*(?:I\s+(?:want|need|would like|'d like)\s+(?:you|u)\s+to|"
    r"(?:can|could|would|will|should)\s+(?:you|u|we)\b|(?:you|u)\s+(?:run|do|sudo|check|fix|try|go|need|should|can|"
    r"will|must)\b|(?:please\s+)?(?:ssh|cd|sudo)\s|(?:please\s+)?[a-z]+\s+your\b|"
    r"please\s+(?!always|never|remember|make sure|don'?t|do not))",
    re.I,
)
#: An order that changes a named thing for good ("uninstall all traces of AdGuard", "remove all
#: trace of RDP", "disable the cellular module", "move the files into projects/Zima"): kept, dated,
#: as what the user had done (when it names something: a name, an acronym, a path).
CHANGE_ORDER = re.compile(
    r"^(?:please\s+|now\s+|also\s+|then\s+|and\s+|ssh\s+(?:in)?to\s+\S+\s+and\s+)*"
    r"(?:(?:uninstall|remove|disable|enable|delete|purge|move|rename|migrate|switch|replace|block|unblock|deprecate|"
    r"drop|install|reinstall|set up|configure|config)(?:\s+and\s+(?=\w+\s))?)+\s+(?:all\s+)?(?:traces?\s+of\s+)?\S"
    # ports opened or closed for good ("close 139, 5040, 9000", "open port 8443")
    r"|^(?:please\s+|now\s+|also\s+|then\s+|and\s+)*(?:close|open|block|unblock)\s+(?:(?:tcp|udp)\s+)?(?:ports?\s+)?\d{2,5}\b",
    re.I,
)
#: Orders whose object is a thing to have or not have ("install gh", "disable the cellular modules"):
#: kept whatever the object's case; the others ("move the tests", "replace the loop") only when they
#: name something (a name, an acronym, a path).
THING_ORDER = re.compile(
    r"^(?:please\s+|now\s+|also\s+|then\s+|and\s+|ssh\s+(?:in)?to\s+\S+\s+and\s+)*"
    r"(?:(?:uninstall|remove|disable|enable|purge|install|reinstall|set up|configure|config)\b"
    r"(?:\s+and\s+(?:uninstall|remove|disable|enable|purge|install|reinstall)\b)?"
    r"\s+(?!(?:it|this|that|them|these|those|via|with|from|using|again|anything|everything|something)\b)\S"
    r"|(?:close|open|block|unblock)\s+(?:(?:tcp|udp)\s+)?(?:ports?\s+)?\d{2,5}\b)",
    re.I,
)
_DECISION = re.compile(
    r"^(?:so\s+|ok\s+|okay\s+)?(?:I|we)(?:'ve|\s+have|\s+(?:all|finally|just|now|already))*\s+(?:decided|chose|"
    r"chosen|settled on|agreed|opted|went with|picked|are going with|will go with|'re going with)\b",
    re.I,
)

# --------------------------------------------------------------------------- the session's user
#: A label in front of the fact ("Remember this:", "FYI,", "Note that"): not part of it.
LABEL = re.compile(
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
    r"when(?:ever)? you|every time|each time|by default|default to|remember to|prefer|(?:prompt|ask) me\s+(?:for|before|"
    r"when|to)|be (?:cautious|careful)|ignore)\b",
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
    r"\b(?:every|each|always|never|whenever|from now on|going forward|instead of|rather than|everywhere|"
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
HAZARD = re.compile(
    r"\b(?:crash(?:es|ed)?|breaks?|broke|fails?|locks?|wipes?|wiped|corrupts?|silently|only copy|bug|leaks?|"
    r"hangs?|times? out|flaky|rotates?|expires? often|costs? (?:us )?money|don'?t|do not|never|dangerous|unsafe|"
    r"not safe)\b",
    re.I,
)
#: Rules stated as facts ("Every query must go through ...").
RULE = re.compile(r"\b(?:must|mustn't|should always|should never|(?:has|have|needs?) to go|is not allowed|"
                  r"are not allowed)\b", re.I)
#: "It works now", "That's weird": no self-contained subject.
VAGUE_SUBJECT = re.compile(
    r"^(?:it|that|this|there|they|he|she|these|those|which|everything|nothing|something)(?:'s|'re|\s+(?:\w+ly\s+)?"
    r"(?:is|was|are|were|does|did|has|had|works?|worked|looks?|seems?|still|should|will|would|could|can|might|"
    r"makes?|sounds?|fails?|failed|broke|just|needs?))\b|^whatever\b",
    re.I,
)
#: The session's user thinking aloud: no fact.
CHATTER = re.compile(
    r"^(?:I\s+(?:meant|mean|think|guess|see|suppose|wonder|was wondering|tried|was just|just wanted|have a question)|"
    r"I'm\s+(?:just\s+)?(?:curious|confused|not sure|wondering|looking|checking|back|here|done|ready|stuck|lost|"
    r"trying it|testing)|let me|let's see|oops|my bad|one sec|hold on|looks|sounds|seems)\b",
    re.I,
)
SESSION_COMMITMENT = re.compile(
    r"\b(?:I|we)(?:'ll|\s+will|\s+shall)\b|\b(?:I|we)(?:'m|\s+am|'re|\s+are)\s+going\s+to\b|"
    r"\b(?:I|we)\s+(?:promised?|committed to|owe)\b|\btold\s+\w+\s+(?:I|we)(?:'d|\s+would)\b|"
    r"\bwants? to be reminded\b|\bI\s+want to be reminded\b|\b(?:I|we)\s+(?:really\s+|still\s+)?(?:need|have|got)\s+to\b|"
    r"\bI\s+must\b",
    re.I,
)


REMIND = re.compile(r"^(?:please\s+)?(?:remind|ping|nudge)\s+me\s+(to|about|that)\b|"
                    r"^(?:please\s+)?don'?t\s+let\s+me\s+forget\s+(to|about|that)\b", re.I)
SESSION_PREFERENCE = re.compile(r"\bI\s+(?:only\s+want|(?:dont|don'?t|do not)\s+want)\b|\b(?:preferabl[ye]|perferabl[ye])\b|"
                                r"\bI(?:'d| would)\s+(?:rather|like)\b(?!\s+to\b)|\bI(?:'m| am)\s+(?:a\s+)?"
                                r"(?:vegetarian|vegan)\b", re.I)
RECURRING = re.compile(r"\b(?:birthday|anniversary|every|each|weekly|daily|monthly|yearly|annual)\b", re.I)
#: A sentence about the past (its "on Friday" is the last Friday); else the session's user means the coming one.
PAST_WORDS = re.compile(r"\b(?:was|were|had|did|went|came|left|ran|ago|yesterday|earlier|happened|(?<!'ve )(?<!have )got|began|"
                        r"started|finished|joined|shipped|launched|broke|crashed|met|took|won|lost)\b", re.I)
#: Booking and scheduling words: the date they carry is still to come, whatever the tense ("I booked the MOT
#: for the 22nd", "the review got moved to Thursday").
FORWARD_CUE = re.compile(r"\b(?:booked|scheduled|rescheduled|planned|arranged|confirmed|postponed|pushed\s+back|"
                         r"moved\s+to|set\s+for|due|deadline|closes|expires?|appointment)\b", re.I)
PAST_VERB = re.compile(r"\b(?:I|we|he|she|it|they|[A-Z]\w+)\s+(?:just\s+|already\s+)?\w{2,}ed\b")
TO_VERB = re.compile(r"\bto\s+(?!the\b|a\b|an\b|my\b|our\b|be\b)[a-z]{3,}\b")
#: Least importance of the session user's notes by type (preferences rank with instructions).
SESSION_FLOORS = {MemoryType.COMMITMENT: 6, MemoryType.TASK: 6, MemoryType.PREFERENCE: 7,
                  MemoryType.RELATIONSHIP: 6, MemoryType.FACT: 5, MemoryType.INSIGHT: 6, MemoryType.EVENT: 4}


def session_floor(note_type: MemoryType, sentence: str, signals: Iterable[str]) -> int:
    """The least importance of a statement of the session's user: its type's floor
    (:data:`SESSION_FLOORS`), 6 when it names something durable (a tool, path, host, owner, decision:
    the gate's signals) or states the user's setup (:data:`SETUP`)."""
    durable = {"technical", "project", "ownership", "entities", "decision"} & set(signals)
    return max(SESSION_FLOORS.get(note_type, 5), 6 if durable or SETUP.match(sentence) else 0)
FRAMING = re.compile(
    r"^(?:(?:here(?:'s| is| are)|just)\s+)?(?:some|a (?:bit|little) of|a little|quick|more|a few)?\s*"
    r"(?:context|background|notes?|details?|info(?:rmation)?)\b[\w\s,'-]*$",
    re.I,
)
BEFORE_WE_START = re.compile(r",?\s*before (?:we|I) (?:start|begin|get started|dive in|go on|continue)\b", re.I)


#: An answer's lead ("yes, ...", "ok, lets ...") and "let's be ...": not part of the statement.
ANSWER_LEAD = re.compile(r"^(?:(?:yes|yep|yeah|ok|okay|sure|right|great|good|cool|perfect|and|also|so)\b[,.!]?\s+)+(?=\S)", re.I)
LETS_BE = re.compile(r"^let'?s\s+be\b|^lets\s+be\b", re.I)
#: The user's setup in their own words ("I use hyper v", "I have a second yubikey", "we run Proxmox"):
#: a fact about the machines and tools every later session works with, kept like one that names a tool.
SETUP = re.compile(r"^(?:I|we)(?:'re|\s+are|\s+am)?\s+(?:only\s+|also\s+|really\s+|still\s+|now\s+)?"
                   r"(?:use|have|run|own|sign in|log in|using|running)\b", re.I)
#: A question in parentheses after a statement ("we're auditing BitDefender (is there a cli?)"): the
#: statement stands, the aside asks something for now.
ASIDE_QUESTION = re.compile(r"^(?P<statement>[^()?\s]+\s+[^()?\s][^()?]*?)\s*\([^()]*\?\)?[\s.]*$")


#: A request followed by the plan it leads to ("add the research to the plan and we'll start fresh"):
#: the request is for now, the plan is the user's.
TRAILING_PLAN = re.compile(r"^(?!(?:we|i|i'm|we're|it|this|that|they|you)\b)[^,;?]+?\s+(?:and|then)\s+"
                           r"(?P<plan>(?:we|I)(?:'ll|\s+will)\s+\w+(?:\s+\S+)*?)[.!]*$", re.I)
#: A question asking how to configure something a given way ("how do we configure MacOS login and
#: sudo to be passwordless?"): the way is what the user wants of it.
HOW_CONFIGURE = re.compile(r"^how\s+(?:do|can|could|should|would)\s+(?:we|i|you)\s+(?:configure|config|set\s*up)\s+"
                           r"(?P<what>.+?)\s+to\s+(?P<way>(?:be\s+)?\w.*?)\s*\?*$", re.I)


def statement_part(sentence: str) -> str:
    """What of ``sentence`` the user states: without a question in parentheses at its end
    (:data:`ASIDE_QUESTION`), the plan after a request (:data:`TRAILING_PLAN`), or the way a how-to
    question wants something configured (:data:`HOW_CONFIGURE`: "I want X to be Y")."""
    how = HOW_CONFIGURE.match(sentence)
    if how is not None:
        return f"I want {how.group('what')} to {how.group('way')}"
    plan = TRAILING_PLAN.match(sentence)
    if plan is not None:
        return upper_first(plan.group("plan"))
    aside = ASIDE_QUESTION.match(sentence)
    return aside.group("statement").rstrip(" ,;") if aside else sentence
#: A standing order after a request in one sentence ("complete the commit, always verify and run hooks"):
#: the lead is a request (not a statement with its own subject: "We decided X must round with
#: Decimal, never float" stays whole) and the order has a verb and its object.
TRAILING_ORDER = re.compile(r"^(?!(?:we|i|i'm|the|our|my|it|this|that|they|you|he|she|there)\b)[^,;]+[,;]\s*"
                            r"(?P<order>(?:and\s+)?(?:always|never|don'?t|do not|make sure|be sure)\s+\S+\s+\S.*)$", re.I)
#: A line Claude Code drew (a tool call marker, a box) or a bare URL or domain: pasted, not said.
DRAWN = re.compile(r"^\s*[⏺⎿│├└┌┐┘┴┬─═║╭╮╯╰▶►•●◆■□✓✔✗✘]|^\s*(?:https?://)?[\w-]+(?:\.[\w-]+)+/?\.?\s*$")


def warning_body(sentence: str) -> tuple[str | None, str]:
    """("warning", what to store) for a warning of the session's user, else (None, sentence)."""
    if _NOT_A_WARNING.match(sentence):
        return None, sentence
    m = _WARNING_LEAD.match(sentence)
    if m is None:
        return None, sentence
    if m.group("body"):
        return "warning", upper_first(m.group("body").strip())
    whole = re.sub(r"^please\s+", "", m.group("whole"), flags=re.I)
    return "warning", upper_first(re.sub(r"^careful\b", "be careful", whole, flags=re.I))


def standing_order(sentence: str) -> bool:
    """Whether ``sentence`` says it is standing ("Always ...", "From now on ...") or is a warning
    ("Never ...", "Heads up: ..."): kept as an instruction or warning even as one line of a list."""
    return bool(_STANDING_LEAD.match(sentence) or _WARNING_LEAD.match(sentence))


def instruction_body(sentence: str, anchor: datetime | None = None) -> tuple[str | None, str]:
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
        return "instruction", upper_first(body)
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
        return "instruction", upper_first(re.sub(r"^(?:please\s+|also\s+)+", "", sentence, flags=re.I))
    return None, sentence


def session_decision(sentence: str) -> str | None:
    """The decision the session's user reports, as a statement to store, or None."""
    m = _DECISION_LABEL.match(sentence)
    if m:
        return upper_first(m.group("body").strip())
    m = _LETS.match(sentence)
    if m:
        return f"We decided to {m.group('verb').lower()} {m.group('rest')}"
    return sentence if _SESSION_DECISION.search(sentence) else None


def goal_body(sentence: str) -> str | None:
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
            return f"{upper_first(who)} goal is {body}"
    first = body.split(" ", 1)[0]
    if first.lower() in _DETERMINERS or first[:1].isupper() and first.lower() not in ("replace", "ship", "get"):
        return f"{upper_first(who)} goal is {body}"
    return f"{upper_first(who)} goal is to {body[:1].lower()}{body[1:]}"
