"""`mnemostream`: run consumer groups, manage the local stack, initialise, demo."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Annotated, Any

import typer
from rich.console import Console

from schemas import topics
from services.infra import create_topics, infra_app
from services.settings import Settings

app = typer.Typer(
    help="mnemostream: memory for AI agents, as a Kafka stream processor.", no_args_is_help=True
)
app.add_typer(infra_app, name="infra")
db_app = typer.Typer(help="Database schema.", no_args_is_help=True)
topics_app = typer.Typer(help="Kafka topics.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(topics_app, name="topics")
console = Console()


def _logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )


@app.command()
def run(
    groups: Annotated[
        list[str],
        typer.Argument(
            help="transcripts, extraction, facts, patterns, invalidation, search, items, jobs, all"
        ),
    ],
    log_level: Annotated[str, typer.Option(help="Python log level.")] = "info",
) -> None:
    """Run consumer groups until SIGINT/SIGTERM."""
    from services.app import resolve_groups, running_groups

    _logging(log_level)
    try:
        chosen = resolve_groups(groups)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        async with running_groups(Settings(), chosen):
            console.print(f"[green]ready[/green]: {', '.join(chosen)}")
            await stop.wait()

    asyncio.run(serve())


@db_app.command("init")
def db_init() -> None:
    """Create every collection and index (once, sequentially)."""
    from services.runtime import open_runtime

    async def init() -> None:
        async with open_runtime(Settings()) as rt:
            console.print(f"schema ready in {rt.settings.mongo_db}")

    asyncio.run(init())


@topics_app.command("create")
def topics_create() -> None:
    """Create every topic with its partition count."""
    from services.runtime import endpoints

    bootstrap = endpoints(Settings()).kafka_bootstrap
    asyncio.run(create_topics(bootstrap, dict(topics.PARTITIONS)))
    for name, count in topics.PARTITIONS.items():
        console.print(f"{name}: {count} partitions")


jobs_app = typer.Typer(help="Maintenance jobs.", no_args_is_help=True)
app.add_typer(jobs_app, name="jobs")


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
) -> None:
    """Publish one job request to memory.jobs.v1 (the jobs group runs it)."""
    from schemas.events import JobRequested
    from services.client import MemoryClient
    from services.runtime import endpoints

    params: dict[str, object] = {}
    if agent:
        params["agentWallets"] = agent
    if window_days is not None:
        params["windowDays"] = window_days
    event = JobRequested.model_validate({"type": job_type, "params": params})

    async def publish() -> None:
        async with MemoryClient(endpoints(Settings()).kafka_bootstrap) as client:
            await client.publish(topics.JOBS, event, job_type)

    asyncio.run(publish())
    console.print(f"published job {event.job_id} ({job_type})")


@app.command()
def schedule(
    every: Annotated[float, typer.Option(help="Seconds between ticks.")] = 30.0,
    log_level: Annotated[str, typer.Option(help="Python log level.")] = "info",
) -> None:
    """Publish the maintenance schedule's jobs (hourly decay; daily cleanup, consolidation
    and pattern recount; weekly archives), skipping a job type still running."""
    from services.runtime import open_runtime
    from services.scheduler import run_scheduler

    _logging(log_level)

    async def serve() -> None:
        async with open_runtime(Settings()) as rt:
            await run_scheduler(rt, every_seconds=every)

    asyncio.run(serve())


dlq_app = typer.Typer(help="Dead letters (memory.dlq.v1).", no_args_is_help=True)
app.add_typer(dlq_app, name="dlq")


def _letters(limit: int) -> list[Any]:
    from services.dead_letters import read_letters
    from services.runtime import endpoints

    return asyncio.run(read_letters(endpoints(Settings()).kafka_bootstrap, limit=limit))


@dlq_app.command("list")
def dlq_list(
    limit: Annotated[int, typer.Option(help="At most this many.")] = 100,
    group: Annotated[str | None, typer.Option(help="Only this consumer group.")] = None,
) -> None:
    """Dead letters, oldest first: ref (partition:offset), group, origin, error."""
    from rich.table import Table

    table = Table("ref", "failed at", "group", "source", "error")
    for item in _letters(limit):
        letter = item.letter
        if group and letter.group != group:
            continue
        source = f"{letter.source_topic}[{letter.partition}]@{letter.offset}"
        table.add_row(
            item.ref,
            letter.failed_at.isoformat(timespec="seconds"),
            letter.group,
            source,
            f"{letter.error_type}: {letter.error[:80]}",
        )
    console.print(table)


@dlq_app.command("show")
def dlq_show(ref: Annotated[str, typer.Argument(help="partition:offset from `dlq list`.")]) -> None:
    """One dead letter in full (JSON)."""
    for item in _letters(10_000):
        if item.ref == ref:
            console.print_json(item.letter.model_dump_json())
            return
    raise typer.BadParameter(f"no dead letter {ref}")


@dlq_app.command("redrive")
def dlq_redrive(
    refs: Annotated[list[str] | None, typer.Argument(help="partition:offset refs.")] = None,
    group: Annotated[str | None, typer.Option(help="Every letter of this group.")] = None,
) -> None:
    """Re-publish dead letters' payloads to their source topics (after fixing the cause)."""
    from services.dead_letters import redrive
    from services.runtime import endpoints

    chosen = [
        item
        for item in _letters(10_000)
        if (refs and item.ref in refs) or (group and item.letter.group == group)
    ]
    if not chosen:
        raise typer.BadParameter("nothing to redrive: give refs or --group")
    count = asyncio.run(redrive(endpoints(Settings()).kafka_bootstrap, chosen))
    console.print(f"re-published {count} message(s)")


@app.command()
def demo() -> None:
    """Publish a short conversation and print the packed Memory context (starts the local
    stack if no servers are configured or running)."""
    from services.demo import main

    _logging("warning")
    main(Settings())


def main() -> None:
    app()
