"""pre_turn through the engine's `MemorySearch` with in-memory ports: tenancy, cache, failures."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engine.adapters.memory import (
    HashingEmbedder,
    InMemoryQueryCache,
)
from engine.errors import DependencyFailed
from engine.ingest.turns import TurnRecorder
from engine.ports import InputType, PatternStore, Vector, WorkingStore
from engine.records import PatternRecord, WorkingAppend, WorkingBuffer
from engine.retrieval.invalidation import invalidate
from engine.retrieval.search import MemorySearch
from engine.retrieval.vector_index import ExactVectorIndex
from engine.scoping import (
    GLOBAL_NAMESPACE,
    TOKEN_FAMILIES,
    TenantFilter,
    family_chain,
    invalidation_keys,
    namespace_chain,
    shared_chain,
)
from schemas.ids import to_ms
from schemas.inputs import context_request, turn_recorded
from schemas.requests import ContextReply, LayerSearchRequest
from schemas.scope import Scope
from tests.support.embedders import WrappedEmbedder
from tests.support.engine import InMemoryPorts

AGENT = "0xAgent"
TURN_LAYERS = ("working", "scene", "vectors")
"""What the transcripts group announces for a turn."""
T0 = datetime(2021, 3, 4, 10, 0, tzinfo=UTC)
NOW_MS = to_ms(T0 + timedelta(hours=1))
QUERY = "Where do I live? Lisbon?"
USER_LINE = "user: I moved to Lisbon last spring"
ASSISTANT_LINE = "assistant: Noted, you live in Lisbon now"


class CountingEmbedder(WrappedEmbedder):
    """HashingEmbedder that records every call (input type and number of texts)."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder()
        self.calls: list[tuple[InputType, int]] = []

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        self.calls.append((input_type, len(texts)))
        return await self.inner.embed(texts, input_type)

    def query_calls(self) -> int:
        return sum(1 for kind, _ in self.calls if kind == "query")


class FailingWorkingStore:
    """A working store whose reads fail like an unreachable database."""

    async def append(self, lines: WorkingAppend, keep: int) -> bool:
        return True

    async def recent(self, where: TenantFilter, limit: int) -> list[WorkingBuffer]:
        raise DependencyFailed("working store is down")


class BrokenWorkingStore(FailingWorkingStore):
    """A working store with a programming error (not a dependency failure)."""

    async def recent(self, where: TenantFilter, limit: int) -> list[WorkingBuffer]:
        raise RuntimeError("bug")


@dataclass
class Engine:
    recorder: TurnRecorder
    search: MemorySearch
    cache: InMemoryQueryCache
    embedder: CountingEmbedder

    def with_working(self, store: WorkingStore) -> MemorySearch:
        return dataclasses.replace(self.search, working=store)


@pytest.fixture
def engine() -> Engine:
    embedder = CountingEmbedder()
    ports = InMemoryPorts(embedder)
    return Engine(ports.recorder(), ports.search(), ports.cache, embedder)


def scope_body(**kw: Any) -> dict[str, Any]:
    return {"agentWallet": AGENT, "userAddress": "U1", "threadId": "T1", **kw}


async def record(e: Engine, at: datetime = T0, **kw: Any) -> None:
    body = scope_body(**kw)
    body.setdefault("userMessage", USER_LINE.removeprefix("user: "))
    body.setdefault("assistantMessage", ASSISTANT_LINE.removeprefix("assistant: "))
    await e.recorder.record(turn_recorded(body, now=at))


async def ask(search: MemorySearch, query: str = QUERY, **kw: Any) -> ContextReply:
    return await search.context(context_request({**scope_body(**kw), "query": query}), NOW_MS)


def nothing_found(reply: ContextReply) -> bool:
    return reply.prompt is None and not reply.items and sum(reply.totals.values()) == 0


# --- tenancy -------------------------------------------------------------------------------


async def test_same_user_and_thread_get_the_working_lines_in_the_prompt(engine: Engine) -> None:
    await record(engine)
    reply = await ask(engine.search)
    assert reply.prompt is not None
    assert re.search(rf"\[WORKING \d{{4}}-\d\d-\d\d\] {re.escape(ASSISTANT_LINE)}\n", reply.prompt)
    assert f"{ASSISTANT_LINE}\n{USER_LINE}" in reply.prompt
    assert reply.totals == {
        "working": 1,
        "scene": 1,
        "graph": 0,
        "patterns": 0,
        "archives": 0,
        "vectors": 1,
    }
    assert reply.cached is False
    assert reply.context_id.startswith("ctx_")


