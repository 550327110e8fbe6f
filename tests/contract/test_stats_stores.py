"""The admin stats ports (`MemoryStatsReader`, `TranscriptCounter`) behave the same in memory
and against the real MongoDB-wire server: active rows only, per agent (and optionally one
user), grouped by source."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace

import pytest

from engine.adapters.memory import InMemoryMemoryStore, InMemoryTranscriptStore
from engine.adapters.mongo import MongoMemoryStore, MongoTranscriptStore, ensure_schema
from engine.ports import MemoryStatsReader, MemoryStore, TranscriptCounter, TranscriptStore
from tests.contract.test_stores import IMPLEMENTATIONS, T0, fields, memory_row, turn
from tests.support.mongo import mongo_database


@dataclass
class StatsStores:
    memory: MemoryStore
    stats: MemoryStatsReader
    transcripts: TranscriptStore
    counter: TranscriptCounter


@pytest.fixture(params=IMPLEMENTATIONS)
async def stores(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[StatsStores]:
    if request.param == "memory":
        memory, transcripts = InMemoryMemoryStore(), InMemoryTranscriptStore()
        yield StatsStores(memory, memory, transcripts, transcripts)
        return
    async with mongo_database(request.getfixturevalue("stack"), unique("db")) as db:
        await ensure_schema(db)
        mongo_memory, mongo_transcripts = MongoMemoryStore(db), MongoTranscriptStore(db)
        yield StatsStores(mongo_memory, mongo_memory, mongo_transcripts, mongo_transcripts)


async def test_stats_of_an_agent_without_rows_are_zero(stores: StatsStores) -> None:
    stats = await stores.stats.stats("nobody")
    assert (stats.total, stats.avg_decay_score, stats.oldest, stats.newest) == (0, 0.0, None, None)
    assert dict(stats.by_source) == {}
    assert await stores.counter.count("nobody") == 0


async def test_stats_count_active_rows_by_source_with_decay_and_time_range(
    stores: StatsStores,
) -> None:
    rows = [
        replace(memory_row("f1", source="fact"), decay_score=1.0, created_at=T0 + 10),
        replace(memory_row("f2", source="fact"), decay_score=0.5, created_at=T0 + 30),
        replace(memory_row("s1", source="session"), decay_score=0.0, created_at=T0 + 20),
        # another user of the same agent, agent-level knowledge, and inactive rows
        replace(
            memory_row("u2", scope=fields(user="U2"), source="fact"),
            decay_score=0.5,
            created_at=T0 + 5,
        ),
        replace(
            memory_row("k1", scope=fields(user=None), source="knowledge"),
            decay_score=1.0,
            created_at=T0 + 40,
        ),
        memory_row("gone", source="fact", metadata={"status": "deleted"}),
        memory_row("old", source="fact", metadata={"status": "superseded"}),
        # another agent
        memory_row("other", scope=fields(agent="B"), source="fact"),
    ]
    for row in rows:
        assert await stores.memory.insert_if_absent(row)

    whole = await stores.stats.stats("A")
    assert whole.total == 5
    assert dict(whole.by_source) == {"fact": 3, "session": 1, "knowledge": 1}
    assert whole.avg_decay_score == pytest.approx((1.0 + 0.5 + 0.0 + 0.5 + 1.0) / 5)
    assert (whole.oldest, whole.newest) == (T0 + 5, T0 + 40)

    one_user = await stores.stats.stats("A", "U1")
    assert one_user.total == 3
    assert dict(one_user.by_source) == {"fact": 2, "session": 1}
    assert one_user.avg_decay_score == pytest.approx(0.5)
    assert (one_user.oldest, one_user.newest) == (T0 + 10, T0 + 30)

    assert (await stores.stats.stats("B")).total == 1


async def test_transcripts_are_counted_per_agent_and_user(stores: StatsStores) -> None:
    await stores.transcripts.append(turn("t1", session="S1"))
    await stores.transcripts.append(turn("t2", session="S1"))  # same transcript
    await stores.transcripts.append(turn("t3", session="S2"))
    await stores.transcripts.append(turn("t4", session="S3", scope=fields(user="U2")))
    await stores.transcripts.append(turn("t5", session="S4", scope=fields(agent="B")))
    assert await stores.counter.count("A") == 3
    assert await stores.counter.count("A", "U1") == 2
    assert await stores.counter.count("A", "U9") == 0
    assert await stores.counter.count("B") == 1
