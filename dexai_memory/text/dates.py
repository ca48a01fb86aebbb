"""Resolving relative dates in a turn against the turn's timestamp.

``"I went to a support group yesterday"`` said at 1:56 pm on 8 May 2023 is an
event on 7 May 2023; a memory that keeps the word "yesterday" is useless a
week later. :func:`find_dates` finds date expressions and resolves them,
:func:`rewrite_dates` replaces them in the text with absolute dates.

Supported expressions (case-insensitive):

* ``yesterday``, ``today``, ``tonight``, ``this morning``, ``last night``,
  ``tomorrow``, ``the day before yesterday``, ``the day after tomorrow``;
* ``last/next/this week|month|year|weekend``, ``two weekends ago``;
* ``last/next/this <weekday>``, ``on <weekday>`` (past or future from the
  sentence's tense, see :func:`is_future`); ``by/until/before <weekday>`` (a
  deadline: the coming one, today included);
* ``the 15th`` / ``on the 3rd`` (the coming one in a future sentence, else
  the last one), ``the 1st of next month``, ``the end of the month`` (its
  last day; ``end of the week`` is its Friday, ``end of the year`` 31 December);
* ``N days/weeks/months/years ago``, ``in N days/weeks/...`` (digits or words,
  ``a``/``an``/``a couple of``);
* explicit dates: ``8 May 2023``, ``8 May, 2023``, ``May 8``, ``May 8th, 2023``,
  ``8th of May``, ``2023-05-08``, ``May 2023`` (month level). Without a year
  the anchor's year is meant, or the next one for a future sentence whose
  date would otherwise be past ("on January 9th" said in December).

Week-level results are reported as the Monday of that week ("the week of
1 May 2023"), weekend-level as its Saturday ("the weekend of 6 May 2023").
"next <weekday>" means the first such day after the anchor.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

__all__ = [
    "ResolvedDate",
    "find_dates",
    "format_day",
    "is_future",
    "parse_locomo_timestamp",
    "resolve",
    "rewrite_dates",
]

_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}
_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August",
                "September", "October", "November", "December")
_WEEKDAYS = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4,
             "saturday": 5, "sunday": 6}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
            "a couple of": 2, "a couple": 2, "couple of": 2}

_MONTH_RE = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
             r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_WEEKDAY_RE = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_NUM_RE = r"(?:\d{1,3}|a couple of|a couple|couple of|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT_RE = r"(?P<unit>day|week|weekend|month|year)s?"

#: (pattern, kind) in priority order; the first match at a position wins, longer first.
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\b"), "iso"),
    (re.compile(rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+(?P<mon>{_MONTH_RE})\b\.?(?:,?\s+(?P<y>\d{{4}}))?",
                re.I), "dmy"),
    (re.compile(rf"\b(?P<mon>{_MONTH_RE})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<y>\d{{4}}))?", re.I),
     "mdy"),
    (re.compile(rf"\b(?P<mon>{_MONTH_RE})\s+(?P<y>\d{{4}})\b", re.I), "my"),
    (re.compile(r"\bthe day before yesterday\b", re.I), "d-2"),
    (re.compile(r"\bthe day after tomorrow\b", re.I), "d+2"),
    (re.compile(r"\b(?:yesterday|last night)\b", re.I), "d-1"),
    (re.compile(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b", re.I), "d+0"),
    (re.compile(r"\btomorrow\b", re.I), "d+1"),
    (re.compile(rf"\b(?P<n>{_NUM_RE})\s+{_UNIT_RE}\s+ago\b", re.I), "ago"),
    (re.compile(rf"\bin\s+(?P<n>{_NUM_RE})\s+{_UNIT_RE}\b", re.I), "in"),
    (re.compile(r"\b(?:on\s+)?the\s+(?P<d>\d{1,2})(?:st|nd|rd|th)\s+of\s+(?P<rel>next|this|last)\s+month\b", re.I),
     "dom-rel"),
    (re.compile(r"\b(?:the\s+)?end\s+of\s+(?P<rel>the|this|next|last)\s+(?P<unit>week|month|year)\b", re.I), "end-of"),
    # "on Friday the 24th": the day of the month decides, the weekday only confirms it
    (re.compile(rf"\b(?:on\s+)?{_WEEKDAY_RE},?\s+(?:the\s+)?(?P<d>\d{{1,2}})(?:st|nd|rd|th)\b", re.I), "dom"),
    (re.compile(rf"\b(?P<rel>last|next|this|past|coming)\s+(?P<wd>{_WEEKDAY_RE})\b", re.I), "rel-weekday"),
    (re.compile(r"\b(?P<rel>last|next|this|past|coming)\s+(?P<unit>week|weekend|month|year)\b", re.I), "rel-unit"),
    (re.compile(rf"\bon\s+(?P<wd>{_WEEKDAY_RE})\b", re.I), "on-weekday"),
    (re.compile(rf"(?:(?<=\bby )|(?<=\buntil )|(?<=\btill )|(?<=\bbefore )|(?<=\bdue )|(?<=\bdeadline is ))"
                rf"(?P<wd>{_WEEKDAY_RE})\b", re.I), "by-weekday"),
    (re.compile(r"\b(?:on\s+)?the\s+(?P<d>\d{1,2})(?:st|nd|rd|th)\b(?!\s+(?:of\b|century|time|floor|place|grade|edition|"
                r"version|attempt|round|row|anniversary|birthday|percentile|day|week|month|year|street|avenue|st\b))", re.I),
     "dom"),
]

_FUTURE_RE = re.compile(
    r"\b(?:will|shall|gonna|going to|plan(?:ning|s)? to|hope to|want to|wanna|can't wait|cannot wait|"
    r"looking forward|next|tomorrow|upcoming|coming|soon|later)\b|'ll\b",
    re.I,
)
_PART_OF_DAY = re.compile(r"\s+(morning|afternoon|evening|night)\b", re.I)
_PREPOSITION_BEFORE = re.compile(r"\b(?:since|until|till|by|from|before|after|around|about|of|to)\s*$", re.I)
_LOCOMO_TS = re.compile(
    r"^\s*(?P<h>\d{1,2}):(?P<mi>\d{2})\s*(?P<ampm>am|pm)\s+on\s+(?P<d>\d{1,2})\s+(?P<mon>[A-Za-z]+),?\s+(?P<y>\d{4})\s*$",
    re.I,
)


@dataclass(frozen=True, slots=True)
class ResolvedDate:
    """A date expression found in a text and what it means."""

    #: The expression as written ("yesterday", "last week").
    text: str
    start: int
    end: int
    #: The day (first day of the week / weekend / month / year for coarser levels).
    date: date
    #: day | week | weekend | month | year
    granularity: str
    #: Written as an absolute date ("8 May 2023"), not relative ("yesterday").
    explicit: bool = False

    @property
    def human(self) -> str:
        """A readable absolute form: "7 May 2023", "the week of 1 May 2023", "April 2023"."""
        if self.granularity == "week":
            return f"the week of {format_day(self.date)}"
        if self.granularity == "weekend":
            return f"the weekend of {format_day(self.date)}"
        if self.granularity == "month":
            return f"{_MONTH_NAMES[self.date.month - 1]} {self.date.year}"
        if self.granularity == "year":
            return str(self.date.year)
        return format_day(self.date)

    @property
    def phrase(self) -> str:
        """:attr:`human` with its preposition ("on 7 May 2023", "in April 2023")."""
        if self.granularity in ("day", "weekend"):
            return f"on {self.human}"
        if self.granularity == "week":
            return f"during {self.human}"
        return f"in {self.human}"

    @property
    def iso(self) -> str:
        """ISO form at the date's granularity: 2023-05-07, 2023-05, 2023."""
        if self.granularity == "month":
            return f"{self.date.year:04d}-{self.date.month:02d}"
        if self.granularity == "year":
            return f"{self.date.year:04d}"
        return self.date.isoformat()


