"""`mnemostream export --agent A [--user U] > tenant.jsonl` and `mnemostream import
tenant.jsonl` (issue 31): a tenant's memory as versioned JSON lines, and back into another
deployment through its log.

The export reads the stored documents of the tenant straight from MongoDB
(`engine.adapters.mongo.export`: the format, the kinds and how the tenant is confined); the
import is `services.ops.tenant_import`. docs/operations.md#export-and-import says which kinds
are re-derived by the target's groups and which are restored as rows, and why.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer

from services.settings import Settings

__all__ = ["export_command", "export_lines", "import_command", "write_export"]


async def export_lines(settings: Settings, agent: str, user: str | None) -> AsyncIterator[str]:
    """Every line of the tenant's export from the configured database, header first."""
    # imported here: the CLI's other commands do not pay for the driver and the adapters
    from pymongo import AsyncMongoClient

    from engine.adapters.mongo.export import MongoTenantExport
    from services.runtime import endpoints
    from services.stream.security import mongo_options

    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        endpoints(settings).mongo_uri, retryWrites=False, tz_aware=True, **mongo_options(settings)
    )
    try:
        reader = MongoTenantExport(mongo[settings.mongo.db])
        async for text in reader.lines(agent, user, datetime.now(UTC)):
            yield text
    finally:
        await mongo.close()


async def write_export(settings: Settings, agent: str, user: str | None, out: TextIO) -> int:
    """Write the tenant's export to `out`, a line each; how many rows (the header aside)."""
    rows = -2  # the header and the last line
    async for text in export_lines(settings, agent, user):
        out.write(text + "\n")
        rows += 1
    out.flush()
    return rows


def export_command(
    agent: Annotated[str, typer.Option(help="The tenant's agentWallet.")],
    user: Annotated[
        str | None,
        typer.Option(help="Only this userAddress (default: every row of the agent)."),
    ] = None,
) -> None:
    """Write a tenant's memory to stdout as versioned JSON lines: a header (format, version,
    scope, time), then one stored row per line with its kind (transcripts and their turns,
    working buffers, memory rows with their vectors, facts, entities, relations, patterns,
    skills, archives as stored, item history)."""
    from services.endpoints import NotConfigured

    try:
        rows = asyncio.run(write_export(Settings(), agent, user, sys.stdout))
    except NotConfigured as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"exported {rows} rows of {agent}{f' / {user}' if user else ''}", err=True)


def import_command(
    path: Annotated[Path, typer.Argument(help="An export (`mnemostream export`), - for stdin.")],
    wait: Annotated[
        float,
        typer.Option(min=1, max=300, help="Seconds to wait for the groups to take the events."),
    ] = 120.0,
) -> None:
    """Load an export into this deployment through its log: publish the tenant's turns and
    remembered facts for the running groups to store, wait for them, then restore every
    exported row as it was stored. Importing the same file again changes nothing. A file of
    another format version, or cut short, is refused (exit 2); groups that do not take the
    events in time exit 1 with nothing restored (import again once they run)."""
    from engine.adapters.mongo.export import KINDS
    from services.endpoints import NotConfigured
    from services.ops.tenant_import import ImportRefused, import_tenant, read_export
    from services.stream.progress import NotProcessed

    try:
        if str(path) == "-":
            export = read_export(sys.stdin)
        else:
            with path.open(encoding="utf-8") as handle:
                export = read_export(handle)
    except OSError as exc:
        typer.echo(f"error: cannot read {path}: {exc.strerror or exc}", err=True)
        raise typer.Exit(2) from None
    except ImportRefused as exc:
        typer.echo(f"error: {path}: {exc}", err=True)
        raise typer.Exit(2) from None
    try:
        report = asyncio.run(import_tenant(Settings(), export, wait_seconds=wait))
    except NotConfigured as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except NotProcessed as exc:  # the rows are not restored: importing again finishes it
        typer.echo(f"error: the groups did not take the import's events: {exc}", err=True)
        raise typer.Exit(1) from None
    restored = ", ".join(f"{k} {n}" for k, n in report.restored.items() if n and k in KINDS)
    typer.echo(
        f"imported {report.turns} turns and {report.remembers} remembered facts through the "
        f"log, restored {restored or 'no rows'} in {report.seconds:.1f} s"
    )
