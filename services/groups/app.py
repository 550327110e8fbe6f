"""The FastStream app factory: one broker, the chosen consumer groups, clean start/stop.

Start-up order (docs/operations.md#local-servers): topics are created with their partition counts,
the database
schema is ensured (collections and indexes, sequentially), and only then do the subscribers
join their groups.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from aiokafka.errors import KafkaError
from faststream.kafka import KafkaBroker, KafkaRouter
from opentelemetry.trace import TracerProvider

from engine.errors import MemoryError_
from engine.ports import Embedder
from engine.retrieval.vector_index import ExactVectorIndex
from schemas import topics
from services.groups import (
    admin,
    embeddings,
    extraction,
    facts,
    invalidation,
    items,
    jobs,
    knowledge,
    patterns,
    sealing,
    search,
    transcripts,
    workflows,
)
from services.runtime import Part, Runtime, open_runtime
from services.settings import Settings
from services.stream.health import Readiness, health_app, serving
from services.stream.metrics import LagMonitor, Metrics, consumed_by
from services.stream.retention import read_retention, report
from services.stream.security import kafka_security
from services.stream.stalls import StallWatch
from services.stream.startup import start_together
from services.stream.telemetry import Tracing
from services.stream.telemetry import start as start_tracing
from services.stream.telemetry import stop as stop_tracing
from services.stream.topics import create_topics

log = logging.getLogger(__name__)

Progress = Callable[[str], None]
"""Told one short line per start-up step (`running_groups`)."""


def _warnings_only(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING


GROUPS: dict[str, Callable[[Runtime, Metrics | None], KafkaRouter]] = {
    transcripts.GROUP: transcripts.router,
    embeddings.GROUP: embeddings.router,
    extraction.GROUP: extraction.router,
    facts.GROUP: facts.router,
    knowledge.GROUP: knowledge.router,
    workflows.GROUP: workflows.router,
    patterns.GROUP: patterns.router,
    invalidation.GROUP: invalidation.router,
    search.GROUP: search.router,
    jobs.GROUP: jobs.router,
    items.GROUP: items.router,
    admin.GROUP: admin.router,
    sealing.GROUP: sealing.router,
}
"""Every consumer group, by name (`mnemostream run <name>`): the function that builds its
router from the runtime and the process's metrics (None: uninstrumented)."""

NEEDS: dict[str, frozenset[Part]] = {
    transcripts.GROUP: frozenset({"embedder"}),
    embeddings.GROUP: frozenset({"embedder"}),
    extraction.GROUP: frozenset({"extractor", "embedder"}),  # the relation typer
    facts.GROUP: frozenset({"embedder"}),
    knowledge.GROUP: frozenset({"embedder"}),
    workflows.GROUP: frozenset({"embedder"}),
    patterns.GROUP: frozenset({"embedder"}),
    invalidation.GROUP: frozenset(),
    search.GROUP: frozenset({"embedder", "reranker", "search"}),
    jobs.GROUP: frozenset({"embedder", "pinner"}),
    items.GROUP: frozenset({"embedder", "summariser"}),
    admin.GROUP: frozenset({"embedder", "search", "pinner"}),
    sealing.GROUP: frozenset(),
}
"""The heavy runtime parts each group uses (`services.runtime.Part`): a process builds those
of its groups at start-up and no other (the invalidation group loads no embedder). A part
a group uses without declaring it is built on first use (the search raises `NotPrepared`)."""


async def source_retention(
    rt: Runtime, subscribers: Sequence[object], metrics: Metrics
) -> list[str]:
    """The retention of the source topics this process reads, as a gauge, and the lines
    (logged as warnings) of those that would drop records; a broker that cannot say is
    logged, never fatal (`services.stream.retention`)."""
    read = {t for c in consumed_by(subscribers) for t in c.topics} & topics.SOURCES
    try:
        found = await read_retention(
            rt.endpoints.kafka_bootstrap, read, kafka_options=rt.kafka_options
        )
    except (KafkaError, OSError) as exc:
        log.warning("retention of the source topics not readable: %s", exc)
        return []
    for r in found:
        value = float("nan") if r.retention_ms is None else float(r.retention_ms)
        metrics.source_retention.labels(r.topic).set(value)
    return report(found)


