"""Forgetting an item forgets what the graph read from it (issue 32, `engine.derivation`,
`engine.upkeep.derived`): one suite over the in-memory stores and the MongoDB-wire server.

Every entity row and relation the fact writer stores records the memory item it was read
from with that item's words; detaching an item removes its evidence everywhere, removes the
rows it leaves bare and makes the others show what remains."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from engine.adapters.memory import (
    HashingEmbedder,
    InMemoryItemHistory,
    InMemoryItemStore,
    InMemoryRelationStore,
)
from engine.adapters.memory.graph_sources import InMemoryGraphSources
from engine.adapters.mongo import MongoItemHistory, MongoMemoryStore, ensure_schema
from engine.adapters.mongo.graph_sources import MongoGraphSources
from engine.adapters.mongo.relations import MongoRelationStore
from engine.derivation import DERIVED_FROM, MAX_EVIDENCE, GraphSources, evidence_of
from engine.history import Ledger
from engine.ingest.facts import FactWriter, entity_id
from engine.ports import ItemHistory, MemoryStore, RelationStore
from engine.records import Cause, MemoryRow, RelationRecord, ScopeFields
from engine.scoping import TenantFilter
from engine.upkeep.derived import DerivedForgotten, forget_derived
from schemas.events import EntityItem, FactsExtracted, RelationItem
from schemas.ids import to_ms
from schemas.scope import Scope
from tests.support.mongo import IMPLEMENTATIONS, mongo_database

T0 = datetime(2025, 5, 1, tzinfo=UTC)
SCOPE = Scope.parse({"agentWallet": "0xDer", "userAddress": "u1", "threadId": "t1"})
WHERE = TenantFilter(agent_wallet="0xDer", user_address="u1")
FIELDS = ScopeFields("0xDer", "u1", None, None, None)
OTHER = TenantFilter(agent_wallet="0xDer", user_address="u2")
CAUSE = Cause("request", "req-1", "item.delete", "tester")

EMPLOYED = "These days I'm employed by Initech as an analyst."
OFFICE = "Initech's head office sits in Austin, Texas."
SAID_AGAIN = "Initech pays well, and I like working there."


@dataclass
class Graph:
    memory: MemoryStore
    relations: RelationStore
    sources: GraphSources
    history: ItemHistory

    def writer(self) -> FactWriter:
        return FactWriter(
            self.memory, self.relations, HashingEmbedder(32), None, self.history, self.sources
        )

    async def forget(self, *items: str, where: TenantFilter = WHERE) -> DerivedForgotten:
        ledger = Ledger(self.history, CAUSE)
        at = to_ms(T0 + timedelta(days=30))
        embedder = HashingEmbedder(32)
        return await forget_derived(
            self.sources, self.relations, embedder, where, list(items), at=at, ledger=ledger
        )


@pytest.fixture(params=IMPLEMENTATIONS)
async def graph(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[Graph]:
    if request.param == "memory":
        memory, relations = InMemoryItemStore(), InMemoryRelationStore()
        sources = InMemoryGraphSources(memory, relations)
        yield Graph(memory, relations, sources, InMemoryItemHistory())
        return
    async with mongo_database(request.getfixturevalue("stack"), unique("db")) as db:
        await ensure_schema(db)
        yield Graph(
            MongoMemoryStore(db),
            MongoRelationStore(db),
            MongoGraphSources(db),
            MongoItemHistory(db),
        )


def extracted(
    day: int, entities: list[EntityItem], relations: list[RelationItem], turn: str
) -> FactsExtracted:
    return FactsExtracted(
        occurred_at=T0 + timedelta(days=day),
        scope=SCOPE,
        turn_id=turn,
        session_id="remember",
        extractor="rules-v1",
        entities=entities,
        relations=relations,
    )


def employed(day: int = 0) -> FactsExtracted:
    return extracted(
        day,
        [EntityItem(name="Initech", type="organisation", summary=EMPLOYED)],
        [RelationItem(source="user", type="MENTIONS", target="Initech", evidence=EMPLOYED)],
        "remember:e1",
    )


def office(day: int = 1) -> FactsExtracted:
    return extracted(
        day,
        [
            EntityItem(name="Initech", type="organisation", summary=OFFICE),
            EntityItem(name="Austin", type="place", summary=OFFICE),
        ],
        [RelationItem(source="Initech", type="RELATED", target="Austin", evidence=OFFICE)],
        "remember:e2",
    )


async def entity(g: Graph, name: str) -> MemoryRow | None:
    rows = await g.memory.active_rows(WHERE)
    return next((r for r in rows if r.vector_id == entity_id(FIELDS, name)), None)


async def relations_of(g: Graph, name: str) -> list[RelationRecord]:
    return await g.relations.around(WHERE, [entity_id(FIELDS, name)])


async def test_every_graph_row_records_the_items_it_was_read_from(graph: Graph) -> None:
    writer = graph.writer()
    await writer.store(employed(), "fact_employed")
    await writer.store(office(), "fact_office")
    await writer.store(office(), "fact_office")  # redelivered: nothing recorded twice

    initech = await entity(graph, "Initech")
    assert initech is not None
    assert initech.metadata[DERIVED_FROM] == ["fact_employed", "fact_office"]
    assert [(e.item, e.text) for e in evidence_of(initech.metadata)] == [
        ("fact_employed", EMPLOYED),
        ("fact_office", OFFICE),
    ]
    assert initech.content == f"Initech (organisation): {EMPLOYED}"  # the oldest shows
    by_type = {r.type: r for r in await relations_of(graph, "Initech")}
    assert by_type["RELATED"].metadata[DERIVED_FROM] == ["fact_office"]
    assert by_type["MENTIONS"].metadata[DERIVED_FROM] == ["fact_employed"]


async def test_a_turns_extraction_is_read_from_its_turn_row(graph: Graph) -> None:
    from engine.records import turn_row_id

    await graph.writer().store(employed())  # no source given: the turn's turn row
    initech = await entity(graph, "Initech")
    assert initech is not None
    turn_row = turn_row_id("0xDer", "remember", "remember:e1")
    assert initech.metadata[DERIVED_FROM] == [turn_row]


async def test_forgetting_an_item_removes_its_words_and_the_rows_it_alone_made(
    graph: Graph,
) -> None:
    writer = graph.writer()
    await writer.store(employed(), "fact_employed")
    await writer.store(office(), "fact_office")

    done = await graph.forget("fact_office")

    assert await entity(graph, "Austin") is None  # read from the forgotten fact alone
    initech = await entity(graph, "Initech")
    assert initech is not None
    assert "head office" not in initech.content
    assert initech.metadata[DERIVED_FROM] == ["fact_employed"]
    links = await relations_of(graph, "Initech")
    assert [(r.type, r.metadata.get("evidence")) for r in links] == [("MENTIONS", EMPLOYED)]
    assert all("Austin" not in str(r.metadata) for r in links)
    assert await relations_of(graph, "Austin") == []
    # the removed entity is purged in the item history, and its words go from it
    austin_id = entity_id(FIELDS, "Austin")
    changes = await graph.history.of_item(WHERE, austin_id, 10)
    assert [c.kind for c in changes][-1] == "purged"
    assert all(OFFICE not in str((c.old_content, c.new_content, c.details)) for c in changes)
    assert done.entities_removed == [austin_id]


async def test_a_row_shows_what_its_remaining_evidence_says(graph: Graph) -> None:
    writer = graph.writer()
    await writer.store(employed(day=0), "fact_employed")
    await writer.store(office(day=1), "fact_office")
    again = extracted(
        2,
        [EntityItem(name="Initech", type="organisation", summary=SAID_AGAIN)],
        [RelationItem(source="user", type="MENTIONS", target="Initech", evidence=SAID_AGAIN)],
        "remember:e3",
    )
    await writer.store(again, "fact_again")
    before = await entity(graph, "Initech")
    assert before is not None

    await graph.forget("fact_employed")

    initech = await entity(graph, "Initech")
    assert initech is not None
    assert initech.content == f"Initech (organisation): {OFFICE}"  # the oldest remaining
    assert not np.array_equal(initech.embedding, before.embedding)  # re-embedded
    [mention] = [r for r in await relations_of(graph, "Initech") if r.type == "MENTIONS"]
    assert mention.metadata["evidence"] == SAID_AGAIN
    assert mention.created_at == to_ms(T0 + timedelta(days=2))
    # its history no longer says the forgotten words; the change is recorded
    changes = await graph.history.of_item(WHERE, initech.vector_id, 10)
    assert changes[-1].kind == "updated"
    assert all(EMPLOYED not in str((c.old_content, c.new_content)) for c in changes)


async def test_a_single_valued_link_it_had_replaced_is_current_again(graph: Graph) -> None:
    writer = graph.writer()
    porto = RelationItem(
        source="user", type="LIVES_IN", target="Porto", evidence="I live in Porto."
    )
    lisbon = RelationItem(
        source="user", type="LIVES_IN", target="Lisbon", evidence="I live in Lisbon now."
    )
    place = [EntityItem(name="Porto", type="place")]
    await writer.store(extracted(0, place, [porto], "remember:p"), "fact_porto")
    await writer.store(
        extracted(1, [EntityItem(name="Lisbon", type="place")], [lisbon], "remember:l"),
        "fact_lisbon",
    )
    user = entity_id(FIELDS, "user")
    current = [
        r.target_name for r in await graph.relations.around(WHERE, [user]) if r.valid_at(None)
    ]
    assert current == ["Lisbon"]

    await graph.forget("fact_lisbon")

    links = await graph.relations.around(WHERE, [user])
    assert [(r.target_name, r.valid_at(None)) for r in links] == [("Porto", True)]


async def test_another_tenant_and_rows_without_evidence_are_left_alone(graph: Graph) -> None:
    writer = graph.writer()
    await writer.store(employed(), "fact_employed")
    legacy = MemoryRow(
        entity_id(FIELDS, "Legacy"),
        FIELDS,
        "Legacy (thing): written before evidence",
        np.ones(32, dtype=np.float32) / np.sqrt(32),
        "m",
        "entity",
        to_ms(T0),
        {"layer": "graph", "name": "Legacy"},
    )
    assert await graph.memory.insert_if_absent(legacy)

    named_again = extracted(
        1,
        [EntityItem(name="Legacy", type="thing", summary="Legacy again, said later.")],
        [],
        "remember:e9",
    )
    await writer.store(named_again, "fact_later")  # a later item does not adopt it
    await graph.forget("fact_later")
    kept = await entity(graph, "Legacy")
    assert kept is not None
    assert kept.content == legacy.content
    assert DERIVED_FROM not in kept.metadata

    await graph.forget("fact_employed", where=OTHER)  # not this tenant's: nothing happens
    assert await entity(graph, "Initech") is not None

    await graph.forget("fact_employed")
    assert await entity(graph, "Initech") is None
    assert await entity(graph, "Legacy") is not None  # no evidence recorded: kept as it was


async def test_a_row_records_at_most_max_evidence_items(graph: Graph) -> None:
    """A name said again and again does not grow its row without bound: the first
    `MAX_EVIDENCE` items are recorded; forgetting an unrecorded one changes nothing shown,
    forgetting every recorded one removes the row."""
    writer = graph.writer()
    items = [f"fact_{n:02}" for n in range(MAX_EVIDENCE + 3)]
    for n, item in enumerate(items):
        said = f"Initech came up again, time {n}."
        again = extracted(
            n,
            [EntityItem(name="Initech", type="organisation", summary=said)],
            [RelationItem(source="user", type="MENTIONS", target="Initech", evidence=said)],
            f"remember:m{n}",
        )
        await writer.store(again, item)

    initech = await entity(graph, "Initech")
    assert initech is not None
    assert initech.metadata[DERIVED_FROM] == items[:MAX_EVIDENCE]
    assert len(evidence_of(initech.metadata)) == MAX_EVIDENCE
    [link] = await relations_of(graph, "Initech")
    assert link.metadata[DERIVED_FROM] == items[:MAX_EVIDENCE]

    await graph.forget(items[-1])  # never recorded: nothing it said is shown
    still = await entity(graph, "Initech")
    assert still is not None
    assert still.content == initech.content
    await graph.forget(*items[:MAX_EVIDENCE])
    assert await entity(graph, "Initech") is None
