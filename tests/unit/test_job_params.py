"""Job parameters (REFERENCE §10.6): every parameter a job reads is honoured, and one it would
ignore fails the job with an error naming it (the reference silently dropped `timeRange`,
`compress`, `syncToIpfs`, `batchSize` and `confidenceThreshold` in places)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.errors import InputRejected
from services.jobs import JOB_PARAMS, batch_param, check_params, window

DAY = 86_400_000
AT = 1_780_000_000_000


@pytest.mark.parametrize("job_type", sorted(JOB_PARAMS))
def test_each_job_takes_its_own_and_the_common_parameters(job_type: str) -> None:
    params = {"agentWallet": "0xA", "execution": "inline"}
    params.update(
        {
            name: {"start": 0, "end": 1}
            if name.endswith("Range")
            else (True if name in ("compress", "syncToIpfs") else 7)
            for name in JOB_PARAMS[job_type]
        }
    )
    check_params(job_type, params)


@pytest.mark.parametrize(
    ("job_type", "params", "message"),
    [
        ("cleanup", {"windowDays": 7}, "cleanup does not take windowDays; it takes"),
        ("consolidate", {"halfLifeDays": 3, "olderThan": 1}, "halfLifeDays, olderThan"),
        ("patterns_extract", {"confidenceThreshold": 0.9}, "thresholds are the server's"),
        ("archive_create", {"compress": False}, "compress must be true"),
        ("archive_create", {"syncToIpfs": "no"}, "syncToIpfs must be true or false"),
    ],
)
def test_a_parameter_that_would_be_ignored_is_refused_by_name(
    job_type: str, params: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputRejected, match=message):
        check_params(job_type, params)


def test_the_window_is_the_days_before_the_job_or_the_given_range() -> None:
    assert window({}, AT, 7) == (AT - 7 * DAY, AT)
    assert window({"windowDays": 2}, AT, 7) == (AT - 2 * DAY, AT)
    assert window({"dateRange": {"start": AT - 5 * DAY, "end": AT - DAY}}, AT, 7) == (
        AT - 5 * DAY,
        AT - DAY,
    )
    iso = {"start": "2026-01-01T00:00:00Z", "end": "2026-01-08T00:00:00"}  # naive is UTC
    start, end = window({"timeRange": iso}, AT, 7)
    assert (start, end - start) == (1_767_225_600_000, 7 * DAY)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"dateRange": {"start": AT, "end": AT - 1}}, "must start before it ends"),
        ({"dateRange": {"start": AT}}, "an object with start and end"),
        ({"dateRange": [AT, AT + 1]}, "an object with start and end"),
        ({"dateRange": {"start": "yesterday", "end": AT}}, "ISO-8601 times or ms"),
        ({"dateRange": {"start": 1, "end": 2}, "windowDays": 3}, "one of windowDays"),
        ({"dateRange": {"start": 1, "end": 2}, "timeRange": {"start": 1, "end": 2}}, "one of"),
        ({"dateRange": {"start": 1, "end": 200 * 365 * DAY}}, "longer than 36500 days"),
    ],
)
def test_a_bad_range_is_refused(params: dict[str, Any], message: str) -> None:
    with pytest.raises(InputRejected, match=message):
        window(params, AT, 7)


@pytest.mark.parametrize("value", [0, -1, 10_001, 2.5, True, "500"])
def test_batch_size_must_be_a_sensible_whole_number(value: object) -> None:
    with pytest.raises(InputRejected, match="batchSize"):
        batch_param({"batchSize": value})


def test_batch_size_defaults_and_passes_through() -> None:
    assert batch_param({}) == 500
    assert batch_param({"batchSize": 25}) == 25
