"""Job parameters (reference §10.6), one schema per job (`schemas.jobs`): every parameter a
job reads is honoured, one it would ignore is refused by name (the reference silently dropped
`timeRange`, `compress`, `syncToIpfs`, `batchSize` and `confidenceThreshold` in places), and a
value out of its range is `ValueOutOfRange` (422) — at the edge, in the `JobRequested`
contract and in the jobs group alike."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import ValidationError

from engine.errors import InputRejected
from engine.upkeep.schedules import SCHEDULES, Schedule
from schemas.bounds import MAX_TIME_MS, ValueOutOfRange
from schemas.events import JobRequested
from schemas.jobs import (
    JOB_PARAMS,
    MAX_BATCH,
    MAX_DAYS,
    ArchiveCreateParams,
    PatternsExtractParams,
    check_job_params,
)
from schemas.scope import ScopeError
from services.groups.jobs.functions import _checked

DAY = 86_400_000
AT = 1_780_000_000_000
AGENT = {"agentWallet": "0xA"}


@pytest.mark.parametrize("job_type", sorted(JOB_PARAMS))
def test_each_job_takes_its_own_and_the_common_parameters(job_type: str) -> None:
    params: dict[str, Any] = {**AGENT, "execution": "inline"}
    for name in JOB_PARAMS[job_type].model_fields:
        if name.endswith("Range"):
            continue  # one window at a time: checked below
        params.setdefault(name, True if name in ("compress", "syncToIpfs") else 7)
    params.pop("agentWallets")
    check_job_params(job_type, params)
    JobRequested.model_validate({"type": job_type, "params": params})


@pytest.mark.parametrize(
    ("job_type", "params", "message"),
    [
        ("cleanup", {"windowDays": 7}, "cleanup does not take windowDays; it takes"),
        ("consolidate", {**AGENT, "halfLifeDays": 3, "olderThan": 1}, "halfLifeDays, olderThan"),
        ("patterns_extract", {**AGENT, "confidenceThreshold": 0.9}, "thresholds are the server's"),
        ("archive_create", {**AGENT, "compress": False}, "compress must be true"),
        ("archive_create", {**AGENT, "syncToIpfs": "no"}, "syncToIpfs"),
        ("consolidate", {}, "agentWallet or agentWallets are required"),
        ("archive_create", {"agentWallets": []}, "agentWallet or agentWallets are required"),
        ("nap", {}, "type must be one of"),
    ],
)
def test_a_parameter_that_would_be_ignored_is_refused_by_name(
    job_type: str, params: dict[str, Any], message: str
) -> None:
    with pytest.raises(ScopeError, match=message) as refused:
        check_job_params(job_type, params)
    assert not isinstance(refused.value, ValueOutOfRange)  # a 400, not a 422


def test_the_window_is_the_days_before_the_job_or_the_given_range() -> None:
    def window(params: dict[str, Any]) -> tuple[int, int]:
        return PatternsExtractParams.model_validate({**AGENT, **params}).window(AT, 7)

    assert window({}) == (AT - 7 * DAY, AT)
    assert window({"windowDays": 2}) == (AT - 2 * DAY, AT)
    assert window({"windowDays": 0.5}) == (AT - DAY // 2, AT)
    assert window({"dateRange": {"start": AT - 5 * DAY, "end": AT - DAY}}) == (
        AT - 5 * DAY,
        AT - DAY,
    )
    iso = {"start": "2026-01-01T00:00:00Z", "end": "2026-01-08T00:00:00"}  # naive is UTC
    start, end = window({"timeRange": iso})
    assert (start, end - start) == (1_767_225_600_000, 7 * DAY)
    assert window({"dateRange": {"start": 0, "end": 1000}}) == (0, 1000)  # 1970 is a time
    assert window({"windowDays": MAX_DAYS})[0] == AT - int(MAX_DAYS * DAY)  # no overflow
    last = MAX_TIME_MS - DAY
    assert window({"dateRange": {"start": last, "end": MAX_TIME_MS}}) == (last, MAX_TIME_MS)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"dateRange": {"start": AT}}, "dateRange.end: Field required"),
        ({"dateRange": [AT, AT + 1]}, "dateRange: Input should be a valid dictionary"),
        ({"dateRange": {"start": "yesterday", "end": AT}}, "dateRange.start: .*ISO-8601"),
        ({"dateRange": {"start": 1, "end": 2}, "windowDays": 3}, "one of windowDays"),
        ({"dateRange": {"start": 1, "end": 2}, "timeRange": {"start": 1, "end": 2}}, "one of"),
        ({"windowDays": "7"}, "windowDays"),
    ],
)
def test_a_malformed_window_is_refused(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ScopeError, match=message) as refused:
        check_job_params("archive_create", {**AGENT, **params})
    assert not isinstance(refused.value, ValueOutOfRange)


@pytest.mark.parametrize(
    ("job_type", "params", "message"),
    [
        ("patterns_extract", {"windowDays": -1}, "windowDays: Input should be greater than 0"),
        ("patterns_extract", {"windowDays": 0}, "windowDays: Input should be greater than 0"),
        ("archive_create", {"windowDays": 1e9}, f"windowDays: .* {MAX_DAYS:g}"),
        ("archive_create", {"windowDays": float("nan")}, "windowDays: Input should be a finite"),
        ("decay_update", {"halfLifeDays": -1}, "halfLifeDays"),
        ("decay_update", {"halfLifeDays": float("inf")}, "halfLifeDays"),
        ("cleanup", {"olderThanDays": 1e308}, "olderThanDays"),
        ("consolidate", {"batchSize": -1}, "batchSize: Input should be greater than or equal"),
        ("consolidate", {"batchSize": 0}, "batchSize"),
        ("decay_update", {"batchSize": MAX_BATCH + 1}, f"batchSize: .* {MAX_BATCH}"),
        ("decay_update", {"batchSize": 2.5}, "batchSize: .*fractional part"),
        ("archive_create", {"dateRange": {"start": AT, "end": AT - 1}}, "must start before"),
        ("archive_create", {"dateRange": {"start": 1, "end": 200 * 365 * DAY}}, "longer than"),
        ("archive_create", {"dateRange": {"start": 2**62, "end": 2**62 + 1}}, "dateRange.start"),
        ("archive_create", {"timeRange": {"start": -1, "end": 5}}, "timeRange.start"),
        ("archive_create", {"timeRange": {"start": 2**70, "end": 5}}, "timeRange.start"),
        ("archive_create", {"timeRange": {"start": 0, "end": "0001-01-01T00:00:00Z"}}, "end"),
    ],
)
def test_a_value_out_of_range_is_value_out_of_range(
    job_type: str, params: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueOutOfRange, match=message):
        check_job_params(job_type, {**AGENT, **params})
    # the contract refuses it too: a request that bypassed the edge is dead-lettered
    with pytest.raises(ValidationError, match=message.split(":")[0]) as refused:
        JobRequested.model_validate({"type": job_type, "params": {**AGENT, **params}})
    assert refused.value.errors()[0]["type"] == "out_of_range"


@pytest.mark.parametrize("value", [True, "500"])
def test_batch_size_is_a_number(value: object) -> None:
    with pytest.raises(ScopeError, match="batchSize"):
        check_job_params("consolidate", {**AGENT, "batchSize": value})


def test_typed_values_and_defaults() -> None:
    archive = check_job_params("archive_create", {**AGENT, "syncToIpfs": False})
    assert isinstance(archive, ArchiveCreateParams)
    assert (archive.syncToIpfs, archive.agents()) == (False, ["0xA"])
    many = check_job_params("consolidate", {"agentWallets": ["0xA", "0xB"], "batchSize": 25})
    assert many.agents() == ["0xA", "0xB"]


def test_the_jobs_group_fails_a_job_with_bad_parameters_before_any_work() -> None:
    ran: list[Any] = []

    async def work(params: PatternsExtractParams, at: int) -> dict[str, Any]:
        ran.append(params)
        return {}

    job = _checked(PatternsExtractParams, work)
    with pytest.raises(InputRejected, match="windowDays: Input should be greater than 0"):
        asyncio.run(job({**AGENT, "windowDays": -1}, AT))
    with pytest.raises(InputRejected, match="does not take windowdays"):
        asyncio.run(job({**AGENT, "windowdays": 3}, AT))
    assert ran == []
    asyncio.run(job({**AGENT, "windowDays": 2}, AT))
    assert ran[0].window(AT, 1) == (AT - 2 * DAY, AT)


@pytest.mark.parametrize("schedule", SCHEDULES, ids=[s.name for s in SCHEDULES])
def test_every_scheduled_job_requests_valid_parameters(schedule: Schedule) -> None:
    params = {**schedule.params, **({"agentWallets": ["0xA"]} if schedule.per_agent else {})}
    check_job_params(schedule.job_type, params)
