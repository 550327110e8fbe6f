"""Access counting: only memory rows that reach the packed context are counted, once per flush
window (fixes reference §16.14, which bumped every candidate, every cache hit, every read)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engine.adapters.memory import (
    HashingEmbedder,
    InMemoryMemoryStore,
)
from engine.ingest.remember import Rememberer
from engine.ingest.turns import TurnRecorder
from engine.retrieval.search import MemorySearch
from engine.retrieval.usage import MEMORY_LAYERS, AccessRecorder
from engine.scoping import TenantFilter
from schemas.ids import to_ms
from schemas.inputs import context_request, memory_remembered, turn_recorded
from schemas.requests import ContextReply, LayerSearchRequest
from schemas.scope import Scope
from tests.support.engine import InMemoryPorts

AGENT = "0xAgent"
SCOPE = {"agentWallet": AGENT, "userAddress": "U1", "threadId": "T1"}
T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
NOW_MS = to_ms(T0 + timedelta(hours=2))
QUERY = "How does Ana take her morning coffee?"
FACTS = [
    "Ana takes her morning coffee with oat milk",
    "Ana drinks her coffee black in the morning",
    "Ana likes a strong coffee every morning",
    "Ana has coffee with cinnamon on Sunday mornings",
    "Ana buys coffee beans from a roaster in Lisbon",
    "Ana orders a flat white coffee at work",
    "Ana never drinks coffee after noon",
    "Ana brews her coffee with an AeroPress",
]


@dataclass
class Engine:
    memory: InMemoryMemoryStore
    access: AccessRecorder
    search: MemorySearch
    recorder: TurnRecorder
    rememberer: Rememberer


async def build_engine() -> Engine:
    ports = InMemoryPorts(HashingEmbedder())
    access = AccessRecorder(ports.memory)
    e = Engine(
        ports.memory,
        access,
        ports.search(access=access),
        ports.recorder(),
        Rememberer(ports.memory, ports.embedder),
    )
    for i, fact in enumerate(FACTS):
        body = {**SCOPE, "content": fact}
        await e.rememberer.remember(memory_remembered(body, now=T0 + timedelta(minutes=i)))
    turn = {
        **SCOPE,
        "userMessage": "Ana asked for her morning coffee again",
        "assistantMessage": "I reminded her the coffee machine is being repaired",
    }
    await e.recorder.record(turn_recorded(turn, now=T0 + timedelta(minutes=30)))
    return e


@pytest.fixture
async def engine() -> Engine:
    return await build_engine()


async def ask(e: Engine, **kw: Any) -> ContextReply:
    body = {**SCOPE, "query": QUERY, "limit": 2, "maxItems": 4, **kw}
    return await e.search.context(context_request(body), NOW_MS)


async def access_counts(memory: InMemoryMemoryStore) -> dict[str, int]:
    rows = await memory.active_rows(TenantFilter(agent_wallet=AGENT, user_address="U1"))
    return {r.vector_id: r.access_count for r in rows}


def packed_memory_ids(reply: ContextReply) -> set[str]:
    return {i.id for i in reply.items if i.layer in MEMORY_LAYERS and i.id}


async def test_only_packed_memory_rows_are_noted_fixes_16_14(engine: Engine) -> None:
    reply = await ask(engine, limit=3, maxItems=3, includeRaw=True)

    packed = packed_memory_ids(reply)
    assert packed  # the context does use memory rows…
    assert reply.raw is not None
    candidates = {h["id"] for layer in MEMORY_LAYERS for h in reply.raw.get(layer, [])}
    assert candidates - packed  # …and some layer hits did not make it into the prompt
    assert {i.layer for i in reply.items} & {"working", "scene"}  # non-memory items packed too

    assert engine.access.pending == len(packed)
    assert await engine.access.flush(NOW_MS) == len(packed)
    counts = await access_counts(engine.memory)
    assert {vid for vid, n in counts.items() if n} == packed
    assert all(counts[vid] == 1 for vid in packed)


async def test_rows_beyond_the_layer_limit_are_never_counted_fixes_16_14(engine: Engine) -> None:
    reply = await ask(engine, maxItems=24, limit=1, layers=["graph"])

    assert reply.totals == {"graph": 1}
    await engine.access.flush(NOW_MS)
    counts = await access_counts(engine.memory)
    assert sum(counts.values()) == 1  # eight matching facts, one returned, one counted
    assert {vid for vid, n in counts.items() if n} == packed_memory_ids(reply)


async def test_working_and_scene_items_are_not_noted_fixes_16_14(engine: Engine) -> None:
    reply = await ask(engine, layers=["working", "scene"], includeRaw=True)

    assert reply.raw is not None
    assert reply.totals == {"working": 1, "scene": 1}
    assert reply.items  # (the scene turn collapses into the working lines: same user line)
    assert engine.access.pending == 0
    assert await engine.access.flush(NOW_MS) == 0


async def test_flush_counts_one_per_row_per_window_and_empties_the_buffer(engine: Engine) -> None:
    ids = sorted((await access_counts(engine.memory)).keys())[:3]
    engine.access.note(ids)
    engine.access.note(ids[:2])  # noted again within the same window

    assert engine.access.pending == 3
    assert await engine.access.flush(NOW_MS) == 3
    assert engine.access.pending == 0
    assert await engine.access.flush(NOW_MS) == 0  # nothing left to write
    counts = await access_counts(engine.memory)
    assert [counts[i] for i in ids] == [1, 1, 1]

    engine.access.note(ids[:1])  # a new window counts again
    assert await engine.access.flush(NOW_MS + 1) == 1
    assert (await access_counts(engine.memory))[ids[0]] == 2


async def test_a_cached_reply_does_not_count_twice_within_one_window(engine: Engine) -> None:
    first = await ask(engine)
    second = await ask(engine)

    assert (first.cached, second.cached) == (False, True)
    assert packed_memory_ids(second) == packed_memory_ids(first)
    assert await engine.access.flush(NOW_MS) == len(packed_memory_ids(first))
    counts = await access_counts(engine.memory)
    assert {vid: n for vid, n in counts.items() if n} == dict.fromkeys(packed_memory_ids(first), 1)


async def test_a_search_without_an_access_recorder_counts_nothing(engine: Engine) -> None:
    engine.search.access = None
    await ask(engine)
    assert engine.access.pending == 0
    assert set((await access_counts(engine.memory)).values()) == {0}


async def test_layer_search_does_not_count_accesses(engine: Engine) -> None:
    request = LayerSearchRequest(
        scope=Scope.parse(SCOPE), query=QUERY, layers=["graph", "vectors"], limit=3
    )
    reply = await engine.search.layer_search(request, NOW_MS)

    assert reply.totals["graph"] > 0
    assert engine.access.pending == 0