async def test_another_user_of_the_same_agent_gets_nothing(engine: Engine) -> None:
    await record(engine)
    assert nothing_found(await ask(engine.search, userAddress="U2"))


async def test_a_user_less_scope_does_not_see_a_users_memory(engine: Engine) -> None:
    await record(engine)
    body = {"agentWallet": AGENT, "threadId": "T1", "query": QUERY}
    assert nothing_found(await engine.search.context(context_request(body), NOW_MS))


async def test_another_agent_gets_nothing(engine: Engine) -> None:
    await record(engine)
    assert nothing_found(await ask(engine.search, agentWallet="0xOther"))


async def test_agent_ids_are_case_sensitive(engine: Engine) -> None:
    await record(engine)
    assert nothing_found(await ask(engine.search, agentWallet=AGENT.lower()))


async def test_vectors_find_a_turn_from_another_thread_of_the_same_user(engine: Engine) -> None:
    await record(engine, threadId="T1")
    reply = await ask(engine.search, threadId="T2", layers=["working", "scene", "vectors"])
    assert reply.totals == {"working": 0, "scene": 0, "vectors": 1}
    assert reply.prompt is not None
    assert "[VECTORS 2021-03-04]" in reply.prompt  # the turn's event date (issue 16)
    assert "Lisbon" in reply.prompt


async def test_vectors_do_not_find_another_users_turn(engine: Engine) -> None:
    await record(engine, userAddress="U1", threadId="T1")
    reply = await ask(engine.search, userAddress="U2", threadId="T2", layers=["vectors"])
    assert reply.totals == {"vectors": 0}
    assert reply.prompt is None


async def test_unrelated_query_finds_no_vectors(engine: Engine) -> None:
    await record(engine)
    reply = await ask(engine.search, query="favourite colour", layers=["vectors"])
    assert reply.totals == {"vectors": 0}


async def test_totals_cover_exactly_the_requested_layers(engine: Engine) -> None:
    await record(engine)
    reply = await ask(engine.search, layers=["graph", "patterns", "working"])
    assert reply.totals == {"graph": 0, "patterns": 0, "working": 1}


# --- cache ---------------------------------------------------------------------------------


async def test_second_identical_request_is_served_from_the_cache(engine: Engine) -> None:
    await record(engine)
    first = await ask(engine.search)
    second = await ask(engine.search)
    assert (first.cached, second.cached) == (False, True)
    assert second.prompt == first.prompt
    assert second.totals == first.totals


async def test_a_different_query_is_not_served_from_the_cache(engine: Engine) -> None:
    await record(engine)
    await ask(engine.search)
    assert (await ask(engine.search, query="Lisbon spring")).cached is False


async def test_invalidating_the_written_scope_makes_the_next_request_miss(engine: Engine) -> None:
    await ask(engine.search)
    await record(engine)
    assert (await ask(engine.search)).cached is True  # stale until invalidated

    bumped = await invalidate(engine.cache, Scope.parse(scope_body()), layers=TURN_LAYERS)
    assert bumped == 3  # agent, user, thread: never the global key
    reply = await ask(engine.search)
    assert reply.cached is False
    assert reply.totals["working"] == 1


async def test_invalidating_a_thread_of_the_same_user_makes_durable_reads_miss(
    engine: Engine,
) -> None:
    await ask(engine.search, threadId="T2")
    await invalidate(engine.cache, Scope.parse({"agentWallet": AGENT, "userAddress": "U1"}))
    assert (await ask(engine.search, threadId="T2")).cached is False


async def test_a_write_to_another_agents_scope_does_not_invalidate(engine: Engine) -> None:
    await ask(engine.search)
    await invalidate(engine.cache, Scope.parse(scope_body(agentWallet="0xOther")))
    await invalidate(engine.cache, Scope.parse(scope_body(agentWallet=AGENT.lower())))
    assert (await ask(engine.search)).cached is True


