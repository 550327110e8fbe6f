"""The linters are part of the suite: ruff (lint and format) over the whole tree and mypy
(strict) over the packages pass, so a change that breaks either fails CI like a broken test.
Their versions are pinned in the `test` extra, so a new release cannot fail a build."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHECKS = {
    "ruff check": ["ruff", "check", "--no-cache", "."],
    "ruff format": ["ruff", "format", "--check", "--no-cache", "."],
    # files and strictness come from pyproject.toml; incremental (mypy's cache, .mypy_cache/,
    # is keyed by mypy's version, options and each file's hash, so it gives the same verdict):
    # a cold check takes ~17 s of the fast tier's 60, a warm one under 1 s
    "mypy": ["mypy"],
}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_the_tree_passes(name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", *CHECKS[name]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
