"""The batched writes of issue 15, one suite over the in-memory and the MongoDB adapters:
`append_many` gives what consecutive `append`s give (the in-memory store appending turn by
turn is the reference), vectors computed later attach once, memory rows are inserted in
batches and may be pending until the embedding stage fills them, and the content-addressed
`VectorStore` is idempotent. The Mongo cases are `integration` (a unique database per test)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pytest
from bson.binary import Binary
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.monitoring import (
    CommandFailedEvent,
    CommandListener,
    CommandStartedEvent,
    CommandSucceededEvent,
)

from engine.adapters.memory import (
    InMemoryMemoryStore,
    InMemoryTranscriptStore,
    InMemoryVectorStore,
    InMemoryWorkingStore,
)
from engine.adapters.mongo import (
    EMBEDDINGS,
    MEMORY,
    SESSIONS,
    TRANSCRIPT_TURNS,
    TRANSCRIPTS,
    WORKING_TURN_IDS_KEPT,
    MongoMemoryStore,
    MongoTranscriptStore,
    MongoVectorStore,
    MongoWorkingStore,
    ensure_schema,
    row_of,
)
from engine.adapters.mongo.schema import INDEXES, RETIRED
from engine.adapters.mongo.working import guard_doc, guard_of
from engine.ports import MemoryStore, TranscriptStore, VectorStore, WorkingStore
from engine.records import (
    WORKING_TURN_ROWS,
    MemoryRow,
    ScopeFields,
    StoredMessage,
    Transcript,
    TranscriptAppend,
    WorkingAppend,
    WorkingBuffer,
)
from engine.scoping import TenantFilter
from tests.support.mongo import IMPLEMENTATIONS, mongo_database, stored_transcripts

T0 = 1_600_000_000_000
"""Milliseconds since epoch for transcripts and rows (no TTL on them)."""
DAY = 86_400_000
MODEL = "test-model"


@dataclass
class Stores:
    transcripts: TranscriptStore
    working: WorkingStore
    memory: MemoryStore
    vectors: VectorStore


@pytest.fixture(params=IMPLEMENTATIONS)
async def stores(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[Stores]:
    if request.param == "memory":
        yield Stores(
            InMemoryTranscriptStore(),
            InMemoryWorkingStore(),
            InMemoryMemoryStore(),
            InMemoryVectorStore(),
        )
        return
    async with mongo_database(request.getfixturevalue("stack"), unique("db")) as db:
        await ensure_schema(db)
        yield Stores(
            MongoTranscriptStore(db),
            MongoWorkingStore(db),
            MongoMemoryStore(db),
            MongoVectorStore(db),
        )


# --- builders ------------------------------------------------------------------------------


def fields(agent: str = "A", user: str | None = "U1", thread: str | None = "T1") -> ScopeFields:
    return ScopeFields(
        agent_wallet=agent, user_address=user, thread_id=thread, mode=None, hai_id=None
    )


def unit(dim: int, seed: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    vec = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return vec / np.linalg.norm(vec)


def turn(
    turn_id: str,
    session: str = "S1",
    scope: ScopeFields | None = None,
    at: int = T0,
    summary: str | None = "a summary",
    tokens: int = 10,
    metadata: dict[str, Any] | None = None,
) -> TranscriptAppend:
    return TranscriptAppend(
        session_id=session,
        scope=scope or fields(),
        turn_id=turn_id,
        messages=[
            StoredMessage(role="user", content=f"q {turn_id}", timestamp=at),
            StoredMessage(role="assistant", content=f"a {turn_id}", timestamp=at + 1),
        ],
        summary=summary,
        token_count=tokens,
        at=at,
        metadata=metadata if metadata is not None else {"modelUsed": "m"},
    )


def transcript_view(t: Transcript) -> tuple[Any, ...]:
    return (
        t.session_id,
        t.scope,
        [(m.role, m.content, m.timestamp) for m in t.messages],
        t.summary,
        t.token_count,
        t.created_at,
        t.updated_at,
        t.metadata,
    )


async def transcripts_of(store: TranscriptStore, where: TenantFilter) -> list[tuple[Any, ...]]:
    return sorted((transcript_view(t) for t in await store.recent(where, 100)), key=lambda v: v[0])


TENANTS = (TenantFilter("A", "U1"), TenantFilter("A", "U2"), TenantFilter("B", "U1"))


async def reference_transcripts(
    history: list[TranscriptAppend], batch: list[TranscriptAppend]
) -> tuple[list[bool], list[list[tuple[Any, ...]]]]:
    """What consecutive `append`s give: the flags of `batch` and every tenant's transcripts."""
    ref = InMemoryTranscriptStore()
    for t in history:
        await ref.append(t)
    flags = [await ref.append(t) for t in batch]
    return flags, [await transcripts_of(ref, w) for w in TENANTS]


