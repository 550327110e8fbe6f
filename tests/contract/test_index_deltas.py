"""The exact index kept up to date by deltas answers exactly as one loaded anew (issue 28).

One seeded sequence of writes, edits, soft and hard deletes, replaced facts, vector fills,
access bumps and erasures is interleaved with searches; after each write the tenant's version
moves (as the namespace token does), and every search of the long-lived index is compared
with a fresh index's answer on the same store: same rows, same order, same scores, same
outdated marks. Run on the in-memory store and on MongoDB (the contract suite's two
implementations); the margin is 0 on both, so a delta reads back only what was written since
the previous read, and the counts show that the long-lived index never loaded the tenant
again but after a hard delete or an erasure (the epoch)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from engine.adapters.memory import HashingEmbedder
from engine.adapters.memory.items import InMemoryItemStore
from engine.adapters.mongo import MongoMemoryStore, ensure_schema
from engine.adapters.mongo.changes import (
    CHANGED_AT,
    SLOW_WRITE_MS,
    epoch_fence,
    restamp_slow,
    stamp,
)
from engine.adapters.mongo.documents import vector
from engine.adapters.mongo.erasure import MongoUserEraser
from engine.adapters.mongo.items import MongoItemStore
from engine.adapters.mongo.schema import MEMORY
from engine.filters import parse_filters
from engine.ports import MemoryStore
from engine.records import MemoryRow, ScopeFields
from engine.retrieval.lexical import all_terms
from engine.retrieval.usage import AccessRecorder
from engine.retrieval.vector_index import ExactVectorIndex
from engine.scoping import TenantFilter
from engine.upkeep.items import Embedded, ItemStore, RowPatch
from tests.support.mongo import IMPLEMENTATIONS, mongo_database

T0 = 1_700_000_000_000
AGENT, USER, OTHER = "0xAgentD", "0xUserD", "0xUserE"
MODEL, DIM = "delta-model", 32
WORDS = [
    "lisbon",
    "porto",
    "pottery",
    "violin",
    "sister",
    "dentist",
    "berlin",
    "coffee",
    "hiking",
    "tea",
    "jazz",
    "rust",
]
SOURCES = ("fact", "session", "knowledge")


@dataclass
class Stores:
    memory: MemoryStore
    items: ItemStore
    erase: Callable[[str, str], Awaitable[Any]]


@pytest.fixture(params=IMPLEMENTATIONS)
async def stores(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[Stores]:
    if request.param == "memory":
        store = InMemoryItemStore()

        async def drop(agent: str, user: str) -> int:
            return store.drop_user(agent, user)

        yield Stores(store, store, drop)
        return
    async with mongo_database(request.getfixturevalue("stack"), unique("db")) as db:
        await ensure_schema(db)
        yield Stores(MongoMemoryStore(db), MongoItemStore(db), MongoUserEraser(db).erase_user)


class World:
    """The seeded sequence of operations, and what it has written so far."""

    def __init__(self, stores: Stores, seed: int) -> None:
        self.stores = stores
        self.rng = random.Random(seed)
        self.ids: list[str] = []
        self.n = 0
        self.access = AccessRecorder(stores.memory)
        """Counts accesses as the search process does: the store marks no change for
        them, so an index follows them through the recorder (`VectorIndex.accessed`)."""

    def text(self) -> str:
        return " ".join(self.rng.sample(WORDS, 3))

    async def vector(self, text: str) -> np.ndarray[Any, np.dtype[np.float32]]:
        return exact_vector(text)

    async def insert(self, count: int) -> None:
        rows = []
        for _ in range(count):
            self.n += 1
            text = self.text()
            user = OTHER if self.rng.random() < 0.15 else USER
            pending = self.rng.random() < 0.2
            vector = np.zeros(0, dtype=np.float32) if pending else await self.vector(text)
            source = self.rng.choice(SOURCES)
            metadata: dict[str, Any] = {"status": "active", "topic": self.rng.choice(WORDS)}
            if source == "fact" and self.rng.random() < 0.5:
                metadata |= {"sourceTurnId": f"turn{self.n % 7}", "sourceSessionId": "s1"}
            rows.append(
                MemoryRow(
                    f"row{self.n:04d}",
                    ScopeFields(AGENT, user, "t1", "global", None),
                    text,
                    vector,
                    MODEL,
                    source,
                    T0 + self.n * 1000,
                    metadata,
                )
            )
        inserted = await self.stores.memory.insert_many_if_absent(rows)
        self.ids.extend(sorted(inserted))

    async def step(self) -> str:
        """One random write; its name."""
        memory, items = self.stores.memory, self.stores.items
        if len(self.ids) < 5:
            await self.insert(5)
            return "insert"
        vid = self.rng.choice(self.ids)
        where = TenantFilter(AGENT, USER)
        op = self.rng.choice(
            ["insert", "insert", "fill", "edit", "soft", "hard", "supersede", "access", "slot"]
        )
        if op == "insert":
            await self.insert(self.rng.randint(1, 4))
        elif op == "fill":
            text = self.text()
            await memory.fill_embeddings(MODEL, {vid: await self.vector(text)})
        elif op == "edit":
            text = self.text()
            patch = RowPatch(at=T0, text=Embedded(text, await self.vector(text), MODEL))
            await items.update(where, vid, patch)
        elif op == "soft":
            await items.soft_delete(where, vid, T0 + 5)
        elif op == "hard":
            await items.hard_delete(where, vid)
            self.ids.remove(vid)
        elif op == "supersede":
            await memory.set_validity(vid, T0 + self.rng.randint(1, 400) * 1000, "someone")
        elif op == "access":
            self.access.note(self.rng.sample(self.ids, 3))
            await self.access.flush(T0 + 9)
        elif op == "slot":
            await memory.set_slot_if_absent(vid, where, self.rng.choice(WORDS))
        return op


def exact_vector(text: str) -> np.ndarray[Any, np.dtype[np.float32]]:
    """A vector whose dot products are exact in float32 whatever the summation order (a few
    entries of ±0.5): the fresh and the kept index then agree to the bit, ties included,
    where a model's vectors agree to the rounding of the matrix product's blocking."""
    v = np.zeros(DIM, dtype=np.float32)
    for word in text.split():
        at = WORDS.index(word) if word in WORDS else len(word)
        v[(at * 5) % DIM] += 0.5 if at % 3 else -0.5
        v[(at * 11 + 3) % DIM] += 0.5
    return v


def answer(found: list[tuple[MemoryRow, float | None]]) -> list[tuple[Any, ...]]:
    return [
        (
            r.vector_id,
            None if c is None else round(c, 5),
            r.content,
            r.status,
            r.access_count,
            r.metadata.get("outdatedSince"),
            r.metadata.get("slot"),
        )
        for r, c in found
    ]


async def test_deltas_answer_as_a_fresh_load_through_interleaved_writes(stores: Stores) -> None:
    world = World(stores, seed=28)
    kept = ExactVectorIndex(stores.memory, margin_ms=0)
    world.access.follow(kept.accessed)
    rng = random.Random(7)
    filters = parse_filters({"metadata.topic": WORDS[:6]})
    wheres = [
        TenantFilter(AGENT, USER),
        TenantFilter(AGENT, USER, shared=True),
        TenantFilter(AGENT, OTHER),
    ]
    ops: list[str] = []
    for step in range(120):
        ops.append(await world.step())
        if step == 80:
            await stores.erase(AGENT, OTHER)
            ops.append("erase")
        words = rng.sample(WORDS, 2)
        query = exact_vector(" ".join(words))
        for where in wheres:
            for options in (
                {},
                {"sources": ["fact"]},
                {"as_of": T0 + rng.randint(0, 300) * 1000},
                {"filters": filters},
            ):
                args: dict[str, Any] = {
                    "model": MODEL,
                    "k": 5,
                    "terms": [t for w in words for t in all_terms(w)],
                    **options,
                }
                mine = await kept.search(where, query, version=f"v{step}", **args)
                fresh = await ExactVectorIndex(stores.memory).search(where, query, **args)
                assert answer(mine) == answer(fresh), (step, ops[-3:], where, options)
    assert {"hard", "soft", "edit", "fill", "supersede", "access", "erase"} <= set(ops)
    # a full load per tenant filter, then again only after an epoch move (hard delete,
    # erasure); every other write was read back as a delta
    epochs = ops.count("hard") + ops.count("erase")
    assert kept.deltas >= 120 * len(wheres) - len(wheres) * (epochs + 1)
    assert kept.loads <= len(wheres) * (epochs + 1)


async def test_a_delta_reads_back_only_what_changed(stores: Stores) -> None:
    world = World(stores, seed=3)
    await world.insert(300)
    await asyncio.sleep(0.01)  # the load's clock past the inserts' (stamps are in ms)
    index = ExactVectorIndex(stores.memory, margin_ms=0)
    where = TenantFilter(AGENT, USER)
    [query] = await HashingEmbedder(DIM).embed(["lisbon tea"], "query")
    await index.search(where, query, model=MODEL, k=5, version="v1")
    assert (index.loads, index.delta_rows) == (1, 0)

    await asyncio.sleep(0.01)
    await world.insert(2)
    await index.search(where, query, model=MODEL, k=5, version="v2")

    assert index.loads == 1
    assert 0 < index.delta_rows <= 2  # the tenant's new rows, not its 300


async def test_an_access_count_costs_no_delta_and_the_counting_index_applies_it(
    stores: Stores,
) -> None:
    """A search's access bumps are no change a delta reads back (stamped, they were most of
    every later delta's rows): the index of the process that counted them applies them
    itself, and answers as a fresh load; one that did not count them reads them at its next
    full load."""
    world = World(stores, seed=4)
    await world.insert(30)
    await asyncio.sleep(0.01)  # the load's clock past the inserts' (stamps are in ms)
    counting = ExactVectorIndex(stores.memory, margin_ms=0)
    other = ExactVectorIndex(stores.memory, margin_ms=0)
    world.access.follow(counting.accessed)
    where = TenantFilter(AGENT, USER)
    query = exact_vector("lisbon tea")
    args: dict[str, Any] = {"model": MODEL, "k": 30}
    first = await counting.search(where, query, version="v1", **args)
    await other.search(where, query, version="v1", **args)
    ids = [r.vector_id for r, _ in first[:4]]

    world.access.note(ids)
    world.access.note(ids[:2])  # noted twice in one flush window: counted once
    await world.access.flush(T0 + 9)
    mine = await counting.search(where, query, version="v2", **args)
    theirs = await other.search(where, query, version="v2", **args)
    fresh = await ExactVectorIndex(stores.memory).search(where, query, **args)

    counts = {r.vector_id: r.access_count for r, _ in mine}
    assert [counts[i] for i in ids] == [1, 1, 1, 1]
    assert answer(mine) == answer(fresh)
    assert (counting.delta_rows, other.delta_rows) == (0, 0)
    assert {r.vector_id: r.access_count for r, _ in theirs}[ids[0]] == 0  # not counted here
    other.clear()
    again = await other.search(where, query, version="v3", **args)
    assert answer(again) == answer(fresh)  # its next full load reads them


async def test_a_hard_delete_is_never_served_after_it(stores: Stores) -> None:
    world = World(stores, seed=5)
    await world.insert(40)
    index = ExactVectorIndex(stores.memory)  # the default margin
    where = TenantFilter(AGENT, USER)
    [query] = await HashingEmbedder(DIM).embed(["porto violin"], "query")
    first = await index.search(where, query, model=MODEL, k=40, version="v1")
    gone = first[0][0].vector_id

    assert await stores.items.hard_delete(where, gone) is not None
    after = await index.search(where, query, model=MODEL, k=40, version="v2")

    assert gone not in {r.vector_id for r, _ in after}
    assert index.loads == 2  # the epoch moved: loaded anew


async def test_a_state_that_caught_up_inside_a_hard_deletes_fence_loads_again_after_it(
    stack: Any, unique: Callable[[str], str]
) -> None:
    """MongoDB's hard deletes move the epoch before and after the delete (`epoch_fence`). A
    search that catches up between the first move and the delete reads the doomed row under
    the new epoch; with the epoch moved only before the delete (as it was), its next delta
    could not show the removal and the row was served until the state was evicted."""
    async with mongo_database(stack, unique("db")) as db:
        await ensure_schema(db)
        stores = Stores(MongoMemoryStore(db), MongoItemStore(db), MongoUserEraser(db).erase_user)
        world = World(stores, seed=9)
        await world.insert(20)
        index = ExactVectorIndex(stores.memory)
        where = TenantFilter(AGENT, USER)
        [query] = await HashingEmbedder(DIM).embed(["porto violin"], "query")
        gone = (await index.search(where, query, model=MODEL, k=20, version="v1"))[0][0].vector_id

        async with epoch_fence(db, [AGENT], "a test's delete"):
            inside = await index.search(where, query, model=MODEL, k=20, version="v2")
            assert gone in {r.vector_id for r, _ in inside}  # caught up before the delete
            await db[MEMORY].delete_one({"_id": gone})
        after = await index.search(where, query, model=MODEL, k=20, version="v3")

        assert gone not in {r.vector_id for r, _ in after}
        assert index.loads == 3  # the first load, inside the fence, and after it


async def test_a_row_visible_later_than_the_margin_after_its_stamp_is_read_back_once_restamped(
    stack: Any, unique: Callable[[str], str]
) -> None:
    """The margin covers a write's flight only up to `SLOW_WRITE_MS`; a row that became
    visible later than the margin after its stamp (a slow bulk write on a loaded server) is
    missed by a delta that read while it was in flight, and read back by the next one once
    its writer stamped it again (`restamp_slow`, which every bulk write path calls)."""
    async with mongo_database(stack, unique("db")) as db:
        await ensure_schema(db)
        stores = Stores(MongoMemoryStore(db), MongoItemStore(db), MongoUserEraser(db).erase_user)
        world = World(stores, seed=11)
        await world.insert(10)
        index = ExactVectorIndex(stores.memory, margin_ms=1_000)
        where = TenantFilter(AGENT, USER)
        [query] = await HashingEmbedder(DIM).embed(["porto violin"], "query")
        await index.search(where, query, model=MODEL, k=50, version="v1")
        # stamped 5 s ago, visible only now: as if its write had been in flight that long
        late_at = stamp() - 5_000
        doc = await db[MEMORY].find_one({"userAddress": USER, "embeddingDim": DIM})
        assert doc is not None
        late = {**doc, "_id": "late-row", "vectorId": "late-row", CHANGED_AT: late_at}
        late["content"] = "lisbon jazz tea"
        late["embedding"] = vector(exact_vector("lisbon jazz tea"))
        await db[MEMORY].insert_one(late)
        query = exact_vector("lisbon jazz tea")

        missed = await index.search(where, query, model=MODEL, k=50, version="v2")
        await restamp_slow(db[MEMORY], ["late-row"], late_at, "a test's insert")
        found = await index.search(where, query, model=MODEL, k=50, version="v3")

        assert "late-row" not in {r.vector_id for r, _ in missed}
        assert "late-row" in {r.vector_id for r, _ in found}
        assert index.loads == 1  # deltas only


async def test_a_write_acknowledged_in_time_is_not_stamped_again(
    stack: Any, unique: Callable[[str], str]
) -> None:
    async with mongo_database(stack, unique("db")) as db:
        await ensure_schema(db)
        at = stamp()
        await db[MEMORY].insert_many([{"_id": "a", CHANGED_AT: at}, {"_id": "b", CHANGED_AT: 7}])
        await restamp_slow(db[MEMORY], ["a", "b"], at, "a test's insert")
        assert (await db[MEMORY].find_one({"_id": "a"}) or {})[CHANGED_AT] == at
        await restamp_slow(db[MEMORY], ["a", "b"], at - SLOW_WRITE_MS - 1, "a test's insert")
        assert (await db[MEMORY].find_one({"_id": "a"}) or {})[CHANGED_AT] == at  # not at that
        await restamp_slow(db[MEMORY], ["a", "b"], 7, "a test's insert")
        assert (await db[MEMORY].find_one({"_id": "b"}) or {})[CHANGED_AT] > at  # again


async def test_a_state_reads_a_delta_past_its_recheck_even_if_its_token_did_not_move(
    stores: Stores,
) -> None:
    """A write whose invalidation was lost (dead-lettered) leaves the token where it was: the
    state must still catch up within the query cache's TTL, as the cache itself does, not
    answer without that write for as long as it stays in memory."""
    world = World(stores, seed=11)
    await world.insert(20)
    index = ExactVectorIndex(stores.memory, margin_ms=0, recheck_ms=0)
    where = TenantFilter(AGENT, USER)
    [query] = await HashingEmbedder(DIM).embed(["oslo chess"], "query")
    await index.search(where, query, model=MODEL, k=50, version="v1")
    await asyncio.sleep(0.01)  # the new rows' stamps after the load's clock (ms)
    await world.insert(3)

    found = await index.search(where, query, model=MODEL, k=50, version="v1")  # token as was

    assert (index.loads, index.deltas) == (1, 1)
    assert len(found) == len(
        await ExactVectorIndex(stores.memory).search(where, query, model=MODEL, k=50)
    )


async def test_a_state_is_trusted_on_its_token_within_its_recheck(stores: Stores) -> None:
    world = World(stores, seed=12)
    await world.insert(10)
    index = ExactVectorIndex(stores.memory)  # rechecks after 120 s
    where = TenantFilter(AGENT, USER)
    [query] = await HashingEmbedder(DIM).embed(["oslo chess"], "query")
    await index.search(where, query, model=MODEL, k=5, version="v1")
    await index.search(where, query, model=MODEL, k=5, version="v1")
    assert (index.loads, index.deltas) == (1, 0)


class CountingMemory:
    """The memory store, recording whose rows each `changed_rows` read back (the user, or
    None for the agent's user-less rows)."""

    def __init__(self, inner: MemoryStore) -> None:
        self.inner = inner
        self.reads: list[str | None] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def changed_rows(self, where: TenantFilter, since: int) -> list[MemoryRow]:
        self.reads.extend(where.users)
        return await self.inner.changed_rows(where, since)


async def add_knowledge(stores: Stores, first: int, count: int) -> None:
    """The agent's user-less rows, which a user's widened read admits."""
    await stores.memory.insert_many_if_absent(
        [
            MemoryRow(
                f"know{n:04d}",
                ScopeFields(AGENT, None, None, "global", None),
                f"{WORDS[n % len(WORDS)]} {WORDS[(n * 5) % len(WORDS)]}",
                exact_vector(f"{WORDS[n % len(WORDS)]} {WORDS[(n * 5) % len(WORDS)]}"),
                MODEL,
                "knowledge",
                T0 + n * 1000,
                {"status": "active"},
            )
            for n in range(first, first + count)
        ]
    )


async def test_a_users_write_does_not_read_back_the_agents_knowledge(stores: Stores) -> None:
    """A turn bumps its user's counters, never the agent's user-less rows' (`shared`): the
    delta of a read widened to them reads the user's rows alone, and answers as a fresh
    load; a write of the agent's knowledge moves `shared`, and the next delta reads it."""
    world = World(stores, seed=21)
    await world.insert(30)
    await add_knowledge(stores, 0, 6)
    counting = CountingMemory(stores.memory)
    index = ExactVectorIndex(counting, margin_ms=0)
    where = TenantFilter(AGENT, USER, shared_sources=("knowledge",))
    query = exact_vector("lisbon tea porto")
    args: dict[str, Any] = {"model": MODEL, "k": 60}

    async def fresh() -> list[tuple[Any, ...]]:
        return answer(await ExactVectorIndex(stores.memory).search(where, query, **args))

    await index.search(where, query, version="v1", shared="s1", **args)
    await asyncio.sleep(0.01)  # the writes' stamps after the load's clock (ms)
    await world.insert(4)
    counting.reads.clear()
    kept = await index.search(where, query, version="v2", shared="s1", **args)
    assert counting.reads == [USER]
    assert answer(kept) == await fresh()

    await asyncio.sleep(0.01)
    await add_knowledge(stores, 6, 3)
    counting.reads.clear()
    kept = await index.search(where, query, version="v3", shared="s2", **args)
    assert sorted(counting.reads, key=str) == sorted([USER, None], key=str)
    assert answer(kept) == await fresh()
    assert {"know0006", "know0007", "know0008"} <= {r.vector_id for r, _ in kept}
    assert (index.loads, index.deltas) == (1, 2)


async def test_the_agents_knowledge_is_read_back_past_its_recheck_even_if_unannounced(
    stores: Stores,
) -> None:
    """A write of the agent's knowledge whose counter did not move (its invalidation lost)
    is read back once the recheck passes, as the user's own rows are."""
    await add_knowledge(stores, 0, 4)
    counting = CountingMemory(stores.memory)
    index = ExactVectorIndex(counting, margin_ms=0, recheck_ms=0)
    where = TenantFilter(AGENT, USER, shared_sources=("knowledge",))
    query = exact_vector("lisbon porto")
    await index.search(where, query, model=MODEL, k=20, version="v1", shared="s1")
    await asyncio.sleep(0.01)
    await add_knowledge(stores, 4, 2)
    counting.reads.clear()
    kept = await index.search(where, query, model=MODEL, k=20, version="v2", shared="s1")
    assert None in counting.reads
    assert {"know0004", "know0005"} <= {r.vector_id for r, _ in kept}
