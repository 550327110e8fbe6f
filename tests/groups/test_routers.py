"""Each consumer group is one FastStream `KafkaRouter` built from the runtime and the metrics:
its subscribers carry the group's Kafka group ids (those `docs/asyncapi.json` documents), and
the metrics handed to it count what its handlers do once a broker includes it."""

from __future__ import annotations

import uuid

from faststream.kafka import KafkaBroker, KafkaRouter, TestKafkaBroker

from schemas import topics
from services.groups.app import GROUPS, needs_of, register_groups
from services.runtime.memory import memory_runtime
from services.settings import Settings
from services.stream.asyncapi import CHANNELS
from services.stream.guard import DeadLetter
from services.stream.metrics import Metrics


async def test_each_group_is_one_router_holding_its_documented_subscribers() -> None:
    prefix = f"fast-{uuid.uuid4().hex[:8]}"
    async with memory_runtime(Settings(group_prefix=prefix), needs=needs_of(list(GROUPS))) as rt:
        registered: set[tuple[str, str]] = set()
        for name, build in GROUPS.items():
            router = build(rt, None)
            assert isinstance(router, KafkaRouter)
            for sub in router.subscribers:
                group = str(sub.group_id).removeprefix(f"{prefix}.")
                assert group.split(".")[0] == name
                registered |= {(topic.name, group) for topic in sub.topics}
    assert registered == {(c.topic, group) for c in CHANNELS for group in c.consumers}


async def test_a_routers_dead_letters_are_counted_in_the_metrics_it_was_built_with() -> None:
    prefix = f"fast-{uuid.uuid4().hex[:8]}"
    settings = Settings(group_prefix=prefix, max_attempts=1, retry_backoff_ms=0)
    metrics = Metrics()
    async with memory_runtime(settings, needs=needs_of(["invalidation"])) as rt:
        broker = KafkaBroker(middlewares=[metrics.middleware])
        register_groups(broker, rt, ["invalidation"], metrics)
        letters: list[DeadLetter] = []

        @broker.subscriber(topics.DLQ, group_id="fast-dlq-reader")
        async def read_dlq(letter: DeadLetter) -> None:
            letters.append(letter)

        async with TestKafkaBroker(broker) as br:
            await br.publish(b"not json", topics.CHANGED, key=b"k")
    [letter] = letters
    assert letter.group == f"{prefix}.invalidation"
    labels = {"group": f"{prefix}.invalidation", "topic": topics.CHANGED}
    dead = metrics.registry.get_sample_value(
        "mnemostream_dead_letters_total", {**labels, "error_type": "ValidationError"}
    )
    assert dead == 1
