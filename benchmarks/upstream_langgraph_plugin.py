"""The pytest plugin `benchmarks.upstream_langgraph` loads into LangGraph's own store tests
(`-p benchmarks.upstream_langgraph_plugin`), as one would for a new backend.

With `MNEMOSTREAM_UPSTREAM_BACKEND=memory` (the control) it changes nothing: the tests build
LangGraph's `InMemoryStore`. With `mnemo` every `InMemoryStore(index=..., ttl=...)` a test
module builds is a `MnemoStore` of a fresh tenant (a new agent per store, as a new
`InMemoryStore` is empty) on the stack named by `MNEMOSTREAM_KAFKA_BOOTSTRAP` (consumer groups
under `MNEMOSTREAM_GROUP_PREFIX`), with the test's `index` (its `embed` included, so the
tests' character embeddings score the items) and `ttl`. One `MemoryClient`, started on a loop
of its own (`LoopThread`), serves every store, so the tests' synchronous calls (from their
own thread) and asynchronous ones (from pytest's loop) both reach it. The Postgres store
tests' fixtures build their store with `make_store` (`benchmarks.upstream_langgraph_pg`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.upstream_support import WARM_UP_SECONDS, start_client, stop_client
from benchmarks.upstream_support import backend as chosen
from services.integrations.langgraph import MnemoStore
from services.integrations.loops import LoopThread
from services.sdk.client import MemoryClient

_state: dict[str, Any] = {}


def backend() -> str:
    return chosen("memory")


def _warm_up(thread: LoopThread, client: MemoryClient) -> None:
    # the groups join and load their models before the first test's write must show
    warm = MnemoStore(client, agent=f"0xWarm{uuid.uuid4().hex[:8]}", write_timeout=WARM_UP_SECONDS)
    warm.put(("warm",), "up", {"text": "warm up"})
    warm.flush()  # applied: the first reply of the client came (a put returns before it)


def pytest_configure(config: pytest.Config) -> None:
    from benchmarks.upstream_langgraph_pg import stub_postgres

    stub_postgres()  # before the Postgres test modules are imported
    if backend() == "mnemo":
        start_client(_state, _warm_up)


def pytest_unconfigure(config: pytest.Config) -> None:
    stop_client(_state)


LAST = ("large_batches",)
"""Tests run after all others: on a backend slower than memory they time out with thousands
of calls still queued on the shared client, which would slow every later test."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: any(name in item.name for name in LAST))  # stable: order kept


def make_store(*, index: Any = None, ttl: Any = None) -> Any:
    """The backend under test, empty: LangGraph's `InMemoryStore` (the control) or a
    `MnemoStore` of a fresh tenant (a new agent) with this index and TTL configuration
    (`InMemoryStore` keeps no TTLs: it is built without)."""
    if backend() != "mnemo":
        from langgraph.store.memory import InMemoryStore

        return InMemoryStore(index=index)
    agent = f"0xUpstream{uuid.uuid4().hex[:12]}"
    return MnemoStore(_state["client"], agent=agent, user="upstream", index=index, ttl=ttl)


@pytest.fixture(autouse=True)
def _stores_on_mnemostream(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    if backend() != "mnemo":
        yield
        return

    class InMemoryStore(MnemoStore):
        """`InMemoryStore(index=..., ttl=...)` as a `MnemoStore` of a fresh tenant (a class,
        so `isinstance` checks hold)."""

        def __init__(self, *, index: Any = None, ttl: Any = None) -> None:
            agent = f"0xUpstream{uuid.uuid4().hex[:12]}"
            client = _state["client"]
            super().__init__(client, agent=agent, user="upstream", index=index, ttl=ttl)

    module = request.module
    if module is not None and hasattr(module, "InMemoryStore"):
        monkeypatch.setattr(module, "InMemoryStore", InMemoryStore)
    yield