async def test_a_failing_layer_is_absent_and_the_result_is_not_cached_fixes_16_22(
    engine: Engine,
) -> None:
    await record(engine)
    search = engine.with_working(FailingWorkingStore())

    first = await ask(search)
    assert "working" not in first.totals
    assert first.totals == {"scene": 1, "graph": 0, "patterns": 0, "archives": 0, "vectors": 1}
    assert first.prompt is not None
    assert "[WORKING]" not in first.prompt
    second = await ask(search)
    assert second.cached is False
    assert engine.cache.values == {}


async def test_a_programming_error_in_a_layer_propagates(engine: Engine) -> None:
    search = engine.with_working(BrokenWorkingStore())
    with pytest.raises(RuntimeError, match="bug"):
        await ask(search)


async def test_the_query_is_embedded_once_per_request_fixes_16_22(engine: Engine) -> None:
    await record(engine)
    engine.embedder.calls.clear()

    await ask(engine.search)
    assert engine.embedder.calls == [("query", 1)]
    await ask(engine.search)  # cached: no embedding at all
    assert engine.embedder.calls == [("query", 1)]
    await ask(engine.search, query="Lisbon spring")
    assert engine.embedder.query_calls() == 2


async def test_text_layers_share_the_one_query_embedding(engine: Engine) -> None:
    await record(engine)
    engine.embedder.calls.clear()
    await ask(engine.search, layers=["working", "scene"])
    assert engine.embedder.calls == [("query", 1)]


# --- layer_search ---------------------------------------------------------------------------


async def test_layer_search_returns_raw_items_and_totals(engine: Engine) -> None:
    await record(engine)
    request = LayerSearchRequest(
        scope=Scope.parse(scope_body()), query=QUERY, layers=["working", "vectors"], limit=5
    )
    reply = await engine.search.layer_search(request, NOW_MS)

    assert reply.query == QUERY
    assert reply.totals == {"working": 1, "vectors": 1}
    [working] = reply.layers["working"]
    assert working["sessionId"] == f"session:global:{AGENT}:T1"
    assert working["context"] == [ASSISTANT_LINE, USER_LINE]
    [vector] = reply.layers["vectors"]
    assert vector["vectorId"].startswith("vec_")
    assert vector["content"] == f"{USER_LINE}\n{ASSISTANT_LINE}"
    assert (vector["agentWallet"], vector["userAddress"], vector["source"]) == (
        AGENT,
        "U1",
        "session",
    )
    assert vector["createdAt"] == to_ms(T0)
    assert 0.25 <= vector["score"] <= 1.0
    assert reply.cached is False
    assert (await engine.search.layer_search(request, NOW_MS)).cached is True


async def test_include_raw_returns_the_layer_items(engine: Engine) -> None:
    await record(engine)
    reply = await ask(engine.search, includeRaw=True, layers=["working"])
    assert reply.raw is not None
    assert reply.raw["working"][0]["context"] == [ASSISTANT_LINE, USER_LINE]
    assert (await ask(engine.search, layers=["working"])).raw is None


# --- the in-process tier -------------------------------------------------------------------


class CountingWorkingStore:
    """A working store that counts its reads."""

    def __init__(self, inner: WorkingStore) -> None:
        self.inner = inner
        self.reads = 0

    async def append(self, lines: WorkingAppend, keep: int) -> bool:
        return await self.inner.append(lines, keep)

    async def recent(self, where: TenantFilter, limit: int) -> list[WorkingBuffer]:
        self.reads += 1
        return await self.inner.recent(where, limit)


async def test_new_questions_reuse_the_text_layers_reads_until_the_scope_is_written(
    engine: Engine,
) -> None:
    await record(engine)
    counting = CountingWorkingStore(engine.search.working)
    search = engine.with_working(counting)
    await ask(search, query="Where do I live?")
    await ask(search, query="Which city did I move to?")  # a miss of the query cache
    assert counting.reads == 1

    await record(engine, at=T0 + timedelta(minutes=5), userMessage="I moved again, to Porto")
    await invalidate(engine.cache, Scope.parse(scope_body()))
    reply = await ask(search, query="Did I move to Porto?")
    assert counting.reads == 2  # the bumped namespace is a new token: read again
    assert reply.prompt is not None
    assert "Porto" in reply.prompt


class CountingPatternStore:
    """A pattern store that counts its reads."""

    def __init__(self, inner: PatternStore) -> None:
        self.inner = inner
        self.reads = 0

    async def upsert(self, pattern: PatternRecord) -> None:
        await self.inner.upsert(pattern)

    async def active(self, where: TenantFilter, limit: int) -> list[PatternRecord]:
        self.reads += 1
        return await self.inner.active(where, limit)