# --- TranscriptStore.append_many -----------------------------------------------------------


async def test_transcript_append_many_equals_consecutive_appends(stores: Stores) -> None:
    batch = [
        turn("t1", at=T0 + 500, metadata={"modelUsed": "m", "a": 1}),
        turn("t2", at=T0, summary=None, metadata={"a": 2}),  # older: its messages sort first
        turn("u1", session="S2", scope=fields(user="U2"), at=T0 + 7, tokens=3),
        turn("t3", at=T0 + 900, summary="latest", tokens=5),
        turn("t1", at=T0 + 500),  # repeated inside the batch: counts once
        turn("b1", session="S1", scope=fields(agent="B"), at=T0 + 1),  # same session id
        turn("t4", at=T0 + 950, summary=None, metadata={}),
    ]
    expected_flags, expected = await reference_transcripts([], batch)

    flags = await stores.transcripts.append_many(batch)

    assert flags == expected_flags == [True, True, True, True, False, True, True]
    assert [await transcripts_of(stores.transcripts, w) for w in TENANTS] == expected
    [mine] = await stores.transcripts.recent(TENANTS[0], 10)
    assert [m.content for m in mine.messages] == [
        "q t2",
        "a t2",
        "q t1",
        "a t1",
        "q t3",
        "a t3",
        "q t4",
        "a t4",
    ]
    assert (mine.summary, mine.token_count, mine.created_at, mine.updated_at) == (
        "latest",
        35,
        T0,
        T0 + 950,
    )
    # merged in the turns' time order (issue 29: one document per turn): t2 came later but
    # happened earlier, so t1's value stands, as it does in a replay whatever the order
    assert mine.metadata == {"modelUsed": "m", "a": 1}


async def test_transcript_append_many_after_some_turns_were_applied(stores: Stores) -> None:
    """A redelivered batch (a consumer that crashed before committing): the turns applied
    before are reported False and not appended twice, the others land once."""
    history = [
        turn("t1", at=T0),
        turn("t3", at=T0 + 30, summary="third"),
        turn("u1", session="S2", scope=fields(user="U2"), at=T0),
    ]
    batch = [
        turn("t1", at=T0),
        turn("t2", at=T0 + 20, summary=None),
        turn("t3", at=T0 + 30, summary="third"),
        turn("t4", at=T0 + 10, summary="fourth"),
        turn("u1", session="S2", scope=fields(user="U2"), at=T0),
        turn("n1", session="S3", scope=fields(thread="T9"), at=T0 + 5),
    ]
    expected_flags, expected = await reference_transcripts(history, batch)
    for t in history:
        assert await stores.transcripts.append(t)

    flags = await stores.transcripts.append_many(batch)

    assert flags == expected_flags == [False, True, False, True, False, True]
    assert [await transcripts_of(stores.transcripts, w) for w in TENANTS] == expected
    again = await stores.transcripts.append_many(batch)
    assert again == [False] * len(batch)
    assert [await transcripts_of(stores.transcripts, w) for w in TENANTS] == expected


async def test_transcript_append_many_of_nothing_writes_nothing(stores: Stores) -> None:
    assert await stores.transcripts.append_many([]) == []
    assert await stores.transcripts.recent(TENANTS[0], 10) == []


# --- WorkingStore.append_many ---------------------------------------------------------------


