"""Ways of working the session's user states: procedures and code conventions.

A **procedure** (type PROCEDURE, ``category`` "procedure") is a workflow the user
says they follow, as steps in order, kept in one note that reads as a recipe::

    "To release, I bump the version in pyproject.toml, tag the commit and push the tag."
    -> "To release: bump the version in pyproject.toml, then tag the commit, then push the tag."

    "We always run `make lint` before `make test`."
    -> "The team always runs `make lint` before `make test`."

    "Release process:\\n1. bump the version\\n2. tag it\\n3. push the tag"
    -> "Release process: bump the version, then tag it, then push the tag."

Recognised: a goal frame with two steps or more ("To X, ...", "When we X, ...",
"Every time I X, ...", "Our X process is ...", "The steps to X are ..."); a habit
with an order ("we always / usually run X before Y", "I normally first X, then Y");
a lead line naming a workflow followed by numbered steps (bullets too when the lead
is a workflow: "To release:", "How we deploy:", "Release checklist:"). A bare
"first X, then Y" is a request for now, not a procedure.

A **convention** (type PATTERN, ``category`` "convention") is how the user's code is
written: naming ("we name tests test_<unit>_<case>", "Name feature branches
feat/<ticket>"), case styles ("use snake_case for module names"), errors ("errors
derive from FooError", "raise ValueError for bad input"), test layout ("tests live in
tests/<package>/", "one test file per module") and a few other house rules (docstrings,
type hints, imports). It is kept as said, "we" read as "the team".

Only the session's user is a source (the extractor calls this for role ``user``
turns with no speaker name only); requests for now ("rename this to ...", "name it
foo"), questions and pasted text are not ways of working.
"""

from __future__ import annotations

import re

from ...models import ExtractedNote, MemoryType, Turn
from ..signals import regex_entities
from .pronouns import Rewriter, session_grammar
from .sentences import finish, upper_first

__all__ = ["CONVENTION_IMPORTANCE", "PROCEDURE_IMPORTANCE", "convention_note", "listed_procedure", "procedure_note"]

#: Importance of a procedure the user states (with standing instructions: how to work).
PROCEDURE_IMPORTANCE = 7
#: Importance of a code convention the user states.
CONVENTION_IMPORTANCE = 7
#: Most steps kept in one procedure note (a longer list is a document, not a habit).
MAX_STEPS = 12

#: Verbs a step of a workflow starts with (after "I", "we", "first", "then").
_STEP_VERBS = frozenset(
    "run bump tag push build upload publish deploy test lint commit merge rebase pull fetch install update "
    "regenerate generate write check review open create cut release ship squash format restart migrate back "
    "verify wait announce close delete clean compile package sign notarize copy edit add fix rerun re-run "
    "reproduce bisect revert promote roll monitor start stop stage apply sync pin freeze tidy move rename "
    "document record note file raise post send ask notify drain reset rotate switch checkout branch trigger "
    "approve test-drive smoke-test benchmark measure profile bump-version changelog archive mark read "
    "look search grep find diff compare rebuild reinstall reload redeploy rollback roll-back retag "
    "squash-merge cherry-pick export import load seed dump restore prepare draft submit land".split()
)
_ADVERBS = r"(?:always|usually|normally|typically|generally|then|first|just|now|also|still)"
_SUBJECT = r"(?:I|we|you)(?:\s+" + _ADVERBS + r")*"
_GOAL_FRAME = re.compile(
    r"^(?:so\s+|and\s+)?(?:(?:in order\s+)?to|when(?:ever)?\s+" + _SUBJECT + r"|every\s+time\s+" + _SUBJECT +
    r"|each\s+time\s+" + _SUBJECT + r"|before\s+" + _SUBJECT + r")\s+"
    r"(?P<goal>[^,:;]{3,60}?)\s*(?:,|:|\s-\s)\s*(?:" + _SUBJECT + r"\s+)?(?P<steps>.+)$",
    re.I,
)
_PROCESS_FRAME = re.compile(
    r"^(?:(?:my|our|the)\s+)(?P<goal>[\w\s/.-]{2,40}?)\s+(?:process|workflow|routine|procedure|steps|checklist|"
    r"flow)(?:\s+(?:for|to)\s+(?P<goal2>[^:]{2,40}?))?\s+(?:is|are|goes|looks like)\s*:?\s+(?P<steps>.+)$|"
    r"^the\s+steps\s+(?:to|for)\s+(?P<goal3>[^:]{2,40}?)\s+are\s*:?\s+(?P<steps3>.+)$",
    re.I,
)
#: "we always run X before Y", "I usually first X, then Y": a habit with an order in it.
_HABIT_ORDER = re.compile(
    r"^(?:I|we)\s+(?:always|usually|normally|typically|generally)\s+(?:first\s+)?(?P<body>.+?"
    r"(?:\bbefore\b|\bafter\b|,?\s+(?:and\s+)?then\b).+)$",
    re.I,
)
_STEP_SPLIT = re.compile(r"\s*(?:;|,?\s+and\s+then\s+|,\s*then\s+|\s+then\s+|,\s*after that,?\s+|,\s*finally,?\s+|"
                         r",\s*and\s+finally\s+|\s*->\s*|\s*→\s*)\s*", re.I)
