"""transcripts group: a `TurnRecorded` becomes a transcript, a working buffer and a session
vector, and a `MemoryChanged` is announced for the thread."""

from __future__ import annotations

from engine.scoping import tenant_filter
from schemas import topics
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
