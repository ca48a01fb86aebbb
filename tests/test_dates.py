"""Relative dates resolved against a turn's timestamp (anchor: Monday 8 May 2023)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from dexai_memory.text.dates import find_dates, parse_locomo_timestamp, resolve, rewrite_dates

ANCHOR = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday

CASES = [
    pytest.param("yesterday", date(2023, 5, 7), "day", "7 May 2023", id="yesterday"),
    pytest.param("today", date(2023, 5, 8), "day", "8 May 2023", id="today"),
    pytest.param("tomorrow", date(2023, 5, 9), "day", "9 May 2023", id="tomorrow"),
    pytest.param("last night", date(2023, 5, 7), "day", "7 May 2023", id="last-night"),
    pytest.param("the day before yesterday", date(2023, 5, 6), "day", "6 May 2023", id="day-before-yesterday"),
    pytest.param("last week", date(2023, 5, 1), "week", "the week of 1 May 2023", id="last-week"),
    pytest.param("next week", date(2023, 5, 15), "week", "the week of 15 May 2023", id="next-week"),
    pytest.param("last month", date(2023, 4, 1), "month", "April 2023", id="last-month"),
    pytest.param("next month", date(2023, 6, 1), "month", "June 2023", id="next-month"),
    pytest.param("last year", date(2022, 1, 1), "year", "2022", id="last-year"),
    pytest.param("next year", date(2024, 1, 1), "year", "2024", id="next-year"),
    pytest.param("last Friday", date(2023, 5, 5), "day", "5 May 2023", id="last-friday"),
    pytest.param("next Friday", date(2023, 5, 12), "day", "12 May 2023", id="next-friday"),
    pytest.param("this Friday", date(2023, 5, 12), "day", "12 May 2023", id="this-friday"),
    pytest.param("last Monday", date(2023, 5, 1), "day", "1 May 2023", id="last-monday-on-a-monday"),
    pytest.param("I went there on Saturday", date(2023, 5, 6), "day", "6 May 2023", id="on-weekday-past"),
    pytest.param("I will go on Saturday", date(2023, 5, 13), "day", "13 May 2023", id="on-weekday-future"),
    pytest.param("3 days ago", date(2023, 5, 5), "day", "5 May 2023", id="n-days-ago"),
    pytest.param("two weeks ago", date(2023, 4, 24), "week", "the week of 24 April 2023", id="n-weeks-ago"),
    pytest.param("a month ago", date(2023, 4, 1), "month", "April 2023", id="a-month-ago"),
    pytest.param("in 2 days", date(2023, 5, 10), "day", "10 May 2023", id="in-n-days"),
    pytest.param("last weekend", date(2023, 5, 6), "weekend", "the weekend of 6 May 2023", id="last-weekend"),
    pytest.param("two weekends ago", date(2023, 4, 29), "weekend", "the weekend of 29 April 2023",
                 id="two-weekends-ago"),
    pytest.param("8 May 2023", date(2023, 5, 8), "day", "8 May 2023", id="explicit-dmy"),
    pytest.param("on 8 May, 2023", date(2023, 5, 8), "day", "8 May 2023", id="explicit-dmy-comma"),
    pytest.param("May 8", date(2023, 5, 8), "day", "8 May 2023", id="explicit-md-anchor-year"),
    pytest.param("June 3rd, 2021", date(2021, 6, 3), "day", "3 June 2021", id="explicit-mdy-ordinal"),
    pytest.param("2023-05-08", date(2023, 5, 8), "day", "8 May 2023", id="explicit-iso"),
    pytest.param("in March 2022", date(2022, 3, 1), "month", "March 2022", id="explicit-month-year"),
]


@pytest.mark.parametrize(("text", "expected", "granularity", "human"), CASES)
def test_resolve(text: str, expected: date, granularity: str, human: str) -> None:
    found = resolve(text, ANCHOR)
    assert found is not None
    assert (found.date, found.granularity, found.human) == (expected, granularity, human)


def test_weekend_from_a_saturday_is_the_previous_one() -> None:
    saturday = datetime(2023, 5, 13, 12, tzinfo=UTC)
    assert resolve("last weekend", saturday).date == date(2023, 5, 6)


def test_may_the_verb_is_not_a_month() -> None:
    assert find_dates("I may 5 times try", ANCHOR) == []


def test_no_anchor_keeps_only_absolute_dates() -> None:
    assert find_dates("yesterday", None) == []
    assert resolve("8 May 2023", None).date == date(2023, 5, 8)


@pytest.mark.parametrize(("text", "rewritten"), [
    pytest.param("I went to a support group yesterday.", "I went to a support group on 7 May 2023.", id="day"),
    pytest.param("We met last week", "We met during the week of 1 May 2023", id="week"),
    pytest.param("since last week", "since the week of 1 May 2023", id="preposition-kept"),
    pytest.param("I painted it last year!", "I painted it in 2022!", id="year"),
    pytest.param("Born on 8 May 2023", "Born on 8 May 2023", id="explicit-untouched"),
])
def test_rewrite_dates(text: str, rewritten: str) -> None:
    assert rewrite_dates(text, ANCHOR)[0] == rewritten


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC), id="pm"),
    pytest.param("10:04 am on 19 January, 2023", datetime(2023, 1, 19, 10, 4, tzinfo=UTC), id="am"),
    pytest.param("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9, tzinfo=UTC), id="midnight"),
    pytest.param("12:30 pm on 1 June, 2023", datetime(2023, 6, 1, 12, 30, tzinfo=UTC), id="noon"),
])
def test_parse_locomo_timestamp(text: str, expected: datetime) -> None:
    assert parse_locomo_timestamp(text) == expected


def test_parse_locomo_timestamp_rejects_other_text() -> None:
    assert parse_locomo_timestamp("yesterday") is None
    assert parse_locomo_timestamp("1:56 pm on 31 February, 2023") is None


# ---------------------------------------------------------------------------- deadlines and appointments (issue 13)
FORWARD = [
    pytest.param("Send it by Friday", date(2023, 5, 12), id="by-weekday"),
    pytest.param("Keep it until Monday", date(2023, 5, 8), id="until-weekday-today-counts"),
    pytest.param("Invoices must go out by the 15th", date(2023, 5, 15), id="the-15th-this-month"),
    pytest.param("The flight is on the 3rd", date(2023, 6, 3), id="the-3rd-next-month"),
    pytest.param("The offsite is on the 1st of next month", date(2023, 6, 1), id="1st-of-next-month"),
    pytest.param("It has to be signed by the end of the month", date(2023, 5, 31), id="end-of-the-month"),
    pytest.param("The audit is due at the end of next month", date(2023, 6, 30), id="end-of-next-month"),
    pytest.param("I'm flying to Tokyo on January 9th", date(2024, 1, 9), id="month-day-already-past-is-next-year"),
]


@pytest.mark.parametrize(("text", "expected"), FORWARD)
def test_deadlines_and_appointments_resolve_forward(text: str, expected: date) -> None:
    found = resolve(text, ANCHOR, future=True)
    assert found is not None and (found.date, found.granularity) == (expected, "day")


def test_the_31st_skips_short_months() -> None:
    found = resolve("Rent is due on the 31st", datetime(2023, 6, 2, tzinfo=UTC), future=True)
    assert found is not None and found.date == date(2023, 7, 31)


def test_past_sentences_keep_the_last_day_of_month() -> None:
    found = resolve("I paid it on the 20th", ANCHOR, future=False)
    assert found is not None and found.date == date(2023, 4, 20)


def test_ordinals_that_are_not_dates_are_left_alone() -> None:
    assert find_dates("The 3rd floor and the 2nd time", ANCHOR) == []


def test_a_part_of_the_day_reads_naturally() -> None:
    text, _ = rewrite_dates("The plumber is coming on Saturday morning.", ANCHOR, future=True)
    assert text == "The plumber is coming on the morning of 13 May 2023."
