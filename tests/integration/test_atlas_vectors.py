"""Atlas `$vectorSearch` against a real server, and the caller-filter clauses against a real
MongoDB-wire server.

The vector test needs a deployment with Atlas Search (Atlas, or the `mongodb-atlas-local` image
that `docker compose up` runs; point ``MNEMOSTREAM_MONGO_URI`` at it together with the Kafka
and Redis variables). The embedded SecantusDB has no search indexes: there the test is skipped
with the server's own error message.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import numpy as np
import pytest
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

from engine.adapters.atlas_index import ensure_vector_index
from engine.adapters.atlas_vectors import AtlasVectorIndex
from engine.adapters.mongo import MEMORY, MongoMemoryStore, ensure_schema
from engine.errors import DependencyFailed
from engine.filters import matches, mongo_clauses, parse_filters
from engine.records import MemoryRow, ScopeFields
from engine.scoping import TenantFilter
from services.endpoints import Endpoints

pytestmark = pytest.mark.integration

Doc = dict[str, Any]
MODEL = "test-model"
AGENT = "agent-1"
INDEX_READY_SECONDS = 120.0
SEARCH_SYNC_SECONDS = 60.0


@pytest.fixture
async def db(stack: Endpoints, unique: Callable[[str], str]) -> AsyncIterator[AsyncDatabase[Doc]]:
    client: AsyncMongoClient[Doc] = AsyncMongoClient(stack.mongo_uri)
    database = client[unique("atlas")]
    try:
        yield database
    finally:
        await client.drop_database(database.name)
        await client.close()


def row(
    vector_id: str,
    vector: list[float],
    *,
    agent: str = AGENT,
    user: str | None = None,
    source: str = "fact",
    model: str = MODEL,
    status: str = "active",
) -> MemoryRow:
    embedding = np.asarray(vector, dtype=np.float32)
    return MemoryRow(
        vector_id=vector_id,
        scope=ScopeFields(
            agent_wallet=agent, user_address=user, thread_id=None, mode=None, hai_id=None
        ),
        content=f"content of {vector_id}",
        embedding=embedding / np.linalg.norm(embedding),
        embedding_model=model,
        source=source,
        created_at=1_700_000_000_000,
        metadata={"status": status},
    )


ROWS = [
    row("near", [1, 0, 0]),
    row("session", [0.8, 0.6, 0], source="session"),
    row("mid", [0.6, 0.8, 0]),
    row("far", [0, 1, 0]),
    row("user-row", [1, 0, 0], user="u1"),
    row("other-agent", [1, 0, 0], agent="agent-2"),
    row("deleted", [1, 0, 0], status="deleted"),
    row("other-model", [1, 0, 0], model="another-model"),
]
USERLESS = TenantFilter(agent_wallet=AGENT, user_address=None)
QUERY = [1.0, 0.0, 0.0]


async def _search_until(
    index: AtlasVectorIndex, where: TenantFilter, want: int, **kwargs: Any
) -> list[tuple[MemoryRow, float]]:
    """Atlas indexes new documents asynchronously: retry until `want` hits show up."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SEARCH_SYNC_SECONDS
    while True:
        hits = await index.search(where, QUERY, model=MODEL, **kwargs)
        if len(hits) >= want or loop.time() > deadline:
            return hits
        await asyncio.sleep(0.5)


