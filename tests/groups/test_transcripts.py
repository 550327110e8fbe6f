"""transcripts group: a `TurnRecorded` becomes a transcript, a working buffer and a session
vector, and a `MemoryChanged` is announced for the thread."""

from __future__ import annotations

from engine.scoping import tenant_filter
from schemas import topics
from services.groups.transcripts import vector_requests
from tests.groups.conftest import Start, scope, turn


async def test_a_turn_is_stored_in_transcripts_working_and_memory(start: Start) -> None:
    tenant = scope()
    event = turn(tenant, "I moved to Lisbon last spring.", "Lisbon is lovely in spring.")
    async with start(["transcripts"]) as g:
        await g.publish(event, topics.TURNS)
        await g.publish(event, topics.TURNS)  # redelivered: changes nothing
        where = tenant_filter(tenant.model_copy(update={"thread_id": "t1"}), durable=False)
        [transcript] = await g.rt.transcripts.recent(where, 10)
        assert [m.content for m in transcript.messages] == [
            "I moved to Lisbon last spring.",
            "Lisbon is lovely in spring.",
        ]
        [working] = await g.rt.stores.working.recent(where, 10)
        assert any("Lisbon" in line for line in working.lines)
        rows = await g.rt.memory.active_rows(tenant_filter(tenant, durable=True, shared=True))
        assert rows, "the turn's session vector is stored"
    assert g.letters == []
    assert [c.layers for c in g.changes] == [["working", "scene", "vectors"]] * 2
    assert {c.scope.thread_id for c in g.changes} == {"t1"}


async def test_each_group_builds_only_the_parts_it_declares(start: Start) -> None:
    async with start(["invalidation"]) as g:
        assert g.rt.built() == frozenset()
    async with start(["transcripts"]) as g:
        assert g.rt.built() == {"embedder"}
    async with start(["search"]) as g:
        assert g.rt.built() == {"embedder", "reranker", "search"}


async def test_a_batch_of_two_users_on_one_thread_asks_vectors_per_tenant(start: Start) -> None:
    """A thread id shared by two users of one agent: each user's turn rows are filled, and
    that user's working buffer names them, never the other's (a batch grouped them by thread
    alone once, and the vectors landed in the first user's documents)."""
    ana = scope(userAddress="ana")
    bob = scope(ana.agent_wallet, userAddress="bob")
    events = [
        turn(ana, "Ana packs the red tent.", "Noted.", thread="trip"),
        turn(bob, "Bob brings the stove.", "Noted.", thread="trip"),
        turn(ana, "Ana also packs the map.", "Noted.", thread="trip"),
    ]
    async with start(["transcripts", "embeddings"]) as g:
        stored = await g.rt.recorder.record_many(events)
        assert [s.pending for s in stored] == [True, True, True]
        requests = vector_requests(events, stored, g.rt.embedder.model)
        assert sorted(
            (r.scope.user_address, [t.vector_id for t in r.targets]) for r in requests
        ) == sorted(
            [
                ("ana", [stored[0].vector_id, stored[2].vector_id]),
                ("bob", [stored[1].vector_id]),
            ]
        )
        for request in requests:
            await g.publish(request, topics.EMBEDDINGS)
        for who, mine in (
            (ana, {stored[0].vector_id, stored[2].vector_id}),
            (bob, {stored[1].vector_id}),
        ):
            # each user's turn rows are filled, and each user's buffer names only them
            where = tenant_filter(who.model_copy(update={"thread_id": "trip"}), durable=False)
            [working] = await g.rt.stores.working.recent(where, 10)
            assert set(working.turn_rows) == mine
            rows = await g.rt.memory.active_rows(tenant_filter(who, durable=True, shared=True))
            assert {r.vector_id for r in rows if not r.pending} == mine
    assert g.letters == []