def format_day(day: date) -> str:
    """``7 May 2023`` (day without leading zero, full month name, year)."""
    return f"{day.day} {_MONTH_NAMES[day.month - 1]} {day.year}"


def parse_locomo_timestamp(text: str) -> datetime | None:
    """Parse LoCoMo's ``"1:56 pm on 8 May, 2023"`` (taken as UTC); None if it does not match."""
    m = _LOCOMO_TS.match(text or "")
    if not m:
        return None
    month = _MONTHS.get(m.group("mon").lower())
    if month is None:
        return None
    hour = int(m.group("h")) % 12 + (12 if m.group("ampm").lower() == "pm" else 0)
    try:
        return datetime(int(m.group("y")), month, int(m.group("d")), hour, int(m.group("mi")), tzinfo=UTC)
    except ValueError:
        return None


def is_future(sentence: str) -> bool:
    """Whether a sentence talks about the future (will, going to, can't wait, next...)."""
    return bool(_FUTURE_RE.search(sentence))


def _as_date(anchor: date | datetime) -> date:
    return anchor.date() if isinstance(anchor, datetime) else anchor


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + (day.month - 1) + months
    return date(index // 12, index % 12 + 1, 1)


def _day_of_month(anchor: date, day: int, future: bool) -> date:
    """The ``day``-th of the anchor's month, or of the next (``future``) or previous month when that one
    is already past (or still to come); months too short for it are skipped."""
    step = 1 if future else -1
    month = _add_months(anchor, 0)
    for _ in range(13):
        try:
            found = date(month.year, month.month, day)
        except ValueError:
            found = None
        if found is not None and (found >= anchor if future else found <= anchor):
            return found
        month = _add_months(month, step)
    raise ValueError(f"no day {day} in any month")


def _number(text: str) -> int | None:
    text = text.lower().strip()
    if text.isdigit():
        return int(text)
    return _NUMBERS.get(text)


def _last_weekend(day: date) -> date:
    """Saturday of the most recent weekend that is over (or under way: the previous one)."""
    offset = (day.weekday() - 5) % 7  # days since the last Saturday (0 on a Saturday)
    saturday = day - timedelta(days=offset)
    if day.weekday() >= 5:  # on Saturday or Sunday, "last weekend" is the one before
        saturday -= timedelta(days=7)
    return saturday


def _this_weekend(day: date) -> date:
    if day.weekday() == 6:
        return day - timedelta(days=1)
    return day + timedelta(days=(5 - day.weekday()) % 7)


def _shift(anchor: date, n: int, unit: str) -> tuple[date, str]:
    """``anchor`` moved by ``n`` units (negative = past), at the unit's granularity."""
    if unit == "day":
        return anchor + timedelta(days=n), "day"
    if unit == "week":
        return _monday(anchor + timedelta(weeks=n)), "week"
    if unit == "weekend":
        base = _last_weekend(anchor) if n < 0 else _this_weekend(anchor)
        steps = n + 1 if n < 0 else n - 1
        return base + timedelta(weeks=steps), "weekend"
    if unit == "month":
        return _add_months(anchor, n), "month"
    return date(anchor.year + n, 1, 1), "year"


def _resolve_match(kind: str, m: re.Match[str], anchor: date, future: bool) -> tuple[date, str] | None:
    g = m.groupdict()
    if kind == "iso":
        return date(int(g["y"]), int(g["m"]), int(g["d"])), "day"
    if kind in ("dmy", "mdy"):
        month = _MONTHS[g["mon"].lower().rstrip(".")]
        year = int(g["y"]) if g.get("y") else anchor.year
        day = date(year, month, int(g["d"]))
        if not g.get("y") and future and day < anchor:
            day = date(year + 1, month, int(g["d"]))  # "on January 9th" said in December: next year's
        return day, "day"
    if kind == "dom-rel":
        step = {"next": 1, "this": 0, "last": -1}[g["rel"].lower()]
        first = _add_months(anchor, step)
        return date(first.year, first.month, int(g["d"])), "day"
    if kind == "dom":
        return _day_of_month(anchor, int(g["d"]), future), "day"
    if kind == "end-of":
        rel, unit = g["rel"].lower(), g["unit"].lower()
        step = {"next": 1, "last": -1}.get(rel, 0)
        if unit == "month":
            return _add_months(anchor, step + 1) - timedelta(days=1), "day"
        if unit == "year":
            return date(anchor.year + step, 12, 31), "day"
        return _monday(anchor) + timedelta(weeks=step, days=4), "day"  # the Friday of that week
    if kind == "my":
        return date(int(g["y"]), _MONTHS[g["mon"].lower()], 1), "month"
    if kind.startswith("d") and kind[1] in "+-":
        return anchor + timedelta(days=int(kind[1:])), "day"
    if kind in ("ago", "in"):
        n = _number(g["n"])
        if n is None:
            return None
        unit = g["unit"].lower()
        if kind == "in" and unit == "week":  # "in two weeks": that day, a date to keep (an appointment, a deadline)
            return anchor + timedelta(weeks=n), "day"
        return _shift(anchor, -n if kind == "ago" else n, unit)
    if kind == "rel-unit":
        rel, unit = g["rel"].lower(), g["unit"].lower()
        step = {"last": -1, "past": -1, "next": 1, "coming": 1, "this": 0}[rel]
        if unit == "weekend":
            if step == 0:
                return _this_weekend(anchor), "weekend"
            if step > 0 and anchor.weekday() < 5:
                return _this_weekend(anchor), "weekend"  # on a weekday, "next weekend" is the coming one
            return _shift(anchor, step, "weekend")
        return _shift(anchor, step, unit)
    weekday = _WEEKDAYS[g["wd"].lower()]
    if kind == "by-weekday":  # a deadline: the coming one (today counts)
        return anchor + timedelta(days=(weekday - anchor.weekday()) % 7), "day"
    if kind == "rel-weekday":
        rel = g["rel"].lower()
        if rel == "this":
            return _monday(anchor) + timedelta(days=weekday), "day"
        if rel in ("next", "coming"):
            return anchor + timedelta(days=(weekday - anchor.weekday() - 1) % 7 + 1), "day"
        return anchor - timedelta(days=(anchor.weekday() - weekday - 1) % 7 + 1), "day"
    # "on <weekday>": the coming one in a future sentence, else the last one (today counts)
    if future:
        return anchor + timedelta(days=(weekday - anchor.weekday()) % 7), "day"
    return anchor - timedelta(days=(anchor.weekday() - weekday) % 7), "day"


def find_dates(text: str, anchor: date | datetime | None, *, future: bool | None = None) -> list[ResolvedDate]:
    """Every date expression of ``text`` resolved against ``anchor``, in order.

    ``future`` says whether ambiguous expressions ("on Friday") point forward;
    by default it is guessed from ``text`` with :func:`is_future`. Without an
    anchor only absolute dates with a year are returned.
    """
    if not text:
        return []
    day = _as_date(anchor) if anchor is not None else None
    forward = is_future(text) if future is None else future
    taken: list[tuple[int, int]] = []
    out: list[ResolvedDate] = []
    for pattern, kind in _PATTERNS:
        for m in pattern.finditer(text):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            if "mon" in m.groupdict() and m.group("mon") == "may":
                continue  # the modal verb, not the month
            if day is None and not (kind == "iso" or (kind in ("dmy", "mdy", "my") and m.group("y"))):
                continue
            try:
                resolved = _resolve_match(kind, m, day or date.min, forward)
            except (ValueError, OverflowError, KeyError):
                continue
            if resolved is None:
                continue
            taken.append((m.start(), m.end()))
            out.append(ResolvedDate(m.group(0), m.start(), m.end(), resolved[0], resolved[1],
                                    explicit=kind in ("iso", "dmy", "mdy", "my")))
    out.sort(key=lambda r: r.start)
    return out


def resolve(expression: str, anchor: date | datetime | None, *, future: bool | None = None) -> ResolvedDate | None:
    """The first date expression in ``expression`` resolved against ``anchor`` (or None)."""
    found = find_dates(expression, anchor, future=future)
    return found[0] if found else None


def rewrite_dates(text: str, anchor: date | datetime | None, *,
                  future: bool | None = None) -> tuple[str, list[ResolvedDate]]:
    """``text`` with relative dates replaced by absolute ones, and the dates found.

    "I went there yesterday" -> "I went there on 7 May 2023"; "since last week"
    -> "since the week of 1 May 2023". Explicit dates are left as written.
    """
    found = find_dates(text, anchor, future=future)
    if not found:
        return text, found
    parts: list[str] = []
    pos = 0
    for r in found:
        parts.append(text[pos:r.start])
        if r.explicit:
            parts.append(r.text)
        else:
            before = text[:r.start]
            bare = _PREPOSITION_BEFORE.search(before) is not None
            replacement = r.human if bare else r.phrase
            if r.text.lower().startswith("in ") and r.granularity == "day":
                replacement = f"on {r.human}"
            part = _PART_OF_DAY.match(text, r.end)
            if part and r.granularity == "day" and replacement.startswith("on ") \
                    and not re.search(r"night|morning|afternoon|evening", r.text, re.I):
                # "on Saturday morning" -> "on the morning of 7 March 2026"
                parts.append(f"on the {part.group(1).lower()} of {r.human}")
                pos = part.end()
                continue
            parts.append(replacement)
        pos = r.end
    parts.append(text[pos:])
    return "".join(parts), found

