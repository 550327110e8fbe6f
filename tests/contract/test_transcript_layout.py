"""Transcripts stored one document per turn (issue 29): a read of the newest turns only, on
both stores, and the migration of a database written by the old layout (one document per
thread holding every message) on the MongoDB-wire server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import numpy as np
import pytest
from pymongo.asynchronous.database import AsyncDatabase

from engine.adapters.memory import InMemoryTranscriptStore
from engine.adapters.mongo import (
    TRANSCRIPT_TURNS,
    TRANSCRIPTS,
    MongoTranscriptStore,
    ensure_schema,
)
from engine.adapters.mongo.documents import vector
from engine.adapters.mongo.transcript_layout import LAYOUT_ID
from engine.ports import TranscriptStore
from engine.records import ScopeFields, StoredMessage, TranscriptAppend
from engine.scoping import TenantFilter
from tests.support.mongo import IMPLEMENTATIONS, mongo_database

T0 = 1_780_000_000_000
SCOPE = ScopeFields("A", "U1", "T1", None, None)
WHERE = TenantFilter("A", "U1")


@pytest.fixture(params=IMPLEMENTATIONS)
async def transcripts(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[TranscriptStore]:
    if request.param == "memory":
        yield InMemoryTranscriptStore()
        return
    async with mongo_database(request.getfixturevalue("stack"), unique("db")) as db:
        await ensure_schema(db)
        yield MongoTranscriptStore(db)


def turn(n: int, at: int) -> TranscriptAppend:
    return TranscriptAppend(
        session_id="S1",
        scope=SCOPE,
        turn_id=f"t{n}",
        messages=[
            StoredMessage("user", f"q {n}", at, turn_id=f"t{n}"),
            StoredMessage("assistant", f"a {n}", at + 1, turn_id=f"t{n}"),
        ],
        summary=f"s {n}",
        token_count=n,
        at=at,
    )


async def test_a_read_of_the_newest_turns_holds_those_turns_alone(
    transcripts: TranscriptStore,
) -> None:
    # appended out of time order: "newest" is by the turns' time, not by arrival
    order = [3, 0, 4, 1, 2]
    assert await transcripts.append_many([turn(n, T0 + 10 * n) for n in order]) == [True] * 5

    [whole] = await transcripts.recent(WHERE, 10)
    [newest] = await transcripts.recent(WHERE, 10, turns=2)
    [none] = await transcripts.recent(WHERE, 10, turns=0)

    assert [m.content for m in whole.messages if m.role == "user"] == [f"q {n}" for n in range(5)]
    assert [m.content for m in newest.messages] == ["q 3", "a 3", "q 4", "a 4"]
    assert (newest.summary, newest.token_count) == ("s 4", 7)
    # the head's times are the thread's, whatever part of it was read
    assert (newest.created_at, newest.updated_at) == (T0, T0 + 40)
    assert none.messages == []


# --- migration from one document per thread ------------------------------------------------


@pytest.fixture
async def old_db(
    stack: Any, unique: Callable[[str], str]
) -> AsyncIterator[AsyncDatabase[dict[str, Any]]]:
    async with mongo_database(stack, unique("db")) as db:
        yield db


def old_layout_document(key: str, turns: int) -> dict[str, Any]:
    """A thread's transcript as the layout before issue 29 stored it: every message in one
    document, sorted by timestamp, with the turn ids, the newest turn vectors, the token sum,
    the last summary and the merged metadata."""
    messages: list[dict[str, Any]] = [
        # written before messages carried a turn id
        {"role": "user", "content": "hello from long ago", "timestamp": T0 - 5},
    ]
    for n in range(turns):
        messages += [
            {"role": "user", "content": f"q {n}", "timestamp": T0 + 10 * n, "turnId": f"t{n}"},
            {
                "role": "assistant",
                "content": f"a {n}",
                "timestamp": T0 + 10 * n + 1,
                "turnId": f"t{n}",
                "name": "Ada",
            },
        ]
    embedding = np.ones(8, dtype=np.float32) / np.sqrt(8)
    return {
        "_id": key,
        "sessionId": "S1",
        **SCOPE.view(),
        "messages": messages,
        "turnIds": [f"t{n}" for n in range(turns)],
        "turnVectors": [{"turnId": "t1", "embedding": vector(embedding), "model": "m"}],
        "tokenCount": 123,
        "summary": "the last summary",
        "metadata": {"modelUsed": "m", "k": 2},
        "createdAt": T0 - 5,
        "updatedAt": T0 + 10 * (turns - 1),
    }


@pytest.mark.integration
async def test_ensure_schema_splits_an_old_transcript_into_turns_and_reads_it_back_the_same(
    old_db: AsyncDatabase[dict[str, Any]],
) -> None:
    key = SCOPE.document_key("S1")
    old = old_layout_document(key, turns=3)
    await old_db[TRANSCRIPTS].insert_one(dict(old))

    await ensure_schema(old_db)
    await ensure_schema(old_db)  # idempotent: a second start finds nothing to do

    head = await old_db[TRANSCRIPTS].find_one({"_id": key})
    assert head is not None
    assert "messages" not in head
    assert "turnIds" not in head
    assert await old_db[TRANSCRIPT_TURNS].count_documents({"thread": key}) == 4
    assert await old_db["schema_layouts"].find_one({"_id": LAYOUT_ID}) is not None

    store = MongoTranscriptStore(old_db)
    got = await store.of_session(WHERE, "S1")
    assert got is not None
    assert [(m.role, m.content, m.timestamp, m.turn_id, m.name) for m in got.messages] == [
        (m["role"], m["content"], m["timestamp"], m.get("turnId"), m.get("name"))
        for m in old["messages"]
    ]
    assert (got.summary, got.token_count, got.metadata) == (
        "the last summary",
        123,
        {"modelUsed": "m", "k": 2},
    )
    assert (got.created_at, got.updated_at) == (old["createdAt"], old["updatedAt"])
    # the vectors the old layout kept are not carried over: a turn's vector is its turn
    # row's (the scene layer reads it there)
    assert await old_db[TRANSCRIPT_TURNS].count_documents({"vector": {"$exists": True}}) == 0

    # the migrated thread goes on as any other: a new turn appends, a replayed one does not
    assert await store.append_many([turn(3, T0 + 30), turn(1, T0 + 10)]) == [True, False]
    got = await store.of_session(WHERE, "S1")
    assert got is not None
    assert [m.content for m in got.messages][-2:] == ["q 3", "a 3"]
    assert got.token_count == 126


@pytest.mark.integration
async def test_a_migration_stopped_half_way_finishes_on_the_next_start(
    old_db: AsyncDatabase[dict[str, Any]],
) -> None:
    key = SCOPE.document_key("S1")
    old = old_layout_document(key, turns=2)
    await old_db[TRANSCRIPTS].insert_one(dict(old))
    # a crash after some turns were inserted, before the head was cleared or the marker set
    await ensure_schema(old_db)
    await old_db[TRANSCRIPTS].replace_one({"_id": key}, dict(old))
    await old_db["schema_layouts"].delete_many({})
    await old_db[TRANSCRIPT_TURNS].delete_one({"_id": f"{key}|t1"})

    await ensure_schema(old_db)

    got = await MongoTranscriptStore(old_db).of_session(WHERE, "S1")
    assert got is not None
    assert [m.content for m in got.messages] == [m["content"] for m in old["messages"]]
    assert got.token_count == 123  # counted once


async def test_turns_said_in_the_same_millisecond_keep_the_order_they_were_stored_in(
    transcripts: TranscriptStore,
) -> None:
    # one batch, then another: turn ids that sort the other way, every turn at one time
    assert await transcripts.append_many([turn(n, T0) for n in (9, 5)]) == [True, True]
    assert await transcripts.append_many([turn(n, T0) for n in (7, 1)]) == [True, True]

    [whole] = await transcripts.recent(WHERE, 10)
    [newest] = await transcripts.recent(WHERE, 10, turns=2)

    said = [m.content for m in whole.messages if m.role == "user"]
    assert said == ["q 9", "q 5", "q 7", "q 1"]
    assert [m.content for m in newest.messages if m.role == "user"] == ["q 7", "q 1"]


@pytest.fixture
async def mongo_db(stack: Any, unique: Callable[[str], str]) -> AsyncIterator[AsyncDatabase[Any]]:
    async with mongo_database(stack, unique("db")) as db:
        await ensure_schema(db)
        yield db


def comparable(found: list[Any]) -> list[Any]:
    return [
        (
            t.session_id,
            t.messages,
            t.summary,
            t.token_count,
            t.created_at,
            t.updated_at,
            t.metadata,
        )
        for t in found
    ]


@pytest.mark.integration
async def test_the_scenes_read_of_a_long_thread_follows_it_by_deltas(
    mongo_db: AsyncDatabase[Any],
) -> None:
    """Issue 28: after a turn, the newest turns of a thread are read back by a delta (the
    turns since the window's newest), never the thread again, and
    answer exactly as a store that reads it whole; a turn the delta cannot see (stamped
    earlier than its margin), a redelivery and an erased, re-created thread are read right."""
    kept = MongoTranscriptStore(mongo_db)

    async def same() -> None:
        got = await kept.recent(WHERE, 5, turns=40)
        assert comparable(got) == comparable(
            await MongoTranscriptStore(mongo_db).recent(WHERE, 5, turns=40)
        )

    await kept.append_many([turn(n, T0 + 10_000 * n) for n in range(60)])
    await same()
    assert (kept.windows.loads, kept.windows.deltas) == (1, 0)

    await kept.append_many([turn(n, T0 + 10_000 * n) for n in range(60, 63)])
    await kept.append(turn(61, T0 + 610_000))  # redelivered: nothing inserted, nothing counted
    await same()
    assert (kept.windows.loads, kept.windows.deltas) == (1, 1)

    await kept.append(turn(99, T0))  # stamped long before the window's newest turn
    await same()
    assert kept.windows.loads == 2  # the count told: read whole

    await mongo_db[TRANSCRIPT_TURNS].delete_many({})  # erased (as forget_user does) …
    await mongo_db[TRANSCRIPTS].delete_many({})
    await kept.append_many([turn(n, T0 + 900_000 + n) for n in range(2)])  # … and again
    await same()
    loads = kept.windows.loads
    for burst in (range(2, 60), range(60, 63)):  # every turn within the delta's margin
        await kept.append_many([turn(n, T0 + 900_000 + n) for n in burst])
        await same()
    assert kept.windows.loads == loads  # the turns it let go (trimmed) are not taken as new
