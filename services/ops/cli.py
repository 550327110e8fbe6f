"""`mnemostream`: run consumer groups, manage the local stack, initialise, demo."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Annotated, Any

import typer
from rich.console import Console
from typer.core import TyperArgument, TyperCommand

from schemas import topics
from services.ops.logs import bound_repeats
from services.ops.stack import infra_app
from services.ops.tokens import token_app
from services.settings import Settings
from services.stream.topics import create_topics

app = typer.Typer(
    help="mnemostream: memory for AI agents, as a Kafka stream processor.", no_args_is_help=True
)
app.add_typer(infra_app, name="infra")
db_app = typer.Typer(help="Database schema.", no_args_is_help=True)
topics_app = typer.Typer(help="Kafka topics.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(topics_app, name="topics")
app.add_typer(token_app, name="token")
console = Console()
RUN_HTTP_PORT = 9464
"""Default port of `run`'s health and metrics endpoints (Prometheus exporters' range)."""


HttpPortOption = Annotated[
    int | None,
    typer.Option(
        help="Port of /livez, /readyz and /metrics (0 disables; default "
        f"MNEMOSTREAM_HTTP_PORT if set, else {RUN_HTTP_PORT}).",
        min=0,
        max=65535,
    ),
]
"""`--http-port` of the long-running commands (`run`, `schedule`)."""


def _logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    bound_repeats()  # one record failing on every read must not flood the log


class _RunCommand(TyperCommand):
    """`run`, whose GROUPS help names the registered groups (`services.groups.app.GROUPS`), so it
    cannot drift from them. Filled in only when the help is shown: importing the groups'
    modules up front would add about a second to every command."""

    # Any: typer hands in its vendored click's context and formatter (typer._click, private)
    def format_help(self, ctx: Any, formatter: Any) -> None:
        from services.groups.app import GROUPS

        for param in self.params:
            if isinstance(param, TyperArgument) and param.name == "groups":
                param.help = f"Consumer groups: {', '.join(GROUPS)}; or all (every group)."
        super().format_help(ctx, formatter)


@app.command(cls=_RunCommand)
def run(
    groups: Annotated[
        list[str],
        typer.Argument(help="Consumer groups, or all.", show_default=False),
    ],
    log_level: Annotated[str, typer.Option(help="Python log level.")] = "info",
    http_port: HttpPortOption = None,
) -> None:
    """Run consumer groups until SIGINT/SIGTERM."""
    from services.groups.app import resolve_groups, running_groups

    _logging(log_level)
    try:
        chosen = resolve_groups(groups)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    settings = Settings()
    explicit = http_port is not None or "http_port" in settings.model_fields_set
    if http_port is None:
        http_port = settings.http_port if explicit else RUN_HTTP_PORT
    settings = settings.model_copy(update={"http_port": http_port})

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        # several group processes on one host cannot all have the default port: the later
        # ones run without the endpoints (logged) instead of failing; a chosen port must bind
        async with running_groups(settings, chosen, http_required=explicit):
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
    from services.stream.security import kafka_options

    settings = Settings()
    bootstrap = endpoints(settings).kafka_bootstrap
    asyncio.run(
        create_topics(bootstrap, dict(topics.PARTITIONS), kafka_options=kafka_options(settings))
    )
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


@app.command()
def replay(
    target_db: Annotated[str, typer.Option(help="Database to rebuild into.")],
    fresh: Annotated[
        bool, typer.Option(help="Drop the target and start over (default: resume).")
    ] = False,
    agent: Annotated[
        list[str] | None, typer.Option(help="Rebuild only this agent (repeatable).")
    ] = None,
    verify: Annotated[
        bool, typer.Option(help="Then compare the rebuilt collections with the live ones.")
    ] = False,
) -> None:
    """Rebuild memory from the log (turns, remembers, extracted facts) into TARGET_DB."""
    from services.ops.replay_view import run_replay

    ok = run_replay(Settings(), target_db, fresh=fresh, agents=agent or [], verify=verify)
    raise typer.Exit(0 if ok else 1)


@app.command()
def asyncapi() -> None:
    """Print the AsyncAPI 3.0 document of the topics (docs/asyncapi.json is its output)."""
    from services.stream.asyncapi import render

    typer.echo(render(), nl=False)


@app.command()
def schedule(
    every: Annotated[float, typer.Option(help="Seconds between ticks.")] = 30.0,
    log_level: Annotated[str, typer.Option(help="Python log level.")] = "info",
    http_port: HttpPortOption = None,
) -> None:
    """Publish the maintenance schedule's jobs (hourly decay; daily cleanup, consolidation
    and pattern recount; weekly archives), skipping a job type still running, until
    SIGINT/SIGTERM."""
    import contextlib

    from services.ops.scheduler import serve_scheduler

    _logging(log_level)
    settings = Settings()
    explicit = http_port is not None or "http_port" in settings.model_fields_set
    if http_port is None:
        http_port = settings.http_port if explicit else RUN_HTTP_PORT
    settings = settings.model_copy(update={"http_port": http_port})

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        # like `run`: the default port may be taken on a shared host (a warning, no endpoints)
        scheduler = asyncio.create_task(
            serve_scheduler(settings, every_seconds=every, http_required=explicit)
        )
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({scheduler, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        scheduler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await scheduler  # a scheduler that failed raises its error here

    asyncio.run(serve())


dlq_app = typer.Typer(help="Dead letters (memory.dlq.v1).", no_args_is_help=True)
app.add_typer(dlq_app, name="dlq")


def _letters(limit: int, group: str | None = None) -> list[Any]:
    from services.ops.dead_letters import read_letters
    from services.runtime import endpoints
    from services.stream.security import kafka_options

    settings = Settings()
    bootstrap = endpoints(settings).kafka_bootstrap
    security = kafka_options(settings)
    return asyncio.run(read_letters(bootstrap, limit=limit, group=group, kafka_options=security))


@dlq_app.command("list")
def dlq_list(
    limit: Annotated[int, typer.Option(help="At most this many.")] = 100,
    group: Annotated[str | None, typer.Option(help="Only this consumer group.")] = None,
) -> None:
    """The newest dead letters, oldest first: ref (partition:offset), group, origin, error."""
    from rich.table import Table

    table = Table("ref", "failed at", "group", "source", "error")
    for item in _letters(limit, group):
        letter = item.letter
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
    group: Annotated[str | None, typer.Option(help="Letters of this group.")] = None,
    source: Annotated[
        list[str] | None,
        typer.Option(help="topic:partition:offset of a failed message (with --group: of it)."),
    ] = None,
) -> None:
    """Re-publish dead letters' payloads to their source topics (after fixing the cause).
    Every letter's `redrive` field holds the command for it (`--group G --source T:P:O`); a
    message dead-lettered more than once is re-published once."""
    from services.ops.dead_letters import redrive
    from services.runtime import endpoints
    from services.stream.security import kafka_options

    def wanted(letter: Any) -> bool:
        origin = f"{letter.source_topic}:{letter.partition}:{letter.offset}"
        if source:
            return origin in source and group in (None, letter.group)
        return group is not None and letter.group == group

    newest: dict[tuple[str, str, int, int], Any] = {}
    for item in _letters(10_000):  # oldest first: a later letter of the same message wins
        if (refs and item.ref in refs) or wanted(item.letter):
            x = item.letter
            newest[(x.group, x.source_topic, x.partition, x.offset)] = item
    chosen = list(newest.values())
    if not chosen:
        raise typer.BadParameter("nothing to redrive: give refs, --group or --source")
    settings = Settings()
    bootstrap = endpoints(settings).kafka_bootstrap
    count = asyncio.run(redrive(bootstrap, chosen, kafka_options=kafka_options(settings)))
    console.print(f"re-published {count} message(s)")


@app.command()
def gateway(
    host: Annotated[str | None, typer.Option(help="Bind address (default: settings).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default: settings, 8080).")] = None,
    log_level: Annotated[str, typer.Option(help="Python log level.")] = "info",
) -> None:
    """Serve the HTTP gateway (/api/memory/..., OpenAPI at /docs) until SIGINT/SIGTERM.
    Needs MNEMOSTREAM_GATEWAY_API_KEYS, MNEMOSTREAM_GATEWAY_OPERATOR_KEYS or
    MNEMOSTREAM_GATEWAY_JWT_SECRET (`mnemostream token mint` signs tokens with it)."""
    import uvicorn

    from services.gateway import GatewayNotSecured, create_app

    _logging(log_level)
    settings = Settings()
    try:
        api = create_app(settings)
    except GatewayNotSecured as exc:
        console.print(f"[red]refusing to start[/red]: {exc}")
        raise typer.Exit(2) from None
    uvicorn.run(
        api,
        host=host or settings.gateway_host,
        port=port or settings.gateway_port,
        log_level=log_level.lower(),
    )


BENCHMARKS = ("pipeline", "retrieval", "load", "replay", "quality", "extraction", "embedder")


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def bench(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help=f"One of: {', '.join(BENCHMARKS)}.")] = None,
) -> None:
    """Run a benchmark script of the repository (`python -m benchmarks.NAME ARGS...`, from
    a checkout: the scripts are not installed with the package); no NAME lists them.
    Arguments after NAME go to the script (`mnemostream bench load --help`)."""
    import subprocess
    import sys
    from pathlib import Path

    if name is None:
        for known in BENCHMARKS:
            console.print(known)
        return
    if name not in BENCHMARKS:
        raise typer.BadParameter(f"no benchmark {name!r}: one of {', '.join(BENCHMARKS)}")
    root = Path(__file__).resolve().parents[2]
    if not (root / "benchmarks" / f"{name}.py").is_file():
        console.print(f"benchmarks/{name}.py is not here: run it from a checkout of the repository")
        raise typer.Exit(2)
    # the module is from the allowlist above; the arguments are the operator's own
    done = subprocess.run(  # noqa: S603
        [sys.executable, "-m", f"benchmarks.{name}", *ctx.args], cwd=root, check=False
    )
    raise typer.Exit(done.returncode)


@app.command()
def demo() -> None:
    """Publish a short conversation and print the packed Memory context (starts the local
    stack if no servers are configured or running)."""
    from services.ops.demo import main

    _logging("warning")
    main(Settings())


@app.command("eval")
def eval_cases(
    cases: Annotated[
        str,
        typer.Argument(
            help="JSON file: an array of {query, expected?, expectedMemoryId?} cases, or an "
            "object with testCases."
        ),
    ],
    agent: Annotated[str, typer.Option(help="Agent wallet.")],
    user: Annotated[str | None, typer.Option(help="User address.")] = None,
    k: Annotated[int, typer.Option(help="Items per layer (1-20).")] = 5,
    layer: Annotated[
        list[str] | None, typer.Option(help="Layer to search (repeatable; default all).")
    ] = None,
) -> None:
    """Run retrieval evals in-process (recall@k, precision, context size, latency), store the
    run and print it."""
    import json
    import time
    from pathlib import Path

    from rich.table import Table

    from engine.errors import InputRejected, MemoryError_
    from services.groups.evals import run_eval
    from services.runtime import NotConfigured, open_runtime

    try:
        loaded = json.loads(Path(cases).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise typer.BadParameter(f"cannot read {cases}: {exc}") from None
    body: dict[str, Any] = dict(loaded) if isinstance(loaded, dict) else {"testCases": loaded}
    body.update({"agentWallet": agent, "k": k})
    if user:
        body["userAddress"] = user
    if layer:
        body["layers"] = layer

    async def evaluate() -> dict[str, Any]:
        async with open_runtime(Settings()) as rt:
            return await run_eval(rt, body, int(time.time() * 1000))

    _logging("warning")
    try:
        run = asyncio.run(evaluate())
    except InputRejected as exc:
        raise typer.BadParameter(str(exc)) from None
    except (MemoryError_, NotConfigured) as exc:
        console.print(f"[red]eval failed[/red]: {exc}")
        raise typer.Exit(1) from None
    cases_table = Table("#", "query", "expected", "hit", "relevant/returned", "chars", "ms")
    for i, r in enumerate(run["results"], start=1):
        label = " | ".join(x for x in (r["expected"], r["expectedMemoryId"]) if x)
        cases_table.add_row(
            str(i),
            r["query"],
            label,
            "[green]yes[/green]" if r["hit"] else "[red]no[/red]",
            f"{r['relevant']}/{r['returned']}",
            str(r["contextCharacters"]),
            f"{r['latencyMs']:.1f}",
        )
    console.print(cases_table)
    scores_table = Table("score", "value")
    for name, value in run["scores"].items():
        scores_table.add_row(name, f"{value:.3f}" if isinstance(value, float) else str(value))
    console.print(scores_table)
    console.print(f"eval run {run['evalRunId']} stored (k={run['k']})")


def main() -> None:
    app()
