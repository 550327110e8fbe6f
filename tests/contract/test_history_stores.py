"""One suite, two implementations of `ItemHistory` (in-memory and MongoDB), with the item
stores beside them, driven through the engine's functions that change items (remember,
update, delete, restore, conflicts, slot resolution, consolidation, cleanup). The Mongo cases
are `integration` (unique database per test)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pytest
from pymongo import AsyncMongoClient

from engine.adapters.memory import (
    HashingEmbedder,
    InMemoryItemHistory,
    InMemoryItemStore,
    InMemoryMaintenanceStore,
    InMemoryRelationStore,
)
from engine.adapters.mongo import (
    MongoItemHistory,
    MongoItemStore,
    MongoMaintenanceStore,
    MongoMemoryStore,
    MongoRelationStore,
    ensure_schema,
)
from engine.errors import InputRejected, NotFound
from engine.history import Ledger, change, item_history
from engine.ingest.facts import FactWriter
from engine.ingest.remember import Rememberer
from engine.ports import ItemHistory, MemoryStore, RelationStore
from engine.records import Cause, ItemChange, MemoryRow, ScopeFields
from engine.scoping import TenantFilter
from engine.upkeep import maintenance
from engine.upkeep.conflicts import resolve_conflict
from engine.upkeep.items import ItemStore, delete_item, get_item, restore_item, update_item
from engine.upkeep.maintenance import MaintenanceStore
from schemas.events import FactItem, FactsExtracted, MemoryRemembered
from schemas.scope import Scope

T0 = 1_700_000_000_000
AGENT, USER = "0xHistAgent", "ann"
ROW_SCOPE = ScopeFields(AGENT, USER, None, None, None)
MINE = TenantFilter(AGENT, USER)
REQUEST = Cause("request", "corr-1", "item.update", "jwt:ops")

IMPLEMENTATIONS = [
    pytest.param("memory", id="memory"),
    pytest.param("mongo", id="mongo", marks=pytest.mark.integration),
]


@dataclass
class Stores:
    history: ItemHistory
    items: ItemStore
    memory: MemoryStore
    relations: RelationStore
    maintenance: MaintenanceStore


@pytest.fixture(params=IMPLEMENTATIONS)
async def stores(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[Stores]:
    if request.param == "memory":
        rows = InMemoryItemStore()
        yield Stores(
            InMemoryItemHistory(),
            rows,
            rows,
            InMemoryRelationStore(),
            InMemoryMaintenanceStore(rows),
        )
        return
    stack = request.getfixturevalue("stack")
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        stack.mongo_uri, serverSelectionTimeoutMS=10_000
    )
    name = unique("hist")
    try:
        db = client[name]
        await ensure_schema(db)
        yield Stores(
            MongoItemHistory(db),
            MongoItemStore(db),
            MongoMemoryStore(db),
            MongoRelationStore(db),
            MongoMaintenanceStore(db),
        )
    finally:
        await client.drop_database(name)
        await client.close()


def entry(
    item_id: str, kind: str, at: int, scope: ScopeFields = ROW_SCOPE, **kw: Any
) -> ItemChange:
    return change(item_id, scope, kind, REQUEST, at, **kw)


async def test_changes_round_trip_oldest_first_and_are_kept_once(stores: Stores) -> None:
    created = entry("m1", "created", T0, new="Ann lives in Lisbon.", details={"source": "fact"})
    updated = entry(
        "m1",
        "updated",
        T0 + 5,
        old="Ann lives in Lisbon.",
        new="Ann lives in Porto.",
        details={"set": {"tags": ["a", "b"]}, "previous": {"tags": None}},
    )
    other = entry("m2", "created", T0 + 1, new="Another item.")
    await stores.history.record([updated, other])
    await stores.history.record([created, updated])  # `updated` again: kept once
    assert await stores.history.of_item(MINE, "m1", 10) == [created, updated]
    assert await stores.history.of_item(MINE, "m2", 10) == [other]
    assert await stores.history.of_item(MINE, "m3", 10) == []


async def test_the_newest_entries_come_back_in_order_ties_in_recording_order(
    stores: Stores,
) -> None:
    first = entry("m1", "deleted", T0 + 2)
    second = entry("m1", "restored", T0 + 2)  # the same millisecond: recorded after
    for kind, at in (("created", T0), ("updated", T0 + 1)):
        await stores.history.record([entry("m1", kind, at)])
    await stores.history.record([first])
    await stores.history.record([second])
    kinds = [c.kind for c in await stores.history.of_item(MINE, "m1", 10)]
    assert kinds == ["created", "updated", "deleted", "restored"]
    newest = await stores.history.of_item(MINE, "m1", 2)
    assert newest == [first, second]


@pytest.mark.parametrize(
    "where",
    [
        TenantFilter(AGENT, "bob"),  # another user of the agent
        TenantFilter(AGENT, None),  # the agent's own user-less items only
        TenantFilter("0xOtherAgent", USER),  # another agent with the same user id
        TenantFilter(AGENT, USER, mode="local"),
        TenantFilter(AGENT, USER, hai_id="hai-9"),
    ],
)
async def test_another_tenant_reads_no_change(stores: Stores, where: TenantFilter) -> None:
    mine = entry("m1", "created", T0, new="Ann's secret.")
    await stores.history.record([mine])
    assert await stores.history.of_item(where, "m1", 10) == []
    with pytest.raises(NotFound):
        await item_history(stores.history, None, where, "m1")


async def test_a_shared_filter_still_reads_only_the_items_own_tenant(stores: Stores) -> None:
    agent_level = entry("k1", "created", T0, scope=ScopeFields(AGENT, None, None, None, None))
    await stores.history.record([agent_level])
    shared = TenantFilter(AGENT, USER, shared=True, shared_sources=("knowledge",))
    assert await stores.history.of_item(shared, "k1", 10) == []
    assert await stores.history.of_item(TenantFilter(AGENT, None), "k1", 10) == [agent_level]


def remembered(text: str, at: int) -> MemoryRemembered:
    scope = Scope.parse({"agentWallet": AGENT, "userAddress": USER})
    moment = datetime.fromtimestamp(at / 1000, UTC)
    return MemoryRemembered(occurred_at=moment, scope=scope, content=text)


async def test_remember_update_delete_restore_is_the_items_history(stores: Stores) -> None:
    embedder = HashingEmbedder(32)
    event = remembered("Ann's locker is 41.", T0)
    stored = await Rememberer(stores.memory, embedder, stores.history).remember(event)
    item = stored.vector_id

    def ledger(op: str, actor: str = "jwt:ops") -> Ledger:
        return Ledger(stores.history, Cause("request", f"corr-{op}", f"item.{op}", actor))

    await update_item(
        stores.items,
        embedder,
        MINE,
        item,
        content="Ann's locker is 42.",
        metadata={"note": "moved"},
        at=T0 + 10,
        ledger=ledger("update"),
    )
    await delete_item(stores.items, MINE, item, at=T0 + 20, ledger=ledger("delete"))
    restored = await restore_item(stores.items, MINE, item, at=T0 + 30, ledger=ledger("restore"))
    assert restored.status == "active"
    assert "restoredAt" in restored.metadata
    assert 0 < restored.decay_score <= 1

    view = await item_history(stores.history, await get_item(stores.items, MINE, item), MINE, item)
    assert [(c.kind, c.at) for c in view.changes] == [
        ("created", T0),
        ("updated", T0 + 10),
        ("deleted", T0 + 20),
        ("restored", T0 + 30),
    ]
    created, updated, deleted, back = view.changes
    assert (created.cause.kind, created.cause.id, created.cause.name) == (
        "event",
        event.event_id,
        "MemoryRemembered",
    )
    assert created.cause.actor == "agent"
    assert created.new_content == "Ann's locker is 41."
    assert (updated.old_content, updated.new_content) == (
        "Ann's locker is 41.",
        "Ann's locker is 42.",
    )
    assert updated.details["set"] == {"note": "moved"}
    assert updated.details["previous"] == {"note": None}
    assert [c.cause.name for c in (updated, deleted, back)] == [
        "item.update",
        "item.delete",
        "item.restore",
    ]
    assert {c.cause.actor for c in (updated, deleted, back)} == {"jwt:ops"}
    assert view.item is not None
    assert view.item.content == "Ann's locker is 42."


async def test_a_purged_item_keeps_its_history_but_not_its_words(stores: Stores) -> None:
    embedder = HashingEmbedder(32)
    stored = await Rememberer(stores.memory, embedder, stores.history).remember(
        remembered("Ann's PIN hint is the cat.", T0)
    )
    item = stored.vector_id
    edit = Ledger(stores.history, Cause("request", "corr-u", "item.update", "jwt:ops"))
    await update_item(
        stores.items,
        embedder,
        MINE,
        item,
        content="Ann's PIN hint is the dog.",
        metadata={"why": "Ann said so"},
        at=T0 + 2,
        ledger=edit,
    )
    purge = Ledger(stores.history, Cause("request", "corr-p", "item.delete", "operator_key"))
    await delete_item(stores.items, MINE, item, hard=True, at=T0 + 5, ledger=purge)
    with pytest.raises(NotFound):
        await restore_item(stores.items, MINE, item, at=T0 + 6)
    view = await item_history(stores.history, None, MINE, item)
    assert view.item is None
    assert [(c.kind, c.at, c.cause.name) for c in view.changes] == [
        ("created", T0, "MemoryRemembered"),
        ("updated", T0 + 2, "item.update"),
        ("purged", T0 + 5, "item.delete"),
    ]
    said = repr([(c.old_content, c.new_content, c.details) for c in view.changes])
    assert "PIN" not in said
    assert "Ann said so" not in said
    assert [c.details.get("forgotten") for c in view.changes] == [True, True, True]
    assert view.changes[0].details["source"] == "fact"  # what is not spoken stays


async def test_forgetting_is_confined_to_the_tenant(stores: Stores) -> None:
    other = ScopeFields(AGENT, "bob", None, None, None)
    await stores.history.record(
        [
            entry("m1", "created", T0, new="Ann's words."),
            entry("m1", "created", T0, scope=other, new="Bob's words."),
        ]
    )
    assert await stores.history.forget(TenantFilter(AGENT, "bob"), ["m1"]) == 1
    [mine] = await stores.history.of_item(MINE, "m1", 10)
    assert mine.new_content == "Ann's words."
    [bobs] = await stores.history.of_item(TenantFilter(AGENT, "bob"), "m1", 10)
    assert (bobs.new_content, bobs.details) == (None, {"forgotten": True})


async def test_restore_refuses_a_visible_item_and_keeps_a_replaced_one_replaced(
    stores: Stores,
) -> None:
    embedder = HashingEmbedder(32)
    writer = Rememberer(stores.memory, embedder, stores.history)
    loser = (await writer.remember(remembered("Ann drinks tea.", T0))).vector_id
    winner = (await writer.remember(remembered("Ann drinks coffee.", T0 + 1))).vector_id
    with pytest.raises(InputRejected, match="not deleted"):
        await restore_item(stores.items, MINE, loser, at=T0 + 2)
    ledger = Ledger(stores.history, Cause("request", "corr-r", "item.resolve", "jwt:ops"))
    await resolve_conflict(
        stores.items,
        embedder,
        MINE,
        loser,
        resolution="supersede",
        winning_id=winner,
        reason="newer",
        at=T0 + 3,
        ledger=ledger,
    )
    await delete_item(stores.items, MINE, loser, at=T0 + 4)
    back = await restore_item(stores.items, MINE, loser, at=T0 + 5)
    assert (back.status, back.invalid_at, back.superseded_by) == ("superseded", T0 + 3, winner)
    [_, superseded] = await stores.history.of_item(MINE, loser, 10)
    assert superseded.kind == "superseded"
    assert superseded.details == {
        "validFrom": T0,
        "invalidAt": T0 + 3,
        "supersededBy": winner,
        "resolution": "supersede",
        "reason": "newer",
    }


def extracted(text: str, at: int, turn: str) -> FactsExtracted:
    scope = Scope.parse({"agentWallet": AGENT, "userAddress": USER})
    return FactsExtracted(
        occurred_at=datetime.fromtimestamp(at / 1000, UTC),
        scope=scope,
        turn_id=turn,
        session_id="s1",
        extractor="rules",
        facts=[FactItem(text=text, type="context", confidence=0.9, slot="residence")],
    )


async def test_a_replaced_fact_links_its_validity_to_its_successor(stores: Stores) -> None:
    writer = FactWriter(
        stores.memory, stores.relations, HashingEmbedder(32), history=stores.history
    )
    lisbon = extracted("Ann lives in Lisbon.", T0, "t1")
    porto = extracted("Ann lives in Porto.", T0 + 100, "t2")
    await writer.store(lisbon)
    await writer.store(porto)
    rows = {r.content: r for r in await stores.memory.slot_rows(MINE, "residence")}
    old, new = rows["Ann lives in Lisbon."], rows["Ann lives in Porto."]
    history = await stores.history.of_item(MINE, old.vector_id, 10)
    assert [(c.kind, c.cause.id) for c in history] == [
        ("created", lisbon.event_id),
        ("superseded", porto.event_id),
    ]
    assert history[0].cause.actor == "extractor:rules"
    assert history[1].details == {
        "validFrom": T0,
        "invalidAt": T0 + 100,
        "supersededBy": new.vector_id,
        "slot": "residence",
    }
    assert [c.kind for c in await stores.history.of_item(MINE, new.vector_id, 10)] == ["created"]
    await writer.store(porto)  # redelivered: nothing changes, nothing is recorded again
    assert len(await stores.history.of_item(MINE, old.vector_id, 10)) == 2


async def test_jobs_record_what_they_supersede_and_purge(stores: Stores) -> None:
    [vector] = await HashingEmbedder(32).embed(["Ann likes jazz."], "document")
    # d1 decayed below cleanup's floor (purged as such), d2 soft-deleted below (a tombstone)
    base = MemoryRow("d1", ROW_SCOPE, "Ann likes jazz.", vector, "m", "fact", T0, {})
    await stores.memory.insert_if_absent(replace(base, decay_score=0.05))
    await stores.memory.insert_if_absent(replace(base, vector_id="d2", created_at=T0 + 1))
    job = Ledger(stores.history, Cause("job", f"consolidate@{T0 + 50}", "consolidate", "job"))
    done = await maintenance.consolidate(
        stores.memory, stores.maintenance, AGENT, ledger=job, at=T0 + 50
    )
    assert done.superseded == 1
    [superseded] = await stores.history.of_item(MINE, "d1", 10)
    assert (superseded.kind, superseded.cause.name) == ("superseded", "consolidate")
    assert superseded.details["supersededBy"] == "d2"

    ops = Ledger(stores.history, Cause("request", "corr-u", "item.update", "operator_key"))
    await update_item(
        stores.items,
        HashingEmbedder(32),
        MINE,
        "d2",
        content="Ann likes jazz a lot.",
        at=T0 + 55,
        ledger=ops,
    )  # the history of d2 now says what was said
    said = [(c.old_content, c.new_content) for c in await stores.history.of_item(MINE, "d2", 9)]
    assert said == [("Ann likes jazz.", "Ann likes jazz a lot.")]
    await delete_item(stores.items, MINE, "d2", at=T0 + 60)
    cleanup = Ledger(stores.history, Cause("job", "cleanup@1", "cleanup", "job"))
    now = T0 + 200 * 86_400_000
    assert await maintenance.cleanup(stores.maintenance, now=now, ledger=cleanup) == 2
    purged = {
        c.item_id: c
        for item in ("d1", "d2")
        for c in await stores.history.of_item(MINE, item, 10)
        if c.kind == "purged"
    }
    assert set(purged) == {"d1", "d2"}
    assert {c.cause.id for c in purged.values()} == {"cleanup@1"}
    # issue 31: the purge keeps what happened and erases what was said, as a hard delete does
    kept = [c for item in ("d1", "d2") for c in await stores.history.of_item(MINE, item, 10)]
    assert [c.kind for c in kept] == ["superseded", "purged", "updated", "purged"]
    assert "jazz" not in repr([(c.old_content, c.new_content, c.details) for c in kept])


async def test_an_item_with_no_recorded_history_starts_with_its_row(stores: Stores) -> None:
    [vector] = await HashingEmbedder(32).embed(["user: hi"], "document")
    row = MemoryRow(
        "s_row", ROW_SCOPE, "user: hi", vector, "m", "session", T0, {"turnId": "turn-7"}
    )
    await stores.memory.insert_if_absent(row)
    view = await item_history(
        stores.history, await get_item(stores.items, MINE, "s_row"), MINE, "s_row"
    )
    [created] = view.changes
    assert (created.kind, created.at, created.new_content) == ("created", T0, "user: hi")
    assert (created.cause.id, created.details) == ("turn-7", {"derived": True})
