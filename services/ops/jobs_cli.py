"""`mnemostream jobs run|status|list`: queue a maintenance job, read the job records.

* `run TYPE [--agent A]… [--window-days D] [--param NAME=VALUE]…` checks the parameters
  against the job's own schema (`schemas.jobs`, the one the gateway and the SDK apply) and
  publishes one `JobRequested` to memory.jobs.v1. Bad input is refused at once, before
  anything is published or any server is reached: an unknown job (the line lists the job
  names), a job that needs an agent run without `--agent`, a parameter the job does not
  take, a value out of its range.
* `status JOB_ID [--agent A]` and `list [--agent A] [--status S] [--limit N]` read the
  records of `memory_jobs` through the admin group (request-reply on memory.admin.v1, as
  `MemoryClient.admin("jobs.get" | "jobs.list")` does): a running admin group is needed
  (`mnemostream run admin`, or `run all`). `--json` prints the records as JSON.

A refusal or a failure is one line on stderr (`error: …`), never a traceback. Exit codes: 0
done; 1 no such job, or the servers or the admin group did not answer; 2 bad input.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Coroutine, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from services.settings import Settings

if TYPE_CHECKING:
    from schemas.admin import JobRecordOut
    from schemas.events import JobRequested
    from schemas.requests import AdminOp, AdminReply
    from schemas.scope import Scope
    from services.sdk.client import MemoryClient

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "jobs_app"]

EXIT_FAILED = 1
"""No such job, or the servers or the admin group did not answer."""
EXIT_BAD_INPUT = 2
"""A bad job name, parameter or option (click's own usage errors use 2 as well)."""
STATUSES = ("running", "completed", "failed")
MAX_JOB_ID = 200
"""The longest job id an admin request names (`AdminRequest.id`)."""

jobs_app = typer.Typer(help="Maintenance jobs: run one, read their records.", no_args_is_help=True)

AgentOption = Annotated[
    str | None, typer.Option("--agent", help="Only a job naming this agent wallet.")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the records as JSON.")]
TimeoutOption = Annotated[
    float, typer.Option(help="Seconds to wait for the admin group's answer.", min=0.1)
]


def fail(message: str, code: int) -> NoReturn:
    """Print `message` as one line on stderr and exit with `code`."""
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    raise typer.Exit(code)


def _job_request(
    job_type: str, agents: list[str], window_days: float | None, items: list[str]
) -> JobRequested:
    """The job request of the options, its body checked by the gateway's model
    (`schemas.job_input.JobInput`: exit 2 if it refuses it)."""
    from schemas.bodies import parse_body
    from schemas.job_input import JobInput
    from schemas.jobs import JOB_PARAMS, JOB_TYPES
    from schemas.scope import ScopeError

    model = JOB_PARAMS.get(job_type)
    if model is None:
        fail(f"unknown job {job_type!r}; the jobs are {', '.join(JOB_TYPES)}", EXIT_BAD_INPUT)
    params: dict[str, Any] = {}
    if agents:
        params["agentWallets"] = agents
    if window_days is not None:
        params["windowDays"] = window_days
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            fail(f"--param takes NAME=VALUE, not {item!r}", EXIT_BAD_INPUT)
        try:
            params[name] = json.loads(value)
        except ValueError:
            params[name] = value
    if model.needs_agent and not (
        agents or params.get("agentWallet") or params.get("agentWallets")
    ):
        fail(f"{job_type} runs for an agent: give --agent WALLET (repeatable)", EXIT_BAD_INPUT)
    try:  # the gateway's and the SDK's model: nothing they would refuse is queued
        return parse_body(JobInput, {**params, "type": job_type}).requested()
    except ScopeError as exc:
        fail(f"{job_type}: {exc}", EXIT_BAD_INPUT)


def _reach(work: Coroutine[Any, Any, Any]) -> Any:
    """Run `work` (which talks to the servers); a server that cannot be reached, or a group
    that does not answer, is one line and exit 1."""
    from aiokafka.errors import KafkaError

    from services.endpoints import NotConfigured

    # the Kafka client logs every failed connection attempt; the one line below says it
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    try:
        return asyncio.run(work)
    except NotConfigured as exc:
        fail(str(exc), EXIT_FAILED)
    except TimeoutError:
        fail(
            "the admin group did not answer in time: is `mnemostream run admin` (or `run all`) "
            "running against this broker?",
            EXIT_FAILED,
        )
    except (KafkaError, OSError) as exc:
        fail(f"Kafka cannot be reached: {exc}", EXIT_FAILED)


def _client() -> MemoryClient:
    """A `MemoryClient` for the configured (or the local stack's) broker."""
    from services.runtime import endpoints
    from services.sdk.client import MemoryClient
    from services.stream.security import kafka_options

    settings = Settings()
    return MemoryClient(
        endpoints(settings).kafka_bootstrap,
        kafka_options=kafka_options(settings),
        partitions=settings.kafka.partitions,
    )


@jobs_app.command("run")
def jobs_run(
    job_type: Annotated[
        str,
        typer.Argument(
            help="consolidate, decay_update, cleanup, patterns_extract or archive_create"
        ),
    ],
    agent: Annotated[list[str] | None, typer.Option(help="Agent wallet (repeatable).")] = None,
    window_days: Annotated[float | None, typer.Option(help="Window for patterns/archives.")] = None,
    param: Annotated[
        list[str] | None,
        typer.Option(
            help="Any other parameter as NAME=VALUE, VALUE in JSON if it parses "
            "(repeatable): --param syncToIpfs=false "
            """--param 'dateRange={"start": ..., "end": ...}'"""
        ),
    ] = None,
) -> None:
    """Publish one job request to memory.jobs.v1 (the jobs group runs it). The parameters are
    checked first: an unknown job, a job that needs an agent without --agent, a parameter the
    job does not take or a value out of range is refused in one line (exit 2) and nothing is
    published. `mnemostream jobs status ID` then shows how it went."""
    event = _job_request(job_type, agent or [], window_days, param or [])

    async def publish() -> None:
        async with _client() as client:
            await client.publish_job(event)

    _reach(publish())
    typer.echo(f"published job {event.job_id} ({job_type})")


async def _ask_admin(
    op: AdminOp, scope: Scope | None, *, wait_seconds: float, **fields: Any
) -> AdminReply:
    async with _client() as client:
        reply: AdminReply = await client.admin(op, scope, timeout=wait_seconds, **fields)
        return reply


def _scope(agent: str | None) -> Scope | None:
    """`--agent` as the scope of the request (exit 2 when it is not a valid agent id)."""
    from schemas.scope import Scope, ScopeError

    if agent is None:
        return None
    try:
        return Scope.parse({"agentWallet": agent})
    except ScopeError as exc:
        fail(f"--agent: {exc}", EXIT_BAD_INPUT)


def _time(ms: int | None) -> str:
    if ms is None:
        return "-"
    return (
        datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    )


def _agents(record: JobRecordOut) -> str:
    from schemas.jobs import job_agents

    agents = job_agents(record.params)
    if len(agents) > 3:
        return f"{', '.join(agents[:3])} and {len(agents) - 3} more"
    return ", ".join(agents) or "every agent"


def _summary(record: JobRecordOut) -> str:
    """One line: id, type, status, created, agents (and the error of a failed job)."""
    line = f"{record.jobId}  {record.type}  {record.status}  {_time(record.createdAt)}"
    line += f"  {_agents(record)}"
    if record.status == "failed" and record.error:
        line += f"  {record.errorType or 'error'}: {' '.join(record.error.split())[:120]}"
    return line


def _details(record: JobRecordOut) -> list[str]:
    lines = [
        f"job        {record.jobId}",
        f"type       {record.type}",
        f"status     {record.status}",
        f"agents     {_agents(record)}",
        f"created    {_time(record.createdAt)}",
        f"completed  {_time(record.completedAt)}",
        f"attempts   {record.attempts}",
        f"params     {json.dumps(record.params, sort_keys=True)}",
    ]
    if record.data is not None:
        lines.append(f"result     {json.dumps(record.data, sort_keys=True)}")
    if record.error is not None:
        lines.append(f"error      {record.errorType or 'error'}: {' '.join(record.error.split())}")
    return lines


def _dump(value: Mapping[str, Any] | list[Mapping[str, Any]]) -> str:
    return json.dumps(value, indent=2, sort_keys=True)


@jobs_app.command("status")
def jobs_status(
    job_id: Annotated[str, typer.Argument(help="The job id `jobs run` printed.")],
    agent: AgentOption = None,
    as_json: JsonOption = False,
    timeout: TimeoutOption = 10.0,
) -> None:
    """Show one job record: running, completed with its result, or failed with its error
    (exit 1 when there is no such job, or none naming --agent)."""
    from schemas.admin import JobRecordOut, result_of
    from schemas.scope import id_problem

    problem = id_problem(job_id) or (
        "" if 0 < len(job_id) <= MAX_JOB_ID else "must be 1 to 200 characters"
    )
    if problem:
        fail(f"JOB_ID: {problem}", EXIT_BAD_INPUT)
    scope = _scope(agent)
    reply = _reach(_ask_admin("jobs.get", scope, wait_seconds=timeout, id=job_id))
    if reply.not_found:
        fail(f"no job {job_id}" + (f" naming agent {agent}" if agent else ""), EXIT_FAILED)
    if reply.error:
        fail(reply.error, EXIT_FAILED)
    record = result_of(reply, JobRecordOut)
    if as_json:
        typer.echo(_dump(record.model_dump(mode="json")))
        return
    for line in _details(record):
        typer.echo(line)


@jobs_app.command("list")
def jobs_list(
    agent: AgentOption = None,
    status: Annotated[
        str | None, typer.Option(help="Only jobs in this status: running, completed or failed.")
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many (1-100).")] = 20,
    as_json: JsonOption = False,
    timeout: TimeoutOption = 10.0,
) -> None:
    """The newest job records, newest first, one line each: id, type, status, created (UTC),
    agents, and the error of a failed one."""
    from schemas.admin import JobRecordsResponse, result_of

    if status is not None and status not in STATUSES:
        fail(f"--status must be one of {', '.join(STATUSES)}, not {status!r}", EXIT_BAD_INPUT)
    if not 1 <= limit <= 100:
        fail(f"--limit must be from 1 to 100, not {limit}", EXIT_BAD_INPUT)
    scope = _scope(agent)
    reply = _reach(_ask_admin("jobs.list", scope, wait_seconds=timeout, status=status, limit=limit))
    if reply.error:
        fail(reply.error, EXIT_FAILED)
    records = result_of(reply, JobRecordsResponse).jobs
    if as_json:
        typer.echo(_dump([r.model_dump(mode="json") for r in records]))
        return
    if not records:
        typer.echo("no jobs")
    for record in records:
        typer.echo(_summary(record))