def lines(
    turn_id: str,
    at: int,
    session: str = "S1",
    scope: ScopeFields | None = None,
    state: dict[str, Any] | None = None,
    with_row: bool = True,
) -> WorkingAppend:
    return WorkingAppend(
        session_id=session,
        scope=scope or fields(),
        turn_id=turn_id,
        lines=[f"user: q {turn_id}", f"assistant: a {turn_id}"],
        at=at,
        expires_at=at + 30 * DAY,
        state=state if state is not None else {"lastTurnId": turn_id},
        row_id=f"vec_{turn_id}" if with_row else None,
    )


def working_view(s: WorkingBuffer) -> tuple[Any, ...]:
    return (
        s.session_id,
        s.scope,
        s.lines,
        s.state,
        s.last_accessed_at,
        s.created_at,
        s.turn_rows,
    )


async def buffers_of(store: WorkingStore, where: TenantFilter) -> list[tuple[Any, ...]]:
    return sorted((working_view(s) for s in await store.recent(where, 100)), key=lambda v: v[0])


async def test_working_append_many_equals_consecutive_appends(stores: Stores, now_ms: int) -> None:
    # recent times: the buffers carry a TTL (`expiresAt`)
    history = [lines("h1", now_ms - 10, state={"a": 0, "keep": "me"})]
    batch = [
        lines("h1", now_ms - 10),  # applied before
        *(lines(f"t{n}", now_ms + n, state={"a": n}) for n in range(8)),
        lines("t3", now_ms + 3),  # repeated inside the batch
        lines("u1", now_ms + 1, session="S2", scope=fields(user="U2")),
        lines("b1", now_ms + 2, scope=fields(agent="B")),  # same session id, other tenant
    ]
    ref = InMemoryWorkingStore()
    for a in history:
        await ref.append(a, keep=5)
        assert await stores.working.append(a, keep=5)
    expected_flags = [await ref.append(a, keep=5) for a in batch]

    flags = await stores.working.append_many(batch, keep=5)

    assert flags == expected_flags
    assert flags == [False, *[True] * 8, False, True, True]
    for w in TENANTS:
        assert await buffers_of(stores.working, w) == await buffers_of(ref, w)
    [mine] = await stores.working.recent(TENANTS[0], 10)
    newest = ["assistant: a t7", "user: q t7", "assistant: a t6", "user: q t6", "assistant: a t5"]
    assert mine.lines == newest
    assert mine.state == {"a": 7, "keep": "me"}
    assert (mine.created_at, mine.last_accessed_at) == (now_ms - 10, now_ms + 7)
    # the newest turns' rows, the turn appended twice once, none for a turn without one
    assert mine.turn_rows == [f"vec_t{n}" for n in range(2, 8)]
    assert len(mine.turn_rows) == WORKING_TURN_ROWS
    assert await stores.working.append_many(batch, keep=5) == [False] * len(batch)


async def test_a_working_buffer_remembers_only_the_rows_it_was_given(
    stores: Stores, now_ms: int
) -> None:
    await stores.working.append_many(
        [lines("t1", now_ms), lines("t2", now_ms + 1, with_row=False), lines("t3", now_ms + 2)],
        keep=12,
    )
    await stores.working.append(lines("t4", now_ms + 3), keep=12)
    [buffer] = await stores.working.recent(TENANTS[0], 10)
    assert buffer.turn_rows == ["vec_t1", "vec_t3", "vec_t4"]
    assert await stores.working.recent(TENANTS[1], 10) == []


# --- MemoryStore batches and pending rows --------------------------------------------------


def row(
    vector_id: str,
    content: str = "the user lives in Lisbon",
    *,
    pending: bool = False,
    model: str = MODEL,
    seed: int = 0,
    source: str = "session",
    metadata: dict[str, Any] | None = None,
) -> MemoryRow:
    return MemoryRow(
        vector_id=vector_id,
        scope=fields(),
        content=content,
        embedding=np.zeros(0, dtype=np.float32) if pending else unit(16, seed),
        embedding_model=model,
        source=source,
        created_at=T0,
        metadata=metadata or {},
    )


async def rows_by_id(store: MemoryStore) -> dict[str, MemoryRow]:
    return {r.vector_id: r for r in await store.active_rows(TENANTS[0])}


