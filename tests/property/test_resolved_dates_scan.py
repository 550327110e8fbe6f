"""`with_resolved_dates` scans only around anchor words (`engine.ingest.dates._expressions`);
it must give exactly what applying its pattern to the whole text gives, on any text made of
date expressions, their near misses, resolved dates and filler."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.ingest.dates import _PATTERN, _resolved, with_resolved_dates

PIECES = [
    "yesterday",
    "today",
    "tonight",
    "tomorrow",
    "last night",
    "this morning",
    "this evening",
    "the day before yesterday",
    "the day after tomorrow",
    "last Saturday",
    "next friday",
    "coming Monday",
    "this wednesday",
    "last week",
    "last weekend",
    "next month",
    "this year",
    "two weeks ago",
    "a couple of days ago",
    "3 months ago",
    "an year ago",
    "12 years ago",
    "a few weeks ago",
    "recently",
    "Monday",
    "weekday",
    "yesterdays",
    "daylight",
    "monthly",
    "(2023-05-06)",
    " (2023",
    "ago",
    "last",
    "next",
    "this",
    "a couple of",
    "weekend",
    "days",
    "years",
    "morning",
    "nights",
    "Sunday",
    "today's",
    "birthday",
    "ten",
    "next weeK",
    "last nıght",
    "İn 2 days ago",
]
FILLER = st.text(alphabet=" ,.!?\n-()'abcdefgxyz0123456789éİıK", max_size=30)


def whole_text(text: str, event_ms: int) -> str:
    """The pattern applied to the whole text, as `with_resolved_dates` did before the scan."""
    today = datetime.fromtimestamp(event_ms / 1000, tz=UTC).date()

    def annotate(match: re.Match[str]) -> str:
        resolved = _resolved(match, today)
        return match.group(0) if resolved is None else f"{match.group(0)} ({resolved})"

    return _PATTERN.sub(annotate, text)


@settings(max_examples=600, deadline=None)
@given(
    parts=st.lists(st.one_of(st.sampled_from(PIECES), FILLER), max_size=25),
    joiner=st.sampled_from([" ", "", "  ", "\n", ", "]),
    day=st.dates(min_value=date(1990, 1, 1), max_value=date(2090, 12, 31)),
)
def test_the_anchored_scan_resolves_what_the_whole_text_scan_does(
    parts: list[str], joiner: str, day: date
) -> None:
    text = joiner.join(parts)
    event_ms = int(datetime(day.year, day.month, day.day, 12, tzinfo=UTC).timestamp() * 1000)
    assert with_resolved_dates(text, event_ms) == whole_text(text, event_ms)
