"""`mnemostream jobs run`: publish one maintenance job request."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from schemas import topics
from services.ops.cli_support import console
from services.settings import Settings

__all__ = ["jobs_app"]

jobs_app = typer.Typer(help="Maintenance jobs.", no_args_is_help=True)


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
    checked first: one the job does not take, or a value out of range, is refused by name
    and nothing is published."""
    import json

    from schemas.events import JobRequested
    from schemas.jobs import check_job_params
    from schemas.scope import ScopeError
    from services.runtime import endpoints
    from services.sdk.client import MemoryClient
    from services.stream.security import kafka_options

    params: dict[str, object] = {}
    if agent:
        params["agentWallets"] = agent
    if window_days is not None:
        params["windowDays"] = window_days
    for item in param or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"--param takes NAME=VALUE, not {item!r}")
        try:
            params[name] = json.loads(value)
        except ValueError:
            params[name] = value
    try:  # the job's own schema, as the gateway and the SDK check it: nothing bad is queued
        check_job_params(job_type, params)
    except ScopeError as exc:
        raise typer.BadParameter(str(exc)) from None
    event = JobRequested.model_validate({"type": job_type, "params": params})

    async def publish() -> None:
        settings = Settings()
        bootstrap = endpoints(settings).kafka_bootstrap
        async with MemoryClient(bootstrap, kafka_options=kafka_options(settings)) as client:
            await client.publish(topics.JOBS, event, job_type)

    asyncio.run(publish())
    console.print(f"published job {event.job_id} ({job_type})")
