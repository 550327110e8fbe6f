"""The terminal side of `mnemostream replay`: a live progress display and the verify table."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from services.ops import replay as replaying
from services.ops.verify import VerifyReport, compare
from services.settings import Settings

console = Console()


def positions_table(progress: replaying.Progress) -> Table:
    """Per group and partition: committed offset / end offset at the replay's start."""
    table = Table(title="positions (committed / end)", show_edge=False)
    table.add_column("group")
    table.add_column("topic")
    table.add_column("partitions")
    rows: dict[tuple[str, str], list[str]] = {}
    for p in progress.positions:
        rows.setdefault((p.group, p.topic), []).append(f"{p.partition}:{p.current}/{p.end}")
    for (group, topic), cells in rows.items():
        table.add_row(group.rsplit(".", 1)[-1] if "." in group else group, topic, " ".join(cells))
    return table


def verify_table(report: VerifyReport) -> Table:
    table = Table(title="verify: rebuilt vs live", show_edge=False)
    for column in ("collection", "live", "rebuilt", "missing", "extra", "changed", "equal"):
        table.add_column(column)
    for diff in report.collections:
        table.add_row(
            diff.name,
            str(diff.live),
            str(diff.rebuilt),
            str(len(diff.missing)),
            str(len(diff.extra)),
            str(len(diff.changed)),
            "[green]yes[/green]" if diff.equal else "[red]no[/red]",
        )
    return table


def run_replay(
    settings: Settings, target_db: str, *, fresh: bool, agents: Sequence[str], verify: bool
) -> bool:
    """Replay with a live display; True when done (and, with `verify`, equal to live)."""
    bar = Progress(
        TextColumn("[bold]replay[/bold]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:>8.0f} events/s"),
        TimeRemainingColumn(),
    )
    task = bar.add_task("replay", total=None, rate=0.0)
    began = time.monotonic()

    with Live(bar, console=console, refresh_per_second=4) as live:

        def show(progress: replaying.Progress) -> None:
            elapsed = max(time.monotonic() - began, 1e-9)
            bar.update(
                task, total=progress.total, completed=progress.done, rate=progress.done / elapsed
            )
            live.update(Group(bar, positions_table(progress)))

        report = asyncio.run(
            replaying.replay(settings, target_db, fresh=fresh, agents=agents, on_progress=show)
        )
    console.print(
        f"replayed {report.records} records into {report.target_db} in {report.seconds:.1f} s "
        f"({report.rate:.0f} records/s; groups {report.group_prefix}.*)"
    )
    for line in report.truncated:
        console.print(f"[yellow]truncated log:[/yellow] {escape(line)}")
    for line in report.older:
        console.print(f"[yellow]older than the log:[/yellow] {escape(line)}")
    if not verify:
        return True
    checked = asyncio.run(compare(settings, settings.mongo.db, target_db, agents=agents))
    console.print(verify_table(checked))
    for diff in checked.collections:
        for key, fields in list(diff.changed.items())[:5]:
            console.print(f"  {diff.name} {key}: {', '.join(fields)}")
    if report.gaps:
        # what the log dropped was not replayed: an equal table would compare a part
        console.print(
            "[red]not verifiable[/red]: the log no longer holds all of memory "
            f"({len(report.truncated)} source partitions truncated, "
            f"{len(report.older)} kinds of rows older than the log)"
        )
        return False
    console.print("[green]equal[/green]" if checked.equal else "[red]different[/red]")
    return checked.equal
