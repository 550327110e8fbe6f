"""The period a question asks about (issue 16): "What did I read in May 2023?", "Where did we
go last year?", "in 2022". Packing ranks memories from that period higher
(`engine.retrieval.packing`); relative periods are measured from the same anchor as recency
(the newest memory, never later than the clock or `asOf`), so an imported history is asked
about in its own time.

Recognised: a month name with or without a year ("in May", "May 2023"; without a year, the
latest such month not after the anchor), a year from 1900 to 2199, and last / this year,
last / this month, last / this week. Nothing else is guessed: no period, no effect.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_NAMES = "|".join(MONTHS)
_YEAR_DIGITS = r"(?:19|20|21)\d\d"
_MONTH = re.compile(
    rf"\b(?:in|during|of)\s+(?P<month>{_NAMES})\b(?:\s+(?P<year>{_YEAR_DIGITS}))?"
    rf"|\b(?P<month2>{_NAMES})\s+(?P<year2>{_YEAR_DIGITS})\b",
    re.IGNORECASE,
)
_YEAR = re.compile(rf"\b(?:in|during|of)\s+(?P<year>{_YEAR_DIGITS})\b", re.IGNORECASE)
_RELATIVE = re.compile(r"\b(?P<rel>last|this)\s+(?P<span>year|month|week)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Period:
    """[start, end) in milliseconds since epoch, UTC."""

    start: int
    end: int

    def holds(self, at: int | None) -> bool:
        return at is not None and self.start <= at < self.end


def utc_day(ms: int | None) -> str | None:
    """ "YYYY-MM-DD" (UTC) of a time in ms, or None for no time or one no calendar holds."""
    if not ms or ms <= 0:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d")
    except (OverflowError, OSError, ValueError):
        return None


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _month(year: int, month: int) -> Period:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return Period(_ms(start), _ms(end))


def _year(year: int) -> Period:
    return Period(_ms(datetime(year, 1, 1, tzinfo=UTC)), _ms(datetime(year + 1, 1, 1, tzinfo=UTC)))


def asked_period(query: str, anchor_ms: int) -> Period | None:
    """The period `query` asks about, or None (see the module's docstring)."""
    try:
        today = datetime.fromtimestamp(anchor_ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    found = _MONTH.search(query)
    if found is not None:
        name = (found.group("month") or found.group("month2")).lower()
        month = MONTHS.index(name) + 1
        year_text = found.group("year") or found.group("year2")
        if year_text:
            return _month(int(year_text), month)
        year = today.year if month <= today.month else today.year - 1
        return _month(year, month)
    found = _YEAR.search(query)
    if found is not None:
        return _year(int(found.group("year")))
    found = _RELATIVE.search(query)
    if found is None:
        return None
    rel, span = found.group("rel").lower(), found.group("span").lower()
    step = -1 if rel == "last" else 0
    if span == "year":
        return _year(today.year + step)
    if span == "month":
        total = today.year * 12 + today.month - 1 + step
        return _month(total // 12, total % 12 + 1)
    monday = (today - timedelta(days=today.weekday())).replace(
        hour=0, minute=0, second=0, microsecond=0
    ) + timedelta(weeks=step)
    return Period(_ms(monday), _ms(monday + timedelta(weeks=1)))