def needs_of(groups: Sequence[str]) -> frozenset[Part]:
    """The parts the named groups (already resolved) use."""
    return frozenset().union(*(NEEDS[group] for group in groups))


def register_groups(
    broker: KafkaBroker, rt: Runtime, groups: Sequence[str], metrics: Metrics | None = None
) -> None:
    """Include the named groups' routers in `broker` (a real or a test broker), before it
    starts; their handlers count into `metrics`, if given."""
    for group in resolve_groups(groups):
        broker.include_router(GROUPS[group](rt, metrics))


def resolve_groups(names: Sequence[str]) -> list[str]:
    """`all` expands to every group; unknown names raise ValueError."""
    chosen: list[str] = []
    for name in names:
        expanded = list(GROUPS) if name == "all" else [name]
        for group in expanded:
            if group not in GROUPS:
                raise ValueError(f"unknown group {group!r}; choose from {', '.join(GROUPS)}, all")
            if group not in chosen:
                chosen.append(group)
    return chosen


class JoinProgress:
    """Tells `progress` when each named group is ready: all of its subscribers (a group may
    have several, e.g. search's context, layer and rerank subscribers) have joined their
    Kafka consumer groups, whose ids are `<group prefix>.<group>[.<part>]`."""

    def __init__(
        self, rt: Runtime, groups: Sequence[str], subscribers: Sequence[object], progress: Progress
    ) -> None:
        self._progress = progress
        self._groups = list(groups)
        self._waiting: dict[str, int] = {}
        for sub in subscribers:
            group = self._group_of(rt, sub)
            if group is not None:
                self._waiting[group] = self._waiting.get(group, 0) + 1
        self._owner = {id(sub): self._group_of(rt, sub) for sub in subscribers}
        self._ready = 0
        for group in self._groups:
            if group not in self._waiting:  # e.g. extraction without an extractor
                progress(f"group {group} has nothing to consume with these settings")

    def _group_of(self, rt: Runtime, subscriber: object) -> str | None:
        group_id = getattr(subscriber, "group_id", None)
        for group in self._groups:
            own = rt.group_id(group)
            if group_id == own or (isinstance(group_id, str) and group_id.startswith(own + ".")):
                return group
        return None

    def started(self, subscriber: object) -> None:
        group = self._owner.get(id(subscriber))
        if group is None:
            return
        self._waiting[group] -= 1
        if self._waiting[group] == 0:
            self._ready += 1
            self._progress(f"group {group} ready ({self._ready}/{len(self._waiting)})")


def traced(rt: Runtime, tracing: Tracing | None) -> list[Any]:
    """The broker middlewares of `tracing` (none when off); the search gets its layer spans."""
    if tracing is None:
        return []
    if "search" in rt.built():
        rt.search.spans = tracing.layer_spans()
    return tracing.middlewares()


def _quiet(line: str) -> None:
    """The progress of a caller that asked for none."""


