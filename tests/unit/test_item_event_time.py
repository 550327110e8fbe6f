"""The time an items `write` request is applied at: its record's time, bounded (issue 30)."""

from __future__ import annotations

from services.groups.items.bulk import MAX_RECORD_AGE_MS, event_time

NOW = 1_800_000_000_000


def test_a_record_time_in_the_recent_past_is_the_writes_time() -> None:
    assert event_time(NOW - 250, NOW) == NOW - 250


def test_no_record_time_is_now() -> None:
    assert event_time(None, NOW) == NOW
    assert event_time(-1, NOW) == NOW


def test_a_record_time_is_never_after_now_nor_older_than_the_bound() -> None:
    assert event_time(NOW + 5_000, NOW) == NOW
    assert event_time(NOW - 10 * MAX_RECORD_AGE_MS, NOW) == NOW - MAX_RECORD_AGE_MS
