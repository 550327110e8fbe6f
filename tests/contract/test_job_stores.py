"""`JobStore.recent` (issue 17: `mnemostream jobs list` and the admin group's `jobs.list`),
one suite over the in-memory and the MongoDB adapters: the newest records first (ties by job
id), only those naming the agent (as `agentWallet` or among `agentWallets`), only those in
the status, at most `limit`. The Mongo case is `integration` (a unique database)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from pymongo import AsyncMongoClient

from engine.adapters.memory import InMemoryJobStore
from engine.adapters.mongo import MongoJobStore, ensure_schema
from engine.upkeep.jobs import JobRecord, JobStore, names_agent

T0 = 1_700_000_000_000

IMPLEMENTATIONS = [
    pytest.param("memory", id="memory"),
    pytest.param("mongo", id="mongo", marks=pytest.mark.integration),
]


@pytest.fixture(params=IMPLEMENTATIONS)
async def jobs(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[JobStore]:
    if request.param == "memory":
        yield InMemoryJobStore()
        return
    stack = request.getfixturevalue("stack")
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        stack.mongo_uri, serverSelectionTimeoutMS=10_000
    )
    name = unique("db")
    try:
        await ensure_schema(client[name])
        yield MongoJobStore(client[name])
    finally:
        await client.drop_database(name)
        await client.close()


RECORDS = [
    JobRecord("j-decay", "decay_update", "completed", T0 + 1, {"agentWallet": "0xA"}, T0 + 9),
    JobRecord("j-many", "consolidate", "failed", T0 + 2, {"agentWallets": ["0xB", "0xA"]}),
    JobRecord("j-cleanup", "cleanup", "completed", T0 + 3, {}),
    JobRecord("j-b", "archive_create", "running", T0 + 3, {"agentWallet": "0xB"}),
    JobRecord("j-case", "consolidate", "completed", T0 + 4, {"agentWallet": "0xa"}),
]


async def seeded(jobs: JobStore) -> JobStore:
    for record in RECORDS:
        await jobs.finish(record)
    return jobs


def ids(records: list[JobRecord]) -> list[str]:
    return [r.job_id for r in records]


async def test_recent_lists_the_newest_first_ties_by_id(jobs: JobStore) -> None:
    store = await seeded(jobs)
    assert ids(await store.recent()) == ["j-case", "j-b", "j-cleanup", "j-many", "j-decay"]
    assert ids(await store.recent(limit=2)) == ["j-case", "j-b"]
    [first] = await store.recent(limit=1)
    assert first == RECORDS[-1]  # the whole record comes back


async def test_recent_keeps_the_jobs_naming_the_agent_in_the_status(jobs: JobStore) -> None:
    store = await seeded(jobs)
    # ids keep their case: 0xa is another agent
    assert ids(await store.recent(agent="0xA")) == ["j-many", "j-decay"]
    assert ids(await store.recent(agent="0xB")) == ["j-b", "j-many"]
    assert ids(await store.recent(status="completed")) == ["j-case", "j-cleanup", "j-decay"]
    assert ids(await store.recent(agent="0xA", status="failed")) == ["j-many"]
    assert await store.recent(agent="0xNobody") == []
    assert await store.recent(agent="0xB", status="completed") == []


def test_names_agent_reads_both_parameters() -> None:
    assert names_agent({"agentWallet": "0xA"}, "0xA")
    assert names_agent({"agentWallets": ["0xB", "0xA"]}, "0xA")
    assert not names_agent({"agentWallets": "0xA"}, "0xB")  # a malformed value names nobody
    assert not names_agent({}, "0xA")
