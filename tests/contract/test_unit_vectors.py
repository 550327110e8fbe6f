"""A turn row's message vectors (`MemoryRow.units`, issue 32) on both `MemoryStore`s: written
with the row, filled with a pending row's vector, read back as they were, and dropped when an
item update replaces the text they were computed from. The Mongo cases are `integration`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace

import numpy as np
import pytest

from engine.adapters.memory.items import InMemoryItemStore
from engine.adapters.mongo import MongoMemoryStore, ensure_schema
from engine.adapters.mongo.items import MongoItemStore
from engine.ports import MemoryStore
from engine.records import MemoryRow, ScopeFields
from engine.scoping import TenantFilter
from engine.upkeep.items import Embedded, ItemStore, RowPatch
from tests.support.mongo import IMPLEMENTATIONS, mongo_database

T0 = 1_600_000_000_000
DIM = 8
MODEL = "test-model-8"
SCOPE = ScopeFields("0xA", "U1", "T1", "global", None)
MINE = TenantFilter("0xA", "U1")
TURN = "user: Rosa: I cycle to work.\nassistant: Kim: Lovely route."


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


def vectors(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def turn_row(vector_id: str = "v1", *, pending: bool = False) -> MemoryRow:
    return MemoryRow(
        vector_id=vector_id,
        scope=SCOPE,
        content=TURN,
        embedding=np.zeros(0, dtype=np.float32) if pending else vectors(1, 1)[0],
        embedding_model=MODEL,
        source="session",
        created_at=T0,
        units=None if pending else vectors(2, 2),
    )


async def only_row(memory: MemoryStore) -> MemoryRow:
    [row] = await memory.active_rows(MINE)
    return row


async def test_a_turn_rows_message_vectors_round_trip(stores: Stores) -> None:
    written = turn_row()
    await stores.memory.insert_many_if_absent([written])
    row = await only_row(stores.memory)
    assert row.units is not None
    assert written.units is not None
    assert row.units.shape == (2, DIM)
    assert row.units.dtype == np.float32
    assert np.allclose(row.units, written.units)
    # a row without them reads back without them
    await stores.memory.insert_if_absent(replace(turn_row("v2"), units=None))
    rows = {r.vector_id: r for r in await stores.memory.active_rows(MINE)}
    assert rows["v2"].units is None


async def test_filling_a_pending_turn_gives_it_its_message_vectors(stores: Stores) -> None:
    await stores.memory.insert_many_if_absent(
        [turn_row(pending=True), turn_row("v2", pending=True)]
    )
    units = vectors(2, 3)
    filled = await stores.memory.fill_embeddings(
        MODEL, {"v1": vectors(1, 4)[0], "v2": vectors(1, 5)[0]}, {"v1": units}
    )
    assert filled == 2
    rows = {r.vector_id: r for r in await stores.memory.active_rows(MINE)}
    assert not rows["v1"].pending
    assert rows["v1"].units is not None
    assert np.allclose(rows["v1"].units, units)
    assert rows["v2"].units is None  # filled without them: a fact, or another producer
    # a filled row is not filled again, its units neither
    await stores.memory.fill_embeddings(MODEL, {"v1": vectors(1, 6)[0]}, {"v1": vectors(2, 7)})
    again = await only_row_of(stores.memory, "v1")
    assert again.units is not None
    assert np.allclose(again.units, units)


async def only_row_of(memory: MemoryStore, vector_id: str) -> MemoryRow:
    return {r.vector_id: r for r in await memory.active_rows(MINE)}[vector_id]


async def test_new_text_drops_the_message_vectors_of_the_old(stores: Stores) -> None:
    await stores.memory.insert_if_absent(turn_row())
    patch = RowPatch(at=T0 + 1, text=Embedded("user: Rosa: I drive now.", vectors(1, 8)[0], MODEL))
    updated = await stores.items.update(MINE, "v1", patch)
    assert updated is not None
    assert updated.units is None
    assert (await only_row(stores.memory)).units is None
    # a patch that keeps the text keeps them
    await stores.memory.insert_if_absent(turn_row("v2"))
    await stores.items.update(MINE, "v2", RowPatch(at=T0 + 2, metadata={"importance": 0.9}))
    assert (await only_row_of(stores.memory, "v2")).units is not None
