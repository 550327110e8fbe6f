"""`mnemostream`: run consumer groups, manage the local stack, initialise, demo.

The command tree is assembled here; the larger command groups live in their own modules
(`stack.cli`: infra, `tokens`: token, `jobs_cli`: jobs, `dead_letters_cli`: dlq, `bench_cli`: bench,
`eval_cli`: eval). Groups and commands are listed in the order they are added below.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Annotated, Any, NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from typer.core import TyperArgument, TyperCommand

from schemas import topics
from schemas.scope import first_error
from services.ops.bench_cli import BENCH_CONTEXT, BENCHMARKS, bench
from services.ops.cli_support import console, setup_logging
from services.ops.dead_letters_cli import dlq_app
from services.ops.eval_cli import eval_cases
from services.ops.export import export_command, import_command
from services.ops.jobs_cli import jobs_app
from services.ops.stack import infra_app
from services.ops.tokens import token_app
from services.settings import Settings, settings_problem
from services.stream.topics import create_topics

__all__ = ["BENCHMARKS", "app", "main"]

app = typer.Typer(
    help="mnemostream: memory for AI agents, as a Kafka stream processor.",
    no_args_is_help=True,
    # help texts are plain text: "[mcp]" in "pip install 'mnemostream[mcp]'" is not markup
    rich_markup_mode=None,
)
app.add_typer(infra_app, name="infra")
db_app = typer.Typer(help="Database schema.", no_args_is_help=True)
topics_app = typer.Typer(help="Kafka topics.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(topics_app, name="topics")
app.add_typer(token_app, name="token")
app.add_typer(jobs_app, name="jobs")
app.add_typer(dlq_app, name="dlq")
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


def _with_http_port(http_port: int | None) -> tuple[Settings, bool]:
    """The settings with the health/metrics port resolved, and whether it was chosen (by
    `--http-port` or the environment): a chosen port must bind, the default may be taken by
    another process on the host."""
    settings = Settings()
    explicit = http_port is not None or "http_port" in settings.model_fields_set
    if http_port is None:
        http_port = settings.http_port if explicit else RUN_HTTP_PORT
    return settings.model_copy(update={"http_port": http_port}), explicit


def stop_on_signals() -> asyncio.Event:
    """An event set on SIGINT or SIGTERM (call from the running loop)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


@app.command(cls=_RunCommand)
def run(
    groups: Annotated[
        list[str],
        typer.Argument(help="Consumer groups, or all.", show_default=False),
    ],
    log_level: Annotated[str, typer.Option(help="Python log level.")] = "info",
    http_port: HttpPortOption = None,
) -> None:
    """Run consumer groups until SIGINT/SIGTERM. Until they are ready, one line per start-up
    step is printed (the groups starting, the schema, each heavy part, the topics, each
    group as it has joined), each with the seconds since the command started."""
    import time

    from services.groups.app import resolve_groups, running_groups

    setup_logging(log_level)
    try:
        chosen = resolve_groups(groups)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    settings, explicit = _with_http_port(http_port)
    began = time.monotonic()

    def progress(line: str) -> None:
        typer.echo(f"[{time.monotonic() - began:6.1f} s] {line}")

    async def serve() -> None:
        stop = stop_on_signals()
        # several group processes on one host cannot all have the default port: the later
        # ones run without the endpoints (logged) instead of failing; a chosen port must bind
        async with running_groups(settings, chosen, http_required=explicit, progress=progress):
            console.print(f"[green]ready[/green]: {', '.join(chosen)}")
            await stop.wait()

    asyncio.run(serve())


@db_app.command("init")
def db_init() -> None:
    """Create every collection and index (once, sequentially)."""
    from services.runtime import open_runtime

    async def init() -> None:
        async with open_runtime(Settings()) as rt:
            console.print(f"schema ready in {rt.settings.mongo.db}")

    asyncio.run(init())