def test_a_write_bumps_its_chain_and_the_families_of_its_layers_only() -> None:
    scope = Scope.parse(scope_body())
    chain = namespace_chain(scope)
    assert invalidation_keys(scope, TURN_LAYERS) == chain
    assert invalidation_keys(scope, ["patterns"]) == [*chain, *family_chain(scope, "patterns")]
    assert invalidation_keys(scope, ["graph", "vectors"]) == [
        *chain,
        *family_chain(scope, "relations"),
    ]
    every = [*chain, *(k for f in TOKEN_FAMILIES for k in family_chain(scope, f))]
    assert invalidation_keys(scope) == every  # a write that does not say what it changed
    assert invalidation_keys(scope, ["working", "a-layer-of-a-later-build"]) == every
    assert not set(every) & {GLOBAL_NAMESPACE}


def test_only_a_write_that_names_no_user_bumps_the_agents_shared_rows() -> None:
    """Issue 28: a user's turn leaves the agent's user-less rows' counter alone, so a search
    widened to them need not read them back; agent knowledge (no user) moves it."""
    user = Scope.parse(scope_body())
    agent = Scope.parse({"agentWallet": user.agent_wallet})
    assert not set(invalidation_keys(user, TURN_LAYERS)) & set(shared_chain(user))
    assert set(shared_chain(agent)) <= set(invalidation_keys(agent, ["vectors"]))
    assert shared_chain(agent) == shared_chain(user)  # one counter per agent


async def test_a_turn_keeps_the_tenants_pattern_read_and_a_pattern_write_drops_it(
    engine: Engine,
) -> None:
    """Issue 28: a token per layer family. A turn (working, scene, vectors) changes neither
    the tenant's patterns, archives nor graph links, so their in-process reads survive it;
    a write announced for patterns makes the next request read them again."""
    await record(engine)
    counting = CountingPatternStore(engine.search.patterns)
    search = dataclasses.replace(engine.search, patterns=counting)
    await ask(search, query="Where do I live?")
    assert counting.reads == 1

    await record(engine, at=T0 + timedelta(minutes=5), userMessage="I moved again, to Porto")
    await invalidate(engine.cache, Scope.parse(scope_body()), layers=TURN_LAYERS)
    reply = await ask(search, query="Did I move to Porto?")
    assert reply.prompt is not None
    assert "Porto" in reply.prompt  # the turn is read
    assert counting.reads == 1  # the patterns are not

    await invalidate(engine.cache, Scope.parse(scope_body()).tenant(), layers=["patterns"])
    await ask(search, query="Where do I live now?")
    assert counting.reads == 2
    await invalidate(engine.cache, Scope.parse(scope_body()))  # every family
    await ask(search, query="Where did I live?")
    assert counting.reads == 3


class HeldQueries(WrappedEmbedder):
    """HashingEmbedder whose queries wait until `release` is set (documents do not)."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder()
        self.release = asyncio.Event()

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        if input_type == "query":
            await self.release.wait()
        return await self.inner.embed(texts, input_type)


async def test_the_index_catches_up_while_the_query_is_embedded() -> None:
    """Issue 28: after a write, the tenant's rows are read back (a delta) during the query's
    embedding, not after it, so the store's round trips overlap the model."""
    held = HeldQueries()
    ports = InMemoryPorts(held)
    engine = Engine(ports.recorder(), ports.search(), ports.cache, CountingEmbedder())
    await record(engine)
    index = engine.search.index
    assert isinstance(index, ExactVectorIndex)
    asking = asyncio.create_task(ask(engine.search))
    for _ in range(50):  # a few turns of the loop: the in-memory store answers at once
        if index.loads:
            break
        await asyncio.sleep(0)
    assert index.loads == 1  # the tenant is loaded while the query still waits
    assert not asking.done()
    held.release.set()
    reply = await asking
    assert reply.totals["vectors"] >= 1
    assert index.loads == 1


async def test_graph_and_vectors_scan_one_matrix_per_tenant(engine: Engine) -> None:
    await record(engine)
    reply = await ask(engine.search)
    assert reply.totals["vectors"] >= 1
    index = engine.search.index
    assert isinstance(index, ExactVectorIndex)
    assert index.loads == 1  # the graph layer once read the tenant's rows a second time