@asynccontextmanager
async def running_groups(
    settings: Settings,
    names: Sequence[str],
    *,
    embedder: Embedder | None = None,
    broker_logs: bool = True,
    http_required: bool = True,
    progress: Progress | None = None,
    tracer_provider: TracerProvider | None = None,
) -> AsyncIterator[Runtime]:
    """Run the named groups until the context exits. `broker_logs=False` silences
    FastStream's own lifecycle and per-message logs (our handlers still log failures).
    `progress` is told of each start-up step in one short line (which groups start, the
    schema, each heavy part, the topics, each group as it has joined), until the context is
    entered (`mnemostream run` prints them).

    With `settings.http_port` set, `/livez`, `/readyz` and `/metrics` (`services.stream.health`)
    are served from before the database is reached until the groups have stopped (if the
    port cannot be bound: OSError, or with `http_required=False` a warning and no endpoints);
    the consumer lag gauge is refreshed every `settings.lag_interval_seconds`.

    Traces (`services.stream.telemetry`) go to `tracer_provider` when given, else to the
    OTLP endpoint `settings.otel.endpoint`; neither: off."""
    groups = resolve_groups(names)
    tell = progress or _quiet
    tell(f"starting {len(groups)} group{'s' if len(groups) > 1 else ''}: {', '.join(groups)}")
    stalls = StallWatch(settings.stall_seconds)
    metrics, readiness = Metrics(), Readiness(stalls)
    tell(f"connecting; ensuring the database schema of {settings.mongo.db}")
    # health first: /livez answers and /readyz says what is missing during the whole start-up
    async with (
        serving(
            health_app(readiness, metrics.registry),
            settings.http_host,
            settings.http_port,
            required=http_required,
        ),
        # no parts built inside: prepared below, each step told
        open_runtime(settings, embedder, needs=()) as rt,
        contextlib.AsyncExitStack() as stack,
    ):
        tracing = start_tracing(settings, groups, tracer_provider)
        stack.callback(stop_tracing, tracing)
        readiness.schema_ready = True  # open_runtime ensured every collection and index
        await rt.prepare(needs_of(groups), tell)
        if "search" in rt.built() and isinstance(rt.search.index, ExactVectorIndex):
            metrics.watch_search_state(rt.search.index.stats)
        tell("creating the topics")
        await create_topics(
            rt.endpoints.kafka_bootstrap,
            topics.partitions(settings.kafka.partitions),
            kafka_options=rt.kafka_options,
            retention_ms=settings.kafka.retention_ms,
        )
        broker = KafkaBroker(
            rt.endpoints.kafka_bootstrap,
            security=kafka_security(settings),
            client_id=f"mnemostream-{'-'.join(groups)}",
            middlewares=[metrics.middleware, *traced(rt, tracing)],
        )
        register_groups(broker, rt, groups, metrics)
        readiness.watch(broker.subscribers)
        readiness.notes = await source_retention(rt, broker.subscribers, metrics)
        if not broker_logs or logging.getLogger().getEffectiveLevel() > logging.INFO:
            # (also when the process logs above INFO, `--log-level warning`: the per-message
            # "Received"/"Processed" lines were written whatever the level, two per request)
            # FastStream keeps one shared access logger per broker kind and resets its level
            # when it builds it, so a filter (which it keeps) does the silencing
            logging.getLogger("faststream.access.kafka").addFilter(_warnings_only)
        lag = await stack.enter_async_context(
            LagMonitor(
                rt.endpoints.kafka_bootstrap,
                metrics,
                consumed_by(broker.subscribers),
                interval=settings.lag_interval_seconds,
                stalls=stalls,
                kafka_options=rt.kafka_options,
            )
        )
        await lag.refresh()  # before the groups join, so a backlog shows as lag at once
        joins = JoinProgress(rt, groups, broker.subscribers, tell)
        tell(
            f"joining {len(broker.subscribers)} Kafka consumer groups "
            "(each join waits out the broker's rebalance delay)"
        )
        await start_together(broker, joins.started)  # the groups join in parallel
        background = [asyncio.create_task(lag.run(), name="consumer-lag")]
        if search.GROUP in groups:
            background.append(
                asyncio.create_task(search.flush_access_counts(rt), name="access-flush")
            )
        log.info("running groups %s", ", ".join(groups))
        # what start-up built (the model, the broker's clients, the schemas) lives as long as
        # the process: out of the collector's sight, a full collection no longer walks it
        # (one took ~80 ms in the search process, a pre_turn's whole budget)
        gc.collect()
        gc.freeze()
        try:
            yield rt
        finally:
            gc.unfreeze()  # a test process runs groups again and again
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            await broker.stop()
            with contextlib.suppress(MemoryError_):
                await rt.access.flush(int(time.time() * 1000))
