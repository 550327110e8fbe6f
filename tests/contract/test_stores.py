"""One suite, two implementations: every store and cache port behaves the same in memory and
against the real server (MongoDB-wire server, Redis). The real cases are `integration`."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pytest
from redis.asyncio import Redis

from engine.adapters.memory import (
    InMemoryMemoryStore,
    InMemoryQueryCache,
    InMemoryTranscriptStore,
    InMemoryWorkingStore,
)
from engine.adapters.mongo import (
    MongoMemoryStore,
    MongoTranscriptStore,
    MongoWorkingStore,
    ensure_schema,
)
from engine.adapters.redis_cache import RedisQueryCache
from engine.errors import DependencyFailed, InputRejected, NotFound
from engine.ingest.outcomes import recorded_call
from engine.ingest.patterns import executions_from_transcript
from engine.ports import MemoryStore, QueryCache, TranscriptStore, WorkingStore
from engine.records import (
    MemoryRow,
    ScopeFields,
    StoredMessage,
    Transcript,
    TranscriptAppend,
    WorkingAppend,
)
from engine.scoping import TenantFilter
from engine.upkeep.transcripts import transcript_page
from tests.support.mongo import IMPLEMENTATIONS, mongo_database

T0 = 1_600_000_000_000
"""Milliseconds since epoch; every time below is an offset from it."""
DAY = 86_400_000

CACHES = [
    pytest.param("memory", id="memory"),
    pytest.param("redis", id="redis", marks=pytest.mark.integration),
]


@dataclass
class Stores:
    transcripts: TranscriptStore
    working: WorkingStore
    memory: MemoryStore


@pytest.fixture(params=IMPLEMENTATIONS)
async def stores(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[Stores]:
    if request.param == "memory":
        yield Stores(InMemoryTranscriptStore(), InMemoryWorkingStore(), InMemoryMemoryStore())
        return
    async with mongo_database(request.getfixturevalue("stack"), unique("db")) as db:
        await ensure_schema(db)
        yield Stores(MongoTranscriptStore(db), MongoWorkingStore(db), MongoMemoryStore(db))


# --- builders ------------------------------------------------------------------------------


def fields(
    agent: str = "A",
    user: str | None = "U1",
    thread: str | None = "T1",
    mode: str | None = None,
    hai: str | None = None,
) -> ScopeFields:
    return ScopeFields(
        agent_wallet=agent, user_address=user, thread_id=thread, mode=mode, hai_id=hai
    )


def where(
    agent: str = "A",
    user: str | None = "U1",
    thread: str | None = None,
    mode: str | None = None,
    hai: str | None = None,
) -> TenantFilter:
    return TenantFilter(
        agent_wallet=agent, user_address=user, thread_id=thread, mode=mode, hai_id=hai
    )


def turn(
    turn_id: str = "turn-1",
    session: str = "S1",
    scope: ScopeFields | None = None,
    at: int = T0,
    texts: tuple[str, ...] = ("hello", "hi there"),
    summary: str | None = "a summary",
    tokens: int = 10,
) -> TranscriptAppend:
    roles = ("user", "assistant")
    return TranscriptAppend(
        session_id=session,
        scope=scope or fields(),
        turn_id=turn_id,
        messages=[
            StoredMessage(role=roles[i % 2], content=text, timestamp=at + i)
            for i, text in enumerate(texts)
        ],
        summary=summary,
        token_count=tokens,
        at=at,
        metadata={"modelUsed": "m"},
    )


def lines(
    turn_id: str = "turn-1",
    session: str = "S1",
    scope: ScopeFields | None = None,
    at: int = T0,
    text: tuple[str, ...] = ("user: hello", "assistant: hi there"),
    state: dict[str, Any] | None = None,
) -> WorkingAppend:
    return WorkingAppend(
        session_id=session,
        scope=scope or fields(),
        turn_id=turn_id,
        lines=list(text),
        at=at,
        expires_at=at + 30 * DAY,
        state=state if state is not None else {"lastTurnId": turn_id},
    )


def unit(dim: int, seed: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    vec = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return vec / np.linalg.norm(vec)


def memory_row(
    vector_id: str = "vec-1",
    scope: ScopeFields | None = None,
    content: str = "the user lives in Lisbon",
    dim: int = 16,
    source: str = "session",
    metadata: dict[str, Any] | None = None,
    seed: int = 0,
) -> MemoryRow:
    return MemoryRow(
        vector_id=vector_id,
        scope=scope or fields(),
        content=content,
        embedding=unit(dim, seed),
        embedding_model=f"test-model-{dim}",
        source=source,
        created_at=T0,
        metadata=metadata or {},
        decay_score=0.75,
        access_count=2,
    )


def row_view(r: MemoryRow) -> tuple[Any, ...]:
    return (
        r.vector_id,
        r.content,
        r.embedding.tolist(),
        sorted(r.metadata.items()),
        r.access_count,
        r.invalid_at,
        r.superseded_by,
    )


def transcript_view(t: Transcript) -> tuple[Any, ...]:
    return (
        t.session_id,
        t.scope,
        [(m.role, m.content, m.timestamp, m.tool_calls) for m in t.messages],
        t.summary,
        t.token_count,
        t.created_at,
        t.updated_at,
    )


# --- TranscriptStore -----------------------------------------------------------------------


async def test_transcript_append_of_the_same_turn_twice_is_a_no_op(stores: Stores) -> None:
    assert await stores.transcripts.append(turn()) is True
    before = [transcript_view(t) for t in await stores.transcripts.recent(where(), 10)]

    assert await stores.transcripts.append(turn()) is False
    after = [transcript_view(t) for t in await stores.transcripts.recent(where(), 10)]
    assert after == before
    [(session, scope, messages, summary, tokens, created, updated)] = after
    assert (session, scope, summary, tokens, created, updated) == (
        "S1",
        fields(),
        "a summary",
        10,
        T0,
        T0,
    )
    assert messages == [("user", "hello", T0, None), ("assistant", "hi there", T0 + 1, None)]


async def test_transcript_appends_turns_and_sums_tokens(stores: Stores) -> None:
    await stores.transcripts.append(turn("t1", texts=("q1", "a1"), tokens=3))
    await stores.transcripts.append(turn("t2", at=T0 + 100, texts=("q2", "a2"), tokens=4))
    [t] = await stores.transcripts.recent(where(), 10)
    assert [m.content for m in t.messages] == ["q1", "a1", "q2", "a2"]
    assert (t.token_count, t.created_at, t.updated_at) == (7, T0, T0 + 100)


async def test_transcript_keeps_messages_sorted_when_an_older_turn_arrives_later(
    stores: Stores,
) -> None:
    await stores.transcripts.append(turn("late", at=T0 + 1000, texts=("q2", "a2")))
    await stores.transcripts.append(turn("early", at=T0, texts=("q1", "a1")))
    [t] = await stores.transcripts.recent(where(), 10)
    assert [(m.content, m.timestamp) for m in t.messages] == [
        ("q1", T0),
        ("a1", T0 + 1),
        ("q2", T0 + 1000),
        ("a2", T0 + 1001),
    ]
    assert (t.created_at, t.updated_at) == (T0, T0 + 1000)


async def test_transcript_summary_is_kept_when_a_turn_has_none(stores: Stores) -> None:
    await stores.transcripts.append(turn("t1", summary="first"))
    await stores.transcripts.append(turn("t2", at=T0 + 5, summary=None))
    [t] = await stores.transcripts.recent(where(), 10)
    assert t.summary == "first"
    await stores.transcripts.append(turn("t3", at=T0 + 9, summary="third"))
    [t] = await stores.transcripts.recent(where(), 10)
    assert t.summary == "third"


async def test_transcript_round_trips_tool_calls(stores: Stores) -> None:
    message = StoredMessage(
        role="tool",
        content="tool:search status:completed",
        timestamp=T0,
        tool_calls=[{"name": "search", "args": {"q": "Lisbon", "n": 3}}],
    )
    append = TranscriptAppend(
        session_id="S1",
        scope=fields(),
        turn_id="t1",
        messages=[message],
        summary=None,
        token_count=0,
        at=T0,
    )
    await stores.transcripts.append(append)
    [t] = await stores.transcripts.recent(where(), 10)
    assert t.messages == [message]
    assert t.summary is None


async def test_a_legacy_tool_message_without_a_status_reads_as_unknown(stores: Stores) -> None:
    # issue 17: a tool call stored without its status (before the status was always written,
    # or by another writer of the store) was recounted as a success by patterns_extract
    scope = fields()
    messages = [
        StoredMessage(role="user", content="book my flight", timestamp=T0, turn_id="t1"),
        StoredMessage(
            role="tool",
            content="tool:search_flights status:completed result:3 flights",
            timestamp=T0 + 1,
            tool_calls=[{"name": "search_flights", "args": {"to": "Lisbon"}}],
            turn_id="t1",
        ),
        StoredMessage(
            role="tool",
            content="tool:book_flight",
            timestamp=T0 + 2,
            tool_calls=[{"name": "book_flight", "args": {}}],
            turn_id="t1",
        ),
    ]
    append = TranscriptAppend("S1", scope, "t1", messages, None, 0, T0 + 2)
    await stores.transcripts.append(append)
    [transcript] = await stores.transcripts.of_agent("A", T0)
    assert [recorded_call(m) for m in transcript.messages] == [
        None,
        ("search_flights", "completed"),
        ("book_flight", "unknown"),
    ]
    [execution] = executions_from_transcript(transcript)
    assert execution.seed.steps == ("search_flights", "book_flight")
    assert execution.succeeded is None  # neither a success nor a failure


async def test_transcript_round_trips_a_speakers_name(stores: Stores) -> None:
    named = StoredMessage(role="user", content="I read it", timestamp=T0, name="Melanie")
    plain = StoredMessage(role="assistant", content="Nice", timestamp=T0 + 1)
    append = TranscriptAppend(
        session_id="S1",
        scope=fields(),
        turn_id="t1",
        messages=[named, plain],
        summary=None,
        token_count=0,
        at=T0,
    )
    await stores.transcripts.append(append)
    [t] = await stores.transcripts.recent(where(), 10)
    assert t.messages == [named, plain]
    assert [m.said for m in t.messages] == ["Melanie: I read it", "Nice"]


async def test_transcript_keeps_a_messages_raw_form_verbatim(stores: Stores) -> None:
    """A message's `raw` (an agent framework's own item, issue 18 §3) comes back exactly."""
    raw = '{"type": "function_call", "call_id": "c1", "arguments": "{\\"city\\": \\"Oslo\\"}"}'
    kept = StoredMessage(role="assistant", content="[tool call] weather", timestamp=T0, raw=raw)
    plain = StoredMessage(role="tool", content="sunny", timestamp=T0 + 1)
    append = TranscriptAppend(
        session_id="S1",
        scope=fields(),
        turn_id="t1",
        messages=[kept, plain],
        summary=None,
        token_count=0,
        at=T0,
    )
    await stores.transcripts.append(append)
    [t] = await stores.transcripts.recent(where(), 10)
    assert t.messages == [kept, plain]
    assert t.messages[0].raw == raw


async def test_transcript_pages_read_back_every_message_once_within_the_tenant(
    stores: Stores,
) -> None:
    """`transcript_page` pages backwards by position until `start` is 0, and another tenant
    (or the agent without the user) finds no transcript at all."""
    for i in range(7):
        await stores.transcripts.append(turn(f"t{i}", at=T0 + 10 * i, texts=(f"q{i}", f"a{i}")))
    read: list[str] = []
    before: int | None = None
    while True:
        page = await transcript_page(stores.transcripts, where(), "S1", limit=3, before=before)
        assert page.total == 14
        assert len(page.messages) <= 3
        read = [m.content for m in page.messages] + read
        if page.start == 0:
            break
        before = page.start
    assert read == [text for i in range(7) for text in (f"q{i}", f"a{i}")]
    assert page.json()["messages"][0] == {
        "role": "user",
        "content": "q0",
        "timestamp": T0,
    }
    for outsider in (where(user="U2"), where(user=None), where(agent="B")):
        with pytest.raises(NotFound):
            await transcript_page(stores.transcripts, outsider, "S1")
    with pytest.raises(InputRejected):
        await transcript_page(stores.transcripts, where(), "S1", limit=0)


async def test_transcript_recent_is_newest_first_and_limited(stores: Stores) -> None:
    for session, at in (("S-old", T0), ("S-new", T0 + 300), ("S-mid", T0 + 200)):
        await stores.transcripts.append(turn(session=session, at=at, scope=fields(thread=session)))
    recent = await stores.transcripts.recent(where(), 10)
    assert [t.session_id for t in recent] == ["S-new", "S-mid", "S-old"]
    assert [t.session_id for t in await stores.transcripts.recent(where(), 2)] == [
        "S-new",
        "S-mid",
    ]


async def test_transcript_recent_admits_only_the_filters_tenant(stores: Stores) -> None:
    tenants = {
        "mine": fields(),
        "other-thread": fields(thread="T2"),
        "other-user": fields(user="U2"),
        "user-less": fields(user=None),
        "other-agent": fields(agent="B"),
        "agent-case": fields(agent="a"),
        "local": fields(mode="local", hai="H1"),
    }
    for i, (session, scope) in enumerate(tenants.items()):
        await stores.transcripts.append(turn(session=session, scope=scope, at=T0 + i))

    async def seen(f: TenantFilter) -> set[str]:
        return {t.session_id for t in await stores.transcripts.recent(f, 100)}

    assert await seen(where(thread="T1")) == {"mine", "local"}
    assert await seen(where()) == {"mine", "other-thread", "local"}
    assert await seen(where(user=None)) == {"user-less"}
    assert await seen(where(agent="B")) == {"other-agent"}
    assert await seen(where(mode="local")) == {"local"}
    assert await seen(where(hai="H1")) == {"local"}
    assert await seen(where(agent="nobody")) == set()


# --- WorkingStore --------------------------------------------------------------------------


async def test_working_append_of_the_same_turn_twice_is_a_no_op(stores: Stores) -> None:
    assert await stores.working.append(lines(), keep=12) is True
    before = await stores.working.recent(where(), 10)
    assert await stores.working.append(lines(), keep=12) is False
    assert await stores.working.recent(where(), 10) == before
    [session] = before
    assert session.lines == ["assistant: hi there", "user: hello"]
    assert (session.session_id, session.scope, session.state) == (
        "S1",
        fields(),
        {"lastTurnId": "turn-1"},
    )
    assert (session.created_at, session.last_accessed_at) == (T0, T0)


async def test_concurrent_appends_to_one_buffer_all_land_once_fixes_16_24(stores: Stores) -> None:
    """The reference read the buffer, appended and wrote it back, so concurrent turns lost
    lines; appends here are single atomic updates keyed by the session (and redeliveries of
    the same turns, racing with them, change nothing)."""
    turns = [lines(f"t{n}", at=T0 + n, text=(f"line {n}",)) for n in range(20)]
    first = await asyncio.gather(*(stores.working.append(t, keep=50) for t in turns))
    again = await asyncio.gather(*(stores.working.append(t, keep=50) for t in turns))

    assert (sum(first), sum(again)) == (20, 0)
    [session] = await stores.working.recent(where(), 10)
    assert sorted(session.lines) == sorted(f"line {n}" for n in range(20))
    assert len(session.lines) == 20


async def test_working_keeps_the_newest_n_lines_newest_first(stores: Stores) -> None:
    await stores.working.append(lines("t1", text=("l1", "l2")), keep=3)
    await stores.working.append(lines("t2", at=T0 + 1, text=("l3", "l4")), keep=3)
    [session] = await stores.working.recent(where(), 10)
    assert session.lines == ["l4", "l3", "l2"]
    await stores.working.append(lines("t3", at=T0 + 2, text=("l5",)), keep=3)
    [session] = await stores.working.recent(where(), 10)
    assert session.lines == ["l5", "l4", "l3"]
    assert (session.created_at, session.last_accessed_at) == (T0, T0 + 2)


async def test_working_state_is_merged_new_keys_winning(stores: Stores) -> None:
    await stores.working.append(lines("t1", state={"a": 1, "b": 1}), keep=12)
    await stores.working.append(lines("t2", at=T0 + 1, state={"b": 2, "c": 3}), keep=12)
    [session] = await stores.working.recent(where(), 10)
    assert session.state == {"a": 1, "b": 2, "c": 3}


async def test_working_recent_is_most_recently_touched_first_and_limited(stores: Stores) -> None:
    for session, at in (("S-old", T0), ("S-new", T0 + 300), ("S-mid", T0 + 200)):
        await stores.working.append(
            lines(session=session, at=at, scope=fields(thread=session)), keep=12
        )
    assert [s.session_id for s in await stores.working.recent(where(), 10)] == [
        "S-new",
        "S-mid",
        "S-old",
    ]
    assert [s.session_id for s in await stores.working.recent(where(), 1)] == ["S-new"]


async def test_working_recent_admits_only_the_filters_tenant(stores: Stores) -> None:
    tenants = {
        "mine": fields(),
        "other-thread": fields(thread="T2"),
        "other-user": fields(user="U2"),
        "user-less": fields(user=None),
        "other-agent": fields(agent="B"),
    }
    for i, (session, scope) in enumerate(tenants.items()):
        await stores.working.append(lines(session=session, scope=scope, at=T0 + i), keep=12)

    async def seen(f: TenantFilter) -> set[str]:
        return {s.session_id for s in await stores.working.recent(f, 100)}

    assert await seen(where(thread="T1")) == {"mine"}
    assert await seen(where()) == {"mine", "other-thread"}
    assert await seen(where(user=None)) == {"user-less"}
    assert await seen(where(user="U2")) == {"other-user"}
    assert await seen(where(agent="B", user="U1")) == {"other-agent"}


# --- MemoryStore ---------------------------------------------------------------------------


async def test_insert_if_absent_twice_keeps_one_row_the_first(stores: Stores) -> None:
    assert await stores.memory.exists("vec-1") is False
    assert await stores.memory.insert_if_absent(memory_row(content="first")) is True
    assert await stores.memory.insert_if_absent(memory_row(content="second", seed=1)) is False
    assert await stores.memory.exists("vec-1") is True
    [row] = await stores.memory.active_rows(where())
    assert row.content == "first"
    assert np.allclose(row.embedding, unit(16, 0))


async def test_memory_row_round_trips(stores: Stores) -> None:
    original = memory_row(metadata={"type": "agent_memory_turn", "confidence": 0.9})
    await stores.memory.insert_if_absent(original)
    [row] = await stores.memory.active_rows(where())
    assert (row.vector_id, row.scope, row.content, row.source) == (
        "vec-1",
        fields(),
        "the user lives in Lisbon",
        "session",
    )
    assert (row.embedding_model, row.created_at, row.decay_score, row.access_count) == (
        "test-model-16",
        T0,
        0.75,
        2,
    )
    assert row.status == "active"
    assert row.metadata.items() >= original.metadata.items()


@pytest.mark.parametrize("dim", [3, 16, 384, 1024])
async def test_embeddings_round_trip_and_keep_their_dimension(stores: Stores, dim: int) -> None:
    original = memory_row(dim=dim, seed=dim)
    await stores.memory.insert_if_absent(original)
    [row] = await stores.memory.active_rows(where())
    assert row.embedding_dim == dim
    assert row.embedding.shape == (dim,)
    assert row.embedding.dtype == np.float32
    assert np.allclose(row.embedding, original.embedding)


async def test_every_read_sees_the_rows_as_they_are_now(stores: Stores) -> None:
    # the MongoDB store keeps rows decoded by their documents' bytes (a reload of the exact
    # index after a write decodes only what changed): a changed row must never read as before
    pending = replace(memory_row("v-pending", seed=3), embedding=np.zeros(0, dtype=np.float32))
    await stores.memory.insert_many_if_absent([memory_row("v-fact", seed=1), pending])
    first = {r.vector_id: r for r in await stores.memory.active_rows(where())}
    assert first["v-pending"].pending
    await stores.memory.fill_embeddings("test-model-16", {"v-pending": unit(16, 4)})
    await stores.memory.set_validity("v-fact", T0 + DAY, "v-newer")
    await stores.memory.bump_access(["v-pending"], T0 + DAY)
    again = {
        r.vector_id: r for r in await stores.memory.active_rows(where(), include_superseded=True)
    }
    assert not again["v-pending"].pending
    assert np.allclose(again["v-pending"].embedding, unit(16, 4))
    assert again["v-pending"].access_count == first["v-pending"].access_count + 1
    assert (again["v-fact"].invalid_at, again["v-fact"].superseded_by) == (T0 + DAY, "v-newer")
    assert again["v-fact"].status == "superseded"
    third = await stores.memory.active_rows(where(), include_superseded=True)
    assert sorted(map(row_view, third)) == sorted(map(row_view, again.values()))


async def test_rows_of_different_dimensions_coexist(stores: Stores) -> None:
    await stores.memory.insert_if_absent(memory_row("v-small", dim=8, seed=1))
    await stores.memory.insert_if_absent(memory_row("v-large", dim=384, seed=2))
    dims = {r.vector_id: r.embedding_dim for r in await stores.memory.active_rows(where())}
    assert dims == {"v-small": 8, "v-large": 384}


async def test_active_rows_exclude_deleted_and_superseded(stores: Stores) -> None:
    statuses = {"v-none": None, "v-active": "active", "v-archived": "archived"}
    statuses |= {"v-deleted": "deleted", "v-superseded": "superseded"}
    for vector_id, status in statuses.items():
        metadata = {"status": status} if status else {}
        await stores.memory.insert_if_absent(memory_row(vector_id, metadata=metadata))
    active = {r.vector_id for r in await stores.memory.active_rows(where())}
    assert active == {"v-none", "v-active", "v-archived"}
    assert await stores.memory.exists("v-deleted") is True


async def test_active_rows_honour_sources(stores: Stores) -> None:
    for vector_id, source in (("v-s", "session"), ("v-f", "fact"), ("v-k", "knowledge")):
        await stores.memory.insert_if_absent(memory_row(vector_id, source=source))

    async def ids(sources: list[str] | None) -> set[str]:
        return {r.vector_id for r in await stores.memory.active_rows(where(), sources=sources)}

    assert await ids(None) == {"v-s", "v-f", "v-k"}
    assert await ids(["fact"]) == {"v-f"}
    assert await ids(["fact", "knowledge"]) == {"v-f", "v-k"}
    assert await ids([]) == set()


async def test_a_fact_without_a_slot_is_given_one_once_and_only_in_its_tenant(
    stores: Stores,
) -> None:
    await stores.memory.insert_if_absent(memory_row("f-1", source="fact"))
    await stores.memory.insert_if_absent(memory_row("s-1", source="session"))
    assert not await stores.memory.set_slot_if_absent("f-1", where(user="U2"), "residence")
    assert not await stores.memory.set_slot_if_absent("s-1", where(), "residence")
    assert not await stores.memory.set_slot_if_absent("nope", where(), "residence")
    assert await stores.memory.slot_rows(where(), "residence") == []

    assert await stores.memory.set_slot_if_absent("f-1", where(), "residence")
    assert not await stores.memory.set_slot_if_absent("f-1", where(), "employer")  # kept
    [row] = await stores.memory.slot_rows(where(), "residence")
    assert (row.vector_id, row.metadata["slot"]) == ("f-1", "residence")
    assert await stores.memory.slot_rows(where(), "employer") == []


async def test_active_rows_admit_only_the_filters_tenant(stores: Stores) -> None:
    tenants = {
        "v-mine": fields(),
        "v-other-thread": fields(thread="T2"),
        "v-no-thread": fields(thread=None),
        "v-other-user": fields(user="U2"),
        "v-user-less": fields(user=None),
        "v-other-agent": fields(agent="B"),
        "v-global": fields(mode="global"),
    }
    for vector_id, scope in tenants.items():
        await stores.memory.insert_if_absent(memory_row(vector_id, scope=scope))

    async def ids(f: TenantFilter) -> set[str]:
        return {r.vector_id for r in await stores.memory.active_rows(f)}

    assert await ids(where()) == {"v-mine", "v-other-thread", "v-no-thread", "v-global"}
    assert await ids(where(thread="T1")) == {"v-mine", "v-global"}
    assert await ids(where(user=None)) == {"v-user-less"}
    # a global read also sees the tenant's mode-less rows (fixes 16.12)
    assert await ids(where(mode="global")) == {
        "v-mine",
        "v-other-thread",
        "v-no-thread",
        "v-global",
    }
    assert await ids(where(agent="B")) == {"v-other-agent"}
    assert await ids(where(agent="a")) == set()


# --- QueryCache ----------------------------------------------------------------------------


@dataclass
class Cache:
    cache: QueryCache
    prefix: str


@pytest.fixture(params=CACHES)
async def cache(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[Cache]:
    prefix = unique("mnemo-test")
    if request.param == "memory":
        yield Cache(InMemoryQueryCache(), prefix)
        return
    stack = request.getfixturevalue("stack")
    client = Redis.from_url(stack.redis_url)
    try:
        yield Cache(RedisQueryCache(client), prefix)
    finally:
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


def chain(c: Cache, *parts: str) -> list[str]:
    return [f"{c.prefix}:ns:{part}" for part in parts]


async def test_token_is_stable_while_nothing_is_bumped(cache: Cache) -> None:
    keys = chain(cache, "a", "a:u")
    first = await cache.cache.token(keys)
    assert first is not None
    assert await cache.cache.token(keys) == first


@pytest.mark.parametrize("bumped", [0, 1, 2])
async def test_token_changes_after_a_bump_of_any_key_in_the_chain(
    cache: Cache, bumped: int
) -> None:
    keys = chain(cache, "a", "a:u", "a:u:t")
    before = await cache.cache.token(keys)
    assert await cache.cache.bump([keys[bumped]], 60) == 1
    after = await cache.cache.token(keys)
    assert after is not None
    assert after != before


async def test_every_bump_gives_a_new_token(cache: Cache) -> None:
    keys = chain(cache, "a")
    seen = {await cache.cache.token(keys)}
    for _ in range(3):
        await cache.cache.bump(keys, 60)
        seen.add(await cache.cache.token(keys))
    assert len(seen) == 4


async def test_token_is_unchanged_after_a_bump_of_an_unrelated_key(cache: Cache) -> None:
    keys = chain(cache, "a", "a:u")
    before = await cache.cache.token(keys)
    assert await cache.cache.bump(chain(cache, "b", "a:u2", "a:u:t"), 60) == 3
    assert await cache.cache.token(keys) == before


async def test_tokens_of_several_chains_are_each_chains_token(cache: Cache) -> None:
    scope, tenant = chain(cache, "a", "a:u", "a:u:t"), chain(cache, "a", "a:u")
    await cache.cache.bump(chain(cache, "a:u:t"), 60)
    assert await cache.cache.tokens([scope, tenant]) == [
        await cache.cache.token(scope),
        await cache.cache.token(tenant),
    ]
    assert await cache.cache.tokens([]) == []


async def test_get_set_round_trip(cache: Cache) -> None:
    key = f"{cache.prefix}:query:1"
    assert await cache.cache.get(key) is None
    await cache.cache.set(key, b'{"working": []}', 60)
    assert await cache.cache.get(key) == b'{"working": []}'
    await cache.cache.set(key, b"v2", 60)
    assert await cache.cache.get(key) == b"v2"
    assert await cache.cache.get(f"{cache.prefix}:query:2") is None


@pytest.mark.integration
async def test_redis_bump_and_set_give_keys_a_ttl(stack: Any, unique: Callable[[str], str]) -> None:
    prefix = unique("mnemo-test")
    client = Redis.from_url(stack.redis_url)
    cache = RedisQueryCache(client)
    try:
        await cache.bump([f"{prefix}:ns:a"], 480)
        await cache.set(f"{prefix}:query:1", b"x", 120)
        assert 0 < await client.ttl(f"{prefix}:ns:a") <= 480
        assert 0 < await client.ttl(f"{prefix}:query:1") <= 120
    finally:
        await client.delete(f"{prefix}:ns:a", f"{prefix}:query:1")
        await client.aclose()


def closed_port() -> int:
    """A local port with nothing listening (bound, then closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
async def dead_cache() -> AsyncIterator[RedisQueryCache]:
    client = Redis.from_url(
        f"redis://127.0.0.1:{closed_port()}/0", socket_connect_timeout=0.5, socket_timeout=0.5
    )
    try:
        yield RedisQueryCache(client)
    finally:
        await client.aclose()


async def test_redis_cache_on_a_dead_server_is_fail_soft_for_reads_and_writes(
    dead_cache: RedisQueryCache,
) -> None:
    assert await dead_cache.token(["memory:ns:a:A:m:_:h:_:u:_:t:_"]) is None
    assert await dead_cache.tokens([["memory:ns:a"], ["memory:ns:b"]]) == [None, None]
    assert await dead_cache.get("memory:query:layers:x") is None
    assert await dead_cache.set("memory:query:layers:x", b"v", 60) is None


async def test_redis_bump_on_a_dead_server_raises_dependency_failed(
    dead_cache: RedisQueryCache,
) -> None:
    with pytest.raises(DependencyFailed, match="namespace bump failed"):
        await dead_cache.bump(["memory:ns:a:A:m:_:h:_:u:_:t:_"], 60)


@pytest.mark.integration
async def test_redis_token_never_repeats_after_its_counters_expired(
    stack: Any, unique: Callable[[str], str]
) -> None:
    """Issue 28: INCR restarted an expired counter at 1, so one write after an idle spell gave
    back the token of an older state, which a search process still holding that state took
    for "nothing written". Expiry is simulated by deleting the keys, as Redis does at TTL."""
    prefix = unique("mnemo-test")
    client = Redis.from_url(stack.redis_url)
    cache = RedisQueryCache(client)
    keys = [f"{prefix}:ns:a", f"{prefix}:ns:a:u"]
    try:
        await cache.bump(keys, 480)
        held = await cache.token(keys)
        await client.delete(*keys)
        assert await cache.token(keys) != held
        await cache.bump(keys, 480)
        assert await cache.token(keys) != held
        assert 0 < await client.ttl(keys[0]) <= 480
    finally:
        await client.delete(*keys)
        await client.aclose()
