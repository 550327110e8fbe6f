"""`mnemostream bench`: run a benchmark script of the repository's checkout."""

from __future__ import annotations

from typing import Annotated, Any, Final

import typer

from services.ops.cli_support import console

__all__ = ["BENCHMARKS", "BENCH_CONTEXT", "bench"]

BENCHMARKS: Final = (
    "pipeline",
    "retrieval",
    "load",
    "replay",
    "throughput",
    "quality",
    "extraction",
    "embedder",
)

BENCH_CONTEXT: Final[dict[str, Any]] = {"allow_extra_args": True, "ignore_unknown_options": True}
"""The command's click context settings: every argument after NAME is the script's."""


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
