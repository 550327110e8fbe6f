"""Shared fixtures: the real local infrastructure (one per test session) and unique names."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.ingest.extraction.relation_typer import RelationTyper
from services.endpoints import ENV_KAFKA, ENV_MONGO, ENV_REDIS, Endpoints
from services.ops.stack import start_stack, stop_stack

# the scripted local HTTP server harness: `provider` and `client` fixtures
pytest_plugins = ["tests.support.http_server"]


_TASK_DUMP = pytest.StashKey[threading.Timer]()


def dump_asyncio_tasks() -> None:
    """Print the stack of every task of every running event loop to the real stderr.

    pytest-timeout prints the threads' frames, where an async test only shows the selector:
    the awaiting coroutines say what it was waiting for. (Read from the timer's thread: a
    racy read is good enough for a report printed once, just before the test is failed.)"""
    out = sys.__stderr__
    if out is None:
        return
    loops = [o for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop)]
    for loop in loops:
        if loop.is_running():
            for task in list(asyncio.all_tasks(loop)):
                print(f"--- asyncio task {task.get_name()} ---", file=out)
                task.print_stack(file=out)
    out.flush()


def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> None:
    """Dump asyncio tasks 5 s before pytest-timeout fails a test; returning None lets
    pytest-timeout set its own timer too."""
    if settings.timeout and settings.timeout > 10:
        timer = threading.Timer(settings.timeout - 5, dump_asyncio_tasks)
        timer.daemon = True
        timer.start()
        item.stash[_TASK_DUMP] = timer


def pytest_timeout_cancel_timer(item: pytest.Item) -> None:
    timer = item.stash.get(_TASK_DUMP, None)
    if timer is not None:
        timer.cancel()


SERVER_FIXTURES = frozenset({"stack"})
"""Fixtures that start (or reach) the real broker, MongoDB-wire server and Redis."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses a server fixture, directly or through another fixture,
    `integration`, whether or not its module says so: the fast tier
    (`pytest -m "not integration"`) then never starts a server."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & SERVER_FIXTURES and item.get_closest_marker("integration") is None:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session", autouse=True)
def own_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Point `MNEMOSTREAM_STATE_DIR` (and so `Settings.state_dir`, the `infra` commands and
    every subprocess a test starts) at a directory of this session: a test must never find,
    start or stop the user's own local stack. A test of the default location sets its own
    environment."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MNEMOSTREAM_STATE_DIR", str(tmp_path_factory.mktemp("state")))
        yield


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoints]:
    """Kafka, MongoDB and Redis endpoints for the whole session.

    Uses ``MNEMOSTREAM_KAFKA_BOOTSTRAP`` / ``MNEMOSTREAM_MONGO_URI`` / ``MNEMOSTREAM_REDIS_URL``
    when all three are set; otherwise starts real servers on free ports and stops them (by PID)
    at the end of the session.
    """
    kafka, mongo, redis = (os.environ.get(k) for k in (ENV_KAFKA, ENV_MONGO, ENV_REDIS))
    if kafka and mongo and redis:
        yield Endpoints(kafka_bootstrap=kafka, mongo_uri=mongo, redis_url=redis)
        return
    state_dir = tmp_path_factory.mktemp("infra")
    endpoints = start_stack(state_dir)
    try:
        yield endpoints
    finally:
        stop_stack(state_dir)


@pytest.fixture(scope="session")
def minilm() -> LocalMiniLMEmbedder:
    """The real local MiniLM embedder, loaded once per session (it keeps no per-test state)."""
    return LocalMiniLMEmbedder.load()


@pytest.fixture
def typer(minilm: LocalMiniLMEmbedder) -> RelationTyper:
    """The offline relation typer on the real MiniLM (the relation tests' `typed`)."""
    return RelationTyper(minilm)


@pytest.fixture
def now() -> datetime:
    """This test's "now" (UTC), read when the test starts.

    Never at import or collection: a module is imported when the session collects, possibly
    many minutes before its tests run, and a stale "now" makes time-relative assertions
    (decay, windows, leases, "the last N days") depend on how long the suite took to get
    there (`tests/unit/test_suite_hygiene.py` enforces this)."""
    return datetime.now(UTC)


@pytest.fixture
def now_ms(now: datetime) -> int:
    """`now` in milliseconds since epoch."""
    return int(now.timestamp() * 1000)


@pytest.fixture
def unique() -> Callable[[str], str]:
    """Make names unique per test (topics, consumer groups, databases, key prefixes)."""

    def make(prefix: str = "t") -> str:
        return f"{prefix}_{uuid.uuid4().hex[:12]}"

    return make
