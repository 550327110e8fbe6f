"""`mnemostream bench`: lists the benchmark scripts, refuses an unknown one, runs one with its
own arguments and passes its exit code on (the `bench` command of docs/benchmarks.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from services.ops.cli import BENCHMARKS

ROOT = Path(__file__).resolve().parents[2]


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "services", "bench", *args],
        cwd="/",  # the scripts are found from the package's checkout, not the caller's cwd
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_listed_benchmark_is_a_script_of_the_repository() -> None:
    listed = bench()
    assert listed.returncode == 0
    assert listed.stdout.split() == list(BENCHMARKS)
    assert all((ROOT / "benchmarks" / f"{name}.py").is_file() for name in BENCHMARKS)


def test_an_unknown_benchmark_is_refused_by_name() -> None:
    refused = bench("nope")
    assert refused.returncode == 2
    assert "no benchmark 'nope'" in refused.stderr


def test_a_benchmark_runs_with_its_arguments_and_its_exit_code() -> None:
    ran = bench("extraction", "--", "--help")
    assert ran.returncode == 0, ran.stderr
    assert "usage:" in ran.stdout.lower()
    failed = bench("extraction", "--", "--no-such-option")
    assert failed.returncode == 2  # argparse's usage error, passed on