_LIST_SPLIT = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+", re.I)
_STEP_LEAD = re.compile(r"^(?:(?:and|then|first|firstly|second|secondly|next|finally|after that|lastly|also)\b,?\s*|"
                        r"(?:I|we|you)(?:\s+" + _ADVERBS + r")*\s+)+", re.I)
#: A lead line naming a workflow, before its numbered or bulleted steps.
_LIST_LEAD = re.compile(
    r"^\s*(?:(?:in order\s+)?to\s+(?P<goal>[^:]{2,60}?)(?:,\s*(?:I|we)(?:\s+(?:always|usually))?)?|"
    r"(?:when(?:ever)?|every time|each time)\s+(?:I|we|you)\s+(?P<goal2>[^:]{2,60}?)(?:,\s*(?:I|we))?|"
    r"(?:how\s+(?:I|we)\s+)(?P<goal3>[^:]{2,60}?)|"
    r"(?:(?:my|our|the)\s+)?(?P<goal4>[\w\s/.-]{2,40}?)\s+(?:process|workflow|routine|procedure|steps|checklist|"
    r"flow|runbook)(?:\s+(?:for|to)\s+(?P<goal5>[^:]{2,40}?))?|"
    r"steps\s+(?:to|for)\s+(?P<goal6>[^:]{2,60}?))\s*:\s*$",
    re.I,
)
_NUMBERED = re.compile(r"^\s*(?:step\s+)?(?P<n>\d{1,2})[.):]\s+(?P<step>\S.*)$", re.I)
_BULLET = re.compile(r"^\s*[-*•]\s+(?P<step>\S.*)$")
#: Goals that are ways of speaking, not of working ("To be honest, ...", "To sum up, ...").
_DISCOURSE = re.compile(r"^(?:be\s|sum\b|summari|clarif|recap|start with|begin with|put it|answer|explain|"
                        r"make (?:it|this|a long story)|tell|get a chance|have (?:a )?(?:minute|moment|time|a sec)|"
                        r"can\b|finish|are done|get (?:back|home|there))", re.I)
#: A one-word goal is a workflow only when it names one ("To release: ..."; "To reproduce: ..." asks
#: for the bug at hand).
_WORKFLOWS = frozenset("release deploy ship publish test build lint format benchmark bootstrap onboard backup "
                       "upgrade migrate rollback debug profile install setup package document review merge "
                       "commit tag".split())


def _a_workflow(goal: str) -> bool:
    words = goal.split()
    return bool(words) and not _NOW.search(goal) and not _DISCOURSE.match(goal) and (
        len(words) >= 2 or words[0].lower() in _WORKFLOWS)
#: Words that make a sentence about the moment, not a habit ("to fix this, ...", "when you run it now").
_NOW = re.compile(r"\b(?:this|that|these|those|it|now|right now|again|here|above|below|today|tonight|for now)\b",
                  re.I)

# --------------------------------------------------------------------------- conventions
_CODE_THINGS = (r"(?:(?:unit\s+|integration\s+|e2e\s+)?tests?|test\s+(?:files?|functions?|cases?|modules?|classes?)|"
                r"(?:feature\s+|release\s+|topic\s+)?branch(?:es)?|functions?|methods?|classes|class|modules?|"
                r"packages?|files?|folders?|directories|variables?|constants?|fixtures?|tables?|columns?|"
                r"endpoints?|routes?|commits?|commit messages?|migrations?|env(?:ironment)?\s+vars?|"
                r"environment variables?|components?|hooks?|helpers?|types?|interfaces?|enums?|errors?|"
                r"exceptions?|settings?|flags?|config keys?|keys?|fields?|properties|props|tags?|"
                r"(?:private|public|internal)\s+\w+)")
_CASE_STYLE = r"(?:snake_case|camelCase|PascalCase|kebab-case|SCREAMING_SNAKE_CASE|UPPER_SNAKE_CASE|UPPER_CASE|" \
              r"lower_snake_case|lowercase|lower case|upper case|title case)"
