"""The pytest plugin `benchmarks.upstream_agents` loads into the OpenAI Agents SDK's own
session tests (`-p benchmarks.upstream_agents_plugin`), as one would for a new backend.

With `MNEMOSTREAM_UPSTREAM_BACKEND=sqlite` (the control) it changes nothing. With `mnemo` it
points the tests' `SQLiteSession(...)` at a `MnemoSession` on the stack named by
`MNEMOSTREAM_KAFKA_BOOTSTRAP` (consumer groups under `MNEMOSTREAM_GROUP_PREFIX`): every
session a test builds belongs to one fresh agent of that test, its `session_id` is the
thread, the database path is ignored (sessions of one test with one id share their items, as
on one SQLite file), and `session_settings` is passed on. One `MemoryClient`, started on a
loop of its own (`LoopThread`), serves every session, so a test's `run_sync` and its other
loops and threads reach it as `MnemoSession.open`'s own client would.

Tests that build a `SQLiteSession` and reach into it or into SQLite itself
(`session._connections`, `SQLiteSession._file_locks`, `sqlite3`, rows written behind the
session's back, the `"SQLiteSession is closed"` message) are skipped on `mnemo` with the
reason `REFERENCE_INTERNALS`: they test that implementation, not the `Session` protocol.
"""

from __future__ import annotations

import inspect
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.upstream_support import WARM_UP_SECONDS, start_client, stop_client
from benchmarks.upstream_support import backend as chosen
from services.integrations.loops import LoopThread
from services.integrations.openai_agents import MnemoSession
from services.sdk.client import MemoryClient

REFERENCE_INTERNALS = "reference internals: the test reaches into SQLite itself"
INTERNAL = re.compile(
    r"\bsession\w*\._\w|SQLiteSession\._|\bsqlite3\.|_drop_sqlite_table|_sqlite_write_lock"
    r"|SQLiteSession is closed|\.messages_table"
)
"""Source text of a test that exercises SQLiteSession's implementation, not the protocol."""

_state: dict[str, Any] = {}


def backend() -> str:
    return chosen("sqlite")


def _warm_up(thread: LoopThread, client: MemoryClient) -> None:
    # the groups join and load their models before the first test's write must show
    warm = {"agentWallet": f"0xWarm{uuid.uuid4().hex[:8]}", "userAddress": "w", "threadId": "w"}
    turn = {**warm, "userMessage": "warm up", "assistantMessage": "ok"}
    thread.run(client.record_turn(turn, wait=True, timeout=WARM_UP_SECONDS), timeout=300)


def pytest_configure(config: pytest.Config) -> None:
    if backend() == "mnemo":
        start_client(_state, _warm_up)


def pytest_unconfigure(config: pytest.Config) -> None:
    stop_client(_state)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if backend() != "mnemo":
        return
    for item in items:
        function = getattr(item, "function", None)
        source = inspect.getsource(function) if function is not None else ""
        # a test that builds no SQLiteSession runs as it is: the swap does not touch it
        if "SQLiteSession(" in source and INTERNAL.search(source):
            item.add_marker(pytest.mark.skip(reason=REFERENCE_INTERNALS))


@pytest.fixture(autouse=True)
def _sessions_on_mnemostream(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    if backend() != "mnemo":
        yield
        return
    agent = f"0xUpstream{uuid.uuid4().hex[:12]}"
    client = _state["client"]

    class SQLiteSession(MnemoSession):
        """`SQLiteSession(session_id, db_path, ..., session_settings=...)` as a
        `MnemoSession` of this test's tenant (a class, so `isinstance` checks hold)."""

        def __init__(
            self,
            session_id: str,
            db_path: object = ":memory:",
            sessions_table: str = "agent_sessions",
            messages_table: str = "agent_messages",
            session_settings: Any = None,
        ) -> None:
            super().__init__(
                client, session_id, agent=agent, user="upstream", session_settings=session_settings
            )

    module = request.module
    if module is not None and hasattr(module, "SQLiteSession"):
        monkeypatch.setattr(module, "SQLiteSession", SQLiteSession)
    yield