async def test_insert_many_if_absent_keeps_the_first_of_each_id(stores: Stores) -> None:
    await stores.memory.insert_if_absent(row("v1", "stored before"))
    batch = [
        row("v1", "a redelivery"),
        row("v2", "first of the batch", seed=2),
        row("v3", "pending", pending=True),
        row("v2", "second of the batch", seed=3),
    ]
    assert await stores.memory.insert_many_if_absent(batch) == {"v2", "v3"}
    assert await stores.memory.insert_many_if_absent(batch) == set()
    assert await stores.memory.insert_many_if_absent([]) == set()

    rows = await rows_by_id(stores.memory)
    assert {i: r.content for i, r in rows.items()} == {
        "v1": "stored before",
        "v2": "first of the batch",
        "v3": "pending",
    }
    assert np.allclose(rows["v2"].embedding, unit(16, 2))


async def test_a_pending_row_round_trips_and_every_reader_takes_it(stores: Stores) -> None:
    await stores.memory.insert_many_if_absent(
        [row("p1", pending=True, source="fact"), row("e1", seed=1, source="fact")]
    )
    assert await stores.memory.set_slot_if_absent("p1", TENANTS[0], "residence")

    [p1] = [r for r in await stores.memory.active_rows(TENANTS[0]) if r.vector_id == "p1"]
    assert p1.pending
    assert (p1.embedding.shape, p1.embedding.dtype, p1.embedding_dim) == ((0,), np.float32, 0)
    assert (p1.embedding_model, p1.content, p1.source) == (
        MODEL,
        "the user lives in Lisbon",
        "fact",
    )
    [slotted] = await stores.memory.slot_rows(TENANTS[0], "residence")
    assert (slotted.vector_id, slotted.pending) == ("p1", True)
    stats = await stores.memory.stats("A")
    assert (stats.total, stats.by_source) == (2, {"fact": 2})
    assert not (await rows_by_id(stores.memory))["e1"].pending


async def test_fill_embeddings_fills_only_pending_rows_of_the_model(stores: Stores) -> None:
    await stores.memory.insert_many_if_absent(
        [
            row("p1", pending=True),
            row("p2", pending=True),
            row("other", pending=True, model="other-model"),
            row("e1", seed=1),
        ]
    )
    vectors = {"p1": unit(16, 10), "other": unit(16, 11), "e1": unit(16, 12), "gone": unit(16, 13)}

    assert await stores.memory.fill_embeddings(MODEL, vectors) == 1

    rows = await rows_by_id(stores.memory)
    assert np.allclose(rows["p1"].embedding, unit(16, 10))
    assert rows["p1"].embedding_dim == 16
    assert rows["p2"].pending
    assert rows["other"].pending
    assert np.allclose(rows["e1"].embedding, unit(16, 1))  # embedded before: left alone
    assert await stores.memory.fill_embeddings(MODEL, {"p1": unit(16, 14)}) == 0
    assert np.allclose((await rows_by_id(stores.memory))["p1"].embedding, unit(16, 10))
    assert await stores.memory.fill_embeddings(MODEL, {}) == 0
    assert await stores.memory.fill_embeddings("other-model", {"other": unit(16, 11)}) == 1
    assert not (await rows_by_id(stores.memory))["other"].pending


# --- VectorStore ---------------------------------------------------------------------------


async def test_vector_store_gets_what_was_put_and_keeps_the_first(stores: Stores) -> None:
    assert await stores.vectors.get_many(["m:8:a"]) == {}
    await stores.vectors.put_many({"m:8:a": unit(8, 1), "m:8:b": unit(8, 2)})
    await stores.vectors.put_many({"m:8:a": unit(8, 3), "m:384:c": unit(384, 4)})
    await stores.vectors.put_many({})

    got = await stores.vectors.get_many(["m:8:a", "m:8:b", "m:384:c", "m:8:none", "m:8:a"])

    assert set(got) == {"m:8:a", "m:8:b", "m:384:c"}
    assert np.allclose(got["m:8:a"], unit(8, 1))  # the key already stored kept its vector
    assert np.allclose(got["m:8:b"], unit(8, 2))
    assert got["m:384:c"].shape == (384,)
    assert got["m:384:c"].dtype == np.float32
    assert np.array_equal(got["m:384:c"], unit(384, 4))  # float32 stored exactly
    assert await stores.vectors.get_many([]) == {}