_CONVENTIONS = (
    # naming: "we name tests test_<unit>_<case>", "Name feature branches feat/<ticket>", "tests are named ..."
    re.compile(r"^(?:(?:I|we)\s+(?:always\s+)?(?:name|prefix|suffix)|(?:please\s+)?(?:always\s+)?(?:name|prefix|"
               r"suffix))\s+(?:all\s+|every\s+|each\s+|new\s+|our\s+|the\s+)?(?:\w+\s+)?" + _CODE_THINGS + r"\b",
               re.I),
    # ("the main branch is called trunk" names one thing: a fact, not a convention)
    re.compile(r"(?:\b(?:every|each|any|a new)\s+(?:\w+\s+)?" + _CODE_THINGS + r"\s+(?:is|must be|should be|gets)|"
               r"\b" + _CODE_THINGS + r"\s+(?:are|must be|should be|get))\s+(?:always\s+)?"
               r"(?:named|called|prefixed|suffixed|spelled|written in)\b", re.I),
    re.compile(r"\b(?:naming convention|name(?:s)? (?:follow|use)|named after)\b", re.I),
    # case styles: "use snake_case for module names", "constants are UPPER_CASE"
    re.compile(r"\b" + _CASE_STYLE + r"\b", re.I),
    # errors: "errors derive from FooError", "raise ValueError for bad input", "never catch bare Exception"
    re.compile(r"\b(?:errors?|exceptions?)\b[^.]{0,40}\b(?:derive|derives|inherit|inherits|subclass|subclasses|"
               r"extend|extends|are rooted|is rooted|rooted in|come from|descend)\b", re.I),
    re.compile(r"^(?:(?:I|we)\s+(?:always\s+)?|(?:always\s+))?(?:raise|throw|return)\s+(?:a\s+|an\s+)?`?[A-Z]\w*"
               r"(?:Error|Exception|Result|Err)`?\b", re.I),
    re.compile(r"\b(?:derive|inherit|subclass)\s+(?:all\s+)?(?:errors?|exceptions?)\s+from\b", re.I),
    # test layout: "tests live in tests/<pkg>/", "one test file per module", "fixtures go in conftest.py"
    re.compile(r"\b(?:tests?|test files?|fixtures?|test data|helpers?|mocks?|fakes?)\s+(?:always\s+)?(?:live|lives|go|"
               r"goes|belong|belongs|sit|sits|are kept|are placed|are stored|mirror|mirrors)\b", re.I),
    re.compile(r"\bone\s+(?:test\s+file|test\s+module|class|module|component)\s+per\s+\w+", re.I),
    # other house rules: docstrings, type hints, imports
    re.compile(r"\b(?:every|each|all)\s+(?:public\s+)?(?:functions?|methods?|classes|modules?)\s+(?:has|have|gets?|"
               r"needs?|must have|carries|carry)\s+(?:a\s+)?(?:docstrings?|type hints?|tests?|annotations?)\b", re.I),
    re.compile(r"\bimports?\s+(?:are|is|must be|should be|stay)\s+(?:always\s+)?(?:absolute|relative|sorted|grouped)\b",
               re.I),
)
#: A request or remark about one thing now ("rename this to X", "name it foo", "we named it ..."): not a convention.
_ONE_THING = re.compile(r"\b(?:name|call|prefix)\s+(?:it|this|that|them|the\s+new\s+one)\b|\b(?:renamed?|named it)\b|"
                        r"\b(?:this|that)\s+(?:test|function|file|class|branch|error)\b", re.I)


def _steps(text: str) -> list[str]:
    """The steps of ``text``: split on "then", ";", arrows, else on commas and "and" when every
    piece starts with a verb."""
    text = text.strip().rstrip(".!")
    pieces = [p for p in _STEP_SPLIT.split(text) if p and p.strip()]
    if len(pieces) < 2:
        pieces = [p for p in _LIST_SPLIT.split(text) if p and p.strip()]
        if len(pieces) < 2 or not all(_starts_with_verb(p) for p in pieces):
            return []
    return [s for s in (_clean_step(p) for p in pieces) if s]


def _starts_with_verb(piece: str) -> bool:
    first = _STEP_LEAD.sub("", piece.strip()).split(" ", 1)[0].lower().strip("`")
    return first in _STEP_VERBS or first.endswith("s") and first[:-1] in _STEP_VERBS


