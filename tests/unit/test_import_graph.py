"""The engine's import graph has no loop (issue 14: `engine.ports` imported the evals harness,
closing a 12-module cycle), and no consumer group reaches around the ports to an adapter."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, known: set[str]) -> set[str]:
    """Every module of `known` that `path` imports (type-checking-only imports included:
    a loop that needs `if TYPE_CHECKING` to run is still a loop)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found & known


def graph(package: str) -> dict[str, set[str]]:
    paths = {module_name(p): p for p in (ROOT / package).rglob("*.py")}
    known = set(paths)
    return {name: imports_of(path, known) - {name} for name, path in paths.items()}


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_engine_has_no_import_cycle() -> None:
    assert cycles(graph("engine")) == []


def test_the_ports_import_no_feature_package() -> None:
    features = ("engine.ingest", "engine.upkeep", "engine.adapters", "engine.evals.harness")
    imported = graph("engine")["engine.ports"]
    assert not [m for m in imported if m.startswith(features)]


def test_no_consumer_group_imports_an_adapter() -> None:
    offenders = {
        str(p.relative_to(ROOT)): name
        for p in (ROOT / "services" / "groups").rglob("*.py")
        for name in all_imports(p)
        if name.startswith("engine.adapters")
    }
    assert offenders == {}


def all_imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def test_the_cycle_check_finds_a_loop() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
