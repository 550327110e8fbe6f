"""The working buffer's idempotence guard (`engine.turn_guard`), on both implementations: a
redelivery of any length changes nothing, turns stamped out of order within the kept ids are
taken, and a buffer written before the guard had times refuses what it took then."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from engine.adapters.memory import InMemoryWorkingStore
from engine.adapters.mongo import SESSIONS, MongoWorkingStore, ensure_schema
from engine.adapters.mongo.working import guard_of
from engine.ports import WorkingStore
from engine.records import ScopeFields, WorkingAppend, WorkingBuffer
from engine.scoping import TenantFilter
from engine.turn_guard import GUARD_IDS, TurnGuard
from tests.support.mongo import IMPLEMENTATIONS, mongo_database

DAY = 86_400_000
SCOPE = ScopeFields(agent_wallet="A", user_address="U1", thread_id="T1", mode=None, hai_id=None)
MINE = TenantFilter(agent_wallet="A", user_address="U1")


@pytest.fixture(params=IMPLEMENTATIONS)
async def working(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[WorkingStore]:
    if request.param == "memory":
        yield InMemoryWorkingStore()
        return
    async with mongo_database(request.getfixturevalue("stack"), unique("db")) as db:
        await ensure_schema(db)
        yield MongoWorkingStore(db)


def turn(turn_id: str, at: int) -> WorkingAppend:
    return WorkingAppend(
        session_id="S1",
        scope=SCOPE,
        turn_id=turn_id,
        lines=[f"user: q {turn_id}"],
        at=at,
        expires_at=at + 30 * DAY,
        state={"lastTurnId": turn_id},
        row_id=f"row_{turn_id}",
    )


async def buffer(store: WorkingStore) -> WorkingBuffer:
    [found] = await store.recent(MINE, 10)
    return found


async def test_a_redelivery_longer_than_the_ids_kept_changes_nothing(
    working: WorkingStore, now_ms: int
) -> None:
    turns = [turn(f"t{n}", now_ms + n) for n in range(3 * GUARD_IDS)]
    assert await working.append_many(turns, keep=12) == [True] * len(turns)
    before = await buffer(working)

    # the whole thread again (a replay into the same store), then its tail one by one
    assert await working.append_many(turns, keep=12) == [False] * len(turns)
    for t in turns[-3:]:
        assert await working.append(t, keep=12) is False

    after = await buffer(working)
    assert after == before
    assert after.lines[0] == f"user: q t{3 * GUARD_IDS - 1}"  # the newest stays newest


async def test_turns_out_of_order_within_the_kept_ids_are_taken(
    working: WorkingStore, now_ms: int
) -> None:
    assert await working.append_many([turn("a", now_ms + 10), turn("b", now_ms + 20)], keep=12)
    # stamped before "b" but after anything let go: a new turn, taken in arrival order
    assert await working.append_many(
        [turn("late", now_ms + 15), turn("b", now_ms + 20)], keep=12
    ) == [
        True,
        False,
    ]
    assert (await buffer(working)).lines == ["user: q late", "user: q b", "user: q a"]


async def test_a_turn_stamped_before_a_turn_let_go_does_not_enter_the_buffer(
    working: WorkingStore, now_ms: int
) -> None:
    turns = [turn(f"t{n}", now_ms + n) for n in range(GUARD_IDS + 1)]
    await working.append_many(turns, keep=12)
    # "t0" was let go: anything stamped at or before it counts as taken
    stale, fresh = turn("stale", now_ms), turn("fresh", now_ms + 1)
    assert await working.append_many([stale, fresh], keep=12) == [False, True]
    assert (await buffer(working)).lines[:2] == ["user: q fresh", f"user: q t{GUARD_IDS}"]


@pytest.mark.integration
async def test_a_buffer_written_before_the_guard_had_times_refuses_its_old_turns(
    stack: Any, unique: Callable[[str], str], now_ms: int
) -> None:
    async with mongo_database(stack, unique("db")) as db:
        await ensure_schema(db)
        store = MongoWorkingStore(db)
        key = SCOPE.document_key("S1")
        # as an older build left it: 1,000 ids, no times, no floor, no revision
        await db[SESSIONS].insert_one(
            {
                "_id": key,
                "sessionId": "S1",
                "agentWallet": "A",
                "userAddress": "U1",
                "threadId": "T1",
                "mode": None,
                "haiId": None,
                "compressed": False,
                "turnIds": [f"old{n}" for n in range(1000)],
                "workingMemory": {"context": ["user: q old999"], "state": {}},
                "createdAt": now_ms,
                "lastAccessedAt": now_ms + 999,
            }
        )
        replayed = [turn("old3", now_ms + 3), turn("old998", now_ms + 998)]
        assert await store.append_many(replayed, keep=12) == [False, False]
        assert await store.append(turn("new", now_ms + 1000), keep=12)
        doc = await db[SESSIONS].find_one({"_id": key})
        assert doc is not None
        assert "turnIds" not in doc  # the guard replaced the old ids
        guard = guard_of(doc["guard"])
        assert len(guard.ids) == len(guard.ats) == GUARD_IDS
        assert guard.ids[-1] == "new"
        assert guard.floor == now_ms + 999
        assert doc["workingMemory"]["context"] == ["user: q old999", "user: q new"]  # oldest first


def test_the_guard_decides_a_batch_as_consecutive_appends_would() -> None:
    guard = TurnGuard()
    turns = [(f"t{n}", n) for n in range(GUARD_IDS + 2)] + [
        ("t0", 0),
        ("t1", 1),
        ("x", 1),
        ("y", 2),
    ]
    taken, after = guard.take(turns)
    one_by_one, g = [], guard
    for i, t in enumerate(turns):
        picked, g = g.take([t])
        if picked:
            one_by_one.append(i)
    # the redelivered t0 and t1 (let go), and a new x stamped at the floor, are refused
    assert taken == one_by_one == [*range(GUARD_IDS + 2), len(turns) - 1]
    assert after == g
    assert after.floor == 2
    assert len(after.ids) == GUARD_IDS