def _clean_step(piece: str) -> str:
    step = _STEP_LEAD.sub("", piece.strip()).strip(" ,.;")
    if not step:
        return ""
    first = step.split(" ", 1)[0]
    if first.lower() != first and not first[1:].islower():
        return step  # a name, an acronym or code: kept as written
    return step[:1].lower() + step[1:]


def _recipe(goal: str, steps: list[str], *, process: bool = False) -> str:
    goal = goal.strip().rstrip(",:;")
    lead = f"{upper_first(goal)} process" if process else f"To {goal}"
    return finish(f"{lead}: " + ", then ".join(steps[:MAX_STEPS]))


def _note(content: str, turn: Turn, kind: MemoryType, source: str) -> ExtractedNote:
    category = "procedure" if kind is MemoryType.PROCEDURE else "convention"
    importance = PROCEDURE_IMPORTANCE if kind is MemoryType.PROCEDURE else CONVENTION_IMPORTANCE
    entities = tuple(dict.fromkeys(regex_entities(source)))
    return ExtractedNote(content=content, type=kind, importance=importance, confidence=0.9, source_ids=(turn.id,),
                         entities=("The user",) + entities, category=category)


def procedure_note(sentence: str, turn: Turn, rewrite: Rewriter) -> ExtractedNote | None:
    """The procedure one sentence of the session's user states (see the module doc), or None."""
    if sentence.endswith("?"):
        return None
    m = _GOAL_FRAME.match(sentence)
    if m is not None and _a_workflow(re.sub(r"^(?:I|we|you)\s+", "", m.group("goal"), flags=re.I)):
        steps = _steps(m.group("steps"))
        if len(steps) >= 2:
            goal = re.sub(r"^(?:I|we|you)\s+", "", m.group("goal"), flags=re.I)
            return _note(_recipe(session_grammar(rewrite(goal)), [session_grammar(rewrite(s)) for s in steps]),
                         turn, MemoryType.PROCEDURE, sentence)
    p = _PROCESS_FRAME.match(sentence)
    if p is not None:
        goal = p.group("goal2") or p.group("goal") or p.group("goal3") or ""
        steps = _steps(p.group("steps") or p.group("steps3") or "")
        if len(steps) >= 2 and _a_workflow(goal):
            process = bool(p.group("goal")) and not p.group("goal2")
            return _note(_recipe(goal, [session_grammar(rewrite(s)) for s in steps], process=process), turn,
                         MemoryType.PROCEDURE, sentence)
    h = _HABIT_ORDER.match(sentence)
    if h is not None and not _NOW.search(h.group("body")):
        return _note(finish(session_grammar(rewrite(sentence))), turn, MemoryType.PROCEDURE, sentence)
    return None


def convention_note(sentence: str, turn: Turn, rewrite: Rewriter) -> ExtractedNote | None:
    """The code convention one sentence of the session's user states (see the module doc), or None."""
    if sentence.endswith("?") or _ONE_THING.search(sentence):
        return None
    if not any(p.search(sentence) for p in _CONVENTIONS):
        return None
    body = re.sub(r"^(?:please\s+)?(?:remember to\s+)?", "", sentence, flags=re.I)
    return _note(finish(session_grammar(rewrite(upper_first(body)))), turn, MemoryType.PATTERN, sentence)


def listed_procedure(text: str, turn: Turn, rewrite: Rewriter) -> tuple[list[ExtractedNote], str]:
    """The procedure a prompt states as a lead line and its numbered steps ("To release:" then
    "1. ...", "2. ..."; bullets when the lead names a workflow), as a list of one note (none when
    there is none), and the prompt's text without those lines (the rest is read as usual)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        lead = _LIST_LEAD.match(line)
        if lead is None:
            continue
        steps: list[str] = []
        end = i + 1
        while end < len(lines) and (lines[end].strip() == "" and not steps or _NUMBERED.match(lines[end])
                                    or _BULLET.match(lines[end])):
            item = _NUMBERED.match(lines[end]) or _BULLET.match(lines[end])
            if item is not None:
                steps.append(_clean_step(item.group("step")))
            end += 1
        steps = [s for s in steps if s]
        goal = next((g for g in lead.groups() if g), "")
        if len(steps) < 2 or not _a_workflow(goal) and not lead.group("goal4"):
            continue
        process = bool(lead.group("goal4")) and not lead.group("goal5")
        content = _recipe(session_grammar(rewrite(goal)), [session_grammar(rewrite(s)) for s in steps],
                          process=process)
        rest = "\n".join(lines[:i] + lines[end:])
        return [_note(content, turn, MemoryType.PROCEDURE, "\n".join(lines[i:end]))], rest
    return [], text
