"""One suite, two implementations of `ItemStore` (in-memory and MongoDB), driven through the
`engine.upkeep.items` service functions. The Mongo cases are `integration` (unique db per test)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from pymongo import AsyncMongoClient

from engine.adapters.memory import HashingEmbedder
from engine.adapters.memory.items import InMemoryItemStore
from engine.adapters.mongo import MEMORY, MongoMemoryStore, ensure_schema
from engine.adapters.mongo.items import MongoItemStore
from engine.errors import DependencyFailed, InputRejected, NotFound
from engine.ports import MemoryStore
from engine.records import MemoryRow, ScopeFields
from engine.scoping import TenantFilter
from engine.upkeep.conflicts import resolve_conflict
from engine.upkeep.items import (
    ItemStore,
    delete_item,
    get_item,
    update_item,
)
from engine.upkeep.listings import newest_facts, recent_items
from tests.support.mongo import IMPLEMENTATIONS, mongo_database

T0 = 1_600_000_000_000
AGENT, USER = "0xAgentA", "0xUserU"
USER_ROW = ScopeFields(AGENT, USER, "t1", "global", None)
AGENT_ROW = ScopeFields(AGENT, None, None, None, None)
MINE = TenantFilter(AGENT, USER)
AGENT_ONLY = TenantFilter(AGENT, None)


@dataclass
class Stores:
    memory: MemoryStore
    items: ItemStore
    raw: Callable[[str], Awaitable[dict[str, Any] | None]] | None = None


@pytest.fixture(params=IMPLEMENTATIONS)
async def stores(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[Stores]:
    if request.param == "memory":
        store = InMemoryItemStore()
        yield Stores(store, store)
        return
    async with mongo_database(request.getfixturevalue("stack"), unique("db")) as db:
        await ensure_schema(db)

        async def raw(vector_id: str) -> dict[str, Any] | None:
            return await db[MEMORY].find_one({"_id": vector_id})

        yield Stores(MongoMemoryStore(db), MongoItemStore(db), raw)


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder(32)


async def seed(
    stores: Stores,
    vector_id: str,
    content: str,
    scope: ScopeFields = USER_ROW,
    *,
    at: int = T0,
    source: str = "fact",
) -> MemoryRow:
    [vector] = await HashingEmbedder(32).embed([content], "document")
    metadata = {"status": "active", "type": "explicit_save", "factHash": "h", "topic": "t"}
    row = MemoryRow(vector_id, scope, content, vector, "seed-model", source, at, metadata)
    assert await stores.memory.insert_if_absent(row)
    return row


def snapshot(row: MemoryRow) -> tuple[Any, ...]:
    """A comparable form of a row (arrays as lists)."""
    return (
        row.vector_id,
        row.scope,
        row.content,
        row.embedding.tolist(),
        row.embedding_model,
        row.source,
        row.created_at,
        row.metadata,
        row.decay_score,
        row.invalid_at,
        row.superseded_by,
    )


async def test_get_update_roundtrip(stores: Stores, embedder: HashingEmbedder) -> None:
    seeded = await seed(stores, "a", "I live in Paris")
    assert snapshot(await get_item(stores.items, MINE, "a")) == snapshot(seeded)
    row = await update_item(
        stores.items,
        embedder,
        MINE,
        "a",
        content=" I live in Rome ",
        metadata={"mood": "ok", "type": "x"},
        confidence=0.5,
        at=T0 + 10,
    )
    assert row.content == "I live in Rome"
    assert row.embedding_model == embedder.model
    assert row.embedding_dim == embedder.dimension
    assert row.metadata == {
        "status": "active",
        "type": "explicit_save",
        "factHash": "h",
        "topic": "t",
        "mood": "ok",
        "confidence": 0.5,
    }
    assert snapshot(await get_item(stores.items, MINE, "a")) == snapshot(row)
    if stores.raw is not None:
        doc = await stores.raw("a")
        assert doc is not None
        assert (doc["updatedAt"], doc["embeddingDim"]) == (T0 + 10, embedder.dimension)


async def test_soft_then_hard_delete(stores: Stores) -> None:
    await seed(stores, "a", "I live in Paris")
    row = await delete_item(stores.items, MINE, "a", at=T0 + 5)
    assert (row.status, row.metadata["deletedAt"], row.decay_score) == ("deleted", T0 + 5, 0.0)
    with pytest.raises(NotFound):
        await get_item(stores.items, MINE, "a")
    with pytest.raises(NotFound):
        await delete_item(stores.items, MINE, "a", at=T0 + 6)
    assert await stores.memory.status_of("a") == "deleted"
    await delete_item(stores.items, MINE, "a", hard=True, at=T0 + 7)
    assert not await stores.memory.exists("a")
    with pytest.raises(NotFound):
        await delete_item(stores.items, MINE, "a", hard=True, at=T0 + 8)


async def test_supersede_keeps_history_visible(stores: Stores, embedder: HashingEmbedder) -> None:
    await seed(stores, "a", "I live in Paris")
    await seed(stores, "b", "I live in Lyon")
    await resolve_conflict(
        stores.items, embedder, MINE, "a", resolution="supersede", winning_id="b", at=T0 + 3
    )
    row = await get_item(stores.items, MINE, "a")
    assert (row.status, row.superseded_by, row.invalid_at) == ("superseded", "b", T0 + 3)
    assert [r.vector_id for r in await stores.memory.active_rows(MINE)] == ["b"]


async def test_merge(stores: Stores, embedder: HashingEmbedder) -> None:
    await seed(stores, "a", "I live in Paris")
    await seed(stores, "b", "I live in Lyon")
    loser, winner = await resolve_conflict(
        stores.items, embedder, MINE, "a", resolution="merge", winning_id="b", at=T0 + 3
    )
    stored = await get_item(stores.items, MINE, "b")
    assert snapshot(stored) == snapshot(winner)
    assert stored.content == "I live in Lyon\nI live in Paris"
    [expected] = await embedder.embed([stored.content], "document")
    np.testing.assert_allclose(stored.embedding, expected, rtol=1e-6)
    assert stored.metadata["mergedFrom"] == ["a"]
    assert (loser.status, loser.superseded_by) == ("superseded", "b")


async def test_winner_in_another_scope_is_not_found(
    stores: Stores, embedder: HashingEmbedder
) -> None:
    seeded = await seed(stores, "a", "I live in Paris")
    await seed(stores, "theirs", "I live in Oslo", ScopeFields(AGENT, "0xUserV", None, None, None))
    await seed(stores, "agents", "Agent-wide note", AGENT_ROW)
    for other in ("theirs", "agents"):
        with pytest.raises(NotFound):
            await resolve_conflict(
                stores.items, embedder, MINE, "a", resolution="supersede", winning_id=other, at=T0
            )
    assert snapshot(await get_item(stores.items, MINE, "a")) == snapshot(seeded)


FOREIGN = [
    pytest.param("a", TenantFilter("0xAgentB", USER), id="other-agent"),
    pytest.param("a", TenantFilter(AGENT.lower(), USER), id="agent-case"),
    pytest.param("a", TenantFilter(AGENT, "0xUserV"), id="other-user"),
    pytest.param("a", AGENT_ONLY, id="userless-on-user-row"),
    pytest.param("a", TenantFilter(AGENT, USER, mode="local", hai_id="h1"), id="other-mode"),
    pytest.param("g", MINE, id="user-on-agent-row"),
    pytest.param("g", TenantFilter(AGENT, USER, shared=True), id="shared-on-agent-row"),
]


@pytest.mark.parametrize(("vector_id", "where"), FOREIGN)
async def test_every_operation_outside_scope_is_not_found(
    stores: Stores, embedder: HashingEmbedder, vector_id: str, where: TenantFilter
) -> None:
    await seed(stores, "a", "I live in Paris", USER_ROW)
    await seed(stores, "g", "Agent-wide note", AGENT_ROW)
    await seed(stores, "w", "Another row", USER_ROW)
    await seed(stores, "wg", "Another agent row", AGENT_ROW)
    owner = MINE if vector_id == "a" else AGENT_ONLY
    before = snapshot(await get_item(stores.items, owner, vector_id))
    raw_before = await stores.raw(vector_id) if stores.raw else None
    operations: list[Callable[[], Awaitable[Any]]] = [
        lambda: get_item(stores.items, where, vector_id),
        lambda: update_item(stores.items, embedder, where, vector_id, content="x", at=T0 + 1),
        lambda: update_item(stores.items, embedder, where, vector_id, status="archived", at=T0),
        lambda: delete_item(stores.items, where, vector_id, at=T0 + 1),
        lambda: delete_item(stores.items, where, vector_id, hard=True, at=T0 + 1),
        *(
            lambda r=r: resolve_conflict(
                stores.items, embedder, where, vector_id, resolution=r, at=T0 + 1
            )
            for r in ("keep", "ignore")
        ),
        *(
            lambda r=r: resolve_conflict(
                stores.items,
                embedder,
                where,
                vector_id,
                resolution=r,
                winning_id="w" if vector_id == "a" else "wg",
                at=T0 + 1,
            )
            for r in ("supersede", "merge")
        ),
    ]
    for operation in operations:
        with pytest.raises(NotFound):
            await operation()
    assert snapshot(await get_item(stores.items, owner, vector_id)) == before
    if stores.raw is not None:
        assert await stores.raw(vector_id) == raw_before


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_mongo_driver_errors_are_dependency_failed(embedder: HashingEmbedder) -> None:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        f"mongodb://127.0.0.1:{closed_port()}", serverSelectionTimeoutMS=200
    )
    try:
        store = MongoItemStore(client["nothing"])
        with pytest.raises(DependencyFailed, match="memory item read failed"):
            await get_item(store, MINE, "a")
        with pytest.raises(DependencyFailed, match="memory item delete failed"):
            await delete_item(store, MINE, "a", hard=True, at=T0)
        with pytest.raises(DependencyFailed, match="memory item update failed"):
            await store.soft_delete(MINE, "a", T0)
    finally:
        await client.close()


async def test_newest_facts_are_active_in_scope_newest_first_fixes_16_3(
    stores: Stores, embedder: HashingEmbedder
) -> None:
    for n in range(5):
        await seed(stores, f"f{n}", f"fact number {n}", at=T0 + n)
    await seed(stores, "turn", "a turn row", at=T0 + 99, source="session")
    await seed(stores, "agent-level", "the agent's own fact", AGENT_ROW, at=T0 + 50)
    await seed(
        stores,
        "other-user",
        "another user's fact",
        ScopeFields(AGENT, "0xOther", None, None, None),
        at=T0,
    )
    await seed(
        stores,
        "other-agent",
        "another agent's fact",
        ScopeFields("0xB", USER, None, None, None),
        at=T0,
    )
    await delete_item(stores.items, MINE, "f4", at=T0 + 10)
    await resolve_conflict(
        stores.items, embedder, MINE, "f3", resolution="supersede", winning_id="f2", at=T0 + 11
    )

    newest = await newest_facts(stores.items, MINE, 10)
    assert [r.vector_id for r in newest] == ["f2", "f1", "f0"]  # no deleted, no superseded
    assert [r.vector_id for r in await newest_facts(stores.items, MINE, 2)] == ["f2", "f1"]
    # no user: the agent's user-less facts only, never every user's (§16.3)
    only_agent = await newest_facts(stores.items, AGENT_ONLY, 10)
    assert [r.vector_id for r in only_agent] == ["agent-level"]


async def test_newest_facts_as_of_lists_what_was_true_then(
    stores: Stores, embedder: HashingEmbedder
) -> None:
    await seed(stores, "paris", "I live in Paris", at=T0)
    await seed(stores, "lisbon", "I live in Lisbon", at=T0 + 100)
    await seed(stores, "cat", "I have a cat", at=T0 + 10)
    await seed(stores, "dog", "I have a dog", at=T0 + 20)
    await seed(stores, "session", "a turn", at=T0 + 5, source="session")
    # Lisbon replaced Paris at T0 + 100; the dog was deleted at T0 + 30
    await resolve_conflict(
        stores.items,
        embedder,
        MINE,
        "paris",
        resolution="supersede",
        winning_id="lisbon",
        at=T0 + 100,
    )
    await delete_item(stores.items, MINE, "dog", at=T0 + 30)

    def ids(rows: list[MemoryRow]) -> list[str]:
        return [r.vector_id for r in rows]

    assert ids(await newest_facts(stores.items, MINE, 10)) == ["lisbon", "cat"]
    assert ids(await newest_facts(stores.items, MINE, 10, T0 + 50)) == ["cat", "paris"]
    [then] = await newest_facts(stores.items, MINE, 1, T0 + 50)
    assert (then.vector_id, then.invalid_at, then.superseded_by) == ("cat", None, None)
    # the replaced fact says until when it was true, and what replaced it
    paris = (await newest_facts(stores.items, MINE, 10, T0 + 99))[-1]
    assert (paris.vector_id, paris.invalid_at, paris.superseded_by) == ("paris", T0 + 100, "lisbon")
    # at the replacement itself, the new fact holds; before anything was said, nothing
    assert ids(await newest_facts(stores.items, MINE, 10, T0 + 100)) == ["lisbon", "cat"]
    assert ids(await newest_facts(stores.items, MINE, 10, T0 - 1)) == []
    # a deleted fact is never listed, not even for a time it was true
    assert "dog" not in ids(await newest_facts(stores.items, MINE, 10, T0 + 25))
    assert ids(await newest_facts(stores.items, AGENT_ONLY, 10, T0 + 50)) == []


async def test_recent_items_show_replaced_facts_of_every_source_never_deleted_ones(
    stores: Stores, embedder: HashingEmbedder
) -> None:
    for n in range(3):
        await seed(stores, f"f{n}", f"fact number {n}", at=T0 + n)
    await seed(stores, "turn", "a turn row", at=T0 + 99, source="session")
    await seed(stores, "agent-level", "the agent's own fact", AGENT_ROW, at=T0 + 50)
    await seed(stores, "other", "another user's", ScopeFields(AGENT, "0xO", None, None, None))
    await delete_item(stores.items, MINE, "f0", at=T0 + 10)
    await resolve_conflict(
        stores.items, embedder, MINE, "f1", resolution="supersede", winning_id="f2", at=T0 + 11
    )

    every = await recent_items(stores.items, MINE, source=None, limit=10)
    assert [r.vector_id for r in every] == ["turn", "f2", "f1"]  # f0 deleted: never shown
    replaced = every[2]
    assert (replaced.status, replaced.invalid_at, replaced.superseded_by) == (
        "superseded",
        T0 + 11,
        "f2",
    )
    facts = await recent_items(stores.items, MINE, source="fact", limit=1)
    assert [r.vector_id for r in facts] == ["f2"]
    only_agent = await recent_items(stores.items, AGENT_ONLY, source=None, limit=10)
    assert [r.vector_id for r in only_agent] == ["agent-level"]
    with pytest.raises(InputRejected):
        await recent_items(stores.items, TenantFilter(" ", None), source=None, limit=1)
