"""A running group says when a source topic it reads would drop records (issue 31), end to
end on the real Kafka-protocol broker: the warning in the log, the
`mnemostream_source_topic_retention_ms` gauge on `/metrics` and the note on `/readyz`.

The topics are shared by the session's tests and their names are fixed, so the test sets a
finite `retention.ms` on the knowledge topic (read by the knowledge group only) and puts the
topic's own value back afterwards. The local broker stores topic configs without enforcing
them (no record is dropped meanwhile); it answers IncrementalAlterConfigs but not the older
AlterConfigs, the only one aiokafka's admin client sends, hence the request defined here (and
it closes the connection on a DescribeConfigs that names configs: all are asked for)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from aiokafka.client import AIOKafkaClient
from aiokafka.protocol.admin import DescribeConfigsRequest
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import Array, Boolean, Int8, Int16, Int32, Schema, String

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from schemas import topics
from services.endpoints import Endpoints
from services.stream.topics import create_topics
from tests.integration.test_metrics import samples
from tests.support.net import free_port
from tests.support.pipeline import groups_running
from tests.support.settings import make_settings

pytestmark = pytest.mark.integration

TOPIC = topics.KNOWLEDGE
GROUP = "knowledge"
FINITE_MS = 3_456_789
"""An hour or so: a value no topic is created with, so only this test's setting shows it."""
GAUGE = "mnemostream_source_topic_retention_ms"
SET, DELETE = 0, 1
"""IncrementalAlterConfigs' operations."""
TOPIC_RESOURCE = 2
"""The resource type of a topic in the config requests."""


class IncrementalAlterConfigsResponse_v0(Response):  # type: ignore[misc]  # aiokafka is untyped
    API_KEY = 44
    API_VERSION = 0
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        (
            "responses",
            Array(
                ("error_code", Int16),
                ("error_message", String("utf-8")),
                ("resource_type", Int8),
                ("resource_name", String("utf-8")),
            ),
        ),
    )


class IncrementalAlterConfigsRequest_v0(RequestStruct):  # type: ignore[misc]
    API_KEY = 44
    API_VERSION = 0
    RESPONSE_TYPE = IncrementalAlterConfigsResponse_v0
    SCHEMA = Schema(
        (
            "resources",
            Array(
                ("resource_type", Int8),
                ("resource_name", String("utf-8")),
                (
                    "configs",
                    Array(
                        ("name", String("utf-8")),
                        ("config_operation", Int8),
                        ("value", String("utf-8")),
                    ),
                ),
            ),
        ),
        ("validate_only", Boolean),
    )


class IncrementalAlterConfigs(Request[IncrementalAlterConfigsRequest_v0]):  # type: ignore[misc]
    """IncrementalAlterConfigs (KIP-339), which aiokafka does not offer; the local broker
    answers it, not the older AlterConfigs. `changes`: config name -> value, None to delete
    the config (back to the broker's default)."""

    API_KEY = 44

    def __init__(self, topic: str, changes: dict[str, str | None]) -> None:
        self._topic = topic
        self._changes = changes

    def build(
        self, request_struct_class: type[IncrementalAlterConfigsRequest_v0]
    ) -> IncrementalAlterConfigsRequest_v0:
        configs = [
            (name, SET if value is not None else DELETE, value)
            for name, value in self._changes.items()
        ]
        return request_struct_class([(TOPIC_RESOURCE, self._topic, configs)], False)


async def retention_ms(client: AIOKafkaClient, topic: str) -> str | None:
    """The `retention.ms` the broker reports as set on `topic` (None: not set)."""
    request = DescribeConfigsRequest([(TOPIC_RESOURCE, topic, None)])
    response = await client.send(client.get_random_node(), request)
    [(error_code, message, _kind, _name, entries, *_)] = response.resources
    assert not error_code, message
    return next((str(e[1]) for e in entries if e[0] == "retention.ms" and e[1] is not None), None)


async def alter_retention(client: AIOKafkaClient, topic: str, value: str | None) -> None:
    """Set (None: delete) `retention.ms` on `topic`."""
    request = IncrementalAlterConfigs(topic, {"retention.ms": value})
    response = await client.send(client.get_random_node(), request)
    [(error_code, message, *_)] = response.responses
    assert not error_code, message


@asynccontextmanager
async def finite_retention(bootstrap: str, topic: str, value_ms: int) -> AsyncIterator[None]:
    """`topic` with `retention.ms=value_ms` for the block, its own retention.ms again after
    (the other tests of the session read the same topic)."""
    client = AIOKafkaClient(bootstrap_servers=bootstrap, client_id="test-retention-wiring")
    await client.bootstrap()
    try:
        original = await retention_ms(client, topic)
        try:
            await alter_retention(client, topic, str(value_ms))
            assert await retention_ms(client, topic) == str(value_ms)
            yield
        finally:
            await alter_retention(client, topic, original)
            assert await retention_ms(client, topic) == original
    finally:
        await client.close()


async def test_a_group_reading_a_finite_source_topic_logs_gauges_and_notes_it(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="services.stream.retention")
    # the topic as a deployment creates it (a no-op when an earlier test did)
    partitions = topics.partitions(make_settings(stack, "unused").kafka.partitions)
    await create_topics(
        stack.kafka_bootstrap,
        {TOPIC: partitions[TOPIC]},
        retention_ms=topics.default_retention_ms,
    )
    port = free_port()
    async with (
        finite_retention(stack.kafka_bootstrap, TOPIC, FINITE_MS),
        groups_running(stack, minilm, "retention_wiring", [GROUP], http_port=port),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as http,
    ):
        # the log: one warning naming the topic, its retention and the remedy
        [record] = [
            r
            for r in caplog.records
            if r.name == "services.stream.retention" and getattr(r, "topic", None) == TOPIC
        ]
        assert record.levelno == logging.WARNING
        line = record.getMessage()
        assert line.startswith(f"source topic {TOPIC} keeps records for {FINITE_MS} ms"), line
        assert "retention.ms=-1" in line

        # the metric: the topic's retention as the broker reports it
        metrics = (await http.get("/metrics")).text
        assert samples(metrics, GAUGE, topic=TOPIC) == [float(FINITE_MS)]

        # /readyz: ready (the group works) and the same line under notes
        deadline = time.monotonic() + 60
        while (ready := await http.get("/readyz")).status_code != 200:
            assert time.monotonic() < deadline, ready.json()
            await asyncio.sleep(0.1)
        assert ready.json() == {"status": "ready", "missing": [], "notes": [line]}
