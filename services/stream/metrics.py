"""Prometheus metrics of one process: FastStream's broker metrics plus ours, in one registry.

The registry is built with `Metrics()` in the composition root
(`services.groups.app.running_groups`),
never at import, so two apps in one process (tests) never share a counter. Each group's router
is built with it (`services.stream.consumers.GroupRouter`); a router built without one (the
in-memory test broker) runs uninstrumented.

Ours (every `group` label is the Kafka consumer group id, e.g. `mnemostream.transcripts`):

| metric | type | labels |
| --- | --- | --- |
| `mnemostream_events_processed_total` | counter | group, topic |
| `mnemostream_event_failures_total` (every failed attempt) | counter | group, topic, error_type |
| `mnemostream_event_retries_total` | counter | group, topic |
| `mnemostream_dead_letters_total` | counter | group, topic, error_type |
| `mnemostream_handler_duration_seconds` (retries included) | histogram | group, topic |
| `mnemostream_request_errors_total` (answered with `error`) | counter | group, topic, replied |
| `mnemostream_cache_requests_total` | counter | request (context, layers), result (hit, miss) |
| `mnemostream_extraction_duration_seconds` | histogram | extractor |
| `mnemostream_consumer_lag` (messages) | gauge | group, topic, partition |
| `mnemostream_partition_stalled` (1: lag and no progress) | gauge | group, topic, partition |
| `mnemostream_consumer_lag_refresh_failures_total` | counter | group |
| `mnemostream_search_state_loads_total` (tenant read whole, or delta) | counter | kind |
| `mnemostream_search_state_delta_rows_total` | counter | |
| `mnemostream_search_state_evictions_total` | counter | |
| `mnemostream_search_state_bytes`, `mnemostream_search_state_tenants` | gauge | |

FastStream's `KafkaPrometheusMiddleware` adds `faststream_*` (received, processed, published,
durations, in-process) by handler, with `app_name="mnemostream"`.

Lag is end offset − committed offset (docs/operations.md#local-servers: progress is what a group
has committed),
for every partition of the group's topics, so each process of a group reports the whole
group's lag: aggregate across instances with `max`, not `sum`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.errors import KafkaError
from faststream.kafka.prometheus import KafkaPrometheusMiddleware
from faststream.kafka.subscriber.usecase import LogicSubscriber
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from engine.retrieval.vector_index import StateStats
from services.stream.offsets import TopicPartition, committed
from services.stream.security import NO_OPTIONS
from services.stream.stalls import StallWatch

log = logging.getLogger(__name__)

APP_NAME = "mnemostream"


class _SearchState(Collector):
    def __init__(self, stats: Callable[[], StateStats]) -> None:
        self._stats = stats

    def collect(self) -> Iterable[Metric]:
        s = self._stats()
        loads = CounterMetricFamily(
            "mnemostream_search_state_loads",
            "Tenant states of the exact index read whole (full) or caught up by the rows "
            "written since their last read (delta).",
            labels=["kind"],
        )
        loads.add_metric(["full"], s.loads)
        loads.add_metric(["delta"], s.deltas)
        yield loads
        yield CounterMetricFamily(
            "mnemostream_search_state_delta_rows", "Rows the deltas read back.", value=s.delta_rows
        )
        yield CounterMetricFamily(
            "mnemostream_search_state_evictions",
            "Tenant states evicted (least recently used) to keep within search.state_max_mb.",
            value=s.evictions,
        )
        yield GaugeMetricFamily(
            "mnemostream_search_state_bytes",
            "Estimated bytes of the held tenant states.",
            value=s.bytes,
        )
        yield GaugeMetricFamily(
            "mnemostream_search_state_tenants", "Tenant states held.", value=s.tenants
        )


class Metrics:
    """Every metric of one process, registered in `registry` (a fresh one by default)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.middleware = KafkaPrometheusMiddleware(registry=r, app_name=APP_NAME)
        """FastStream's per-handler message metrics (`faststream_*`), for the broker."""
        self.processed = Counter(
            "mnemostream_events_processed",
            "Events whose handler work completed, by consumer group and topic.",
            ["group", "topic"],
            registry=r,
        )
        self.failures = Counter(
            "mnemostream_event_failures",
            "Failed handler attempts (retried or dead-lettered), by exception type.",
            ["group", "topic", "error_type"],
            registry=r,
        )
        self.sealed_skipped = Counter(
            "mnemostream_sealed_events_skipped",
            "Sealed events skipped unread: their tenant's key was erased (crypto-shredded).",
            ["group", "topic"],
            registry=r,
        )
        self.retries = Counter(
            "mnemostream_event_retries",
            "Handler attempts retried after a failure.",
            ["group", "topic"],
            registry=r,
        )
        self.dead_letters = Counter(
            "mnemostream_dead_letters",
            "Messages sent to the dead-letter topic, by the error that sent them.",
            ["group", "topic", "error_type"],
            registry=r,
        )
        self.handler_seconds = Histogram(
            "mnemostream_handler_duration_seconds",
            "Seconds from decoding a message to its outcome (retries and DLQ publish included).",
            ["group", "topic"],
            registry=r,
        )
        self.request_errors = Counter(
            "mnemostream_request_errors",
            "Requests answered with an error (undecodable, invalid or failed), by whether the "
            "request named a reply topic (replied=false: nobody waits, the answer is dropped).",
            ["group", "topic", "replied"],
            registry=r,
        )
        self.cache_requests = Counter(
            "mnemostream_cache_requests",
            "Answered search requests by whether the layer query cache served them.",
            ["request", "result"],
            registry=r,
        )
        self.extraction_seconds = Histogram(
            "mnemostream_extraction_duration_seconds",
            "Seconds the fact extractor took for one turn (failures included).",
            ["extractor"],
            registry=r,
        )
        self.lag = Gauge(
            "mnemostream_consumer_lag",
            "Messages not yet committed by the group: end offset − committed offset (≥ 0).",
            ["group", "topic", "partition"],
            registry=r,
        )
        self.source_retention = Gauge(
            "mnemostream_source_topic_retention_ms",
            "retention.ms of a source topic this process reads (-1: every record kept; NaN: "
            "the broker reports none, so its default applies), read at start "
            "(services.stream.retention).",
            ["topic"],
            registry=r,
        )
        self.stalled = Gauge(
            "mnemostream_partition_stalled",
            "1 while the group has lag on the partition and its committed offset has not moved "
            "for `stall_seconds` (services.stream.stalls), else 0.",
            ["group", "topic", "partition"],
            registry=r,
        )
        self.lag_failures = Counter(
            "mnemostream_consumer_lag_refresh_failures",
            "Lag refreshes of a group that failed (the gauge keeps its last value).",
            ["group"],
            registry=r,
        )
        self.handed_back = Counter(
            "mnemostream_batch_records_handed_back",
            "Records of a batch left for the next poll, unprocessed and uncommitted, by why: "
            "`units` (past the batch's record or text cap), `budget` (the batch's time "
            "budget was spent), `failure` (a lasting store outage).",
            ["group", "reason"],
            registry=r,
        )
        self.commits_refused = Counter(
            "mnemostream_batch_commits_refused",
            "Batch commits the broker refused because the group rebalanced meanwhile; the "
            "consumer rejoins and reads the uncommitted records again.",
            ["group"],
            registry=r,
        )

    def watch_search_state(self, stats: Callable[[], StateStats]) -> None:
        """Export the exact vector index's state (loads by kind, bytes, tenants), read from
        `stats` at each scrape."""
        self.registry.register(_SearchState(stats))

    def cache_lookup(self, request: str, *, hit: bool) -> None:
        """Count one answered `request` ("context" or "layers") as a cache hit or miss."""
        self.cache_requests.labels(request=request, result="hit" if hit else "miss").inc()

    def request_error(self, group: str, topic: str, *, replied: bool) -> None:
        """Count one request of `group` on `topic` answered with an error."""
        self.request_errors.labels(group=group, topic=topic, replied=str(replied).lower()).inc()

    def set_lag(self, group: str, lags: dict[tuple[str, int], int]) -> None:
        """Set the gauge of every `(topic, partition)` of `group`."""
        for (topic, partition), value in lags.items():
            self.lag.labels(group=group, topic=topic, partition=str(partition)).set(value)

    def set_stalled(self, group: str, stalled: dict[tuple[str, int], bool]) -> None:
        """Set the stalled gauge (1 or 0) of every `(topic, partition)` of `group`."""
        for (topic, partition), value in stalled.items():
            self.stalled.labels(group=group, topic=topic, partition=str(partition)).set(value)


