"""The maintenance schedule as pure functions of time."""

from __future__ import annotations

from datetime import UTC, datetime

from engine.upkeep.schedules import SCHEDULES, firings, job_id

BY_NAME = {s.name: s for s in SCHEDULES}


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC)  # 2026-11-29 is a Sunday


def test_hourly_decay_fires_on_every_hour_mark() -> None:
    fired = firings(BY_NAME["hourly-decay"], at(29, 10, 15), at(29, 13, 0))
    assert fired == [at(29, 11), at(29, 12), at(29, 13)]


def test_daily_jobs_fire_at_two_and_weekly_archives_on_sunday_at_three() -> None:
    assert firings(BY_NAME["daily-cleanup"], at(27, 0), at(29, 23)) == [
        at(27, 2),
        at(28, 2),
        at(29, 2),
    ]
    assert firings(BY_NAME["weekly-archive"], at(23, 4), at(29, 23)) == [at(29, 3)]
    assert firings(BY_NAME["weekly-archive"], at(29, 3), at(29, 23)) == []  # exclusive start


def test_a_firing_has_a_deterministic_job_id() -> None:
    schedule = BY_NAME["daily-consolidation"]
    assert job_id(schedule, at(29, 2)) == "daily-consolidation:2026-11-29T02:00Z"
    assert job_id(schedule, at(29, 2)) == job_id(schedule, at(29, 2))
