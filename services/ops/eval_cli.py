"""`mnemostream eval`: retrieval evals run in-process against the configured stores."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import typer

from services.ops.cli_support import console, setup_logging
from services.settings import Settings

__all__ = ["eval_cases"]


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
    from services.endpoints import NotConfigured
    from services.groups.admin.evals import run_eval
    from services.runtime import open_runtime

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

    setup_logging("warning")
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
