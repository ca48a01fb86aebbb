"""Statements a person would write in a notebook, from the offline extractor's pieces.

The offline rules (:mod:`dexai_memory.extraction.offline`) turn a sentence into a
third-person statement: "I" becomes the speaker's name, a relative day a date, and
what is not about the speaker is reported ("Dana said ..."). Three shapes came out
wrong, and are written here instead:

* a **request** reported as a statement: "Run the tests again." said by Robin is
  "Robin said to run the tests again.", not "Robin said run the tests again."
  (:func:`reported`);
* a **day as the subject**: "Last Monday was rough." is "Dana said 23 February 2026
  was rough.", not "... said on 23 February 2026 was rough.": the date the rules put
  in keeps no "on" / "during" where it is what the sentence is about
  (:func:`date_as_subject`);
* a **gerund as the subject**: "Going to the park was fun." is not about someone
  who *is going*: :func:`gerund_subject` tells the rules not to read it as
  "Mel is going to the park was fun".

Names are kept as written.
"""

from __future__ import annotations

import re

__all__ = ["date_as_subject", "gerund_subject", "is_request", "reported"]

#: Verbs that open a request when they start a sentence ("Run the tests again", "Fix the flaky test").
REQUEST_VERBS = frozenset(
    "run rerun retry fix remove delete update rename revert restart reboot install uninstall deploy push pull merge "
    "rebase commit open close add use write rewrite review test try build rebuild create move change switch stop "
    "start skip clean bump upgrade downgrade pin unpin send email call ask book schedule cancel wait avoid document "
    "print show list sort split refactor drop disable enable double-check re-run re-enable undo redo squash "
    "format lint rename mark assign reply respond answer share upload download copy paste save export import "
    "configure set".split()
)
_PLEASE = re.compile(r"^(?:please|pls|kindly)[,\s]+", re.I)
_FIRST_WORD = re.compile(r"^([A-Za-z][\w-]*)")
#: What the date rules write for a relative day, week or month ("on 23 February 2026", "during the week of ...").
_DATE = (r"(?:the (?:week|weekend|month) of )?(?:\d{1,2} )?(?:January|February|March|April|May|June|July|August|"
         r"September|October|November|December)(?: \d{1,2})?,? \d{4}|\d{4}")
_VERB = r"(?:was|is|were|are|will be|has been|had been|went|felt|feels|seemed|seems|looked|looks|turned out)\b"
_DATE_SUBJECT = re.compile(rf"(?P<lead>^|\bsaid |\bthat )(?:[Oo]n|[Dd]uring|[Ii]n) (?P<when>{_DATE}) (?P<verb>{_VERB})")
#: A sentence led by a gerund phrase that is its subject: "Going to the park was fun", "Working late is tiring".
_GERUND_SUBJECT = re.compile(
    r"^(?:just |really |honestly )?[A-Za-z]+ing\b(?:(?!\b(?:I|I'm|it|it's|he|she|we|they|you|this|that|there)\b)"
    rf"[^,;:.!?])*?\b{_VERB}", re.I)


def is_request(sentence: str) -> bool:
    """Whether ``sentence`` (as said) asks for something to be done: it opens with "please" or a
    request verb in the base form ("Run the tests again", "Please fix the build")."""
    if _PLEASE.match(sentence):
        return True
    m = _FIRST_WORD.match(sentence)
    return m is not None and m.group(1).lower() in REQUEST_VERBS


def reported(name: str, clause: str, sentence: str) -> str:
    """What ``name`` said, as a notebook sentence: "Robin said to run the tests again" for a
    request (:func:`is_request` of ``sentence``, the sentence as said), "Robin said <clause>"
    otherwise. ``clause`` is the statement already rewritten (pronouns, dates), first letter
    lower-cased unless it is a name; no final full stop is added."""
    if is_request(sentence):
        body = _PLEASE.sub("", clause)
        body = body[:1].lower() + body[1:] if body[:1].isupper() and not _keeps_capital(body, sentence) else body
        return f"{name} said to {body}"
    return date_as_subject(f"{name} said {clause}")


def _keeps_capital(body: str, sentence: str) -> bool:
    first = body.split(" ", 1)[0]
    return first.isupper() or bool(re.search(rf"(?<!^)\b{re.escape(first)}\b", sentence))


def date_as_subject(text: str) -> str:
    """``text`` with a date that is the subject of its clause written without the preposition the
    date rules gave it: "Dana said on 23 February 2026 was rough" -> "Dana said 23 February 2026
    was rough", "On 1 March 2026 was Dana's birthday" -> "1 March 2026 was Dana's birthday"."""

    def fix(m: re.Match[str]) -> str:
        when = m.group("when")
        return f"{m.group('lead')}{when[:1].upper() + when[1:] if not m.group('lead') else when} {m.group('verb')}"

    return _DATE_SUBJECT.sub(fix, text)


def gerund_subject(sentence: str) -> bool:
    """Whether ``sentence`` opens with a gerund phrase that is its subject ("Going to the park was
    fun last time"), which has no subject to supply: it is not "I'm going to the park"."""
    return bool(_GERUND_SUBJECT.match(sentence))
