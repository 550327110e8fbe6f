"""Tenant isolation under hostile identifiers: agents and users whose ids look like regexes,
operators, dotted paths, differ only by case or carry RTL marks and emoji write turns and
facts; reads by random scopes (every layer, the newest-facts listing and, on MongoDB, working
sessions by id) return nothing of another agent, nor of another user when the scope names one
(and only user-less rows when it does not). Over the in-memory ports (many
examples) and the real MongoDB adapters (fewer, `integration`).

tests/unit/test_tenancy_property.py covers every layer with well-behaved ids; this one is
about ids an attacker chooses (a regex or `$ne` as a wallet must match only itself).
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import AsyncMongoClient, MongoClient

from engine.adapters.memory import (
    HashingEmbedder,
    InMemoryArchiveStore,
    InMemoryPatternStore,
    InMemoryQueryCache,
    InMemoryTranscriptStore,
    InMemoryWorkingStore,
)
from engine.adapters.memory.items import InMemoryItemStore
from engine.adapters.mongo import (
    MongoMemoryStore,
    MongoTranscriptStore,
    MongoWorkingStore,
    ensure_schema,
)
from engine.adapters.mongo.items import MongoItemStore
from engine.adapters.mongo.sessions import MongoSessionStore
from engine.ingest.remember import Rememberer
from engine.ingest.turns import TurnRecorder
from engine.ports import MemoryStore, TranscriptStore, WorkingStore
from engine.retrieval.search import MemorySearch
from engine.retrieval.vector_index import ExactVectorIndex
from engine.scoping import tenant_filter
from engine.upkeep.items import ItemStore
from engine.upkeep.listings import newest_facts
from engine.upkeep.sessions import SessionStore
from schemas.ids import thread_session_id, to_ms
from schemas.inputs import memory_remembered, turn_recorded
from schemas.requests import ALL_LAYERS, LayerSearchRequest
from schemas.scope import Scope
from services.endpoints import Endpoints

T0 = datetime(2024, 1, 1, tzinfo=UTC)
NOW_MS = to_ms(T0 + timedelta(days=1))
AGENTS = ["0xA1", "0xa1", ".*", "^0x", "$ne", "a.b", "0xA1\u200f", "\u202e1Ax0", "😀", "a:b", "%3A"]
USERS = [None, "u1", "U1", ".*", "$regex", "u.1", "😀", "u 1"]
MODES = [(None, None), ("global", None), ("local", "h.1"), ("local", "$h")]
WORDS = ["coffee", "lisbon", "violin", "garden", "router", "pasta", "sister", "flights"]
MARK = re.compile(r"zqm(\d+)x")


@dataclass(frozen=True)
class Tenant:
    agent: str
    user: str | None
    mode: str | None
    hai: str | None
    thread: str

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"agentWallet": self.agent, "threadId": self.thread}
        for key, value in (("userAddress", self.user), ("mode", self.mode), ("haiId", self.hai)):
            if value is not None:
                body[key] = value
        return body

    def scope(self) -> Scope:
        return Scope.parse(self.body())


tenants = st.builds(
    lambda agent, user, mode_hai, thread: Tenant(agent, user, *mode_hai, thread),
    st.sampled_from(AGENTS),
    st.sampled_from(USERS),
    st.sampled_from(MODES),
    st.sampled_from(["t1", "T1", "t.*"]),
)
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
Write = tuple[str, Tenant, str]
writes = st.lists(
    st.tuples(st.sampled_from(["turn", "fact"]), tenants, texts), min_size=1, max_size=8
)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[Write], list[tuple[Tenant, str]]]:
    """Writes, then reads by a writer or any tenant, asking for a written text or others."""
    stored = draw(writes)
    readers = st.one_of(st.sampled_from([t for _, t, _ in stored]), tenants)
    queries = st.one_of(st.sampled_from([x for _, _, x in stored]), texts)
    return stored, draw(st.lists(st.tuples(readers, queries), min_size=1, max_size=3))


@dataclass
class Ports:
    transcripts: TranscriptStore
    working: WorkingStore
    memory: MemoryStore
    items: ItemStore
    sessions: SessionStore | None = None
    """Working sessions by id (MongoDB: the documents the working store writes)."""
    owners: dict[int, Scope] = field(default_factory=dict)

    def __post_init__(self) -> None:
        embedder = HashingEmbedder(64)
        self.recorder = TurnRecorder(self.transcripts, self.working, self.memory, embedder)
        self.rememberer = Rememberer(self.memory, embedder)
        self.search = MemorySearch(
            transcripts=self.transcripts,
            working=self.working,
            patterns=InMemoryPatternStore(),
            archives=InMemoryArchiveStore(),
            index=ExactVectorIndex(self.memory),
            embedder=embedder,
            cache=InMemoryQueryCache(),
        )


def in_memory() -> Ports:
    memory = InMemoryItemStore()  # a memory store that also lists items
    return Ports(InMemoryTranscriptStore(), InMemoryWorkingStore(), memory, memory)


async def run(ports: Ports, writes: list[Write], reads: list[tuple[Tenant, str]]) -> int:
    """Write (each text carries a marker naming its write), then read with every layer; fail
    on any hit whose marker or tenant fields belong to another agent or user. Returns how
    many marked hits were checked."""
    for i, (kind, tenant, text) in enumerate(writes):
        marked = f"{text} zqm{i}x"
        ports.owners[i] = tenant.scope()
        if kind == "turn":
            body = {**tenant.body(), "userMessage": marked, "assistantMessage": f"ok zqm{i}x"}
            await ports.recorder.record(turn_recorded(body, now=T0 + timedelta(minutes=i)))
        else:
            await ports.rememberer.remember(memory_remembered({**tenant.body(), "content": marked}))
    seen = 0
    for reader, query in reads:
        scope = reader.scope()
        request = LayerSearchRequest(scope=scope, query=query, layers=list(ALL_LAYERS), limit=20)
        found = await ports.search.layer_search(request, NOW_MS)
        for layer, hits in found.layers.items():
            for hit in hits:
                seen += check(ports, scope, layer, hit)
        where = tenant_filter(scope, durable=True)
        for row in await newest_facts(ports.items, where, 200):  # GET /api/memory/{agent}
            seen += check(ports, scope, "newest facts", {"content": row.content})
            assert (row.scope.agent_wallet, row.scope.user_address) == (
                scope.agent_wallet,
                scope.user_address,
            ), f"newest facts leaked {row.scope} to {scope}"
        if ports.sessions is not None:  # GET /api/memory/sessions/{id}/working
            for owner in {o for o in ports.owners.values()}:
                session = await ports.sessions.touch(where, thread_session_id(owner), NOW_MS)
                if session is not None:
                    seen += check(ports, scope, "session", {"lines": session.context})
                    assert (session.scope.agent_wallet, session.scope.user_address) == (
                        scope.agent_wallet,
                        scope.user_address,
                    ), f"session of {session.scope} read by {scope}"
    return seen


def check(ports: Ports, reader: Scope, layer: str, hit: dict[str, Any]) -> int:
    if "agentWallet" in hit:
        assert hit["agentWallet"] == reader.agent_wallet, f"{layer} leaked {hit}"
    if "userAddress" in hit:
        assert hit["userAddress"] == reader.user_address, f"{layer} leaked {hit}"
    marks = MARK.findall(json.dumps(hit, ensure_ascii=False))
    for mark in marks:
        owner = ports.owners[int(mark)]
        assert owner.agent_wallet == reader.agent_wallet, f"{layer}: {owner} leaked to {reader}"
        # a scope with a user sees that user's rows; one without sees user-less rows only
        assert owner.user_address == reader.user_address, f"{layer}: {owner} leaked to {reader}"
    return len(marks)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_hostile_ids_never_read_another_tenants_rows(
    scenario: tuple[list[Write], list[tuple[Tenant, str]]],
) -> None:
    asyncio.run(run(in_memory(), *scenario))


def test_the_property_sees_a_tenants_own_rows() -> None:
    """A positive control, so the property is not vacuously true."""
    own = Tenant(".*", "$regex", None, None, "t1")
    other = Tenant("0xA1", "u1", None, None, "t1")
    writes = [
        ("turn", own, "coffee lisbon"),
        ("fact", own, "coffee garden"),
        *[(kind, other, "coffee lisbon garden") for kind in ("turn", "fact")],
    ]
    seen = asyncio.run(run(in_memory(), writes, [(own, "coffee lisbon garden")]))
    assert seen >= 3


# --- the same property over the real MongoDB adapters --------------------------------------


@pytest.fixture
def mongo_db(stack: Endpoints) -> Iterator[str]:
    name = f"hostile_{uuid.uuid4().hex[:12]}"
    yield name
    with MongoClient(stack.mongo_uri, serverSelectionTimeoutMS=10_000) as client:
        client.drop_database(name)


@asynccontextmanager
async def mongo_ports(uri: str, name: str) -> AsyncIterator[Ports]:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        uri, serverSelectionTimeoutMS=10_000
    )
    try:
        db = client[name]
        await ensure_schema(db)
        yield Ports(
            MongoTranscriptStore(db),
            MongoWorkingStore(db),
            MongoMemoryStore(db),
            MongoItemStore(db),
            MongoSessionStore(db),
        )
    finally:
        await client.close()


def prefixed(scenario: tuple[list[Write], list[tuple[Tenant, str]]], nonce: str) -> Any:
    """The scenario with every agent id prefixed by `nonce`: examples share one database but
    never each other's tenants."""

    def move(t: Tenant) -> Tenant:
        return Tenant(nonce + t.agent, t.user, t.mode, t.hai, t.thread)

    writes, reads = scenario
    return [(k, move(t), x) for k, t, x in writes], [(move(t), q) for t, q in reads]


@pytest.mark.integration
def test_hostile_ids_never_read_another_tenants_rows_in_mongodb(
    stack: Endpoints, mongo_db: str
) -> None:
    checked: list[int] = []

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(scenarios())
    def prop(scenario: tuple[list[Write], list[tuple[Tenant, str]]]) -> None:
        async def go() -> None:
            async with mongo_ports(stack.mongo_uri, mongo_db) as ports:
                checked.append(await run(ports, *prefixed(scenario, uuid.uuid4().hex[:6])))

        asyncio.run(go())

    prop()

    async def control() -> int:
        own = Tenant(uuid.uuid4().hex[:6] + "$ne", ".*", None, None, "t1")
        writes = [("turn", own, "coffee lisbon"), ("fact", own, "coffee garden")]
        async with mongo_ports(stack.mongo_uri, mongo_db) as ports:
            seen = await run(ports, writes, [(own, "coffee lisbon garden")])
            # the session and item checks are not vacuous either: the owner reads both
            where = tenant_filter(own.scope(), durable=True)
            assert ports.sessions is not None
            assert await ports.sessions.touch(where, thread_session_id(own.scope()), NOW_MS)
            assert await newest_facts(ports.items, where, 10)
            return seen

    assert asyncio.run(control()) >= 2
