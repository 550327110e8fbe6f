"""`RelationStore` contract over the in-memory and the MongoDB adapters (issue 32): the
fact writer stores a link's sentence with it, typed and untyped links side by side, and a
node with more links than one read returns keeps its newest."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

import pytest

from engine.adapters.memory import HashingEmbedder, InMemoryMemoryStore, InMemoryRelationStore
from engine.adapters.mongo import MongoMemoryStore, ensure_schema
from engine.adapters.mongo.relations import AROUND_LIMIT, MongoRelationStore
from engine.ingest.facts import FactWriter, entity_id
from engine.ports import MemoryStore, RelationStore
from engine.records import RelationRecord, ScopeFields
from engine.scoping import TenantFilter
from schemas.events import EntityItem, FactsExtracted, RelationItem
from schemas.scope import Scope
from tests.support.mongo import IMPLEMENTATIONS, mongo_database

AT = datetime(2025, 5, 1, tzinfo=UTC)
SCOPE = Scope.parse({"agentWallet": "0xRel", "userAddress": "u1", "threadId": "t1"})
WHERE = TenantFilter(agent_wallet="0xRel", user_address="u1")
FIELDS = ScopeFields("0xRel", "u1", None, None, None)


@pytest.fixture(params=IMPLEMENTATIONS)
async def stores(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[tuple[MemoryStore, RelationStore]]:
    if request.param == "memory":
        yield InMemoryMemoryStore(), InMemoryRelationStore()
        return
    async with mongo_database(request.getfixturevalue("stack"), unique("db")) as db:
        await ensure_schema(db)
        yield MongoMemoryStore(db), MongoRelationStore(db)


async def test_links_are_stored_with_their_sentence_beside_typed_relations(
    stores: tuple[MemoryStore, RelationStore],
) -> None:
    memory, relations = stores
    employed = "These days I'm employed by Initech as an analyst."
    event = FactsExtracted(
        occurred_at=AT,
        scope=SCOPE,
        turn_id="turn-1",
        session_id="s1",
        extractor="rules-v1",
        entities=[EntityItem(name="Initech", type="organisation", summary=employed)],
        relations=[
            RelationItem(source="user", type="MENTIONS", target="Initech", evidence=employed),
            RelationItem(source="user", type="LIKES", target="Initech"),
        ],
    )
    stored = await FactWriter(memory, relations, HashingEmbedder(32)).store(event)
    assert stored.relations_inserted == 2
    found = await relations.around(WHERE, [entity_id(FIELDS, "Initech")])
    by_type = {r.type: r for r in found}
    assert by_type["MENTIONS"].metadata["evidence"] == employed
    assert "evidence" not in by_type["LIKES"].metadata  # none given, none stored


async def test_a_node_past_one_reads_limit_keeps_its_newest_links(
    stack: object, unique: Callable[[str], str]
) -> None:
    """MongoDB only: the in-memory store has no limit."""
    async with mongo_database(stack, unique("db")) as db:  # type: ignore[arg-type]
        await ensure_schema(db)
        store = MongoRelationStore(db)
        user = entity_id(FIELDS, "user")
        start = AT - timedelta(days=AROUND_LIMIT + 1)
        for i in range(AROUND_LIMIT + 1):
            target = entity_id(FIELDS, f"Name {i}")
            await store.insert_if_absent(
                RelationRecord(
                    relation_id=f"rel_{i}",
                    scope=FIELDS,
                    source_id=user,
                    source_name="user",
                    type="MENTIONS",
                    target_id=target,
                    target_name=f"Name {i}",
                    created_at=int((start + timedelta(days=i)).timestamp() * 1000),
                )
            )
        found = await store.around(WHERE, [user])
    assert len(found) == AROUND_LIMIT
    assert found[-1].target_name == f"Name {AROUND_LIMIT}"  # the newest is kept
    assert found[0].target_name == "Name 1"  # the oldest is dropped; oldest first
    assert [r.created_at for r in found] == sorted(r.created_at for r in found)
