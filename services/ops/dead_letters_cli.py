"""`mnemostream dlq list|show|redrive`: the dead letters of memory.dlq.v1."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import typer

from services.ops.cli_support import console
from services.settings import Settings

__all__ = ["dlq_app"]

dlq_app = typer.Typer(help="Dead letters (memory.dlq.v1).", no_args_is_help=True)


def _letters(limit: int, group: str | None = None) -> list[Any]:
    from services.runtime import endpoints
    from services.stream.dead_letters import read_letters
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
    from services.runtime import endpoints
    from services.stream.dead_letters import redrive
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