async def test_vector_store_keeps_a_group_record_of_vectors_end_to_end(stores: Stores) -> None:
    # a turn and its two messages (`StoredEmbedder.embed_groups`): one record of 3 x 384
    group = np.concatenate([unit(384, 5), unit(384, 6), unit(384, 7)])
    await stores.vectors.put_many({"m:384:3:g": group})
    got = (await stores.vectors.get_many(["m:384:3:g"]))["m:384:3:g"]
    assert got.dtype == np.float32
    assert got.tobytes() == group.astype(np.float32).tobytes()


# --- the stored form and the round trips (MongoDB only) ------------------------------------


class Writes(CommandListener):
    """The write commands a client sends: (command name, number of statements)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    def started(self, event: CommandStartedEvent) -> None:
        name = event.command_name
        if name in ("update", "insert", "delete"):
            statements = event.command.get(
                {"update": "updates", "insert": "documents"}.get(name, "deletes"), []
            )
            self.seen.append((name, len(statements)))

    def succeeded(self, event: CommandSucceededEvent) -> None:
        pass

    def failed(self, event: CommandFailedEvent) -> None:
        pass


@dataclass
class Mongo:
    db: AsyncDatabase[dict[str, Any]]
    writes: Writes


@pytest.fixture
async def mongo(stack: Any, unique: Callable[[str], str]) -> AsyncIterator[Mongo]:
    writes = Writes()
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        stack.mongo_uri, serverSelectionTimeoutMS=10_000, event_listeners=[writes]
    )
    name = unique("db")
    try:
        db = client[name]
        await ensure_schema(db)
        writes.seen.clear()
        yield Mongo(db, writes)
    finally:
        await client.drop_database(name)
        await client.close()


async def test_a_batch_is_one_insert_of_its_turns_and_one_upsert_per_thread_head(
    mongo: Mongo,
) -> None:
    store = MongoTranscriptStore(mongo.db)
    batch = [turn(f"t{n}", session=f"S{n % 3}", at=T0 + n) for n in range(9)]

    assert await store.append_many(batch) == [True] * 9

    # issue 29: a turn costs one document write whatever its thread's length
    assert mongo.writes.seen == [("insert", 9), ("update", 3)]
    assert await mongo.db[TRANSCRIPTS].count_documents({}) == 3
    assert await mongo.db[TRANSCRIPT_TURNS].count_documents({}) == 9


async def test_a_redelivered_turn_collides_on_its_id_and_changes_nothing(mongo: Mongo) -> None:
    store = MongoTranscriptStore(mongo.db)
    assert await store.append(turn("t1"))
    mongo.writes.seen.clear()
    batch = [turn("t1"), turn("t2", at=T0 + 1), turn("n1", session="S-new")]

    assert await store.append_many(batch) == [False, True, True]

    # no read first, no turn-by-turn replay: the duplicate is refused by `_id`
    assert mongo.writes.seen == [("insert", 3), ("update", 2)]
    [doc] = await stored_transcripts(mongo.db, {"sessionId": "S1"})
    assert doc["turnIds"] == ["t1", "t2"]
    assert doc["createdAt"] == T0
    assert doc["updatedAt"] == T0 + 1


async def test_a_fresh_working_batch_is_one_update_command(mongo: Mongo, now_ms: int) -> None:
    store = MongoWorkingStore(mongo.db)
    batch = [lines(f"t{n}", now_ms + n, session=f"S{n % 2}") for n in range(6)]
    assert await store.append_many(batch, keep=12) == [True] * 6
    assert mongo.writes.seen == [("update", 2)]


async def test_a_pending_document_carries_no_vector_until_it_is_filled(mongo: Mongo) -> None:
    memory = MongoMemoryStore(mongo.db)
    assert await memory.insert_many_if_absent([row("p1", pending=True), row("e1")]) == {
        "p1",
        "e1",
    }
    assert mongo.writes.seen == [("insert", 2)]
    doc = await mongo.db[MEMORY].find_one({"_id": "p1"})
    assert doc is not None
    assert ("embedding" in doc, doc["embeddingDim"], doc["embeddingModel"]) == (False, 0, MODEL)

    assert await memory.fill_embeddings(MODEL, {"p1": unit(16, 5), "e1": unit(16, 6)}) == 1

    doc = await mongo.db[MEMORY].find_one({"_id": "p1"})
    assert doc is not None
    assert ("embedding" in doc, doc["embeddingDim"]) == (True, 16)
    assert np.array_equal(row_of(doc).embedding, unit(16, 5))


async def test_content_addressed_vectors_are_stored_as_float32_vectors(mongo: Mongo) -> None:
    store = MongoVectorStore(mongo.db)
    await store.put_many({"m:4:x": np.array([1.0, -2.0, 0.5, 0.0], dtype=np.float32)})
    doc = await mongo.db[EMBEDDINGS].find_one({"_id": "m:4:x"})
    assert doc is not None
    assert isinstance(doc["embedding"], Binary)
    assert doc["embedding"].as_vector().data == [1.0, -2.0, 0.5, 0.0]


class Interfering:
    """A working-buffer collection on which another writer appends `turn_id` to `key` once,
    between the batch's first read of its guard and its first bulk write."""

    def __init__(self, col: Any, key: str, turn_id: str, at: int) -> None:
        self._col, self._key, self._turn_id, self._at = col, key, turn_id, at
        self.interfered = 0

    def find(self, *args: Any, **kwargs: Any) -> Any:
        return self._col.find(*args, **kwargs)

    async def bulk_write(self, ops: Any, **kwargs: Any) -> Any:
        if not self.interfered:
            self.interfered += 1
            doc = await self._col.find_one({"_id": self._key})
            held = guard_of(doc["guard"])
            _, after = held.take([(self._turn_id, self._at)])
            await self._col.update_one(
                {"_id": self._key}, {"$set": {"guard": guard_doc(after)}, "$inc": {"rev": 1}}
            )
        return await self._col.bulk_write(ops, **kwargs)


