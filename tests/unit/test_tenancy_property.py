"""Zero cross-tenant results, as a property: whatever is stored for whichever tenants, a read
returns only rows of its own agent and user (reference §16.2, §16.3, §16.12).

A user-less scope sees only user-less rows; a user's scope sees that user's rows, plus the
agent's user-less (agent-wide) patterns and, in the vectors layer, the agent's user-less
knowledge (issue 17 §4). `mode` / `haiId` constrain when the scope sets them,
`threadId` constrains the thread layers (working, scene).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.adapters.memory import (
    HashingEmbedder,
    InMemoryArchiveStore,
    InMemoryMemoryStore,
    InMemoryPatternStore,
    InMemoryQueryCache,
    InMemoryTranscriptStore,
    InMemoryWorkingStore,
)
from engine.ingest.knowledge import index_document
from engine.ingest.remember import Rememberer
from engine.ingest.turns import TurnRecorder
from engine.records import ArchiveRecord, PatternRecord, ScopeFields
from engine.retrieval.search import MemorySearch
from engine.retrieval.vector_index import ExactVectorIndex
from schemas.ids import to_ms
from schemas.inputs import context_request, memory_remembered, turn_recorded
from schemas.requests import ALL_LAYERS, LayerSearchRequest
from schemas.scope import Scope

T0 = datetime(2024, 1, 1, tzinfo=UTC)
NOW_MS = to_ms(T0 + timedelta(days=2))
AGENTS = ("0xA1", "0xA2")
USERS = (None, "U1", "U2")
MODES = ((None, None), ("global", None), ("local", "H1"), ("local", "H2"), (None, "H1"))
THREADS = ("T1", "T2")
MARK = "zqmark"
MARKS = re.compile(r"\bzqmark(\d+)\b")
WORDS = [
    "coffee",
    "lisbon",
    "greyhound",
    "violin",
    "budget",
    "garden",
    "router",
    "pasta",
    "travel",
    "kitchen",
    "sister",
    "doctor",
    "flights",
    "cabinets",
    "morning",
]


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

    def fields(self) -> ScopeFields:
        return ScopeFields(self.agent, self.user, None, self.mode, self.hai)


tenants = st.builds(
    lambda agent, user, mode_hai, thread: Tenant(agent, user, *mode_hai, thread),
    st.sampled_from(AGENTS),
    st.sampled_from(USERS),
    st.sampled_from(MODES),
    st.sampled_from(THREADS),
)
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join)
writes = st.lists(
    st.tuples(
        st.sampled_from(["turn", "fact", "pattern", "archive", "knowledge"]), tenants, texts, texts
    ),
    min_size=1,
    max_size=10,
)
Write = tuple[str, Tenant, str, str]
Read = tuple[Tenant, str | None, str, int]


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[Write], list[Read]]:
    """Writes, then reads: by a writer or any tenant, in its own thread, a foreign one or none,
    asking for a stored text or random words."""
    stored = draw(writes)
    writers = [tenant for _, tenant, _, _ in stored]
    written = [text for _, _, text, _ in stored]
    queries: list[Read] = []
    for _ in range(draw(st.integers(1, 3))):
        reader = draw(st.one_of(st.sampled_from(writers), tenants))
        other = draw(st.one_of(st.sampled_from(writers), tenants))
        thread = draw(st.sampled_from([reader.thread, other.thread, None]))
        query = draw(st.one_of(st.sampled_from(written), texts))
        queries.append((reader, thread, query, draw(st.integers(1, 5))))
    return stored, queries


@dataclass
class World:
    search: MemorySearch
    recorder: TurnRecorder
    rememberer: Rememberer
    patterns: InMemoryPatternStore
    archives: InMemoryArchiveStore
    owners: dict[str, Tenant] = field(default_factory=dict)
    """Item id (fact, turn row, pattern, archive, turn) → the tenant that wrote it."""
    facts: list[tuple[Tenant, str, str]] = field(default_factory=list)
    """Inserted facts: (tenant, content, vector id)."""
    knowledge: set[str] = field(default_factory=set)
    """Ids of knowledge rows (the agent's user-less ones are read by its every user)."""

    def own(self, item_id: str, tenant: Tenant) -> None:
        assert item_id not in self.owners, f"{item_id} written twice"
        self.owners[item_id] = tenant


def new_world() -> World:
    transcripts, working, memory = (
        InMemoryTranscriptStore(),
        InMemoryWorkingStore(),
        InMemoryMemoryStore(),
    )
    embedder = HashingEmbedder(64)
    patterns, archives = InMemoryPatternStore(), InMemoryArchiveStore()
    search = MemorySearch(
        transcripts=transcripts,
        working=working,
        patterns=patterns,
        archives=archives,
        index=ExactVectorIndex(memory),
        embedder=embedder,
        cache=InMemoryQueryCache(),
    )
    return World(
        search,
        TurnRecorder(transcripts, working, memory, embedder),
        Rememberer(memory, embedder),
        patterns,
        archives,
    )


async def write(w: World, i: int, kind: str, tenant: Tenant, text: str, other: str) -> None:
    at = T0 + timedelta(minutes=i)
    embedder = w.search.embedder
    if kind == "turn":
        # the marker word names the turn in working lines, which carry no tenant fields
        body = {**tenant.body(), "turnId": f"turn{i}", "userMessage": f"{text} {MARK}{i}"}
        stored = await w.recorder.record(turn_recorded({**body, "assistantMessage": other}, now=at))
        w.own(stored.vector_id, tenant)
        w.own(f"turn{i}", tenant)
    elif kind == "fact":
        fact = await w.rememberer.remember(memory_remembered({**tenant.body(), "content": text}))
        if fact.inserted:  # else the row is the earlier writer's (same tenant, same text)
            w.own(fact.vector_id, tenant)
            w.facts.append((tenant, text, fact.vector_id))
    elif kind == "knowledge":
        memory = w.rememberer.memory
        for row_id in await index_document(
            memory,
            embedder,
            scope=tenant.fields(),
            content=f"{text} {other}",
            key=f"doc{i}",
            source_format="text",
            uri=None,
            at=to_ms(at),
        ):
            w.own(row_id, tenant)
            w.knowledge.add(row_id)
    elif kind == "pattern":
        [vector] = await embedder.embed([text], "document")
        pattern_id = f"pattern{i}"
        await w.patterns.upsert(
            PatternRecord(
                pattern_id=pattern_id,
                scope=tenant.fields(),
                pattern_type="tool_sequence",
                trigger_type="tool_sequence",
                trigger_value=other,
                steps=other.split(),
                summary=text,
                success_rate=0.5,
                execution_count=3,
                last_executed=to_ms(at),
                created_at=to_ms(at),
                embedding=vector,
                embedding_model=embedder.model,
            )
        )
        w.own(pattern_id, tenant)
    else:
        [vector] = await embedder.embed([text], "document")
        archive_id = f"archive{i}"
        await w.archives.insert_if_absent(
            ArchiveRecord(
                archive_id=archive_id,
                scope=tenant.fields(),
                summary=text,
                topics=other.split(),
                entry_count=1,
                start=to_ms(at),
                end=to_ms(at),
                created_at=to_ms(at),
                embedding=vector,
                embedding_model=embedder.model,
            )
        )
        w.own(archive_id, tenant)


def admitted(
    owner: Tenant, reader: Tenant, thread: str | None, layer: str, knowledge: bool = False
) -> bool:
    shared = layer == "patterns" or (layer == "vectors" and knowledge)
    users = (reader.user, None) if shared and reader.user else (reader.user,)
    return (
        owner.agent == reader.agent
        and owner.user in users
        # a "global" reader also sees mode-less rows of its tenant (§16.12); "local" only local
        and (
            reader.mode is None
            or owner.mode == reader.mode
            or (reader.mode == "global" and owner.mode is None)
        )
        and (reader.hai is None or owner.hai == reader.hai)
        and (layer not in ("working", "scene") or thread is None or owner.thread == thread)
    )


def written_by(layer: str, item_id: str, text: str, raw: dict[str, Any] | None) -> list[str]:
    """The registry keys of what a layer item holds: working buffers by the turn markers in
    their lines, scene turns by turn id, every other layer by its item id."""
    if layer == "working":
        marks = [f"turn{n}" for n in MARKS.findall(text)]
        assert marks, f"working item without a turn marker: {text!r}"
        return marks
    if layer == "scene":
        turn = raw["turnId"] if raw is not None else item_id.rpartition("#")[2]
        return [str(turn)]
    return [item_id]


def check(
    w: World,
    layer: str,
    item_id: str,
    text: str,
    reader: Tenant,
    thread: str | None,
    raw: dict[str, Any] | None = None,
) -> int:
    for key in written_by(layer, item_id, text, raw):
        owner = w.owners.get(key)
        assert owner is not None, f"{layer} returned {key!r}, which no write produced"
        assert admitted(owner, reader, thread, layer, key in w.knowledge), (
            f"{layer} item {key!r} of {owner} leaked to {reader} (thread {thread})"
        )
    return 1


def raw_check(w: World, layer: str, raw: dict[str, Any], reader: Tenant, thread: str | None) -> int:
    if layer == "working":
        return check(w, layer, "", "\n".join(raw["context"]), reader, thread)
    if layer == "scene":
        return check(w, layer, "", "", reader, thread, raw)
    if layer in ("graph", "vectors"):
        users = (reader.user, None) if raw["source"] == "knowledge" else (reader.user,)
        assert raw["agentWallet"] == reader.agent
        assert raw["userAddress"] in users
        return check(w, layer, str(raw["id"]), "", reader, thread)
    key = "patternId" if layer == "patterns" else "archiveId"
    return check(w, layer, str(raw[key]), "", reader, thread)


async def scenario(stored: list[Write], queries: list[Read]) -> int:
    """Run the writes, then check every item and raw hit of every read; returns how many."""
    w = new_world()
    for i, (kind, tenant, text, other) in enumerate(stored):
        await write(w, i, kind, tenant, text, other)

    seen = 0
    for reader, thread, query, limit in queries:
        body = {**reader.body(), "query": query, "limit": limit, "includeRaw": True}
        if thread is None:
            del body["threadId"]
        else:
            body["threadId"] = thread
        reply = await w.search.context(context_request(body), NOW_MS)
        for item in reply.items:
            assert item.id is not None
            seen += check(w, item.layer, item.id, item.text, reader, thread)
        for layer, items in (reply.raw or {}).items():
            seen += sum(raw_check(w, layer, raw, reader, thread) for raw in items)

        request = LayerSearchRequest(
            scope=Scope.parse(body), query=query, layers=list(ALL_LAYERS), limit=limit
        )
        found = await w.search.layer_search(request, NOW_MS)
        for layer, items in found.layers.items():
            seen += sum(raw_check(w, layer, raw, reader, thread) for raw in items)

    # a positive control, so the property is not vacuously true: a tenant finds its own fact
    for tenant, content, vector_id in w.facts[:2]:
        body = {**tenant.body(), "query": content, "limit": 20}
        request = LayerSearchRequest(scope=Scope.parse(body), query=content, layers=["graph"])
        found = await w.search.layer_search(request, NOW_MS)
        assert vector_id in [item["id"] for item in found.layers["graph"]]
    return seen


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_no_read_ever_returns_another_tenants_rows(
    scenario_: tuple[list[Write], list[Read]],
) -> None:
    asyncio.run(scenario(*scenario_))


def test_the_property_sees_hits_when_a_tenant_reads_its_own_writes() -> None:
    tenant = Tenant("0xA1", "U1", None, None, "T1")
    other = Tenant("0xA1", "U2", None, None, "T1")
    stored = [
        ("turn", tenant, "coffee lisbon", "morning coffee"),
        ("fact", tenant, "coffee lisbon morning", ""),
        ("pattern", Tenant("0xA1", None, None, None, "T1"), "coffee morning", "brew pour"),
        ("archive", tenant, "coffee lisbon travel", "coffee"),
        ("turn", other, "coffee lisbon", "morning coffee"),
        ("fact", other, "coffee lisbon morning", ""),
    ]
    seen = asyncio.run(scenario(stored, [(tenant, tenant.thread, "coffee lisbon morning", 5)]))
    assert seen >= 6  # items and raw hits of every layer were checked, none foreign


async def test_every_user_of_an_agent_reads_its_knowledge_and_no_other_agent_does() -> None:
    w = new_world()
    agent = Tenant("0xA1", None, None, None, "T1")
    stored = [
        ("knowledge", agent, "coffee lisbon morning", "roastery guide"),
        ("knowledge", Tenant("0xA1", "U2", None, None, "T1"), "coffee lisbon", "my notes"),
        ("fact", Tenant("0xA1", "U2", None, None, "T1"), "coffee lisbon morning order", ""),
        ("turn", agent, "coffee lisbon morning", "the agent's own turn"),
    ]
    for i, (kind, tenant, text, other) in enumerate(stored):
        await write(w, i, kind, tenant, text, other)
    shared = {k for k in w.knowledge if w.owners[k] == agent}
    query = {"query": "coffee lisbon morning", "layers": ["vectors"], "includeRaw": True}
    for reader in (
        Tenant("0xA1", "U1", None, None, "T1"),
        Tenant("0xA1", "U3", "global", None, "T9"),
    ):
        reply = await w.search.context(context_request({**reader.body(), **query}), NOW_MS)
        assert {i.id for i in reply.items} == shared  # nothing of U2, nor the agent's turn
        for item in reply.items:
            check(w, item.layer, str(item.id), item.text, reader, None)
    foreign = Tenant("0xA2", "U1", None, None, "T1")
    reply = await w.search.context(context_request({**foreign.body(), **query}), NOW_MS)
    assert reply.items == []


# --- shared thread ids ---------------------------------------------------------------------------


async def shared_thread_reply(first: dict[str, Any], second: dict[str, Any]) -> list[str]:
    """`first` and then `second` record a turn in thread "T1"; what `first` reads back."""
    w = new_world()
    await w.recorder.record(
        turn_recorded(
            {
                **first,
                "threadId": "T1",
                "userMessage": "coffee in lisbon",
                "assistantMessage": "ok",
            },
            now=T0,
        )
    )
    await w.recorder.record(
        turn_recorded(
            {
                **second,
                "threadId": "T1",
                "userMessage": "my secret coffee order",
                "assistantMessage": "noted",
            },
            now=T0 + timedelta(minutes=1),
        )
    )
    body = {**first, "threadId": "T1", "query": "coffee", "layers": ["working", "scene"]}
    reply = await w.search.context(context_request({**body, "includeRaw": True}), NOW_MS)
    return [item.text for item in reply.items]


async def test_two_users_of_an_agent_sharing_a_thread_id_do_not_see_each_others_turns() -> None:
    texts = await shared_thread_reply(
        {"agentWallet": "0xA1", "userAddress": "U1"}, {"agentWallet": "0xA1", "userAddress": "U2"}
    )
    assert texts
    assert not any("secret" in t for t in texts)


async def test_two_agents_sharing_a_hai_and_thread_id_do_not_see_each_others_turns() -> None:
    texts = await shared_thread_reply(
        {"agentWallet": "0xA1", "mode": "local", "haiId": "H1"},
        {"agentWallet": "0xA2", "mode": "local", "haiId": "H1"},
    )
    assert texts
    assert not any("secret" in t for t in texts)
