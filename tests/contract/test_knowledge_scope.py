"""Agent knowledge is shared by the agent's users, user memory is not (issue 17 §4): one suite
over the in-memory and the MongoDB stores (the Mongo cases are `integration`).

Knowledge indexed for an agent without a user is found by a read scoped to any user of that
agent; never by another agent, and the agent's other user-less memory stays the agent's. A
user's own memory (facts, workspace knowledge) is never found by another user. Before the
change a user-scoped read found no agent knowledge at all: the vectors layer returned
nothing for alice.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from engine.adapters.atlas_vectors import atlas_prefilter
from engine.adapters.memory import HashingEmbedder
from engine.adapters.memory.items import InMemoryItemStore
from engine.adapters.mongo import MEMORY, MongoMemoryStore, ensure_schema
from engine.adapters.mongo.documents import tenant_query
from engine.adapters.mongo.items import MongoItemStore
from engine.errors import NotFound
from engine.ingest.knowledge import index_document
from engine.ports import MemoryStore
from engine.records import MemoryRow, ScopeFields
from engine.retrieval.layers import LayerQuery, MemoryLayerOptions, search_memory
from engine.retrieval.vector_index import ExactVectorIndex
from engine.scoping import SHARED_SOURCES, TenantFilter, tenant_filter
from engine.upkeep.items import ItemStore, delete_item, get_item
from schemas.scope import Scope
from tests.support.mongo import IMPLEMENTATIONS, mongo_database

T0 = 1_600_000_000_000
A, B = "0xKnowA", "0xKnowB"
EMBEDDER = HashingEmbedder(64)
QUERY = "What is the gate code?"


@dataclass
class Stores:
    memory: MemoryStore
    items: ItemStore


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
        yield Stores(MongoMemoryStore(db), MongoItemStore(db))


def fields(agent: str, user: str | None) -> ScopeFields:
    return ScopeFields(agent, user, None, None, None)


def scope(agent: str, user: str | None = None, **more: str) -> Scope:
    body: dict[str, Any] = {"agentWallet": agent, **more}
    if user is not None:
        body["userAddress"] = user
    return Scope.parse(body)


async def knowledge(stores: Stores, agent: str, user: str | None, content: str) -> str:
    [row_id] = await index_document(
        stores.memory,
        EMBEDDER,
        scope=fields(agent, user),
        content=content,
        key=None,
        source_format="text",
        uri=None,
        at=T0,
    )
    return row_id


async def row(stores: Stores, vector_id: str, agent: str, user: str | None, source: str) -> str:
    content = f"{vector_id}: the gate code note of {user or 'the agent'}"
    [vector] = await EMBEDDER.embed([content], "document")
    await stores.memory.insert_if_absent(
        MemoryRow(vector_id, fields(agent, user), content, vector, EMBEDDER.model, source, T0)
    )
    return vector_id


async def seeded(stores: Stores) -> dict[str, str]:
    """Every row mentions the gate code, so only the tenant rule decides what a read sees."""
    return {
        "agent knowledge": await knowledge(stores, A, None, "The gate code of the yard is 4471."),
        "other agent knowledge": await knowledge(stores, B, None, "The gate code is 9902."),
        "bob's workspace": await knowledge(stores, A, "bob", "Bob's garage gate code is 3310."),
        "agent session": await row(stores, "agent-session", A, None, "session"),
        "agent fact": await row(stores, "agent-fact", A, None, "fact"),
        "alice fact": await row(stores, "alice-fact", A, "alice", "fact"),
        "bob fact": await row(stores, "bob-fact", A, "bob", "fact"),
    }


async def vectors_layer(stores: Stores, reader: Scope) -> set[str]:
    """The ids the vectors layer returns for `QUERY` read as `reader`."""
    [vector] = await EMBEDDER.embed([QUERY], "query")
    q = LayerQuery(reader, QUERY, 20, vector, EMBEDDER.model, T0)
    options = MemoryLayerOptions(layer="vectors", sources=None, ranked=False)
    return {h.id for h in await search_memory(ExactVectorIndex(stores.memory), q, options)}


async def test_agent_knowledge_is_shared_by_the_agents_users_and_user_memory_is_not(
    stores: Stores,
) -> None:
    ids = await seeded(stores)
    shared = ids["agent knowledge"]
    alice = await vectors_layer(stores, scope(A, "alice"))
    assert alice == {shared, ids["alice fact"]}
    bob = await vectors_layer(stores, scope(A, "bob"))
    assert bob == {shared, ids["bob fact"], ids["bob's workspace"]}
    # the agent itself reads its user-less memory, as before
    agent = await vectors_layer(stores, scope(A))
    assert agent == {shared, ids["agent session"], ids["agent fact"]}
    # a "global" read of a user sees the mode-less knowledge too (engine.scoping)
    assert await vectors_layer(stores, scope(A, "alice", mode="global")) == alice
    for outsider in (scope(B, "alice"), scope(B, "bob"), scope(B)):
        seen = await vectors_layer(stores, outsider)
        assert shared not in seen, outsider
        assert seen <= {ids["other agent knowledge"]}, outsider
    # a user's own memory (facts, workspace knowledge) is never another reader's
    private = {ids["bob fact"], ids["bob's workspace"]}
    assert not private & alice
    assert ids["alice fact"] not in bob


async def test_the_widened_filter_admits_only_user_less_rows_of_the_shared_sources(
    stores: Stores,
) -> None:
    ids = await seeded(stores)
    where = tenant_filter(scope(A, "alice"), durable=True, shared_sources=SHARED_SOURCES)

    async def found(f: TenantFilter, sources: list[str] | None = None) -> set[str]:
        return {r.vector_id for r in await stores.memory.active_rows(f, sources=sources)}

    assert await found(where) == {ids["agent knowledge"], ids["alice fact"]}
    assert await found(where, ["fact"]) == {ids["alice fact"]}
    assert await found(where, ["knowledge"]) == {ids["agent knowledge"]}
    assert await found(where.exact()) == {ids["alice fact"]}
    # a mode or HAI id the scope sets still constrains the shared rows
    local = tenant_filter(
        scope(A, "alice", mode="local", haiId="H1"), durable=True, shared_sources=SHARED_SOURCES
    )
    assert await found(local) == set()


async def test_items_never_edit_the_agents_knowledge_through_a_users_read_filter(
    stores: Stores,
) -> None:
    ids = await seeded(stores)
    where = tenant_filter(scope(A, "alice"), durable=True, shared_sources=SHARED_SOURCES)
    with pytest.raises(NotFound):
        await get_item(stores.items, where, ids["agent knowledge"])
    with pytest.raises(NotFound):
        await delete_item(stores.items, where, ids["agent knowledge"], hard=True, at=T0)
    assert await stores.memory.exists(ids["agent knowledge"])


@pytest.mark.integration
async def test_the_mongo_and_atlas_filters_agree_with_admits_on_the_server(
    stack: Any, unique: Callable[[str], str]
) -> None:
    """`tenant_query` and the Atlas pre-filter (run as a `$match`) select on the server what
    `TenantFilter.admits` selects in process, for plain and widened filters alike."""
    async with mongo_database(stack, unique("db")) as db:
        await ensure_schema(db)
        stores = Stores(MongoMemoryStore(db), MongoItemStore(db))
        await seeded(stores)
        every = [d async for d in db[MEMORY].find({})]
        readers = [scope(A, "alice"), scope(A, "bob"), scope(A), scope(B, "alice")]
        for reader in readers:
            for widen in ((), SHARED_SOURCES):
                where = tenant_filter(reader, durable=True, shared_sources=widen)
                wanted = {
                    d["_id"]
                    for d in every
                    if where.admits(
                        ScopeFields(d["agentWallet"], d.get("userAddress"), None, None, None),
                        d["source"],
                    )
                }
                mql = {d["_id"] async for d in db[MEMORY].find(tenant_query(where))}
                atlas = atlas_prefilter(where, sources=None)
                matched = {d["_id"] async for d in db[MEMORY].find(atlas)}
                assert mql == matched == wanted, (reader, widen)