async def test_vector_search_prefilters_the_tenant_on_a_server_with_atlas_search(
    db: AsyncDatabase[Doc], caplog: pytest.LogCaptureFixture
) -> None:
    await ensure_schema(db)
    store = MongoMemoryStore(db)
    for r in ROWS:
        assert await store.insert_if_absent(r)
    collection = db[MEMORY]
    index = AtlasVectorIndex(collection)

    with caplog.at_level(logging.WARNING, logger="engine.adapters.atlas_vectors"):
        created = await ensure_vector_index(collection, 3, wait_seconds=INDEX_READY_SECONDS)
    if not created:
        said = "; ".join(r.getMessage() for r in caplog.records)
        try:
            await index.search(USERLESS, QUERY, k=3, model=MODEL)
        except DependencyFailed as exc:
            pytest.skip(f"server has no Atlas vector search: {said}; $vectorSearch: {exc}")
        pytest.fail(f"ensure_vector_index said 'unsupported' ({said}) but $vectorSearch ran")

    # idempotent: the same definition is left alone
    assert await ensure_vector_index(collection, 3, wait_seconds=INDEX_READY_SECONDS)

    hits = await _search_until(index, USERLESS, 4, k=10)
    assert [r.vector_id for r, _ in hits] == ["near", "session", "mid", "far"]
    assert [cos for _, cos in hits] == pytest.approx([1.0, 0.8, 0.6, 0.0], abs=1e-3)
    near, _ = hits[0]
    assert near.embedding_model == MODEL
    assert near.scope.user_address is None
    assert near.embedding == pytest.approx(np.asarray([1.0, 0.0, 0.0], dtype=np.float32))

    only_sessions = await index.search(USERLESS, QUERY, k=10, sources=["session"], model=MODEL)
    assert [r.vector_id for r, _ in only_sessions] == ["session"]

    top_one = await index.search(USERLESS, QUERY, k=1, model=MODEL)
    assert [r.vector_id for r, _ in top_one] == ["near"]

    user_hits = await _search_until(index, TenantFilter(AGENT, "u1"), 1, k=10)
    assert [r.vector_id for r, _ in user_hits] == ["user-row"]

    other = await index.search(USERLESS, QUERY, k=10, model="another-model")
    assert [r.vector_id for r, _ in other] == ["other-model"]


FILTER_DOCS: list[Doc] = [
    {"_id": 1, "source": "fact", "metadata": {"app_id": "a", "n": 1, "flag": True}},
    {"_id": 2, "source": "session", "metadata": {"app_id": "b", "n": 1.0, "flag": 1}},
    {"_id": 3, "source": "fact", "metadata": {"app_id": None, "tags": ["x", "y"]}},
    {"_id": 4, "source": "knowledge", "metadata": {}},
    {"_id": 5},
    {"_id": 6, "metadata": {"tags": []}},
    {"_id": 7, "metadata": {"items": [{"k": "v"}, {"j": 1}]}},
    {"_id": 8, "metadata": {"items": []}},
    {"_id": 9, "metadata": {"items": [{"k": ["v", "w"]}]}},
    {"_id": 10, "metadata": 5},
    {"_id": 11, "metadata": {"tags": [None]}},
    {"_id": 12, "metadata": {"n": "1", "flag": False}},
    {"_id": 13, "metadata": {"items": [1, 2], "tags": [["x"]]}},
    {"_id": 14, "workingMemory": {"state": {"step": 2}, "entities": {"person": ["ada", "bo"]}}},
]
FILTERS: list[Doc] = [
    {"metadata.app_id": "a"},
    {"metadata.app_id": None},
    {"metadata.app_id": ["a", None]},
    {"metadata.n": 1},
    {"metadata.n": True},
    {"metadata.n": "1"},
    {"metadata.flag": [True, 1]},
    {"metadata.tags": None},
    {"metadata.tags": ["y", "z"]},
    {"metadata.items.k": None},
    {"metadata.items.k": "w"},
    {"metadata.items.j": [1, "q"]},
    {"source": ["fact", "knowledge"], "metadata.app_id": "a"},
    {"workingMemory.entities.person": "bo"},
]


async def test_mongo_clauses_agree_with_the_server_and_with_matches(
    db: AsyncDatabase[Doc],
) -> None:
    collection = db["filters"]
    await db.create_collection("filters")
    await collection.insert_many([dict(d) for d in FILTER_DOCS])
    for raw in FILTERS:
        filters = parse_filters(raw)
        found = await collection.find(mongo_clauses(filters), {"_id": 1}).to_list(length=None)
        server = sorted(d["_id"] for d in found)
        in_memory = [d["_id"] for d in FILTER_DOCS if matches(filters, d)]
        assert server == in_memory, raw
