"""The core is pure (STYLE habit 1): the engine outside its adapters imports no driver and
never reads the environment; the schemas depend on the stdlib and pydantic only."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "engine"
SCHEMAS = ROOT / "schemas"

FORBIDDEN_IN_ENGINE = frozenset(
    {
        "faststream",
        "pymongo",
        "bson",
        "redis",
        "httpx",
        "aiokafka",
        "onnxruntime",
        "tokenizers",
    }
)
ENV_READERS = frozenset({"environ", "environb", "getenv", "getenvb"})
SCHEMAS_MAY_IMPORT = frozenset({"pydantic", "pydantic_core", "schemas"}) | frozenset(
    sys.stdlib_module_names
)


def core_modules() -> list[Path]:
    adapters = ENGINE / "adapters"
    return sorted(p for p in ENGINE.rglob("*.py") if adapters not in p.parents)


def schema_modules() -> list[Path]:
    return sorted(SCHEMAS.rglob("*.py"))


def imported_roots(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, top-level package) of every absolute import, including dynamic
    `importlib.import_module("x")` / `__import__("x")` with a literal name."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                yield node.lineno, node.module.split(".")[0]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if (
                name in ("import_module", "__import__")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                yield node.lineno, node.args[0].value.split(".")[0]


def env_reads(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, expression) of every `os.environ` / `os.getenv` use or `from os import environ`."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ENV_READERS
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        ):
            yield node.lineno, f"os.{node.attr}"
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            for alias in node.names:
                if alias.name in ENV_READERS:
                    yield node.lineno, f"from os import {alias.name}"


def parse(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_walk_covers_the_core_and_skips_the_adapters() -> None:
    names = {rel(p) for p in core_modules()}
    assert {"engine/retrieval/search.py", "engine/ingest/turns.py", "engine/ports.py"} <= names
    assert not any(name.startswith("engine/adapters/") for name in names)
    assert "schemas/scope.py" in {rel(p) for p in schema_modules()}


@pytest.mark.parametrize("path", core_modules(), ids=rel)
def test_core_module_imports_no_driver(path: Path) -> None:
    bad = [
        f"{rel(path)}:{line} imports {root}"
        for line, root in imported_roots(parse(path))
        if root in FORBIDDEN_IN_ENGINE
    ]
    assert bad == []


@pytest.mark.parametrize("path", core_modules(), ids=rel)
def test_core_module_never_reads_the_environment(path: Path) -> None:
    assert [f"{rel(path)}:{line} {expr}" for line, expr in env_reads(parse(path))] == []


@pytest.mark.parametrize("path", schema_modules(), ids=rel)
def test_schemas_import_only_stdlib_and_pydantic(path: Path) -> None:
    bad = [
        f"{rel(path)}:{line} imports {root}"
        for line, root in imported_roots(parse(path))
        if root not in SCHEMAS_MAY_IMPORT
    ]
    assert bad == []


def test_the_checks_catch_violations() -> None:
    tree = ast.parse(
        "import pymongo.errors\n"
        "from redis.asyncio import Redis\n"
        "import importlib\n"
        "importlib.import_module('httpx')\n"
        "import os\n"
        "url = os.environ['X']\n"
        "port = os.getenv('P')\n"
        "from os import environ\n"
        "from . import sibling\n"
    )
    roots = [root for _, root in imported_roots(tree)]
    assert {"pymongo", "redis", "httpx"} <= set(roots)
    assert "sibling" not in roots  # relative imports are the package's own
    assert {expr for _, expr in env_reads(tree)} == {
        "os.environ",
        "os.getenv",
        "from os import environ",
    }


# --------------------------------------------------------------------------------------------
# The layout's import rules (import-linter contracts in pyproject.toml) and module size


MAX_MODULE_LINES = 400


def lint_imports(config: Path) -> tuple[int, str]:
    """import-linter on `config`, in a process of its own: its CLI reconfigures logging
    (`dictConfig` disables every existing logger), which would blind later tests' caplog."""
    import subprocess

    script = (
        "import sys\n"
        "from importlinter.cli import lint_imports\n"
        "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(config)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def test_the_import_contracts_hold() -> None:
    """The SDK and the gateway import no group, tool, runtime or adapter; the engine imports
    no service; the schemas nothing of ours; Kafka plumbing sits below the groups; the
    engine's packages form no cycle (`[tool.importlinter]` in pyproject.toml)."""
    code, report = lint_imports(ROOT / "pyproject.toml")
    assert code == 0, report


def test_the_import_contracts_catch_a_violation(tmp_path: Path) -> None:
    """The same contracts on a configuration that forbids what the tree does: it must fail."""
    config = tmp_path / "importlinter.toml"
    config.write_text(
        '[tool.importlinter]\nroot_packages = ["engine", "schemas", "services"]\n\n'
        "[[tool.importlinter.contracts]]\n"
        'name = "a rule the tree breaks"\ntype = "forbidden"\n'
        'source_modules = ["services.groups"]\nforbidden_modules = ["engine"]\n'
    )
    code, report = lint_imports(config)
    assert code != 0
    assert "BROKEN" in report


def source_files() -> list[Path]:
    return sorted(
        p
        for top in ("engine", "schemas", "services", "benchmarks")
        for p in (ROOT / top).rglob("*.py")
    )


def test_no_module_is_over_400_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in source_files()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"split these modules (over {MAX_MODULE_LINES} lines): {long}"


OPTIONAL_FRAMEWORKS = frozenset({"langgraph", "langchain_core", "agents", "openai"})
"""The agent frameworks of the optional extras (`mnemostream[langgraph]`,
`mnemostream[openai-agents]`): only their adapters may import them (issue 18 §2, §3)."""
FRAMEWORK_ADAPTERS = frozenset(
    {
        "services/integrations/langgraph.py",
        "services/integrations/langgraph_ops.py",  # the LangGraph store's op checks
        "services/integrations/langgraph_rounds.py",  # the LangGraph store's rounds of ops
        "services/integrations/langgraph_search.py",  # the LangGraph store's reads
        "services/integrations/openai_agents.py",
    }
)


def package_modules() -> list[Path]:
    return sorted(
        p for top in ("engine", "schemas", "services") for p in (ROOT / top).rglob("*.py")
    )


@pytest.mark.parametrize(
    "path", [p for p in package_modules() if rel(p) not in FRAMEWORK_ADAPTERS], ids=rel
)
def test_only_the_framework_adapters_import_an_optional_framework(path: Path) -> None:
    bad = [
        f"{rel(path)}:{line} imports {root}"
        for line, root in imported_roots(parse(path))
        if root in OPTIONAL_FRAMEWORKS
    ]
    assert bad == []


def test_the_framework_adapters_exist_where_the_rule_expects_them() -> None:
    assert {rel(p) for p in package_modules()} >= FRAMEWORK_ADAPTERS
