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

LangGraph's Postgres store tests (`libs/checkpoint-postgres/tests`) are not run: every one of
them connects to a Postgres server in an autouse fixture and reads its tables; the
behaviours they check through the store's interface are those of `test_store.py` or of our
own conformance tests (`tests/integration/test_langgraph_conformance.py`).

The exit status is 0 when every test that passed on the control passed on mnemostream too.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import uuid
from pathlib import Path

from benchmarks.pipeline import endpoints, groups_process
from benchmarks.upstream_agents import outcomes
from benchmarks.upstream_langgraph_plugin import ENV_BACKEND

PACKAGE = "langgraph-checkpoint"
TESTS = "libs/checkpoint/tests"
FILES = ("__init__.py", "embed_test_utils.py", "test_store.py")
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
    paths = [TESTS, "libs/checkpoint/pyproject.toml"]
    archive = subprocess.run(
        ["git", "--git-dir", str(source), "archive", "--format=tar", "HEAD", *paths],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into / "upstream", filter="data")
    return into / "upstream"


def upstream_version(root: Path) -> str | None:
    pyproject = root / "libs" / "checkpoint" / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
    found = re.search(r'^version\s*=\s*"([^"]+)"', text, re.MULTILINE)
    return found.group(1) if found else None


def prepare(root: Path, work: Path) -> list[str]:
    """Copy the store tests into `work/tests` with a pytest.ini; the files to run."""
    (work / "tests").mkdir()
    for name in FILES:
        shutil.copy(root / TESTS / name, work / "tests" / name)
    (work / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
    return ["tests/test_store.py"]


def run_pytest(
    work: Path, files: list[str], backend: str, env: dict[str, str], args: argparse.Namespace
) -> dict[str, tuple[str, str]]:
    """Run the files on `backend`; each test's (outcome, message) by its id."""
    report = work / f"{backend}.xml"
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "benchmarks.upstream_langgraph_plugin",
        "-p", "no:cacheprovider", "--timeout", str(args.timeout), "--junitxml", str(report),
        "-c", str(work / "pytest.ini"), "--rootdir", str(work), *files,
    ]  # fmt: skip
    if args.k:
        command += ["-k", args.k]
    repo = str(Path(__file__).resolve().parent.parent)
    child = {**os.environ, **env, ENV_BACKEND: backend, "PYTHONPATH": f"{work}:{repo}"}
    print(f"--- {backend}: {' '.join(command[3:])}", flush=True)
    subprocess.run(command, cwd=work, env=child, check=False)
    return outcomes(report)


def compare(control: dict[str, tuple[str, str]], ours: dict[str, tuple[str, str]]) -> int:
    def count(results: dict[str, tuple[str, str]], *kinds: str) -> int:
        return sum(1 for o, _ in results.values() if o in kinds)

    for name, results in (("InMemoryStore (control)", control), ("MnemoStore", ours)):
        print(
            f"{name:<24} {len(results)} tests: {count(results, 'passed')} passed, "
            f"{count(results, 'failure', 'error')} failed, {count(results, 'skipped')} skipped"
        )
    worse = sorted(
        t for t, (o, _) in control.items() if o == "passed" and ours.get(t, ("", ""))[0] != "passed"
    )
    for test in worse:
        outcome, message = ours.get(test, ("missing", ""))
        print(f"PASSED ON THE CONTROL ONLY: {test}: {outcome} {message[:300]}")
    print(f"{len(worse)} tests pass on the control and not on MnemoStore")
    return 1 if worse else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("source", type=Path, help="LangGraph checkout or bare git directory")
    parser.add_argument("--backend", choices=["both", "memory", "mnemo"], default="both")
    parser.add_argument("-k", help="pytest -k expression")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per test")
    args = parser.parse_args()
    installed = importlib.metadata.version(PACKAGE)
    with tempfile.TemporaryDirectory(prefix="mnemostream-upstream-") as tmp:
        work = Path(tmp)
        root = checkout(args.source.resolve(), work)
        version = upstream_version(root)
        print(f"{PACKAGE} tests of {version or 'an unknown version'}, {installed} installed")
        files = prepare(root, work)
        control: dict[str, tuple[str, str]] = {}
        ours: dict[str, tuple[str, str]] = {}
        if args.backend in ("both", "memory"):
            control = run_pytest(work, files, "memory", {}, args)
        if args.backend in ("both", "mnemo"):
            tag = uuid.uuid4().hex[:8]
            with endpoints() as ends, groups_process(ends, tag, ["all"]):
                env = {**ends.to_env(), "MNEMOSTREAM_GROUP_PREFIX": f"bench-{tag}"}
                ours = run_pytest(work, files, "mnemo", env, args)
    if args.backend == "both":
        raise SystemExit(compare(control, ours))


if __name__ == "__main__":
    main()
