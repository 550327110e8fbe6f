"""The parameters of each maintenance job (reference §10.6), in one place.

One frozen model per job type, naming every parameter the job reads, its type and its
range. `check_job_params` is the one check: the body of a job request
(`schemas.job_input.JobInput`, which the gateway's POST /jobs, the SDK's `request_job` and
the CLI's `mnemostream jobs run` parse) and the scheduler's requests pass through it before
anything is queued, the `JobRequested` contract runs it (so a
consumer dead-letters a request that bypassed the edge), and the jobs group reads the typed
values it returns. Every parameter a job reads is honoured; one it would ignore is refused by
name (the reference silently dropped `timeRange`, `compress`, `syncToIpfs`, `batchSize` and
`confidenceThreshold` in places).

| job | parameters (besides `agentWallet`, `agentWallets`, `execution`) |
| --- | --- |
| consolidate | `batchSize`; agent required |
| decay_update | `halfLifeDays` (default: the deployment's), `batchSize`; every agent when none |
| cleanup | `olderThanDays` (default 90); spans every tenant |
| patterns_extract | `windowDays` (default 1) or `dateRange`/`timeRange`; agent required |
| archive_create | `windowDays` (default 7) or a range, `compress`, `syncToIpfs`; agent required |

Ranges: a day count is more than 0 and at most `MAX_DAYS`; `batchSize` is 1..`MAX_BATCH`; a
range `{start, end}` holds two times (ms since epoch or ISO-8601, within
`schemas.bounds.TIME_RANGE`), starts before it ends and spans at most `MAX_DAYS`. A value
out of its range is `ValueOutOfRange` (HTTP 422), any other refusal `ScopeError` (400).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, model_validator
from pydantic_core import PydanticCustomError

from schemas.bounds import Moment, epoch_ms, json_number, out_of_range, parse_contract
from schemas.scope import MAX_ID_CHARS, Id, ScopeError

JobType = Literal["consolidate", "decay_update", "cleanup", "patterns_extract", "archive_create"]
JobStatus = Literal["running", "completed", "failed"]
"""A job record's status: `running` until it ends `completed` or `failed`."""
DAY_MS = 86_400_000
MAX_DAYS = 36_500.0
"""Upper bound of a day-valued job parameter and of a range's span (100 years)."""
MAX_BATCH = 10_000
"""Upper bound of `batchSize` (rows per bulk write)."""
MAX_AGENTS = 10_000
"""Upper bound of the agents one job names."""

Days = Annotated[float, Field(gt=0, le=MAX_DAYS, allow_inf_nan=False), BeforeValidator(json_number)]
"""A number of days, more than 0 and at most `MAX_DAYS` (fractions allowed)."""
BatchSize = Annotated[int, Field(ge=1, le=MAX_BATCH), BeforeValidator(json_number)]
"""Rows written per bulk request."""
AgentId = Annotated[Id, Field(min_length=1, max_length=MAX_ID_CHARS)]
"""An agent wallet, refused as the gateway refuses it (`schemas.scope.id_problem`): the jobs
CLI, the SDK and the gateway queue only what the jobs group can run."""
P = TypeVar("P", bound="JobParams")


class TimeRange(BaseModel):
    """`{start, end}`: a half-open window `[start, end)` of two times."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    start: Moment
    end: Moment

    @property
    def start_ms(self) -> int:
        return epoch_ms(self.start, "start") or 0

    @property
    def end_ms(self) -> int:
        return epoch_ms(self.end, "end") or 0

    @model_validator(mode="after")
    def _starts_before_it_ends(self) -> TimeRange:
        if not self.start_ms < self.end_ms:
            raise out_of_range("must start before it ends")
        if self.end_ms - self.start_ms > MAX_DAYS * DAY_MS:
            raise out_of_range(f"is longer than {MAX_DAYS:g} days")
        return self


class JobParams(BaseModel):
    """What every job takes: the agents it runs for, and `execution` (the reference's
    inline|temporal runner choice: accepted and ignored, every job runs in the jobs group)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    job_type: ClassVar[JobType]
    needs_agent: ClassVar[bool] = False

    agentWallet: AgentId | None = None
    agentWallets: list[AgentId] | None = Field(default=None, max_length=MAX_AGENTS)
    execution: str | None = Field(default=None, max_length=32)

    def agents(self) -> list[str]:
        """`agentWallets` when given, else `[agentWallet]`, else none."""
        if self.agentWallets:
            return list(self.agentWallets)
        return [self.agentWallet] if self.agentWallet else []

    @model_validator(mode="after")
    def _an_agent_when_needed(self) -> JobParams:
        if self.needs_agent and not self.agents():
            raise PydanticCustomError("missing", "agentWallet or agentWallets are required")
        return self