def extraction_timer(metrics: Metrics | None, extractor: str) -> AbstractContextManager[Any]:
    """Times the block into the extraction histogram (a no-op without metrics)."""
    if metrics is None:
        return nullcontext()
    return metrics.extraction_seconds.labels(extractor=extractor).time()


class EventProbe:
    """The outcome of one message in one group: created when handling starts, told what
    happened. Without metrics every call is a no-op."""

    def __init__(self, metrics: Metrics | None, group: str, topic: str) -> None:
        self._metrics = metrics
        self._labels = {"group": group, "topic": topic}
        self._started = time.perf_counter()

    def processed(self) -> None:
        """The work completed."""
        if self._metrics is not None:
            self._metrics.processed.labels(**self._labels).inc()
            self._observe(self._metrics)

    def retrying(self, error_type: str) -> None:
        """An attempt failed with `error_type` and will be retried."""
        if self._metrics is not None:
            self._metrics.failures.labels(**self._labels, error_type=error_type).inc()
            self._metrics.retries.labels(**self._labels).inc()

    def dead_lettered(self, error_type: str) -> None:
        """The last attempt failed with `error_type`; the message is in the DLQ."""
        if self._metrics is not None:
            self._metrics.failures.labels(**self._labels, error_type=error_type).inc()
            self._metrics.dead_letters.labels(**self._labels, error_type=error_type).inc()
            self._observe(self._metrics)

    def _observe(self, metrics: Metrics) -> None:
        elapsed = time.perf_counter() - self._started
        metrics.handler_seconds.labels(**self._labels).observe(elapsed)


