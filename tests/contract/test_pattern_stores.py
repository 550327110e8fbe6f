"""One suite, two implementations: the pattern counter and the skill store behave the same in
memory and against the real MongoDB-wire server (the Mongo cases are `integration`). The
patterns layer's own store (`PatternStore.active`) must see what the counter wrote."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from engine.adapters.memory import InMemoryPatternCounter, InMemoryPatternStore, InMemorySkillStore
from engine.adapters.mongo import (
    MongoPatternCounter,
    MongoPatternStore,
    MongoSkillStore,
    ensure_pattern_indexes,
    ensure_schema,
)
from engine.ingest.patterns import PatternCounter, PatternSeed, describe, validate
from engine.ingest.skills import SkillStore, promote, skill_id
from engine.ports import PatternStore
from engine.records import ScopeFields
from engine.scoping import TenantFilter
from tests.support.mongo import IMPLEMENTATIONS, mongo_database

T0 = 1_600_000_000_000
FLIGHT = ("search_flights", "compare_fares", "book_ticket")
SCOPE = ScopeFields("0xAgent", "0xUser", "th1", "global", None)
WHERE = TenantFilter(agent_wallet="0xAgent", user_address="0xUser", mode="global")
SEED = PatternSeed.of(SCOPE, FLIGHT)


@dataclass
class Stores:
    counter: PatternCounter
    skills: SkillStore
    layer: PatternStore
    """What the patterns layer reads."""


@pytest.fixture(params=IMPLEMENTATIONS)
async def stores(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[Stores]:
    if request.param == "memory":
        layer = InMemoryPatternStore()
        yield Stores(InMemoryPatternCounter(mirror=layer), InMemorySkillStore(), layer)
        return
    async with mongo_database(request.getfixturevalue("stack"), unique("db")) as db:
        await ensure_schema(db)
        await ensure_pattern_indexes(db)
        yield Stores(MongoPatternCounter(db), MongoSkillStore(db), MongoPatternStore(db))


async def run(
    counter: PatternCounter, seed: PatternSeed, outcomes: list[bool], first: int = 0
) -> None:
    for i, ok in enumerate(outcomes, start=first):
        assert await counter.record_execution(seed, turn_id=f"turn-{i}", succeeded=ok, at=T0 + i)


async def test_pattern_counting_writes_and_the_layer_sees_it_fixes_16_4(stores: Stores) -> None:
    await run(stores.counter, SEED, [True, True, False, True, True, True])
    state = await stores.counter.get(WHERE, SEED.pattern_id)
    assert state is not None
    assert (state.executions, state.successes) == (6, 5)
    assert state.success_rate == pytest.approx(5 / 6)
    assert (state.created_at, state.last_executed) == (T0, T0 + 5)
    assert state.steps == FLIGHT
    assert state.scope == ScopeFields("0xAgent", "0xUser", None, "global", None)
    check = validate(state)
    assert check.valid
    assert check.confidence == pytest.approx(0.5)

    [record] = await stores.layer.active(WHERE, 10)
    assert record.pattern_id == SEED.pattern_id
    assert record.success_rate == pytest.approx(5 / 6)
    assert record.execution_count == 6
    assert record.summary == state.summary == describe(FLIGHT, 6, 5)
    assert "83% successful" in record.summary
    assert (record.pattern_type, record.trigger_type, record.trigger_value) == (
        "tool_sequence",
        "context",
        "search_flights",
    )
    assert record.steps == list(FLIGHT)
    assert record.last_executed == T0 + 5
    assert record.created_at == T0
    assert record.status == "active"


@pytest.mark.parametrize(("executions", "successes"), [(1, 0), (1, 1), (8, 1), (3, 2)])
async def test_summary_and_rate_follow_every_count(
    stores: Stores, executions: int, successes: int
) -> None:
    await run(stores.counter, SEED, [i < successes for i in range(executions)])
    [record] = await stores.layer.active(WHERE, 10)
    assert record.summary == describe(FLIGHT, executions, successes)
    assert record.success_rate == pytest.approx(successes / executions)


async def test_failing_sequence_does_not_validate(stores: Stores) -> None:
    await run(stores.counter, SEED, [False] * 10)
    state = await stores.counter.get(WHERE, SEED.pattern_id)
    assert state is not None
    assert (state.executions, state.successes, state.success_rate) == (10, 0, 0.0)
    assert not validate(state).valid


async def test_created_at_is_the_earliest_execution_whatever_the_arrival_order(
    stores: Stores,
) -> None:
    # turns of different sessions reach the counter in any order; a replay must give the
    # same document as live processing did
    for i, at in enumerate((T0 + 30, T0 + 10, T0 + 20)):
        assert await stores.counter.record_execution(SEED, turn_id=f"t{i}", succeeded=True, at=at)
    state = await stores.counter.get(WHERE, SEED.pattern_id)
    assert state is not None
    assert (state.created_at, state.last_executed) == (T0 + 10, T0 + 30)
    [record] = await stores.layer.active(WHERE, 10)
    assert record.created_at == T0 + 10


async def test_redelivered_turn_counts_once(stores: Stores) -> None:
    c = stores.counter
    assert await c.record_execution(SEED, turn_id="t1", succeeded=True, at=T0)
    assert not await c.record_execution(SEED, turn_id="t1", succeeded=True, at=T0)
    assert await c.record_execution(SEED, turn_id="t2", succeeded=False, at=T0 + 1)
    assert not await c.record_execution(SEED, turn_id="t1", succeeded=False, at=T0 + 2)
    state = await c.get(WHERE, SEED.pattern_id)
    assert state is not None
    assert (state.executions, state.successes, state.last_executed) == (2, 1, T0 + 1)


async def test_concurrent_turns_all_count(stores: Stores) -> None:
    c = stores.counter
    applied = await asyncio.gather(
        c.record_execution(SEED, turn_id="a", succeeded=True, at=T0),
        c.record_execution(SEED, turn_id="b", succeeded=False, at=T0 + 1),
    )
    assert applied == [True, True]
    state = await c.get(WHERE, SEED.pattern_id)
    assert state is not None
    assert (state.executions, state.successes) == (2, 1)
    more = await asyncio.gather(
        *(c.record_execution(SEED, turn_id=f"m{i}", succeeded=True, at=T0 + i) for i in range(8))
    )
    assert all(more)
    state = await c.get(WHERE, SEED.pattern_id)
    assert state is not None
    assert (state.executions, state.successes) == (10, 9)
    [record] = await stores.layer.active(WHERE, 10)
    assert record.summary == describe(FLIGHT, 10, 9)


async def test_concurrent_redeliveries_count_once(stores: Stores) -> None:
    c = stores.counter
    applied = await asyncio.gather(
        *(c.record_execution(SEED, turn_id="same", succeeded=True, at=T0) for _ in range(4))
    )
    assert sorted(applied) == [False, False, False, True]
    state = await c.get(WHERE, SEED.pattern_id)
    assert state is not None
    assert state.executions == 1


async def test_reads_are_tenant_scoped_and_ordered(stores: Stores) -> None:
    other_user = PatternSeed.of(ScopeFields("0xAgent", "0xOther", None, "global", None), FLIGHT)
    short = PatternSeed.of(SCOPE, FLIGHT[:2])
    await run(stores.counter, SEED, [True, False, True])
    await run(stores.counter, short, [True, True])
    await run(stores.counter, other_user, [True, True, True])
    listed = await stores.counter.list(WHERE, 10)
    assert [s.pattern_id for s in listed] == [short.pattern_id, SEED.pattern_id]
    assert await stores.counter.get(WHERE, other_user.pattern_id) is None
    assert len(await stores.counter.list(WHERE, 1)) == 1
    layer = await stores.layer.active(WHERE, 10)
    assert [p.pattern_id for p in layer] == [short.pattern_id, SEED.pattern_id]


async def test_promotion_twice_gives_one_skill_fixes_16_19(stores: Stores) -> None:
    await run(stores.counter, SEED, [True] * 4)
    first = await promote(stores.counter, stores.skills, WHERE, SEED.pattern_id, "book", at=T0)
    assert first.status == "promoted"
    second = await promote(stores.counter, stores.skills, WHERE, SEED.pattern_id, "x", at=T0 + 1)
    assert second.status == "already_promoted"
    skills = await stores.skills.list(WHERE, 10)
    assert len(skills) == 1
    [skill] = skills
    assert skill == first.skill == second.skill
    assert skill.skill_id == skill_id(SEED.pattern_id)
    assert skill.name == "book"
    assert skill.tools == FLIGHT
    assert skill.confidence == pytest.approx(0.4)
    assert skill.scope == SEED.scope
    assert await stores.skills.get(WHERE, skill.skill_id) == skill
    foreign = TenantFilter(agent_wallet="0xAgent", user_address="0xOther", mode="global")
    assert await stores.skills.get(foreign, skill.skill_id) is None
    assert await stores.skills.list(foreign, 10) == []


async def test_promotion_refuses_invalid_pattern(stores: Stores) -> None:
    await run(stores.counter, SEED, [True, False, False, True])  # 50% < 55%
    result = await promote(stores.counter, stores.skills, WHERE, SEED.pattern_id, "b", at=T0)
    assert result.status == "invalid"
    assert result.validation.occurrences == 4
    assert await stores.skills.list(WHERE, 10) == []


async def test_the_steps_embedding_is_stored_once_and_the_layer_sees_it(stores: Stores) -> None:
    vector = np.linspace(-1.0, 1.0, 8, dtype=np.float32)
    assert not await stores.counter.set_embedding(SEED.pattern_id, vector, "m1")  # not counted
    await run(stores.counter, SEED, [True])
    assert await stores.counter.set_embedding(SEED.pattern_id, vector, "m1")
    assert not await stores.counter.set_embedding(SEED.pattern_id, vector * 0, "m2")
    await run(stores.counter, SEED, [False], first=1)  # counting keeps the embedding
    [record] = await stores.layer.active(WHERE, 10)
    assert record.embedding is not None
    np.testing.assert_allclose(record.embedding, vector)
    assert record.embedding_model == "m1"
    assert record.execution_count == 2


# --- issue 17: unknown outcomes and how a skill was promoted ---------------------------------
# each test below failed before: there was no unknown outcome (a run without a status was a
# success), and every skill was tagged "auto-promoted"


async def test_an_unknown_outcome_counts_a_run_but_moves_no_success_rate(stores: Stores) -> None:
    c = stores.counter
    await run(c, SEED, [True, False, True])
    assert await c.record_execution(SEED, turn_id="u1", succeeded=None, at=T0 + 10)
    assert await c.record_execution(SEED, turn_id="u2", succeeded=None, at=T0 + 11)
    assert not await c.record_execution(SEED, turn_id="u2", succeeded=None, at=T0 + 11)
    state = await c.get(WHERE, SEED.pattern_id)
    assert state is not None
    assert (state.executions, state.successes, state.unknown) == (5, 2, 2)
    assert state.success_rate == pytest.approx(2 / 3)
    assert state.last_executed == T0 + 11
    [listed] = await c.list(WHERE, 10)
    assert listed == state
    [record] = await stores.layer.active(WHERE, 10)
    assert (record.execution_count, record.unknown_count) == (5, 2)
    assert record.success_rate == pytest.approx(2 / 3)
    assert record.summary == state.summary == describe(FLIGHT, 5, 2, 2)
    assert "67% successful, 2 outcomes unknown" in record.summary


async def test_runs_that_all_reported_no_outcome_have_no_success_rate(stores: Stores) -> None:
    for i in range(12):
        await stores.counter.record_execution(SEED, turn_id=f"u{i}", succeeded=None, at=T0 + i)
    state = await stores.counter.get(WHERE, SEED.pattern_id)
    assert state is not None
    assert (state.executions, state.successes, state.unknown, state.success_rate) == (
        12,
        0,
        12,
        0.0,
    )
    assert not validate(state).valid
    [record] = await stores.layer.active(WHERE, 10)
    assert record.success_rate == 0.0
    assert record.summary == describe(FLIGHT, 12, 0, 12)
    assert "(used 12 times, outcomes unknown)" in record.summary
    refused = await promote(stores.counter, stores.skills, WHERE, SEED.pattern_id, "b", at=T0)
    assert refused.status == "invalid"


async def test_a_promoted_skill_is_tagged_with_how_it_was_promoted(stores: Stores) -> None:
    await run(stores.counter, SEED, [True] * 4)
    done = await promote(stores.counter, stores.skills, WHERE, SEED.pattern_id, "book", at=T0)
    assert done.skill is not None
    [stored] = await stores.skills.list(WHERE, 10)
    assert stored == done.skill
    assert stored.tags == ("pattern", "promoted", "manual")
    assert (stored.promotion, stored.creator) == ("manual", "caller")


@pytest.fixture
async def mongo_db(stack: Any, unique: Callable[[str], str]) -> AsyncIterator[Any]:
    async with mongo_database(stack, unique("db")) as db:
        await ensure_schema(db)
        yield db


@pytest.mark.integration
async def test_a_pattern_counted_before_unknown_outcomes_reads_and_counts_on(mongo_db: Any) -> None:
    counter = MongoPatternCounter(mongo_db)
    await run(counter, SEED, [True, True, False])
    await mongo_db["patterns"].update_one({"_id": SEED.pattern_id}, {"$unset": {"unknownCount": 1}})
    state = await counter.get(WHERE, SEED.pattern_id)
    assert state is not None
    assert (state.executions, state.successes, state.unknown) == (3, 2, 0)
    assert await counter.record_execution(SEED, turn_id="u", succeeded=None, at=T0 + 9)
    state = await counter.get(WHERE, SEED.pattern_id)
    assert state is not None
    assert (state.executions, state.successes, state.unknown) == (4, 2, 1)
    assert state.success_rate == pytest.approx(2 / 3)


@pytest.mark.integration
async def test_a_skill_stored_as_auto_promoted_reads_as_a_manual_promotion(mongo_db: Any) -> None:
    counter, skills = MongoPatternCounter(mongo_db), MongoSkillStore(mongo_db)
    await run(counter, SEED, [True] * 4)
    done = await promote(counter, skills, WHERE, SEED.pattern_id, "book", at=T0)
    assert done.skill is not None
    legacy = {"tags": ["auto-promoted", "pattern"], "creator": "system"}
    await mongo_db["skills"].update_one(
        {"_id": done.skill.skill_id}, {"$set": legacy, "$unset": {"promotion": 1}}
    )
    [skill] = await skills.list(WHERE, 10)
    assert skill == done.skill
    assert skill.tags == ("pattern", "promoted", "manual")
