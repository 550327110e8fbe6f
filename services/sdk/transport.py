"""The SDK's Kafka transport: one producer, one private reply topic, request-reply.

* `publish(...)` sends one contract (JSON) and returns once the broker acknowledged it.
* A request carries `reply_to` (this client's own reply topic, one per process), a
  `correlation_id` and a `deadline` (milliseconds since epoch: when this client stops
  waiting, so a group reading it later does not serve it). A reply that does not arrive
  within the timeout raises `TimeoutError`.
* Replies are read from the start of the reply topic, without a consumer group, and matched
  to their waiting request by `correlation_id`, by a supervised reader
  (`services.sdk.replies.ReplyReader`) that cannot end or stall silently (issue 28): a read
  loop that ends or raises is restarted at the reader's own position, a paused or unassigned
  partition with replies awaited is resumed or reassigned, a consumer that answers no fetch
  (or does not deliver what the broker has) while replies are awaited is replaced, and when
  no consumer can be started every waiting and new request raises `ReplyReaderFailed` (a
  `TimeoutError` naming the cause) at once instead of timing out. When the broker stops
  delivering the reply topic, and after `reply_topic_max_replies` records, new requests name
  a new reply topic while the old one is read until its requests stop waiting
  (`services.sdk.rotation`). `Transport.reader_stats` counts what it did.
* Waits for the consumer groups' progress on a published write (read-your-writes) read their
  committed offsets through one `services.stream.progress.Progress`, started on the first
  wait.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self, TypeAlias, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from pydantic import BaseModel

from schemas import topics
from schemas.bodies import message_json, topic_label
from schemas.requests import (
    MAX_WAIT_SECONDS,
    ContextReply,
    ContextRequest,
    ItemRequest,
    LayerSearchReply,
    LayerSearchRequest,
    ReliabilityReply,
    ReliabilityRequest,
    SessionRequest,
)
from schemas.scope import Scope
from services.sdk.replies import ReaderStats, ReplyReader, ReplyReaderFailed
from services.sdk.rotation import ReplyTopics
from services.sdk.sealed_path import Sealer, routed
from services.stream.progress import Progress
from services.stream.telemetry import trace_headers
from services.stream.topics import create_topics

__all__ = [
    "PLAINTEXT",
    "Position",
    "ReaderStats",
    "ReplyReaderFailed",
    "RequestFailed",
    "ScopeInput",
    "Transport",
    "checked",
    "scope_of",
]

RECORD_TIME: ContextVar[int | None] = ContextVar("record_time", default=None)
"""The time (ms since epoch) of the records `publish` sends in this context; None: now."""
PLAINTEXT: Mapping[str, Any] = {}
"""Kafka options of a PLAINTEXT connection: no security arguments (the default)."""

ScopeInput: TypeAlias = Scope | Mapping[str, Any]
"""A validated `Scope`, or the reference's scope object (`agentWallet`, `userAddress`,
`threadId`, `mode`, `haiId`, `filters`, … and their aliases)."""

ScopedRequest: TypeAlias = (
    ContextRequest | LayerSearchRequest | ItemRequest | SessionRequest | ReliabilityRequest
)
"""Requests keyed by their scope's agent: one tenant's requests are served in order."""

A = TypeVar("A", bound=BaseModel)
R = TypeVar("R", ContextReply, LayerSearchReply, ReliabilityReply)


@dataclass(frozen=True, slots=True)
class Position:
    """Where a published message landed."""

    topic: str
    partition: int
    offset: int


class RequestFailed(RuntimeError):
    """The service answered with an error."""


def scope_of(scope: ScopeInput) -> Scope:
    """`scope` validated: `ScopeError` (with the reference's message) when it is not."""
    if isinstance(scope, Scope):
        return scope
    return Scope.parse(dict(scope) if isinstance(scope, Mapping) else scope)


def checked(reply: R) -> R:
    """`reply`, unless it carries an error: then `RequestFailed` with that error."""
    if reply.error:
        raise RequestFailed(reply.error)
    return reply


class Transport:
    """Async context manager; one instance per process is enough (it is concurrency-safe)."""

    def __init__(
        self,
        bootstrap: str,
        *,
        timeout: float = 5.0,
        fetch_wait_ms: int = 5,
        client_id: str | None = None,
        kafka_options: Mapping[str, Any] = PLAINTEXT,
        partitions: int = 8,
        group_prefix: str = "mnemostream",
        deferred_embeddings: bool = True,
        wait_timeout: float = 10.0,
        actor: str | None = None,
        reply_stall_seconds: float = 5.0,
        reply_topic_max_replies: int = 5000,
        ingress: bool = False,
        sealer: Sealer | None = None,
    ) -> None:
        """`timeout`: seconds a request waits for its reply unless the call says otherwise.
        `kafka_options`: aiokafka security arguments
        (`services.stream.security.kafka_options`). `partitions`: the scaled topics' count
        when this client is the first to create them (the `kafka.partitions` setting).

        Read-your-writes (`wait=True`, `wait_processed`) needs the deployment's
        `group_prefix` (the `group_prefix` setting: its consumer groups are
        `<prefix>.<group>`) and whether it defers embedding (`embedding.deferred`: then a
        turn is visible once the `embeddings` group filled its vector too);
        `wait_timeout`: seconds a wait lasts unless the call says otherwise. `actor` names
        this client in the item history of the changes it requests (default
        `sdk:<client id>`). `reply_stall_seconds`: how long awaited replies may see no record
        before the reply reader checks its consumer for a stall (`services.sdk.replies`);
        `reply_topic_max_replies`: records after which the reply topic is rotated
        (`services.sdk.rotation`; it is rotated after a stall too). `ingress`: publish
        turns, remembers, knowledge and checkpoints through the sealing group
        (`topics.INGRESS`), for a deployment that seals its events (the
        `MNEMOSTREAM_EVENT_INGRESS` setting): the client then needs no key. `sealer`: seal
        them here and publish them straight to their source topics, for a process of the
        deployment that holds the master key (the gateway: `services.sdk.sealed_path`)."""
        if ingress and sealer is not None:
            raise ValueError("give either ingress=True or a sealer, not both")
        if not group_prefix.strip():
            raise ValueError("group_prefix must not be blank")
        if not 0 < wait_timeout <= MAX_WAIT_SECONDS:  # NaN and infinity included
            raise ValueError(
                f"wait_timeout must be a positive number of seconds, at most {MAX_WAIT_SECONDS}"
            )
        if not reply_stall_seconds > 0:
            raise ValueError("reply_stall_seconds must be positive")
        self._bootstrap = bootstrap
        self._partitions = partitions
        self._kafka_options = kafka_options
        self._timeout = timeout
        self._fetch_wait_ms = fetch_wait_ms
        self.client_id = client_id or uuid.uuid4().hex[:12]
        self._producer: AIOKafkaProducer | None = None
        self._reply_topics = ReplyTopics(
            bootstrap,
            self.client_id,
            fetch_wait_ms=fetch_wait_ms,
            kafka_options=kafka_options,
            stall_seconds=reply_stall_seconds,
            max_replies=reply_topic_max_replies,
        )
        self._started_replies = False
        self.loop: asyncio.AbstractEventLoop | None = None
        """The event loop the client was started on: its producer, reply reader and pending
        requests live there (`services.integrations.loops` calls it from other loops)."""
        self.last_position: Position | None = None
        self.group_prefix = group_prefix
        self.deferred_embeddings = deferred_embeddings
        self.wait_timeout = wait_timeout
        self.actor = actor or f"sdk:{self.client_id}"
        self.ingress = ingress
        self.sealer = sealer
        self.progress = Progress(bootstrap, kafka_options=kafka_options)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Create the topics and this client's reply topic; start producer and reader."""
        self.loop = asyncio.get_running_loop()
        await create_topics(
            self._bootstrap,
            {**topics.partitions(self._partitions), self.reply_topic: 1},
            kafka_options=self._kafka_options,
            retention_ms=topics.default_retention_ms,
        )
        self._producer = AIOKafkaProducer(
            bootstrap_servers=self._bootstrap,
            client_id=f"mnemostream-sdk-{self.client_id}",
            linger_ms=0,
            acks=1,
            **self._kafka_options,
        )
        await self._producer.start()
        # A private, single-partition reply topic read from its beginning without a group:
        # no join delay, no rebalance, and no reliance on the broker's "latest" offset.
        await self._reply_topics.start()
        self._started_replies = True

    async def close(self) -> None:
        """Stop the reader, cancel the requests still waiting, stop the clients."""
        if self._started_replies:
            await self._reply_topics.close()
        if self._producer is not None:
            await self._producer.stop()
        await self.progress.close()
        self._producer = None
        self._started_replies = False

    @property
    def reply_topic(self) -> str:
        """The reply topic new requests name (rotated: `services.sdk.rotation`)."""
        return self._reply_topics.topic

    @property
    def _replies(self) -> TopicPartition:
        return self._reply_topics.current.partition

    @property
    def _pending(self) -> dict[str, asyncio.Future[bytes]]:
        """The requests waiting for a reply on the current reply topic."""
        return self._reply_topics.current.pending

    @property
    def _reply_reader(self) -> ReplyReader | None:
        """The current reply topic's reader (None before `start()`)."""
        return self._reply_topics.current if self._started_replies else None

    @property
    def _consumer(self) -> AIOKafkaConsumer | None:
        """The reply reader's current consumer (it is replaced when it fails)."""
        return None if self._reply_reader is None else self._reply_reader.consumer

    @property
    def reader_stats(self) -> ReaderStats:
        """The reply readers' counts (replies, late, restarts, repairs, failures, rotations)."""
        return self._reply_topics.stats

    @property
    def started(self) -> bool:
        """Whether `start()` ran and `close()` did not."""
        return self._producer is not None

    async def ping(self, timeout: float) -> None:
        """Ask the broker for its metadata: `RuntimeError` if the client is not started,
        `TimeoutError` or a Kafka error if the broker does not answer within `timeout`."""
        producer = self._require_producer()
        async with asyncio.timeout(timeout):
            await producer.client.fetch_all_metadata()

    def _require_producer(self) -> AIOKafkaProducer:
        if self._producer is None:
            raise RuntimeError("MemoryClient is not started (use `async with MemoryClient(...)`)")
        return self._producer

    async def publish(
        self,
        topic: str,
        event: BaseModel,
        key: str,
        *,
        reply_to: str | None = None,
        correlation_id: str | None = None,
        deadline: int | None = None,
    ) -> Position:
        """Publish one contract as JSON (`ScopeError` if too big for one message: not sent)
        with the request-reply headers given (`deadline`: ms since epoch); once acked."""
        value = message_json(event, topic_label(topic))
        producer = self._require_producer()
        given = {"reply_to": reply_to, "correlation_id": correlation_id, "deadline": deadline}
        topic, value = await routed(
            topic, key, event, value, sealer=self.sealer, ingress=self.ingress
        )
        meta = await producer.send_and_wait(
            topic,
            value,
            key=key.encode(),
            timestamp_ms=RECORD_TIME.get(),
            headers=[
                ("content-type", b"application/json"),
                *[(k, str(v).encode()) for k, v in given.items() if v is not None],
                *trace_headers(),  # the caller's trace goes on through the groups
            ],
        )
        self.last_position = Position(meta.topic, meta.partition, meta.offset)
        return self.last_position

    async def _exchange(
        self, topic: str, request: BaseModel, key: str, reply: type[A], timeout: float | None
    ) -> A:
        """Publish `request` with this client's reply topic and a deadline, and wait for its
        answer (`timeout` seconds, else the client's default)."""
        if self._started_replies:
            self._reply_topics.check()  # a reader that is down fails the request at once
        correlation_id = uuid.uuid4().hex
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        reply_to = self._reply_topics.register(correlation_id, future)
        wait = timeout or self._timeout
        try:
            await self.publish(
                topic,
                request,
                key,
                reply_to=reply_to,
                correlation_id=correlation_id,
                deadline=int((time.time() + wait) * 1000),
            )
            async with asyncio.timeout(wait):
                payload = await future
        finally:
            # a timeout cancels the future, a failed reader sets an exception: not answered
            answered = future.done() and not future.cancelled() and not future.exception()
            self._reply_topics.forget(correlation_id, answered)  # if not, its reply is late
        return reply.model_validate_json(payload)

    def _listen(self, on: bool) -> None:
        """Fetch the reply topic only while a reply is awaited (`on`): idle, it fetches none."""
        if self._reply_reader is not None:
            self._reply_reader.listen(on)

    async def _published(
        self, topic: str, requests: Sequence[ScopedRequest], reply: type[A], timeout: float | None
    ) -> asyncio.Task[list[A]]:
        """Requests of one tenant published one after the other (each once the broker
        has the one before); a task awaiting every reply (`timeout` seconds in all)."""
        if self._started_replies:
            self._reply_topics.check()  # a reader that is down fails the requests at once
        wait = timeout or self._timeout
        deadline = int((time.time() + wait) * 1000)
        waiting: list[tuple[str, asyncio.Future[bytes]]] = []

        async def replies() -> list[A]:
            try:
                async with asyncio.timeout_at(ends):
                    payloads = [await future for _, future in waiting]
            finally:
                for correlation_id, future in waiting:
                    answered = future.done() and not future.cancelled() and not future.exception()
                    self._reply_topics.forget(correlation_id, answered)
            return [reply.model_validate_json(payload) for payload in payloads]

        ends = asyncio.get_running_loop().time() + wait
        try:
            for request in requests:
                correlation_id = uuid.uuid4().hex
                future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
                waiting.append((correlation_id, future))
                await self.publish(
                    topic,
                    request,
                    request.scope.agent_wallet,
                    reply_to=self._reply_topics.register(correlation_id, future),
                    correlation_id=correlation_id,
                    deadline=deadline,
                )
        except BaseException:
            for correlation_id, _ in waiting:
                self._reply_topics.forget(correlation_id, False)
            raise
        return asyncio.get_running_loop().create_task(replies())

    async def _ask(
        self, topic: str, request: ScopedRequest, reply: type[A], timeout: float | None
    ) -> A:
        """`_exchange` keyed by the request's agent: one tenant's requests stay in order."""
        return await self._exchange(topic, request, request.scope.agent_wallet, reply, timeout)