class ConsolidateParams(JobParams):
    job_type = "consolidate"
    needs_agent = True

    batchSize: BatchSize | None = None


class DecayUpdateParams(JobParams):
    job_type = "decay_update"

    halfLifeDays: Days | None = None
    batchSize: BatchSize | None = None


class CleanupParams(JobParams):
    job_type = "cleanup"

    olderThanDays: Days | None = None


class WindowParams(JobParams):
    """A job over a window of time: `windowDays` before the job's time, or a given range."""

    needs_agent = True

    windowDays: Days | None = None
    dateRange: TimeRange | None = None
    timeRange: TimeRange | None = Field(default=None, description="Alias of dateRange.")

    @model_validator(mode="after")
    def _one_window(self) -> WindowParams:
        given = [v for v in (self.windowDays, self.dateRange, self.timeRange) if v is not None]
        if len(given) > 1:
            raise PydanticCustomError("window", "give one of windowDays, dateRange or timeRange")
        return self

    def window(self, at: int, default_days: float) -> tuple[int, int]:
        """`[start, end)` in ms: the given range, else the `windowDays` (default
        `default_days`) before the job's time `at`."""
        span = self.dateRange or self.timeRange
        if span is not None:
            return span.start_ms, span.end_ms
        days = self.windowDays if self.windowDays is not None else default_days
        return at - int(days * DAY_MS), at


class PatternsExtractParams(WindowParams):
    job_type = "patterns_extract"


class ArchiveCreateParams(WindowParams):
    job_type = "archive_create"

    compress: Literal[True] | None = Field(
        default=None, description="Must be true if given: archives are always compressed."
    )
    syncToIpfs: StrictBool | None = Field(default=None, description="Pin to IPFS (default true).")


JOB_PARAMS: dict[str, type[JobParams]] = {
    model.job_type: model
    for model in (
        ConsolidateParams,
        DecayUpdateParams,
        CleanupParams,
        PatternsExtractParams,
        ArchiveCreateParams,
    )
}
"""The parameter model of each job type."""
JOB_TYPES: tuple[str, ...] = tuple(JOB_PARAMS)

THRESHOLDS = (
    "confidenceThreshold is not accepted: pattern validation thresholds are the server's "
    "(executions >= 2, success >= 0.55, confidence >= 0.2)"
)


def parse_job_params(model: type[P], params: Mapping[str, Any]) -> P:
    """`params` as `model`'s typed parameters. `ScopeError` names the parameters the job
    does not take and every other refusal; `ValueOutOfRange` a value out of its range."""
    unknown = sorted(set(params) - set(model.model_fields))
    if "confidenceThreshold" in unknown:
        raise ScopeError(THRESHOLDS)
    if unknown:
        takes = ", ".join(sorted(model.model_fields))
        raise ScopeError(f"{model.job_type} does not take {', '.join(unknown)}; it takes {takes}")
    if params.get("compress", True) is not True:
        raise ScopeError("compress must be true (archives are always compressed)")
    return parse_contract(model, dict(params))


def check_job_params(job_type: str, params: Mapping[str, Any]) -> JobParams:
    """The typed parameters of a `job_type` job (see `parse_job_params`); `ScopeError` for
    an unknown type."""
    model = JOB_PARAMS.get(job_type)
    if model is None:
        raise ScopeError(f"type must be one of {', '.join(JOB_TYPES)}")
    return parse_job_params(model, params)


def job_agents(params: Mapping[str, Any]) -> list[str]:
    """The agents a job's parameters name (`agentWallet` and/or `agentWallets`)."""
    agents = [params["agentWallet"]] if isinstance(params.get("agentWallet"), str) else []
    many = params.get("agentWallets")
    if isinstance(many, list):
        agents += [a for a in many if isinstance(a, str)]
    return agents
