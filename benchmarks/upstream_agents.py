"""The OpenAI Agents SDK's own session tests (`tests/memory`) against `MnemoSession` on a live
local stack, with the SDK's `SQLiteSession` as the control (issue 30).

    python -m benchmarks.upstream_agents                   # the sdist of the installed version
    python -m benchmarks.upstream_agents PATH              # a checkout, or an sdist .tar.gz
    python -m benchmarks.upstream_agents -k pop --backend mnemo

PATH is an upstream checkout (the directory holding `tests/memory`) or the SDK's source
distribution; without it the sdist of the installed `openai-agents` is fetched with
`pip download openai-agents==VERSION --no-binary :all: --no-deps` into
`~/.cache/mnemostream-bench/` (or `$MNEMOSTREAM_BENCH_CACHE`). Nothing upstream is kept in
this repository: the tests are copied into a temporary directory and run there by pytest,
once as they are (the control) and once with `benchmarks.upstream_agents_plugin`, which makes
their `SQLiteSession(...)` a `MnemoSession` of a fresh tenant per test. The files run are those
of `tests/memory` that build a `SQLiteSession`. The stack (broker, MongoDB-wire server, Redis)
and every consumer group (`mnemostream run all`, a separate process) are started here and
stopped at the end; set MNEMOSTREAM_KAFKA_BOOTSTRAP, MNEMOSTREAM_MONGO_URI and
MNEMOSTREAM_REDIS_URL to use servers of your own. Each test has `--timeout` seconds
(pytest-timeout): a hang is a failure with the stacks of its threads.

The exit status is 0 when every test that passed on the control passed on mnemostream too;
tests that reach into SQLite itself are skipped on mnemostream and listed with the reason.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from benchmarks.upstream_agents_plugin import REFERENCE_INTERNALS
from benchmarks.upstream_support import (
    Results,
    common_arguments,
    compare,
    live_stack,
    pyproject_version,
    run_suite,
)

PACKAGE = "openai-agents"
PYTEST_INI = """[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = session
markers =
    allow_call_model_methods: upstream marker
    requires_native_macos_sandbox: upstream marker
    review_optional: upstream marker
    serial: upstream marker
"""


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "mnemostream-bench"
    return Path(os.environ.get("MNEMOSTREAM_BENCH_CACHE", default))


def fetch_sdist(version: str) -> Path:
    """The SDK's source distribution of `version`, downloaded once with pip."""
    target = cache_dir() / f"{PACKAGE}-{version}"
    found = sorted(target.glob("*.tar.gz")) if target.is_dir() else []
    if not found:
        target.mkdir(parents=True, exist_ok=True)
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary"]
        subprocess.run([*pip, ":all:", "-d", str(target), f"{PACKAGE}=={version}"], check=True)
        found = sorted(target.glob("*.tar.gz"))
    return found[0]


def unpack(source: Path, into: Path) -> Path:
    """The upstream root (the directory holding `tests/`) of a checkout or an sdist."""
    if source.is_dir():
        return source
    with tarfile.open(source) as archive:
        archive.extractall(into / "sdist", filter="data")
    roots = [p.parent for p in (into / "sdist").glob("*/tests")]
    if not roots:
        raise SystemExit(f"{source} has no tests/ directory")
    return roots[0]


def upstream_version(root: Path) -> str | None:
    return pyproject_version(root / "pyproject.toml")


def prepare(root: Path, work: Path) -> list[str]:
    """Copy upstream `tests/` into `work` with a pytest.ini; the session test files to run."""
    shutil.copytree(root / "tests", work / "tests")
    (work / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
    files = sorted((work / "tests" / "memory").glob("test_*.py"))
    return [str(p.relative_to(work)) for p in files if "SQLiteSession(" in p.read_text("utf-8")]


def run_pytest(
    work: Path, files: list[str], backend: str, env: dict[str, str], args: argparse.Namespace
) -> Results:
    """Run the files on `backend`; each test's (outcome, message) by its id."""
    return run_suite(
        work,
        files,
        plugin="benchmarks.upstream_agents_plugin",
        backend=backend,
        env=env,
        args=args,
    )


def internal(ours: Results) -> list[str]:
    """The tests skipped on MnemoSession because they reach into SQLite itself (listed)."""
    found = sorted(t for t, (o, m) in ours.items() if o == "skipped" and REFERENCE_INTERNALS in m)
    if found:
        print(f"skipped on MnemoSession, they reach into SQLite itself ({len(found)}):")
        print("".join(f"  {t}\n" for t in found), end="")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("source", nargs="?", type=Path, help="upstream checkout or sdist")
    common_arguments(parser, "sqlite")
    args = parser.parse_args()
    installed = importlib.metadata.version(PACKAGE)
    with tempfile.TemporaryDirectory(prefix="mnemostream-upstream-") as tmp:
        work = Path(tmp)
        root = unpack(args.source or fetch_sdist(installed), work)
        version = upstream_version(root)
        if version is not None and version != installed:
            raise SystemExit(
                f"the tests are of {PACKAGE} {version} but {installed} is installed: run the "
                f"tests of the installed version (tag v{installed}, or no PATH)"
            )
        files = prepare(root, work)
        print(f"{PACKAGE} {installed}: {', '.join(files)}", flush=True)
        control: Results = {}
        ours: Results = {}
        if args.backend in ("both", "sqlite"):
            control = run_pytest(work, files, "sqlite", {}, args)
        if args.backend in ("both", "mnemo"):
            with live_stack() as env:
                ours = run_pytest(work, files, "mnemo", env, args)
    if args.backend == "both":
        names = ("SQLiteSession (control)", "MnemoSession")
        raise SystemExit(compare(names, control, ours, internal(ours)))


if __name__ == "__main__":
    main()
