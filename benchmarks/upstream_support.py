"""What the runners of upstream test suites share (`benchmarks.upstream_langgraph`,
`benchmarks.upstream_agents`) and their pytest plugins (`*_plugin`), issue 30.

A runner copies a framework's own tests into a temporary directory, runs them with pytest
once on the framework's reference backend (the control) and once with its plugin pointing
them at our adapter on a live local stack, then compares: every test that passes on the
control must pass on ours.

* runner side: `common_arguments`, `live_stack` (the servers and every consumer group, in a
  child process, stopped at the end), `run_suite` (one pytest child, its JUnit outcomes),
  `outcomes`, `pyproject_version`, `compare`;
* plugin side: `backend`, `start_client` / `stop_client` (one `MemoryClient` on a loop of its
  own, so the tests' synchronous calls and their event loops all reach it).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.pipeline import endpoints, groups_process
from services.integrations.loops import LoopThread
from services.sdk.client import MemoryClient

ENV_BACKEND = "MNEMOSTREAM_UPSTREAM_BACKEND"
"""Which backend the plugin gives the tests: the control's name, or `mnemo`."""
WARM_UP_SECONDS = 240.0
"""How long the first write may take: the groups join and load their models meanwhile."""
REPO = Path(__file__).resolve().parent.parent

Results = dict[str, tuple[str, str]]
"""Each test's (outcome, message) by its id; outcomes: passed, failure, error, skipped."""


# --- runner side ---------------------------------------------------------------------------


def common_arguments(parser: argparse.ArgumentParser, control: str) -> None:
    """`--backend both|<control>|mnemo`, `-k`, `--timeout` (seconds per test)."""
    parser.add_argument("--backend", choices=["both", control, "mnemo"], default="both")
    parser.add_argument("-k", help="pytest -k expression")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per test")


@contextmanager
def live_stack() -> Iterator[dict[str, str]]:
    """A local stack (or the servers named by MNEMOSTREAM_KAFKA_BOOTSTRAP, _MONGO_URI and
    _REDIS_URL) with every consumer group running in a child process; yields the environment
    a test process needs to reach it."""
    tag = uuid.uuid4().hex[:8]
    with endpoints() as ends, groups_process(ends, tag, ["all"]):
        yield {**ends.to_env(), "MNEMOSTREAM_GROUP_PREFIX": f"bench-{tag}"}


def run_suite(
    work: Path,
    targets: Sequence[str],
    *,
    plugin: str,
    backend: str,
    env: dict[str, str],
    args: argparse.Namespace,
    path: Iterable[Path] = (),
) -> Results:
    """Run pytest on `targets` in `work` (its `pytest.ini`) with `plugin` and the backend
    chosen, `args.timeout` seconds per test; the outcomes (`outcomes`). `path`: directories
    put before this repository on the child's PYTHONPATH."""
    report = work / f"{backend}.xml"
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", plugin,
        "-p", "no:cacheprovider", "--timeout", str(args.timeout), "--junitxml", str(report),
        "-c", str(work / "pytest.ini"), "--rootdir", str(work), *targets,
    ]  # fmt: skip
    if args.k:
        command += ["-k", args.k]
    python_path = os.pathsep.join([*(str(p) for p in path), str(REPO)])
    child = {**os.environ, **env, ENV_BACKEND: backend, "PYTHONPATH": python_path}
    print(f"--- {backend}, {work.name}: {' '.join(command[3:])}", flush=True)
    subprocess.run(command, cwd=work, env=child, check=False)
    return outcomes(report)


def outcomes(report: Path) -> Results:
    """Each test's (outcome, message) from a JUnit XML report (none when it is missing)."""
    found: Results = {}
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


def pyproject_version(pyproject: Path) -> str | None:
    """The `version = "..."` of a pyproject.toml (None when it has none or is missing)."""
    text = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
    found = re.search(r'^version\s*=\s*"([^"]+)"', text, re.MULTILINE)
    return found.group(1) if found else None


def compare(
    names: tuple[str, str], control: Results, ours: Results, excused: Iterable[str] = ()
) -> int:
    """Print both backends' counts and every test that passed on the control only (`excused`
    tests aside); 1 when there is one, else 0 (the runner's exit status)."""

    def count(results: Results, *kinds: str) -> int:
        return sum(1 for o, _ in results.values() if o in kinds)

    for name, results in zip(names, (control, ours), strict=True):
        print(
            f"{name:<24} {len(results)} tests: {count(results, 'passed')} passed, "
            f"{count(results, 'failure', 'error')} failed, {count(results, 'skipped')} skipped"
        )
    skip = set(excused)
    worse = sorted(
        t
        for t, (o, _) in control.items()
        if o == "passed" and ours.get(t, ("missing", ""))[0] != "passed" and t not in skip
    )
    for test in worse:
        outcome, message = ours.get(test, ("missing", ""))
        print(f"PASSED ON THE CONTROL ONLY: {test}: {outcome} {message[:300]}")
    print(f"{len(worse)} tests pass on the control and not on {names[1]}")
    return 1 if worse else 0


# --- plugin side ---------------------------------------------------------------------------


def backend(control: str) -> str:
    """The backend this test process runs on (`control` unless `ENV_BACKEND` says)."""
    return os.environ.get(ENV_BACKEND, control)


def start_client(
    state: dict[str, Any], warm_up: Callable[[LoopThread, MemoryClient], Any]
) -> MemoryClient:
    """One `MemoryClient` on a loop thread of its own, on the stack the runner named, kept
    in `state` (`thread`, `client`); `warm_up(thread, client)` then makes a first write and
    waits for it (up to `WARM_UP_SECONDS`)."""
    thread = LoopThread("mnemostream-upstream-client")
    client = MemoryClient(
        os.environ["MNEMOSTREAM_KAFKA_BOOTSTRAP"],
        timeout=30,
        group_prefix=os.environ.get("MNEMOSTREAM_GROUP_PREFIX", "mnemostream"),
    )
    thread.run(client.start(), timeout=120)
    state.update(thread=thread, client=client)
    warm_up(thread, client)
    return client


def stop_client(state: dict[str, Any]) -> None:
    """Close the client `start_client` kept in `state`, and stop its loop thread."""
    thread, client = state.pop("thread", None), state.pop("client", None)
    if thread is not None:
        try:
            thread.run(client.close(), timeout=30)
        finally:
            thread.stop()
