"""Time helpers of `schemas.ids`: milliseconds are exact both ways."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from schemas.bounds import MAX_TIME_MS
from schemas.ids import from_ms, to_ms


def test_a_millisecond_is_not_lost_to_float_rounding() -> None:
    # 257.715 s: `timestamp() * 1000` gives 257714.99999999997, which int() truncated
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=257_715)
    assert to_ms(moment) == 257_715


def test_sub_millisecond_parts_are_floored() -> None:
    moment = datetime(2026, 3, 2, 12, 0, 0, 999_999, tzinfo=UTC)
    assert to_ms(moment) == to_ms(moment.replace(microsecond=999_000))


def test_a_naive_datetime_is_read_as_utc() -> None:
    naive = datetime(2026, 3, 2, 12, 0, 0, 123_000)
    assert to_ms(naive) == to_ms(naive.replace(tzinfo=UTC))


@given(st.integers(min_value=0, max_value=MAX_TIME_MS))
def test_milliseconds_round_trip_exactly(ms: int) -> None:
    assert to_ms(from_ms(ms)) == ms
