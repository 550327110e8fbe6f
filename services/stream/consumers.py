"""One consumer group's wiring: `GroupRouter` holds the group's FastStream `KafkaRouter` and
registers on it subscribers with the options every group shares (docs/operations.md#local-servers
quirks), the DLQ-guarded event handler, request-reply handlers and the `MemoryChanged`
announcer. The composition root includes the router in its broker
(`services.groups.app.register_groups`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from faststream.kafka import KafkaRouter
from faststream.kafka.annotations import KafkaMessage
from faststream.middlewares import AckPolicy
from pydantic import BaseModel

from schemas import topics
from schemas.events import Event, MemoryChanged
from schemas.scope import Scope
from services.settings import Settings
from services.stream.batches import BatchConsumer, records_of
from services.stream.guard import consume
from services.stream.handback import commit
from services.stream.metrics import Metrics
from services.stream.parsing import raw_body, safe_headers
from services.stream.telemetry import caused_by, record_spans

E = TypeVar("E", bound=BaseModel)

if TYPE_CHECKING:
    from faststream.kafka.publisher.usecase import DefaultPublisher
    from faststream.kafka.subscriber.usecase import DefaultSubscriber


class Reply(Protocol):
    """What every request-reply handler returns: a reply with `error` set on failure."""

    @property
    def error(self) -> str | None: ...


Answer = Callable[[KafkaMessage], Awaitable[Reply]]


class Wiring(Protocol):
    """What the Kafka plumbing needs of a runtime (`services.runtime.Runtime` is one): its
    settings and the Kafka group id of a group. Typed here so `stream/` sits below the
    composition root and imports none of it."""

    @property
    def settings(self) -> Settings: ...

    def group_id(self, group: str) -> str: ...


W = TypeVar("W", bound=Wiring)


class GroupRouter(Generic[W]):
    """The `KafkaRouter` of the consumer group `name` (`router`), and what its handlers share:
    the runtime, the process's metrics (None: uninstrumented, as on the in-memory test broker)
    and one publisher each for dead letters and `MemoryChanged`, made on the router when first
    used.

    Subscribers and publishers are made on the router before any broker exists; once a broker
    includes it (`broker.include_router`), FastStream 0.7 composes the router's configuration
    with the broker's: they start with the broker, run its middlewares and publish through its
    producer (a test broker's too)."""

    def __init__(self, name: str, rt: W, metrics: Metrics | None) -> None:
        self.name = name
        self.rt = rt
        self.metrics = metrics
        self.router = KafkaRouter()
        self._dead_letters: DefaultPublisher | None = None
        self._changes: ChangeAnnouncer | None = None

    def group_id(self, part: str | None = None) -> str:
        """The Kafka group id of the group (or of its `part`, `<group>.<part>`)."""
        return self.rt.group_id(f"{self.name}.{part}" if part else self.name)

    @property
    def changes(self) -> ChangeAnnouncer:
        """The group's `MemoryChanged` announcer (producer: the group's name)."""
        if self._changes is None:
            self._changes = ChangeAnnouncer(self.router.publisher(topics.CHANGED), self.name)
        return self._changes

    @property
    def dead_letters(self) -> DefaultPublisher:
        """The group's publisher to the dead-letter topic."""
        if self._dead_letters is None:
            self._dead_letters = self.router.publisher(topics.DLQ)
        return self._dead_letters

    def subscriber(
        self,
        topic: str,
        *more: str,
        interactive: bool = False,
        part: str | None = None,
        ack_policy: AckPolicy = AckPolicy.ACK,
        workers: int = 1,
        batch: int | None = None,
        fetch_wait_ms: int | None = None,
    ) -> DefaultSubscriber:
        """A durable group reading from `earliest` (the local broker's "latest" is wrong) that
        commits after the handler returns (at-least-once). Interactive (request/reply and cache
        invalidation) groups fetch with a short wait: a waiting fetch wakes after about half of
        `fetch_max_wait_ms`.

        `workers > 1` handles that many messages at once, acknowledging each when it is taken
        (at-most-once): only for request-reply, where a request lost in a crash times out at
        its client and nothing is written.

        A group that reads several topics gives each extra topic its own Kafka group id
        (`<group>.<part>`): members of one Kafka group with different subscriptions were left
        unassigned by the local broker, and separate ids keep each topic's progress visible.

        `batch` (most records per batch): the handler receives every record one fetch
        returned, waiting `kafka.batch_wait_ms` when none is buffered.

        `more` topics are read by the same consumer (one fetch loop for all of them);
        `fetch_wait_ms` overrides the wait chosen by `interactive`."""
        kafka = self.rt.settings.kafka
        wait = fetch_wait_ms or (kafka.reply_fetch_wait_ms if interactive else kafka.fetch_wait_ms)
        shared: dict[str, Any] = {
            "group_id": self.group_id(part),
            "auto_offset_reset": "earliest",
            "session_timeout_ms": kafka.session_timeout_ms,
            "heartbeat_interval_ms": kafka.heartbeat_interval_ms,
            "max_poll_interval_ms": kafka.max_poll_interval_ms,
            "fetch_max_wait_ms": wait,
            "parser": safe_headers,
            "decoder": raw_body,
        }
        if batch is not None:
            return self.router.subscriber(  # type: ignore[no-any-return]
                topic,
                *more,
                **shared,
                ack_policy=ack_policy,
                batch=True,
                max_records=batch,
                batch_timeout_ms=kafka.batch_wait_ms,
            )
        return self.router.subscriber(  # type: ignore[no-any-return]
            topic,
            *more,
            **shared,
            ack_policy=AckPolicy.ACK_FIRST if workers > 1 else ack_policy,
            max_workers=workers,
        )

    def replier(
        self, topic: str, *, part: str | None = None, workers: int = 1
    ) -> Callable[[Answer], object]:
        """Registers a request-reply handler (an interactive `subscriber`). FastStream
        publishes its reply to the request's `reply_to` topic; a request without one is
        answered to nobody and dropped. Replies with `error` set (an undecodable or invalid
        request, a failed operation) are counted in `mnemostream_request_errors_total`, by
        whether they had an address to go to."""
        metrics = self.metrics
        register = self.subscriber(topic, interactive=True, part=part, workers=workers)
        group_id = self.group_id(part)

        def decorate(handler: Answer) -> object:
            async def answer(message: KafkaMessage) -> Any:
                reply = await handler(message)
                if reply.error is not None and metrics is not None:
                    metrics.request_error(group_id, topic, replied=bool(message.reply_to))
                return reply

            answer.__name__ = answer.__qualname__ = handler.__name__
            answer.__doc__ = handler.__doc__
            return register(answer)

        return decorate

    def repliers(
        self, handlers: Mapping[str, Answer], *, workers: int = 1, fetch_wait_ms: int | None = None
    ) -> None:
        """Request-reply handlers of several topics behind one consumer, each request
        answered by the handler of the topic it came from (as `replier` answers): one fetch
        loop instead of one per topic, so a short `fetch_wait_ms` costs one poller."""
        metrics = self.metrics
        group_id = self.group_id()
        first, *rest = handlers
        register = self.subscriber(
            first, *rest, interactive=True, workers=workers, fetch_wait_ms=fetch_wait_ms
        )

        async def answer(message: KafkaMessage) -> Any:
            topic = message.raw_message.topic  # type: ignore[union-attr]
            reply = await handlers[topic](message)
            if reply.error is not None and metrics is not None:
                metrics.request_error(group_id, topic, replied=bool(message.reply_to))
            return reply

        answer.__name__ = answer.__qualname__ = f"on_{self.name}_request"
        register(answer)

    def on_event(
        self,
        topic: str,
        contract: type[E],
        work: Callable[[E], Awaitable[Any]],
        *,
        name: str,
        interactive: bool = False,
        part: str | None = None,
    ) -> None:
        """Register `work` for every `contract` event on `topic`, behind the DLQ guard
        (bounded retries, then the dead-letter topic). `name` names the handler in logs and
        AsyncAPI. Outcomes are counted in the group's metrics, if any."""
        rt, metrics, dead_letters = self.rt, self.metrics, self.dead_letters
        group_id = self.group_id(part)
        only = frozenset(rt.settings.only_agents)

        async def chosen(event: E) -> Any:
            scope = getattr(event, "scope", None)
            if only and (scope is None or scope.agent_wallet not in only):
                return None  # another tenant's event: acknowledged, not processed
            return await work(event)

        async def handler(message: KafkaMessage) -> None:
            await consume(
                dead_letters,
                message,
                group=group_id,
                contract=contract,
                work=chosen,
                attempts=rt.settings.max_attempts,
                backoff_ms=rt.settings.retry_backoff_ms,
                metrics=metrics,
                outage_seconds=rt.settings.outage_wait_seconds,
            )

        handler.__name__ = handler.__qualname__ = name
        # only a store outage escapes `consume` (every other failure ends processed or
        # dead-lettered): the offset is then not committed and the message is read again
        self.subscriber(
            topic, interactive=interactive, part=part, ack_policy=AckPolicy.NACK_ON_ERROR
        )(handler)

    def on_events(
        self,
        topic: str,
        contract: type[E],
        work: Callable[[list[E]], Awaitable[Any]],
        *,
        name: str,
        interactive: bool = False,
        part: str | None = None,
        batch: int | None = None,
        weigh: Callable[[E], int] | None = None,
        max_units: int | None = None,
    ) -> None:
        """Register `work` for batches of `contract` events on `topic`
        (`services.stream.batches`): undecodable records are dead-lettered, a failing batch
        is split until only the failing record is retried and dead-lettered, a batch's work
        stops after `kafka.batch_budget_ms` and hands the rest back, and what it finished is
        committed (`services.stream.handback`). `batch` caps the records per batch (default:
        `kafka.batch_max_records`); `weigh` counts an event's units of work (default 1) and
        `max_units` caps them per batch (default: the record cap)."""
        rt = self.rt
        kafka, only = rt.settings.kafka, frozenset(rt.settings.only_agents)
        records = batch or kafka.batch_max_records

        def admit(event: E) -> bool:
            scope = getattr(event, "scope", None)
            # an `IngressEvent` names its tenant's agent itself (issue 31)
            agent = getattr(event, "agent", None) if scope is None else scope.agent_wallet
            return not only or agent in only

        group_id, metrics = self.group_id(part), self.metrics
        consumer = BatchConsumer(
            self.dead_letters,
            group_id,
            contract,
            work,
            attempts=rt.settings.max_attempts,
            backoff_ms=rt.settings.retry_backoff_ms,
            metrics=metrics,
            outage_seconds=rt.settings.outage_wait_seconds,
            admit=admit,
            weigh=weigh or (lambda _event: 1),
            max_units=max_units if weigh is not None and max_units else records,
            budget_seconds=kafka.batch_budget_ms / 1000,
            sealer=getattr(rt, "sealer", None),  # sealed events, issue 31
        )

        async def handler(message: KafkaMessage) -> None:
            with record_spans(group_id, records_of(message)):  # traces on: a span per record
                await consumer.consume(message)  # hands unfinished records back, even if raises
            await commit(message, group_id, metrics)

        handler.__name__ = handler.__qualname__ = name
        # only a lasting store outage escapes `consume`, and then nothing is committed
        self.subscriber(
            topic, interactive=interactive, part=part, ack_policy=AckPolicy.MANUAL, batch=records
        )(handler)


DEADLINE_HEADER = "deadline"
"""Request header: milliseconds since epoch after which the requester stopped waiting."""
EXPIRED = "the request expired before it was served"


def expired(message: KafkaMessage) -> bool:
    """Whether a request's deadline has passed. Such a request is answered with an error and
    not served: nobody reads the answer, and a command (an item update) must not be applied
    again when a new group reads the request topic from the beginning."""
    deadline = (message.headers or {}).get(DEADLINE_HEADER)
    try:
        return deadline is not None and int(deadline) < time.time() * 1000
    except (TypeError, ValueError):
        return False


class ChangeAnnouncer:
    """Publishes `MemoryChanged` after a writer's write is durable."""

    def __init__(self, publisher: DefaultPublisher, producer: str) -> None:
        """`publisher` publishes to `topics.CHANGED`; `producer` names the writer."""
        self._publisher = publisher
        self._producer = producer

    async def announce(self, cause: Event, scope: Scope, layers: list[str]) -> None:
        """Keyed by agent; carries the cause's event time and id (and its trace)."""
        changed = MemoryChanged(
            occurred_at=cause.occurred_at,
            scope=scope,
            layers=layers,
            cause_event_id=cause.event_id,
            producer=self._producer,
        )
        with caused_by(cause):
            await self._publisher.publish(
                changed, key=topics.agent_key(scope.agent_wallet).encode()
            )

    async def announce_all(self, changes: Changes) -> None:
        """One `MemoryChanged` per distinct (scope, layers) of a batch, published together
        (each carries the last cause of its scope)."""
        await asyncio.gather(
            *(self.announce(cause, scope, layers) for cause, scope, layers in changes.coalesced())
        )

    async def announce_at(self, scope: Scope, layers: list[str]) -> None:
        """Announce a change made now by a request (not caused by an event)."""
        await self._publisher.publish(
            MemoryChanged(scope=scope, layers=layers, producer=self._producer),
            key=topics.agent_key(scope.agent_wallet).encode(),
        )


class Changes:
    """The writes of one batch, by written scope: `ChangeAnnouncer.announce_all` publishes
    one `MemoryChanged` per scope and layer set instead of one per event."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, tuple[str, ...]], tuple[Event, Scope]] = {}

    def add(self, cause: Event, scope: Scope, layers: list[str]) -> None:
        key = (scope.model_dump_json(), tuple(layers))
        self._by_key.pop(key, None)  # re-inserted: the last cause is kept, in order
        self._by_key[key] = (cause, scope)

    def coalesced(self) -> list[tuple[Event, Scope, list[str]]]:
        return [
            (cause, scope, list(layers)) for (_, layers), (cause, scope) in self._by_key.items()
        ]

    def __len__(self) -> int:
        return len(self._by_key)