# --- consumer lag -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Consumed:
    """A Kafka consumer group of this process and the topics it reads."""

    group: str
    topics: tuple[str, ...]


def consumed_by(subscribers: Iterable[object]) -> list[Consumed]:
    """The groups (and their topics) of a broker's subscribers, sorted by name; several
    subscribers of one group id are merged."""
    topics: dict[str, set[str]] = {}
    for sub in subscribers:
        if isinstance(sub, LogicSubscriber) and sub.group_id:
            topics.setdefault(sub.group_id, set()).update(sub.topic_names_for_subscribe)
    return [Consumed(group, tuple(sorted(topics[group]))) for group in sorted(topics)]


def partition_lag(end: int, committed_offset: int, beginning: int) -> int:
    """Messages of a partition the group has not committed yet, ≥ 0.

    `end` is the offset the next produced message will get; `committed_offset` the next
    offset the group will read, or negative when it has committed nothing — then it starts
    at `beginning` (every subscriber resets to `earliest`)."""
    start = committed_offset if committed_offset >= 0 else beginning
    return max(0, end - start)


def group_lag(
    ends: dict[tuple[str, int], int],
    done: dict[tuple[str, int], int],
    beginnings: dict[tuple[str, int], int],
) -> dict[tuple[str, int], int]:
    """`partition_lag` of every partition in `ends` (a partition missing from `done` has no
    commit; one missing from `beginnings` starts at 0)."""
    return {
        key: partition_lag(end, done.get(key, -1), beginnings.get(key, 0))
        for key, end in ends.items()
    }


class LagMonitor:
    """Refreshes the lag gauge of `groups` from end offsets (a group-less consumer) and
    committed offsets (`services.stream.offsets.committed`, partitions named), and with `stalls`
    the stalled-partition gauge from the same readings."""

    def __init__(
        self,
        bootstrap: str,
        metrics: Metrics,
        groups: Sequence[Consumed],
        *,
        interval: float,
        stalls: StallWatch | None = None,
        kafka_options: Mapping[str, Any] = NO_OPTIONS,
    ) -> None:
        self._stalls = stalls
        self._bootstrap = bootstrap
        self._kafka_options = kafka_options
        self._metrics = metrics
        self._groups = list(groups)
        self._interval = interval
        self._consumer: Any = None

    async def start(self) -> None:
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=self._bootstrap,
            client_id="mnemostream-lag",
            enable_auto_commit=False,
            request_timeout_ms=10_000,
            **self._kafka_options,
        )
        await self._consumer.start()

    async def stop(self) -> None:
        if self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None

    async def __aenter__(self) -> LagMonitor:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    async def run(self) -> None:
        """Refresh every `interval` seconds until cancelled."""
        while True:
            await asyncio.sleep(self._interval)
            await self.refresh()

    async def refresh(self) -> None:
        """One refresh of every group; a group whose offsets cannot be read keeps its last
        values and counts a refresh failure."""
        await asyncio.gather(*(self._refresh(consumed) for consumed in self._groups))

    async def _refresh(self, consumed: Consumed) -> None:
        consumer = self._consumer
        if consumer is None:
            raise RuntimeError("LagMonitor.start() was not awaited")
        partitions = [
            TopicPartition(topic, p)
            for topic in consumed.topics
            for p in sorted(consumer.partitions_for_topic(topic) or ())
        ]
        if not partitions:
            return
        try:
            ends = await consumer.end_offsets(partitions)
            beginnings = await consumer.beginning_offsets(partitions)
            done = await committed(
                self._bootstrap, consumed.group, partitions, kafka_options=self._kafka_options
            )
        except (KafkaError, OSError, TimeoutError) as exc:
            self._metrics.lag_failures.labels(group=consumed.group).inc()
            log.warning("lag refresh of %s failed: %s", consumed.group, exc)
            return
        lags = group_lag(
            {(tp.topic, tp.partition): end for tp, end in ends.items()},
            done,
            {(tp.topic, tp.partition): start for tp, start in beginnings.items()},
        )
        self._metrics.set_lag(consumed.group, lags)
        if self._stalls is not None:
            stalled = self._stalls.observe(consumed.group, lags, done)
            self._metrics.set_stalled(consumed.group, stalled)