async def test_a_buffer_changed_between_read_and_write_is_read_again_not_overwritten(
    mongo: Mongo, now_ms: int
) -> None:
    store = MongoWorkingStore(mongo.db)
    assert await store.append(lines("t1", now_ms), keep=12)
    key = fields().document_key("S1")
    store._col = cast(Any, Interfering(store._col, key, "other", now_ms + 1))

    assert await store.append_many(
        [lines("t2", now_ms + 2), lines("other", now_ms + 1)], keep=12
    ) == [
        True,
        False,
    ]

    # its revision changed after the read: the guarded write matched nothing and its upsert
    # collided on `_id`, so the batch read the buffer again and kept the other writer's turn
    [doc] = await mongo.db[SESSIONS].find({"_id": key}).to_list(length=None)
    assert guard_of(doc["guard"]).ids == ("t1", "other", "t2")
    assert doc["rev"] == 3


async def test_a_full_working_buffer_still_refuses_a_turn_it_holds(
    mongo: Mongo, now_ms: int
) -> None:
    store = MongoWorkingStore(mongo.db)
    first = [lines(f"t{n}", now_ms + n) for n in range(WORKING_TURN_IDS_KEPT + 5)]
    assert await store.append_many(first, keep=12) == [True] * len(first)
    newest = first[-1].turn_id

    again = await store.append_many(
        [lines(newest, now_ms), lines("fresh", now_ms + 10_000)], keep=12
    )

    assert again == [False, True]
    [doc] = await mongo.db[SESSIONS].find({}).to_list(length=None)
    kept = guard_of(doc["guard"]).ids
    assert len(kept) == WORKING_TURN_IDS_KEPT
    assert kept.count(newest) == 1
    assert kept[-1] == "fresh"


async def test_ensure_schema_drops_the_indexes_earlier_versions_created(mongo: Mongo) -> None:
    col = mongo.db[MEMORY]
    await col.create_index([("agentWallet", 1), ("createdAt", -1)])
    await col.create_index([("metadata.turnId", 1)])
    assert "metadata.turnId_1" in await col.index_information()

    await ensure_schema(mongo.db)
    await ensure_schema(mongo.db)  # idempotent

    for name, retired in RETIRED.items():
        present = set(await mongo.db[name].index_information())
        assert present.isdisjoint(retired), name
        assert {m.document["name"] for m in INDEXES[name]} <= present, name
