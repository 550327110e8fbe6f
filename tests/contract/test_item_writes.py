"""Many item writes at once (`engine.upkeep.item_writes`, issue 30) on both implementations
of `BulkItemStore` (in memory and MongoDB): puts create, update and revive, deletes and
patches touch visible rows only, the last write of a row wins, tenants stay apart. The Mongo
cases are `integration` (unique db per test)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from engine.adapters.memory import HashingEmbedder
from engine.adapters.memory.history import InMemoryItemHistory
from engine.adapters.memory.items import InMemoryItemStore
from engine.adapters.mongo import ensure_schema
from engine.adapters.mongo.items import MongoItemStore
from engine.errors import InputRejected
from engine.history import Ledger
from engine.records import Cause, ScopeFields
from engine.scoping import TenantFilter
from engine.upkeep.item_writes import BulkItemStore, Write, write_items
from tests.support.mongo import IMPLEMENTATIONS, mongo_database

T0 = 1_600_000_000_000
AGENT = "0xAgentW"
MINE = TenantFilter(AGENT, "u1")
THEIRS = TenantFilter(AGENT, "u2")
MY_FIELDS = ScopeFields(AGENT, "u1", None, None, None)
THEIR_FIELDS = ScopeFields(AGENT, "u2", None, None, None)


@pytest.fixture(params=IMPLEMENTATIONS)
async def store(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[BulkItemStore]:
    if request.param == "memory":
        yield InMemoryItemStore()
        return
    async with mongo_database(request.getfixturevalue("stack"), unique("db")) as db:
        await ensure_schema(db)
        yield MongoItemStore(db)


def put(vector_id: str, content: str, **metadata: object) -> Write:
    return Write(vector_id, "put", content, {"doc": metadata or {"k": 1}}, "langgraph")


async def apply(
    store: BulkItemStore, writes: list[Write], at: int, where: TenantFilter = MINE
) -> None:
    fields = MY_FIELDS if where is MINE else THEIR_FIELDS
    await write_items(store, HashingEmbedder(16), where, fields, writes, at=at)


async def test_a_put_creates_then_updates_a_fact_row_keeping_its_creation_time(
    store: BulkItemStore,
) -> None:
    await apply(store, [put("fact_a", "first text", v=1), put("fact_b", "other")], T0)
    await apply(store, [put("fact_a", "second text", v=2)], T0 + 5)

    rows = {r.vector_id: r for r in await store.read_rows(MINE, ["fact_a", "fact_b", "x"])}
    assert sorted(rows) == ["fact_a", "fact_b"]
    a = rows["fact_a"]
    assert a.content == "second text"
    assert a.metadata["doc"] == {"v": 2}
    assert a.metadata["type"] == "langgraph"
    assert a.status == "active"
    assert a.source == "fact"
    assert a.created_at == T0  # an update keeps it
    [vector] = await HashingEmbedder(16).embed(["second text"], "document")
    assert a.embedding.tolist() == pytest.approx(vector.tolist())  # re-embedded


async def test_a_delete_then_a_put_revives_the_row_as_new_and_the_last_write_wins(
    store: BulkItemStore,
) -> None:
    await apply(store, [put("fact_a", "text"), put("fact_b", "text b")], T0)
    await apply(store, [Write("fact_a", "delete"), Write("fact_b", "delete")], T0 + 1)
    [a] = await store.read_rows(MINE, ["fact_a"])
    assert a.status == "deleted"

    await apply(store, [put("fact_a", "back", v=3)], T0 + 2)

    rows = {r.vector_id: r for r in await store.read_rows(MINE, ["fact_a", "fact_b"])}
    assert rows["fact_a"].status == "active"
    assert rows["fact_a"].content == "back"
    assert rows["fact_a"].created_at == T0 + 2  # created anew
    assert "deletedAt" not in rows["fact_a"].metadata
    assert rows["fact_b"].status == "deleted"


async def test_patches_and_deletes_touch_visible_rows_only(store: BulkItemStore) -> None:
    await apply(store, [put("fact_a", "text")], T0)
    await apply(store, [Write("fact_a", "delete")], T0 + 1)

    await apply(
        store,
        [Write("fact_a", "patch", metadata={"ttl": 5}), Write("fact_missing", "delete")],
        T0 + 2,
    )

    [a] = await store.read_rows(MINE, ["fact_a", "fact_missing"])
    assert a.status == "deleted"
    assert "ttl" not in a.metadata


async def test_another_tenants_row_is_never_read_or_written(store: BulkItemStore) -> None:
    await apply(store, [put("fact_t", "theirs", owner="u2")], T0, THEIRS)

    await apply(store, [put("fact_t", "mine")], T0 + 1)  # an id of another tenant: left alone
    await apply(store, [Write("fact_t", "patch", metadata={"x": 1})], T0 + 2)

    assert await store.read_rows(MINE, ["fact_t"]) == []
    [theirs] = await store.read_rows(THEIRS, ["fact_t"])
    assert theirs.content == "theirs"
    assert theirs.metadata["doc"] == {"owner": "u2"}
    assert theirs.status == "active"


async def test_a_bad_write_is_refused_before_anything_is_written(store: BulkItemStore) -> None:
    with pytest.raises(InputRejected):
        await apply(store, [put("fact_a", "fine"), Write("fact_b", "put", "  ")], T0)
    with pytest.raises(InputRejected):
        await apply(
            store, [put("fact_a", "fine"), Write("fact_c", "patch", metadata={"a.b": 1})], T0
        )
    assert await store.read_rows(MINE, ["fact_a", "fact_b", "fact_c"]) == []


async def test_puts_and_deletes_are_kept_in_the_item_history(store: BulkItemStore) -> None:
    history = InMemoryItemHistory()
    ledger = Ledger(history, Cause("request", "r1", "item.write", "tester"))
    embedder = HashingEmbedder(16)
    await write_items(store, embedder, MINE, MY_FIELDS, [put("fact_a", "a")], at=T0, ledger=ledger)
    await write_items(
        store, embedder, MINE, MY_FIELDS, [put("fact_a", "a2")], at=T0 + 1, ledger=ledger
    )
    await write_items(
        store, embedder, MINE, MY_FIELDS, [Write("fact_a", "delete")], at=T0 + 2, ledger=ledger
    )
    await write_items(
        store, embedder, MINE, MY_FIELDS, [put("fact_a", "a3")], at=T0 + 3, ledger=ledger
    )

    changes = await history.of_item(MINE, "fact_a", limit=10)
    assert [c.kind for c in changes] == ["created", "updated", "deleted", "restored"]
