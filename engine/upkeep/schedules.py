"""The maintenance schedule (reference §10.8), as pure functions of time (UTC).

| schedule      | when                  | job            | parameters        |
| ------------- | --------------------- | -------------- | ----------------- |
| hourly-decay  | every hour at :00     | decay_update   | halfLifeDays 30   |
| daily-cleanup | every day at 02:00    | cleanup        | olderThanDays 90  |
| daily-consolidation | every day at 02:00 | consolidate | every agent       |
| daily-patterns | every day at 02:00   | patterns_extract | every agent, windowDays 1 |
| weekly-archive | Sundays at 03:00     | archive_create | every agent, windowDays 7 |

A firing has a deterministic job id (`<schedule>:<fire time>`), so two schedulers, or one
restarted, never run the same firing twice; a schedule whose previous job is still running
is skipped (the reference's SKIP overlap policy).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

HOUR = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class Schedule:
    name: str
    job_type: str
    hour: int | None
    """Hour of day (UTC) for daily/weekly schedules; None = every hour at :00."""
    weekday: int | None = None
    """0 = Monday … 6 = Sunday for weekly schedules."""
    params: dict[str, Any] = field(default_factory=dict)
    per_agent: bool = False


SCHEDULES: tuple[Schedule, ...] = (
    Schedule("hourly-decay", "decay_update", None, params={"halfLifeDays": 30}),
    Schedule("daily-cleanup", "cleanup", 2, params={"olderThanDays": 90}),
    Schedule("daily-consolidation", "consolidate", 2, per_agent=True),
    Schedule("daily-patterns", "patterns_extract", 2, params={"windowDays": 1}, per_agent=True),
    Schedule(
        "weekly-archive", "archive_create", 3, weekday=6, params={"windowDays": 7}, per_agent=True
    ),
)


def firings(schedule: Schedule, after: datetime, until: datetime) -> list[datetime]:
    """Fire times in (after, until], oldest first."""
    start = after.astimezone(UTC).replace(minute=0, second=0, microsecond=0) + HOUR
    out: list[datetime] = []
    moment = start
    end = until.astimezone(UTC)
    while moment <= end:
        if schedule.hour is None or (
            moment.hour == schedule.hour
            and (schedule.weekday is None or moment.weekday() == schedule.weekday)
        ):
            out.append(moment)
        moment += HOUR
    return out


def job_id(schedule: Schedule, fire: datetime) -> str:
    return f"{schedule.name}:{fire.astimezone(UTC).strftime('%Y-%m-%dT%H:%MZ')}"
