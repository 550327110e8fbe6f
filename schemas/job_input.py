"""The body of a maintenance job request (reference §10.6) as one model, `JobInput`: its
`type` and the job's parameters (the job's own model of `schemas.jobs`). The gateway
(POST /jobs), the SDK (`request_job`) and the CLI (`mnemostream jobs run`) parse through it;
`JobInput.requested` makes the `JobRequested` event. The loose rules and the refusals are
`schemas.bodies`'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BeforeValidator, ConfigDict, Field, create_model

from schemas.bodies import Body, Refused
from schemas.events import JobRequested
from schemas.jobs import JOB_PARAMS, JOB_TYPES, MAX_AGENTS, JobType, check_job_params, job_agents
from schemas.scope import clean_id

COMMON = frozenset({"agentWallet", "agentWallets", "execution"})
"""What every job takes (`schemas.jobs.JobParams`)."""


def _known(value: object) -> object:
    if value not in JOB_TYPES:
        raise Refused(f"must be one of {', '.join(JOB_TYPES)}")
    return value


def _parameters() -> dict[str, Any]:
    """Every job's parameters (`schemas.jobs`), each as its job declares it, optional here:
    the body checks each value's type and range when parsed (the OpenAPI document carries
    them); what each job takes is checked by `JobInput.requested`. `compress` is left to
    the job (its refusal says why it must be true)."""
    fields: dict[str, Any] = {}
    for model in JOB_PARAMS.values():
        for name, info in model.model_fields.items():
            if name not in COMMON and name != "compress":
                fields.setdefault(name, (info.annotation, info))  # each is optional
    return fields


class _JobInput(Body):
    """`type` plus its parameters, each checked against the job's own model
    (`schemas.jobs`) before anything is queued: a parameter the job does not take is 400,
    one out of its range 422. `execution` (the reference's runner choice) is carried and
    ignored: every job runs in the jobs group."""

    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True, title="JobInput")

    type: Annotated[JobType, BeforeValidator(_known)] = Field(
        default=None,  # refused by `_known`: the default is validated too
        validate_default=True,
        description="consolidate, decay_update, cleanup, patterns_extract or archive_create.",
    )
    agentWallet: str | None = None
    agentWallets: list[str] | None = Field(default=None, max_length=MAX_AGENTS)

    def agents(self) -> list[str]:
        """Every agent the body names (`agentWallet` and `agentWallets`), each checked by
        the id rule (`ScopeError`: "agentWallet: …"), for a caller's permission; which of
        them the job runs for is the job's model's (`JobParams.agents`)."""
        return [clean_id(agent, "agentWallet") or "" for agent in job_agents(self.params())]

    def params(self, agent: str | None = None) -> dict[str, Any]:
        """The job's parameters as sent; `agent` stands for absent agents (a credential
        confined to one agent runs its jobs for that agent)."""
        params = self.model_dump(exclude={"type"}, exclude_unset=True)
        if agent is not None and not job_agents(params):
            params["agentWallet"] = agent
        return params

    def requested(self, agent: str | None = None) -> JobRequested:
        """The `JobRequested` event, its parameters (`params(agent)`) checked by the job's
        own model (`check_job_params`: `ScopeError`, `ValueOutOfRange`) once."""
        params = self.params(agent)
        check_job_params(self.type, params)
        # the parameters were checked by the job's model just now: no second pass
        return JobRequested.model_construct(type=self.type, params=params)


if TYPE_CHECKING:
    JobInput = _JobInput
else:
    JobInput = create_model("JobInput", __base__=_JobInput, **_parameters())
