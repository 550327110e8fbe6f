"""One suite, two implementations: the eval run store behaves the same in memory and against
the real MongoDB-wire server (the Mongo cases are `integration`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from engine.adapters.memory.evals import InMemoryEvalStore
from engine.adapters.mongo.evals import MongoEvalStore, ensure_indexes
from engine.evals.harness import score
from engine.evals.records import CaseResult, EvalCase, EvalRun, EvalStore, ItemVerdict
from tests.support.mongo import IMPLEMENTATIONS, mongo_database

T0 = 1_600_000_000_000


@pytest.fixture(params=IMPLEMENTATIONS)
async def store(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[EvalStore]:
    if request.param == "memory":
        yield InMemoryEvalStore()
        return
    async with mongo_database(request.getfixturevalue("stack"), unique("db")) as db:
        await ensure_indexes(db)
        await ensure_indexes(db)  # idempotent
        yield MongoEvalStore(db)


def a_run(run_id: str, agent: str = "0xA", at: int = T0, user: str | None = "u1") -> EvalRun:
    results = (
        CaseResult(
            case=EvalCase("Where does Ana live?", expected="Lisbon"),
            items=(ItemVerdict("graph", "fact_1", True), ItemVerdict("vectors", "fact_2", False)),
            context_characters=180,
            latency_ms=12.5,
            cached=False,
        ),
        CaseResult(
            case=EvalCase("Dog?", expected_memory_id="fact_9"),
            items=(),
            context_characters=0,
            latency_ms=3.25,
            cached=True,
        ),
    )
    scope: dict[str, Any] = {"agentWallet": agent}
    if user:
        scope["userAddress"] = user
    return EvalRun(
        eval_run_id=run_id,
        scope=scope,
        created_at=at,
        k=5,
        layers=("graph", "vectors"),
        scores=score(results),
        results=results,
    )


async def test_a_saved_run_reads_back_whole(store: EvalStore) -> None:
    run = a_run("memeval_1")
    await store.save(run)
    assert await store.get("memeval_1", "0xA") == run
    assert await store.list("0xA", 10) == [run]


async def test_another_agent_sees_nothing(store: EvalStore) -> None:
    await store.save(a_run("memeval_1", agent="0xA"))
    assert await store.get("memeval_1", "0xB") is None
    assert await store.list("0xB", 10) == []
    assert await store.get("memeval_missing", "0xA") is None


async def test_listing_is_newest_first_and_limited(store: EvalStore) -> None:
    await store.save(a_run("memeval_b", at=T0 + 1))
    await store.save(a_run("memeval_a", at=T0 + 3))
    await store.save(a_run("memeval_c", at=T0 + 1))  # same time: higher id first
    await store.save(a_run("memeval_x", agent="0xB", at=T0 + 9))
    listed = await store.list("0xA", 10)
    assert [r.eval_run_id for r in listed] == ["memeval_a", "memeval_c", "memeval_b"]
    assert [r.eval_run_id for r in await store.list("0xA", 2)] == ["memeval_a", "memeval_c"]


async def test_saving_the_same_id_again_replaces_it(store: EvalStore) -> None:
    await store.save(a_run("memeval_1", at=T0))
    newer = a_run("memeval_1", at=T0 + 5, user=None)
    await store.save(newer)
    assert await store.get("memeval_1", "0xA") == newer
    assert await store.list("0xA", 10) == [newer]
