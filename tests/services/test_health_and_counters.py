"""The DLQ guard's counters on FastStream's in-memory test broker, the groups a broker's
subscribers form, and the health app served in-process (httpx's ASGI transport)."""

from __future__ import annotations

import httpx
import pytest
from faststream.kafka import KafkaBroker, TestKafkaBroker
from faststream.kafka.annotations import KafkaMessage
from prometheus_client.parser import text_string_to_metric_families

from engine.errors import DependencyFailed, InputRejected
from schemas import topics
from schemas.events import MemoryChanged
from schemas.scope import Scope
from services.stream.guard import consume
from services.stream.health import Readiness, health_app, serving
from services.stream.metrics import Consumed, Metrics, consumed_by
from tests.support.net import free_port

SOURCE = "test.metrics.v1"
GROUP = "test.group"


def make_app(failures: list[BaseException]) -> tuple[KafkaBroker, Metrics]:
    """A broker whose guarded handler raises the queued failures in order, then succeeds."""
    metrics = Metrics()
    broker = KafkaBroker(middlewares=[metrics.middleware])
    dead_letters = broker.publisher(topics.DLQ)

    async def work(event: MemoryChanged) -> None:
        if failures:
            raise failures.pop(0)

    @broker.subscriber(SOURCE, group_id="g")
    async def handle(message: KafkaMessage) -> None:
        await consume(
            dead_letters,
            message,
            group=GROUP,
            contract=MemoryChanged,
            work=work,
            attempts=3,
            backoff_ms=1,
            metrics=metrics,
        )

    return broker, metrics


def changed() -> MemoryChanged:
    return MemoryChanged(
        scope=Scope.parse({"agentWallet": "0xA"}), layers=["working"], producer="test"
    )


def count(metrics: Metrics, name: str, **labels: str) -> float:
    found = metrics.registry.get_sample_value(name, {"group": GROUP, "topic": SOURCE, **labels})
    return 0.0 if found is None else found


async def test_retries_and_the_processed_message_are_counted() -> None:
    broker, metrics = make_app([DependencyFailed("down"), DependencyFailed("still down")])
    async with TestKafkaBroker(broker) as br:
        await br.publish(changed(), SOURCE, key=b"k")
    assert count(metrics, "mnemostream_events_processed_total") == 1
    assert count(metrics, "mnemostream_event_retries_total") == 2
    failed = count(metrics, "mnemostream_event_failures_total", error_type="DependencyFailed")
    assert failed == 2
    assert count(metrics, "mnemostream_dead_letters_total", error_type="DependencyFailed") == 0
    assert count(metrics, "mnemostream_handler_duration_seconds_count") == 1


async def test_dead_letters_are_counted_by_error_type() -> None:
    broker, metrics = make_app([DependencyFailed(f"down {i}") for i in range(3)])
    broker_rejects, rejecting = make_app([InputRejected("impossible")])
    async with TestKafkaBroker(broker) as br:
        await br.publish(changed(), SOURCE, key=b"k")
        await br.publish(b"not json", SOURCE, key=b"k")
    async with TestKafkaBroker(broker_rejects) as br:
        await br.publish(changed(), SOURCE, key=b"k")
    assert count(metrics, "mnemostream_dead_letters_total", error_type="DependencyFailed") == 1
    assert count(metrics, "mnemostream_dead_letters_total", error_type="ValidationError") == 1
    assert count(metrics, "mnemostream_event_failures_total", error_type="DependencyFailed") == 3
    assert count(metrics, "mnemostream_event_retries_total") == 2
    assert count(metrics, "mnemostream_events_processed_total") == 0
    assert count(rejecting, "mnemostream_dead_letters_total", error_type="InputRejected") == 1
    assert count(rejecting, "mnemostream_event_retries_total") == 0


async def test_faststream_middleware_counts_in_the_same_registry() -> None:
    broker, metrics = make_app([])
    async with TestKafkaBroker(broker) as br:
        await br.publish(changed(), SOURCE, key=b"k")
    received = metrics.registry.get_sample_value(
        "faststream_received_messages_total",
        {"app_name": "mnemostream", "broker": "kafka", "handler": SOURCE},
    )
    assert received == 1


def test_consumed_groups_merge_subscribers_of_one_group_id() -> None:
    broker = KafkaBroker()
    for topic, group in (("a", "g1"), ("b", "g1"), ("a", "g2")):

        @broker.subscriber(topic, group_id=group)
        async def handle(message: KafkaMessage) -> None: ...

    @broker.subscriber("c")  # no group: not a consumer group, no lag
    async def plain(message: KafkaMessage) -> None: ...

    assert consumed_by(broker.subscribers) == [
        Consumed("g1", ("a", "b")),
        Consumed("g2", ("a",)),
    ]


async def test_health_app_reports_what_is_missing_until_ready() -> None:
    metrics, readiness = Metrics(), Readiness()
    broker = KafkaBroker()

    @broker.subscriber(SOURCE, group_id="mnemostream.test")
    async def handle(message: KafkaMessage) -> None: ...

    transport = httpx.ASGITransport(app=health_app(readiness, metrics.registry))
    async with httpx.AsyncClient(transport=transport, base_url="http://health") as http:
        assert (await http.get("/livez")).json() == {"status": "alive"}

        response = await http.get("/readyz")
        assert response.status_code == 503
        assert response.json() == {
            "status": "unready",
            "missing": ["database schema not ensured yet", "consumer groups not registered yet"],
        }

        readiness.schema_ready = True
        response = await http.get("/readyz")
        assert response.json()["missing"] == ["consumer groups not registered yet"]

        readiness.watch(broker.subscribers)
        response = await http.get("/readyz")
        assert response.status_code == 503
        assert response.json()["missing"] == [f"mnemostream.test ({SOURCE}): consumer not started"]

        readiness.watch([])  # a process whose groups registered no subscriber
        assert (await http.get("/readyz")).status_code == 200

        metrics.cache_lookup("layers", hit=False)
        response = await http.get("/metrics")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/plain; version=")
        names = {f.name for f in text_string_to_metric_families(response.text)}
        assert {"mnemostream_cache_requests", "faststream_received_messages"} <= names
        assert (await http.post("/livez")).status_code == 405


async def test_a_taken_port_fails_only_when_the_endpoints_are_required() -> None:
    app = health_app(Readiness(), Metrics().registry)
    async with serving(app, "127.0.0.1", free_port()) as port:
        assert port is not None
        async with httpx.AsyncClient() as http:
            response = await http.get(f"http://127.0.0.1:{port}/livez")
            assert response.json() == {"status": "alive"}
        with pytest.raises(OSError, match="in use"):
            async with serving(app, "127.0.0.1", port):
                pass
        async with serving(app, "127.0.0.1", port, required=False) as fallback:
            assert fallback is None
    async with serving(app, "127.0.0.1", 0) as disabled:
        assert disabled is None
