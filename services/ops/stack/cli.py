"""`mnemostream infra up|down|status|env`: the local stack from the command line.

The state directory is ``--state-dir`` / ``MNEMOSTREAM_STATE_DIR``, else
``services.settings.default_state_dir()`` (per user, not per working directory), the same one
``Settings.state_dir`` resolves to. Service URLs handed in (options, or the ``MNEMOSTREAM_*``
environment variables) are used as they are and not started.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Annotated, Final

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from services.endpoints import (
    ENV_KAFKA,
    ENV_MONGO,
    ENV_REDIS,
    Endpoints,
    InfraError,
    mask_url,
    read_endpoints,
    state_path,
)
from services.ops.stack.launcher import DEFAULT_READY_TIMEOUT, stack_status, start_stack, stop_stack
from services.settings import default_state_dir

__all__ = ["infra_app"]

_OLD_STATE_DIR: Final = Path(".mnemostream")
"""Where the state lived before `default_state_dir()`: relative to the working directory."""

infra_app = typer.Typer(
    name="infra",
    help="Start, inspect and stop the local Kafka-protocol broker, MongoDB-wire server and Redis.",
    no_args_is_help=True,
    add_completion=False,
)

StateDirOption = Annotated[
    Path,
    typer.Option(
        "--state-dir",
        envvar="MNEMOSTREAM_STATE_DIR",
        default_factory=default_state_dir,  # the resolver `Settings.state_dir` uses too
        show_default="$XDG_STATE_HOME/mnemostream, else ~/.local/state/mnemostream",
        help="Where infra.json, the server logs and the MongoDB data live.",
    ),
]


def _console(*, stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def _old_stack_hint(state_dir: Path) -> str:
    """A pointer to a stack recorded in `./.mnemostream` (the old default), or ""."""
    old = _OLD_STATE_DIR.resolve()
    if old == state_dir.resolve() or not state_path(old).is_file():
        return ""
    return f"\na stack is recorded in {old} (the old default): add --state-dir {old}"


def _print_endpoints(console: Console, endpoints: Endpoints) -> None:
    """`KEY=value` lines, passwords masked (`infra env` prints the real values, for eval)."""
    for key, value in endpoints.to_env().items():
        console.print(f"{key}={mask_url(value)}", markup=False)


@infra_app.command("up")
def up_command(
    state_dir: StateDirOption,
    kafka: Annotated[
        str | None,
        typer.Option(envvar=ENV_KAFKA, help="Use this Kafka bootstrap instead of starting one."),
    ] = None,
    mongo: Annotated[
        str | None,
        typer.Option(envvar=ENV_MONGO, help="Use this MongoDB URI instead of starting one."),
    ] = None,
    redis_url: Annotated[
        str | None,
        typer.Option(
            "--redis", envvar=ENV_REDIS, help="Use this Redis URL instead of starting one."
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for each server.")] = (
        DEFAULT_READY_TIMEOUT
    ),
) -> None:
    """Start whatever is not given by URL, wait until it answers, print the endpoints."""
    console, err = _console(), _console(stderr=True)
    status = stack_status(state_dir)
    if status and all(s["ready"] and s["alive"] is not False for s in status.values()):
        endpoints = read_endpoints(state_dir)
        if endpoints is not None:
            err.print(f"[yellow]already running[/] (state in {escape(str(state_dir.resolve()))})")
            _print_endpoints(console, endpoints)
            return
    if status:  # a half-dead stack: clear it before starting a fresh one
        stop_stack(state_dir)
    started = time.monotonic()
    try:
        with err.status("starting local infrastructure…"):
            endpoints = start_stack(
                state_dir, kafka=kafka, mongo=mongo, redis=redis_url, timeout=timeout
            )
    except InfraError as exc:
        err.print(f"[red]infra up failed:[/] {escape(str(exc))}")
        raise typer.Exit(1) from exc
    err.print(
        f"[green]ready[/] in {time.monotonic() - started:.1f} s "
        f"(state in {escape(str(state_dir.resolve()))}; stop with: mnemostream infra down)"
    )
    _print_endpoints(console, endpoints)


@infra_app.command("down")
def down_command(
    state_dir: StateDirOption,
    purge: Annotated[
        bool, typer.Option(help="Also delete the server logs and the MongoDB data.")
    ] = False,
) -> None:
    """Stop the servers recorded in the state directory (by PID)."""
    console = _console()
    try:
        stopped = stop_stack(state_dir, purge=purge)
    except InfraError as exc:
        _console(stderr=True).print(f"[red]infra down failed:[/] {escape(str(exc))}")
        raise typer.Exit(1) from exc
    if not stopped:
        console.print(f"nothing to stop{_old_stack_hint(state_dir)}", markup=False)
    for line in stopped:
        console.print(f"stopped {line}", markup=False)


@infra_app.command("status")
def status_command(state_dir: StateDirOption) -> None:
    """Show each service: endpoint, PID, whether it is alive and whether it answers."""
    console = _console()
    status = stack_status(state_dir)
    if not status:
        hint = _old_stack_hint(state_dir)
        console.print(f"no stack recorded in {state_dir.resolve()}{hint}", markup=False)
        raise typer.Exit(1)
    root = state_dir.resolve()
    table = Table(
        title=f"mnemostream infra ({escape(str(root))})",
        caption=f"logs: {escape(str(root))}/<service>.log",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
    )
    for column in ("service", "endpoint", "pid", "alive", "ready"):
        table.add_column(column, no_wrap=True)  # endpoints get copied from here: one line each

    def mark(value: bool | None) -> str:
        return "[dim]external[/]" if value is None else ("[green]yes[/]" if value else "[red]no[/]")

    for name, s in status.items():
        table.add_row(
            name,
            escape(mask_url(s["endpoint"])),
            str(s["pid"]) if s["pid"] is not None else "-",
            mark(s["alive"]),
            mark(s["ready"]),
        )
    console.print(table)
    if not all(s["ready"] for s in status.values()):
        raise typer.Exit(1)


@infra_app.command("env")
def env_command(state_dir: StateDirOption) -> None:
    """Print `export` lines for the running stack: eval "$(mnemostream infra env)"."""
    endpoints = read_endpoints(state_dir)
    if endpoints is None:
        _console(stderr=True).print(
            f"no stack recorded in {state_dir.resolve()}: run `mnemostream infra up` first"
            f"{_old_stack_hint(state_dir)}",
            markup=False,
        )
        raise typer.Exit(1)
    console = _console()
    for key, value in endpoints.to_env().items():
        console.print(f"export {key}={shlex.quote(value)}", markup=False)
