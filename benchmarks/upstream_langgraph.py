"""LangGraph's own store tests (`libs/checkpoint/tests/test_store.py`) against `MnemoStore` on a
live local stack, with LangGraph's `InMemoryStore` as the control (issue 30).

    python -m benchmarks.upstream_langgraph PATH                 # both backends
    python -m benchmarks.upstream_langgraph PATH -k vector --backend mnemo

PATH is a checkout of the LangGraph repository (the directory holding `libs/checkpoint`), or
a bare git directory of it (what `git clone --bare` makes; its HEAD is read). The wheels
LangGraph publishes carry no tests, so there is no default. Nothing upstream is kept in this
repository: the tests are copied into a temporary directory and run there by pytest, once as
they are (the control) and once with `benchmarks.upstream_langgraph_plugin`, which makes
every `InMemoryStore(...)` they build a `MnemoStore` of a fresh tenant. The stack (broker,
MongoDB-wire server, Redis) and every consumer group (`mnemostream run all`, a separate
process) are started here and stopped at the end; set MNEMOSTREAM_KAFKA_BOOTSTRAP,
MNEMOSTREAM_MONGO_URI and MNEMOSTREAM_REDIS_URL to use servers of your own. Each test has
`--timeout` seconds (pytest-timeout): a hang is a failure. The tests need `pytest-mock`.

LangGraph's Postgres store tests (`libs/checkpoint-postgres/tests/test_store.py` and
`test_async_store.py`) run too, pointed at the backend under test: their conftest (which
connects to Postgres) is replaced by ours, their `store`/`vector_store` fixtures and
`_create_vector_store` are rebound by a line appended to the copies
(`benchmarks.upstream_langgraph_pg`), and psycopg and LangGraph's Postgres packages are
stubbed, so a test that uses Postgres itself fails on both backends alike.

The exit status is 0 when every test that passed on the control passed on mnemostream too.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import io
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from benchmarks.upstream_support import (
    Results,
    common_arguments,
    compare,
    live_stack,
    pyproject_version,
    run_suite,
)

PACKAGE = "langgraph-checkpoint"
TESTS = "libs/checkpoint/tests"
FILES = ("__init__.py", "embed_test_utils.py", "test_store.py")
PG_TESTS = "libs/checkpoint-postgres/tests"
PG_FILES = ("__init__.py", "embed_test_utils.py", "test_store.py", "test_async_store.py")
PG_CONFTEST = """# written by benchmarks.upstream_langgraph in place of the Postgres conftest
import pytest

from tests.embed_test_utils import CharacterEmbeddings

DEFAULT_URI = "postgres://unavailable/postgres"
VECTOR_TYPES = ["vector"]


@pytest.fixture
def fake_embeddings() -> CharacterEmbeddings:
    return CharacterEmbeddings(dims=500)
"""
REBIND = {
    "test_store.py": "create_vector_store as _create_vector_store",
    "test_async_store.py": "acreate_vector_store as _create_vector_store",
}
"""What the line appended to each copied Postgres test module rebinds (see
`benchmarks.upstream_langgraph_pg`)."""
PYTEST_INI = """[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
"""


def checkout(source: Path, into: Path) -> Path:
    """The directory holding `libs/checkpoint` of a checkout, or one extracted from HEAD of
    a bare git directory."""
    if (source / TESTS).is_dir():
        return source
    if not (source / "HEAD").is_file():
        raise SystemExit(f"{source} is neither a LangGraph checkout nor a bare git directory")
    paths = [TESTS, PG_TESTS, "libs/checkpoint/pyproject.toml"]
    archive = subprocess.run(
        ["git", "--git-dir", str(source), "archive", "--format=tar", "HEAD", *paths],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into / "upstream", filter="data")
    return into / "upstream"


def upstream_version(root: Path) -> str | None:
    return pyproject_version(root / "libs" / "checkpoint" / "pyproject.toml")


def prepare(root: Path, work: Path) -> list[Path]:
    """Copy the store tests into one directory per upstream package (`work/checkpoint`,
    `work/postgres`, each with its `tests` package and a pytest.ini); those directories.
    The Postgres modules get our conftest and a last line rebinding their store fixtures."""
    plain, postgres = work / "checkpoint", work / "postgres"
    for target, source, names in ((plain, TESTS, FILES), (postgres, PG_TESTS, PG_FILES)):
        (target / "tests").mkdir(parents=True)
        for name in names:
            shutil.copy(root / source / name, target / "tests" / name)
        (target / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
    (postgres / "tests" / "conftest.py").write_text(PG_CONFTEST, encoding="utf-8")
    for name, helper in REBIND.items():
        with (postgres / "tests" / name).open("a", encoding="utf-8") as module:
            module.write(
                "\n# appended by benchmarks.upstream_langgraph: the backend under test\n"
                f"from benchmarks.upstream_langgraph_pg import store, vector_store, {helper}\n"
            )
    return [plain, postgres]


def run_pytest(
    dirs: list[Path], backend: str, env: dict[str, str], args: argparse.Namespace
) -> Results:
    """Run each directory's tests on `backend`; each test's (outcome, message) by its id
    (prefixed with the directory's name)."""
    found: Results = {}
    for work in dirs:
        results = run_suite(
            work,
            ["tests"],
            plugin="benchmarks.upstream_langgraph_plugin",
            backend=backend,
            env=env,
            args=args,
            path=[work],
        )
        found |= {f"{work.name}/{k}": v for k, v in results.items()}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("source", type=Path, help="LangGraph checkout or bare git directory")
    common_arguments(parser, "memory")
    args = parser.parse_args()
    installed = importlib.metadata.version(PACKAGE)
    with tempfile.TemporaryDirectory(prefix="mnemostream-upstream-") as tmp:
        work = Path(tmp)
        root = checkout(args.source.resolve(), work)
        version = upstream_version(root)
        print(f"{PACKAGE} tests of {version or 'an unknown version'}, {installed} installed")
        dirs = prepare(root, work)
        control: Results = {}
        ours: Results = {}
        if args.backend in ("both", "memory"):
            control = run_pytest(dirs, "memory", {}, args)
        if args.backend in ("both", "mnemo"):
            with live_stack() as env:
                ours = run_pytest(dirs, "mnemo", env, args)
    if args.backend == "both":
        raise SystemExit(compare(("InMemoryStore (control)", "MnemoStore"), control, ours))


if __name__ == "__main__":
    main()
