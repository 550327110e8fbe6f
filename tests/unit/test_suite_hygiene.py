"""The suite reads the clock only while a test runs, never at import or collection.

pytest imports every test module when it collects the session, and a full run takes many
minutes on a 2-core machine. A "now" computed at import (`NOW = datetime.now(UTC)`, a
`pytest.mark.parametrize` argument built from `time.time()`, a default argument, a class
attribute, a token whose `nbf`/`exp` is derived from the clock) is stale by the time its test
runs, by however long the session took to get there. Assertions about decay, windows, leases,
TTLs or token validity then depend on test order and machine load: the test flakes. A test that
needs "now" takes the `now` / `now_ms` fixture (tests/conftest.py) or reads the clock in its
body; a test that does not care uses a fixed historical constant.

The check is syntactic: it finds direct calls of the clock in code that runs at import (module
and class bodies, decorators, default arguments). A helper that reads the clock and is called
at import is not seen; reviewers still have to catch that.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

CLOCKS = frozenset(
    {
        "time.time",
        "time.time_ns",
        "time.monotonic",
        "time.monotonic_ns",
        "time.perf_counter",
        "time.perf_counter_ns",
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
    }
)
"""Qualified names of the calls that read the clock."""


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name → qualified name, from the module's imports (anywhere in it)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    names[a.asname] = a.name
                else:
                    names[a.name.split(".")[0]] = a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _evaluated_at_import(tree: ast.Module) -> Iterator[ast.AST]:
    """The nodes Python evaluates when it imports the module: statements of the module and
    of class bodies (also inside `if`/`try`/`with` blocks), decorators, base classes and
    default arguments; never a function body or a lambda body."""
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            pending += node.decorator_list
            pending += node.args.defaults
            pending += [d for d in node.args.kw_defaults if d is not None]
            continue
        if isinstance(node, ast.Lambda):
            pending += node.args.defaults
            pending += [d for d in node.args.kw_defaults if d is not None]
            continue
        yield node
        pending += ast.iter_child_nodes(node)


def clock_reads_at_import(source: str) -> list[tuple[int, str]]:
    """(line, call) of every clock read in code that runs when `source` is imported."""
    tree = ast.parse(source)
    aliases = _aliases(tree)
    found: list[tuple[int, str]] = []
    for node in _evaluated_at_import(tree):
        if not isinstance(node, ast.Call):
            continue
        dotted = _dotted(node.func)
        if dotted is None:
            continue
        head, _, rest = dotted.partition(".")
        qualified = ".".join(p for p in (aliases.get(head, head), rest) if p)
        if qualified in CLOCKS:
            found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


PLANTED = """
import time
from datetime import UTC, date, datetime
from datetime import datetime as dt
from time import monotonic

import pytest

NOW = datetime.now(UTC)  # planted: module level
TOKEN = {"nbf": int(time.time()) + 600}  # planted: a module-level token
LATER = lambda: time.time()  # a lambda body runs later: fine


@pytest.mark.parametrize("at", [int(time.time() * 1000)])  # planted: a decorator argument
def test_a(at: int, day: date = date.today()) -> None:  # planted: a default argument
    assert time.time() > at  # a test body: fine

    def inner(x: float = time.time()) -> None:  # evaluated while the test runs: fine
        pass


class TestB:
    started = dt.utcnow()  # planted: a class attribute, through an alias

    def test_b(self, t: float = monotonic()) -> None:  # planted: a method's default
        pass


if NOW:
    STAMP = time.monotonic()  # planted: inside a module-level block
"""


def test_the_guard_finds_every_kind_of_clock_read_at_import() -> None:
    """Proof that the guard can fail: every planted read is found, and nothing else is."""
    planted = [n for n, text in enumerate(PLANTED.splitlines(), 1) if "# planted" in text]
    assert len(planted) == 7
    assert [line for line, _ in clock_reads_at_import(PLANTED)] == planted


def test_no_test_module_reads_the_clock_at_import_or_collection() -> None:
    found = [
        f"{path.relative_to(TESTS)}:{line}: {call}"
        for path in sorted(TESTS.rglob("*.py"))
        for line, call in clock_reads_at_import(path.read_text())
    ]
    assert found == [], "read the clock in the test or take the `now` fixture:\n" + "\n".join(found)
