"""The partition keys the waits of read-your-writes look for (`services.sdk.waits`) are the
keys the groups publish their follow-ups with: a turn's vector request (by thread), its
extracted facts (agent|user), the facts' vector request and every `MemoryChanged` (by agent),
on the in-memory test broker."""

from __future__ import annotations

from faststream.kafka.annotations import KafkaMessage

from schemas import topics
from services.sdk.waits import TURN_GROUPS, settled, turn_paths
from tests.groups.conftest import Start, scope, turn


async def test_every_follow_up_is_keyed_as_the_waits_expect(start: Start) -> None:
    seen: dict[str, set[bytes]] = {topics.EMBEDDINGS: set(), topics.FACTS: set()}
    changed: set[bytes] = set()
    async with start(
        ["transcripts", "extraction", "facts", "embeddings", "patterns", "invalidation"],
        extractor="rules",
        embedding_deferred=True,
    ) as g:

        @g.broker.subscriber(topics.EMBEDDINGS, group_id="keys-embeddings")
        async def on_vectors(message: KafkaMessage) -> None:
            seen[topics.EMBEDDINGS].add(message.raw_message.key)

        @g.broker.subscriber(topics.FACTS, group_id="keys-facts")
        async def on_facts(message: KafkaMessage) -> None:
            seen[topics.FACTS].add(message.raw_message.key)

        @g.broker.subscriber(topics.CHANGED, group_id="keys-changed")
        async def on_changed(message: KafkaMessage) -> None:
            changed.add(message.raw_message.key)

        await g.broker.start()
        tenant = scope(thread_id="home")
        event = turn(tenant, "I live in Lisbon and I love sourdough.", "Nice!", thread="home")
        await g.publish(event, topics.TURNS, key=event.session_id.encode())

    expected = {
        stage.topic: stage.key
        for path in turn_paths(event, TURN_GROUPS, deferred=True)
        for stage in path[1:]
    }
    wanted_vectors = {
        topics.thread_key("home").encode(),  # the turn's own row
        topics.agent_key(tenant.agent_wallet).encode(),  # the extracted facts' rows
    }
    assert seen[topics.EMBEDDINGS] == wanted_vectors
    assert seen[topics.FACTS] == {topics.tenant_key(tenant.agent_wallet, "alice").encode()}
    assert expected[topics.FACTS] is not None
    assert seen[topics.FACTS] == {expected[topics.FACTS].encode()}
    assert changed == {s.key.encode() for s in settled(tenant) if s.key is not None}