@topics_app.command("create")
def topics_create() -> None:
    """Create every topic with its partition count."""
    from services.runtime import endpoints
    from services.stream.security import kafka_options

    settings = Settings()
    bootstrap = endpoints(settings).kafka_bootstrap
    counts = topics.partitions(settings.kafka.partitions)
    retention = settings.kafka.retention_ms
    asyncio.run(
        create_topics(
            bootstrap, counts, kafka_options=kafka_options(settings), retention_ms=retention
        )
    )
    for name, count in counts.items():
        console.print(f"{name}: {count} partitions, retention.ms {retention(name)}")


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

    setup_logging(log_level)
    settings, explicit = _with_http_port(http_port)

    async def serve() -> None:
        stop = stop_on_signals()
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
    from services.runtime.edge import edge_sealer

    setup_logging(log_level)
    settings = Settings()
    try:
        api = create_app(settings, sealing=lambda: edge_sealer(settings))
    except GatewayNotSecured as exc:
        console.print(f"[red]refusing to start[/red]: {exc}")
        raise typer.Exit(2) from None
    uvicorn.run(
        api,
        host=host or settings.gateway.host,
        port=port or settings.gateway.port,
        log_level=log_level.lower(),
    )


@app.command()
def mcp(
    http: Annotated[
        int | None,
        typer.Option(
            "--http",
            metavar="PORT",
            min=1,
            max=65535,
            help="Serve streamable HTTP on this port (at /mcp, host MNEMOSTREAM_MCP_HOST) "
            "with the gateway's credentials, instead of stdio.",
        ),
    ] = None,
    agent: Annotated[
        str | None, typer.Option(help="The agentWallet of every tool (MNEMOSTREAM_MCP_AGENT).")
    ] = None,
    user: Annotated[
        str | None, typer.Option(help="The userAddress of every tool (MNEMOSTREAM_MCP_USER).")
    ] = None,
    thread: Annotated[
        str | None, typer.Option(help="The threadId turns go to (MNEMOSTREAM_MCP_THREAD).")
    ] = None,
    log_level: Annotated[str, typer.Option(help="Python log level (to stderr).")] = "warning",
) -> None:
    """Serve the memory as MCP tools (remember, record_turn, recall, search_memory, forget,
    list_facts) over stdio, or over HTTP with --http PORT. The tenant is the configured one
    (--agent, --user), over HTTP confined by the caller's gateway credential; no tool
    argument can name another. Needs the extra: pip install 'mnemostream[mcp]'."""
    errors = Console(stderr=True)  # over stdio, stdout is the protocol's alone
    try:
        from services.mcp.server import serve_http, serve_stdio, tenancy_of
    except ImportError as exc:
        errors.print(
            "[red]the MCP server needs its extra[/red]: "
            + escape(f"pip install 'mnemostream[mcp]' ({exc})")
        )
        raise typer.Exit(2) from None
    from services.endpoints import NotConfigured
    from services.gateway import GatewayNotSecured
    from services.mcp.tenancy import Refused

    setup_logging(log_level)
    settings = Settings()
    try:
        tenancy = tenancy_of(settings, agent=agent, user=user, thread=thread)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    served = serve_stdio(settings, tenancy) if http is None else serve_http(settings, tenancy, http)
    try:
        asyncio.run(served)
    except (Refused, GatewayNotSecured, NotConfigured) as exc:
        errors.print(f"[red]refusing to start[/red]: {exc}")
        raise typer.Exit(2) from None


app.command(context_settings=BENCH_CONTEXT)(bench)


@app.command()
def demo() -> None:
    """Publish a short conversation and print the packed Memory context (starts the local
    stack if no servers are configured or running)."""
    from services.ops.demo import main

    setup_logging("warning")
    main(Settings())


app.command("eval")(eval_cases)
app.command("export")(export_command)
app.command("import")(import_command)


_UsageError: type[Exception] = typer.BadParameter.__mro__[1]
"""click's `UsageError` (typer ships its own copy of click and exports only this subclass):
a bad option, argument or value on the command line."""


def _refuse(message: str) -> NoReturn:
    """One line on stderr, `error: …`, and exit 2: what an operator gave that cannot work."""
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    raise SystemExit(2)


def main() -> None:
    """The `mnemostream` command. A refused setting or command-line value is one line
    (`error: …`) and exit code 2, never a traceback (issue 33); `--help` and a command
    without its arguments still print their help."""
    try:
        code = app(standalone_mode=False)
    except ValidationError as exc:
        _refuse(settings_problem(exc) if exc.title == "Settings" else first_error(exc))
    except _UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # the help of a bare command group
            exc.show()  # type: ignore[attr-defined]
            raise SystemExit(2) from None
        _refuse(f"{exc.format_message()} (see --help)")  # type: ignore[attr-defined]
    except typer.Abort:
        typer.echo("Aborted.", err=True)
        raise SystemExit(1) from None
    raise SystemExit(code if isinstance(code, int) else 0)
