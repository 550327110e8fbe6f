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
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

from benchmarks.pipeline import endpoints, groups_process
from benchmarks.upstream_agents_plugin import ENV_BACKEND

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
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
    found = re.search(r'^version\s*=\s*"([^"]+)"', text, re.MULTILINE)
    return found.group(1) if found else None


def prepare(root: Path, work: Path) -> list[str]:
    """Copy upstream `tests/` into `work` with a pytest.ini; the session test files to run."""
    shutil.copytree(root / "tests", work / "tests")
    (work / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
    files = sorted((work / "tests" / "memory").glob("test_*.py"))
    return [str(p.relative_to(work)) for p in files if "SQLiteSession(" in p.read_text("utf-8")]


def run_pytest(
    work: Path, files: list[str], backend: str, env: dict[str, str], args: argparse.Namespace
) -> dict[str, tuple[str, str]]:
    """Run the files on `backend`; each test's (outcome, message) by its id."""
    report = work / f"{backend}.xml"
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "benchmarks.upstream_agents_plugin",
        "-p", "no:cacheprovider", "--timeout", str(args.timeout), "--junitxml", str(report),
        "-c", str(work / "pytest.ini"), "--rootdir", str(work), *files,
    ]  # fmt: skip
    if args.k:
        command += ["-k", args.k]
    repo = str(Path(__file__).resolve().parent.parent)
    child = {**os.environ, **env, ENV_BACKEND: backend, "PYTHONPATH": repo}
    print(f"--- {backend}: {' '.join(command[3:])}", flush=True)
    subprocess.run(command, cwd=work, env=child, check=False)
    return outcomes(report)


def outcomes(report: Path) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    if not report.exists():
        return found
    # the report is the one our own pytest child just wrote
    for case in ET.parse(report).getroot().iter("testcase"):  # noqa: S314
        name = f"{case.get('classname')}::{case.get('name')}"
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome, message = tag, node.get("message") or ""
                break
        found[name] = (outcome, message)
    return found


def compare(control: dict[str, tuple[str, str]], ours: dict[str, tuple[str, str]]) -> int:
    def count(results: dict[str, tuple[str, str]], outcome: str) -> int:
        return sum(1 for o, _ in results.values() if o == outcome)

    for name, results in (("SQLiteSession (control)", control), ("MnemoSession", ours)):
        print(
            f"{name:<24} {len(results)} tests: {count(results, 'passed')} passed, "
            f"{count(results, 'failure') + count(results, 'error')} failed, "
            f"{count(results, 'skipped')} skipped"
        )
    internal = sorted(t for t, (o, _) in ours.items() if o == "skipped" and "internals" in _)
    if internal:
        print(f"skipped on MnemoSession, they reach into SQLite itself ({len(internal)}):")
        print("".join(f"  {t}\n" for t in internal), end="")
    worse = sorted(
        t
        for t, (o, _) in control.items()
        if o == "passed" and ours.get(t, ("missing", ""))[0] != "passed" and t not in internal
    )
    for test in worse:
        outcome, message = ours.get(test, ("missing", ""))
        print(f"PASSED ON THE CONTROL ONLY: {test}: {outcome} {message[:300]}")
    print(f"{len(worse)} tests pass on the control and not on MnemoSession")
    return 1 if worse else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("source", nargs="?", type=Path, help="upstream checkout or sdist")
    parser.add_argument("--backend", choices=["both", "sqlite", "mnemo"], default="both")
    parser.add_argument("-k", help="pytest -k expression")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per test")
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
        control: dict[str, tuple[str, str]] = {}
        ours: dict[str, tuple[str, str]] = {}
        if args.backend in ("both", "sqlite"):
            control = run_pytest(work, files, "sqlite", {}, args)
        if args.backend in ("both", "mnemo"):
            tag = uuid.uuid4().hex[:8]
            with endpoints() as ends, groups_process(ends, tag, ["all"]):
                env = {**ends.to_env(), "MNEMOSTREAM_GROUP_PREFIX": f"bench-{tag}"}
                ours = run_pytest(work, files, "mnemo", env, args)
    if args.backend == "both":
        raise SystemExit(compare(control, ours))


if __name__ == "__main__":
    main()
