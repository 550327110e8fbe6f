"""Retention as a decision (issue 31) on the real Kafka-protocol broker: topics are created
with their class's retention.ms, a source topic that would drop records is reported, and a
replay finds the log whole (the local broker neither enforces retention nor deletes
records: a truncated head is tested on its S3 engine, `test_truncated_log.py`)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from schemas import topics
from services.endpoints import Endpoints
from services.ops.replay import SOURCE_TOPICS, truncations
from services.stream.offsets import beginning_offsets
from services.stream.retention import TopicRetention, read_retention, report
from services.stream.topics import create_topics

pytestmark = pytest.mark.integration


async def test_topics_are_created_with_the_retention_of_their_class(
    stack: Endpoints, unique: Callable[[str], str]
) -> None:
    source, derived = unique("memory.test.source"), unique("memory.test.derived")
    chosen = {source: -1, derived: 3_600_000}
    await create_topics(stack.kafka_bootstrap, {source: 1, derived: 1}, retention_ms=chosen.get)

    found = await read_retention(stack.kafka_bootstrap, [derived, source])
    assert found == [TopicRetention(derived, 3_600_000, None), TopicRetention(source, -1, None)]
    # the one that drops records is reported, the one that keeps all is not
    [line] = report(found)
    assert line.startswith(f"source topic {derived} keeps records for 3600000 ms")


async def test_the_clients_topics_keep_every_source_record(stack: Endpoints) -> None:
    await create_topics(
        stack.kafka_bootstrap, topics.partitions(1), retention_ms=topics.default_retention_ms
    )
    found = {r.topic: r for r in await read_retention(stack.kafka_bootstrap, topics.PARTITIONS)}
    for topic in topics.SOURCES:
        assert found[topic].keeps_everything, found[topic]
    assert found[topics.SEARCH].retention_ms == topics.DAY_MS


async def test_a_whole_log_has_no_truncation(stack: Endpoints) -> None:
    await create_topics(
        stack.kafka_bootstrap, topics.partitions(1), retention_ms=topics.default_retention_ms
    )
    firsts = await beginning_offsets(stack.kafka_bootstrap, SOURCE_TOPICS)
    assert {topic for topic, _ in firsts} == set(SOURCE_TOPICS)
    assert truncations(firsts) == []
