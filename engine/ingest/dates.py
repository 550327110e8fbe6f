"""Relative dates resolved against the event's time (issue 16).

"We adopted her last Saturday" read a year later says nothing about when. At ingest, each
relative date expression in a memory row's text is followed by the date it meant, computed
from the turn's event time (UTC): "last Saturday (2023-05-06)". The text stays what was said;
the resolved date sits beside it, where search (BM25, vectors) and the packed context see it.

Resolved: yesterday / today / tonight / tomorrow / last night / the day before yesterday;
last, this or next <weekday>; last, this or next week / weekend / month / year; and
"<n> days / weeks / months / years ago" with n a number, a number word, "a", "an" or
"a couple of". Days and weeks resolve to a date, months to a year and month, years to a year.
Anything vaguer ("recently", "a few weeks ago", a bare weekday) is left as it is.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "a couple of": 2,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_DAY_WORDS = {
    "the day before yesterday": -2,
    "yesterday": -1,
    "last night": -1,
    "today": 0,
    "tonight": 0,
    "this morning": 0,
    "this afternoon": 0,
    "this evening": 0,
    "tomorrow": 1,
    "the day after tomorrow": 2,
}
_COUNT = r"(\d{1,3}|" + "|".join(sorted((re.escape(k) for k in NUMBERS), key=len)[::-1]) + ")"
_PATTERN = re.compile(
    r"\b(?:"
    r"(?P<day>" + "|".join(sorted(_DAY_WORDS, key=len, reverse=True)) + r")"
    r"|(?P<rel>last|this|next|coming)\s+(?P<weekday>" + "|".join(WEEKDAYS) + r")"
    r"|(?P<rel2>last|this|next)\s+(?P<span>week|weekend|month|year)"
    r"|(?P<count>" + _COUNT + r")\s+(?P<unit>day|week|month|year)s?\s+ago"
    r")\b(?!\s*\(\d{4})",  # already resolved: leave it
    re.IGNORECASE,
)


def _months_back(d: date, months: int) -> tuple[int, int]:
    total = d.year * 12 + (d.month - 1) - months
    return total // 12, total % 12 + 1


def _weekday(today: date, rel: str, weekday: str) -> date:
    target = WEEKDAYS.index(weekday)
    delta = target - today.weekday()
    if rel == "last":
        return today + timedelta(days=delta - 7 if delta >= 0 else delta)
    if rel in ("next", "coming"):
        return today + timedelta(days=delta + 7 if delta <= 0 else delta)
    return today + timedelta(days=delta)  # "this": the one in the event's week (Mon-Sun)


def _span(today: date, rel: str, span: str) -> str:
    step = {"last": -1, "this": 0, "next": 1}[rel]
    if span == "year":
        return str(today.year + step)
    if span == "month":
        year, month = _months_back(today, -step)
        return f"{year:04d}-{month:02d}"
    monday = today - timedelta(days=today.weekday()) + timedelta(weeks=step)
    if span == "weekend":  # its Saturday: "last weekend" on a Monday is the one just gone
        return (monday + timedelta(days=5)).isoformat()
    return f"the week of {monday.isoformat()}"


def _ago(today: date, count: str, unit: str) -> str | None:
    n = int(count) if count.isdigit() else NUMBERS.get(count.lower())
    if n is None:
        return None
    if unit == "day":
        return (today - timedelta(days=n)).isoformat()
    if unit == "week":
        return (today - timedelta(weeks=n)).isoformat()
    if unit == "month":
        year, month = _months_back(today, n)
        return f"{year:04d}-{month:02d}"
    return str(today.year - n)


def _resolved(match: re.Match[str], today: date) -> str | None:
    """The date `match` meant, None when it names none. The pattern matches letters case
    insensitively, which also takes a few non-ASCII letters for ASCII ones ("last nıght" with
    a dotless i, "laſt" with a long s): those are left as they are (they used to raise, and
    the turn holding them could not be stored). A Kelvin sign lowers to "k" and resolves."""
    groups = {k: (v.lower() if v else v) for k, v in match.groupdict().items()}
    if not all(v.isascii() for v in groups.values() if v):
        return None
    if groups["day"]:
        return (today + timedelta(days=_DAY_WORDS[groups["day"]])).isoformat()
    if groups["weekday"]:
        return _weekday(today, groups["rel"], groups["weekday"]).isoformat()
    if groups["span"]:
        return _span(today, groups["rel2"], groups["span"])
    if groups["unit"]:
        return _ago(today, groups["count"], groups["unit"])
    return None


_ANCHORS = ("day", "night", "morning", "afternoon", "evening", "tomorrow", "week", "month", "year")
"""Words every expression of `_PATTERN` holds one of ("yesterday", "monday" and "days ago"
hold "day"; "weekend" holds "week"; ...). A text without one has nothing to resolve."""
_ANCHOR = re.compile("|".join(_ANCHORS), re.IGNORECASE)

_BEFORE, _AFTER = 24, 16
"""How far an expression reaches before its first anchor ("a couple of " and a count: 16
characters; "next wednes": 11) and after its end ("s ago" and a space or two)."""


def _anchors(text: str) -> list[tuple[int, int]]:
    """Where the anchor words are, in order: found with `str.find` in ASCII text (a regular
    expression costs as much as the pattern it spares), else as `_PATTERN` compares letters
    (its case-insensitive matching also takes a few non-ASCII letters for ASCII ones)."""
    if not text.isascii():
        return [m.span() for m in _ANCHOR.finditer(text)]
    folded = text.lower()
    spans: list[tuple[int, int]] = []
    for word in _ANCHORS:
        at = folded.find(word)
        while at != -1:
            spans.append((at, at + len(word)))
            at = folded.find(word, at + 1)
    return sorted(spans)


def _expressions(text: str) -> list[re.Match[str]]:
    """`_PATTERN`'s matches in `text`, left to right, as `finditer` over the whole text gives
    them, found by scanning only around the anchor words: the pattern tried at every word
    boundary cost a turn's ingest ~50 µs (a third of the transcripts group's CPU). A window
    cut short may make the pattern match what the whole text does not (its end reads as a word
    boundary, the "already resolved" look-ahead cannot see past it), so each hit is matched
    again on the whole text at the same place (`tests/property/test_resolved_dates_scan.py`
    checks the two agree)."""
    windows: list[list[int]] = []
    for at, to in _anchors(text):
        start, end = max(0, at - _BEFORE), to + _AFTER
        if windows and start <= windows[-1][1]:
            windows[-1][1] = end
        else:
            windows.append([start, end])
    found: list[re.Match[str]] = []
    done = 0
    for start, end in windows:
        for hit in _PATTERN.finditer(text, max(start, done), end):
            whole = _PATTERN.match(text, hit.start())
            if whole is not None and whole.start() >= done:
                found.append(whole)
                done = whole.end()
    return found


def with_resolved_dates(text: str, event_ms: int) -> str:
    """`text` with each relative date expression followed by the date it meant, as seen
    from `event_ms` (UTC): "yesterday" → "yesterday (2023-05-06)". Idempotent."""
    found = _expressions(text)
    if not found:
        return text
    try:
        today = datetime.fromtimestamp(event_ms / 1000, tz=UTC).date()
    except (OverflowError, OSError, ValueError):
        return text
    parts: list[str] = []
    at = 0
    for match in found:
        resolved = _resolved(match, today)
        if resolved is not None:
            parts += [text[at : match.end()], f" ({resolved})"]
            at = match.end()
    return "".join(parts) + text[at:] if parts else text
