"""`MemoryClient`: the SDK agent runtimes use to talk to mnemostream over Kafka.

* `record_turn(...)` (post_turn) and `remember(...)` validate at the edge (a bad input raises
  `ScopeError` with the reference's message and nothing is published), publish, and return
  once the broker acknowledged the event.
* `context(...)` (pre_turn) and `search_layers(...)` validate their scope and filters the
  same way (`InputRejected` for an unknown or operator-bearing filter key), then are
  request-reply: the request carries
  `reply_to` (this client's own reply topic, one per process) and a `correlation_id`; the
  search group answers there. A reply that does not arrive within the timeout raises
  `TimeoutError`; a reply with an error raises `RequestFailed`.
* `index_transcript(...)` publishes a whole transcript as turns, one per exchange.
* `item(...)`, `newest_items(...)`, `session(...)` (working-memory sessions) and
  `admin(...)` (patterns, skills, job records, stats, evals, archive pinning) are
  request-reply too, but return their reply:
  `not_found` and `error` are data, not raised.
* `index_knowledge(...)` and `record_checkpoint(...)` (reference §14) are writes like
  `remember`; `reliability(...)` is request-reply like `context` (an error is raised).
* `request_job(...)` (`services.sdk.ops`) checks a maintenance job's parameters
  (`schemas.jobs`) and publishes it.

A number or a time out of its range raises `schemas.bounds.ValueOutOfRange` (a `ScopeError`)
naming the field: it is never clamped into range or replaced by a default.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from pydantic import BaseModel

from engine.filters import parse_filters
from schemas import topics
from schemas.callers import checkpoint_recorded, knowledge_submitted
from schemas.events import (
    KnowledgeSubmitted,
    MemoryRemembered,
    TurnRecorded,
    WorkflowCheckpointRecorded,
)
from schemas.inputs import context_request, memory_remembered, turn_recorded
from schemas.requests import (
    AdminReply,
    AdminRequest,
    ContextReply,
    ItemReply,
    ItemRequest,
    LayerSearchReply,
    LayerSearchRequest,
    ReliabilityReply,
    ReliabilityRequest,
    SessionReply,
    SessionRequest,
)
from schemas.scope import Scope
from schemas.search_defaults import PER_LAYER_LIMIT
from schemas.transcripts import transcript_turns
from services.sdk.ops import ServiceOps
from services.stream.security import NO_OPTIONS
from services.stream.topics import create_topics

log = logging.getLogger(__name__)

R = TypeVar("R", ContextReply, LayerSearchReply, ReliabilityReply)
A = TypeVar("A", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Position:
    """Where a published message landed."""

    topic: str
    partition: int
    offset: int


class RequestFailed(RuntimeError):
    """The service answered with an error."""


class MemoryClient(ServiceOps):
    """Async context manager; one instance per process is enough (it is concurrency-safe).
    `rerank(...)` and the other operations of `services.sdk.ops.ServiceOps` too."""

    def __init__(
        self,
        bootstrap: str,
        *,
        timeout: float = 5.0,
        fetch_wait_ms: int = 25,
        client_id: str | None = None,
        kafka_options: Mapping[str, Any] = NO_OPTIONS,
    ) -> None:
        """`kafka_options`: aiokafka security arguments
        (`services.stream.security.kafka_options`)."""
        self._bootstrap = bootstrap
        self._kafka_options = kafka_options
        self._timeout = timeout
        self._fetch_wait_ms = fetch_wait_ms
        self.client_id = client_id or uuid.uuid4().hex[:12]
        self.reply_topic = topics.reply_topic(self.client_id)
        self._producer: AIOKafkaProducer | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._reader: asyncio.Task[None] | None = None
        self._pending: dict[str, asyncio.Future[bytes]] = {}
        self.last_position: Position | None = None

    async def __aenter__(self) -> MemoryClient:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        await create_topics(
            self._bootstrap,
            {**topics.PARTITIONS, self.reply_topic: 1},
            kafka_options=self._kafka_options,
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
        # no join delay, and no reliance on the broker's "latest" offset.
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=self._bootstrap,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=self._fetch_wait_ms,
            **self._kafka_options,
        )
        await self._consumer.start()
        self._consumer.assign([TopicPartition(self.reply_topic, 0)])
        self._reader = asyncio.create_task(self._read_replies(), name="mnemostream-replies")

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        for future in self._pending.values():
            future.cancel()
        if self._consumer is not None:
            await self._consumer.stop()
        if self._producer is not None:
            await self._producer.stop()
        self._reader = self._consumer = self._producer = None

    async def _read_replies(self) -> None:
        assert self._consumer is not None  # noqa: S101 - set by start()
        async for record in self._consumer:
            headers = {k: v.decode() for k, v in record.headers or ()}
            future = self._pending.pop(headers.get("correlation_id", ""), None)
            if future is not None and not future.done() and record.value is not None:
                future.set_result(record.value)

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

    async def publish(self, topic: str, event: BaseModel, key: str, **headers: Any) -> Position:
        """Publish one contract (JSON) and wait for the broker's acknowledgement."""
        producer = self._require_producer()
        meta = await producer.send_and_wait(
            topic,
            event.model_dump_json().encode(),
            key=key.encode(),
            headers=[
                ("content-type", b"application/json"),
                *[(k, str(v).encode()) for k, v in headers.items()],
            ],
        )
        self.last_position = Position(meta.topic, meta.partition, meta.offset)
        return self.last_position

    async def record_turn(self, body: dict[str, Any] | None = None, **fields: Any) -> TurnRecorded:
        """post_turn. Accepts the reference body (`agentWallet`, `threadId`, `messages` or
        `userMessage` + `assistantMessage`, `toolEvents`, …) as a dict and/or keywords."""
        event = turn_recorded({**(body or {}), **fields})
        await self.publish_turn(event)
        return event

    async def publish_turn(self, event: TurnRecorded) -> Position:
        """Publish a validated turn, keyed by its thread session (one thread, one order)."""
        return await self.publish(topics.TURNS, event, event.session_id)

    async def index_transcript(
        self, body: dict[str, Any] | None = None, **fields: Any
    ) -> list[TurnRecorded]:
        """reference §13.3 `transcripts/index`: a whole transcript (`sessionId`, `threadId`,
        `agentWallet`, `messages`, …; see `schemas.transcripts.transcript_turns`) published
        as one turn per exchange, in order. Returns the turns; `[]` (nothing published) when
        there is no user/assistant text. Indexing the same transcript again is idempotent."""
        turns = transcript_turns({**(body or {}), **fields})
        for turn in turns:
            await self.publish_turn(turn)
        return turns

    async def remember(self, body: dict[str, Any] | None = None, **fields: Any) -> MemoryRemembered:
        """remember: an explicit fact for the tenant's durable memory."""
        event = memory_remembered({**(body or {}), **fields})
        await self.publish_remember(event)
        return event

    async def publish_remember(self, event: MemoryRemembered) -> Position:
        """Publish a validated remember, keyed by agent|user (one tenant's facts in order)."""
        key = f"{event.scope.agent_wallet}|{event.scope.user_address or ''}"
        return await self.publish(topics.REMEMBER, event, key)

    async def index_knowledge(
        self, body: dict[str, Any] | None = None, **fields: Any
    ) -> KnowledgeSubmitted:
        """Index a knowledge document (`content`, `key`, `uri`, `source`, `metadata` and the
        scope; see `schemas.callers.knowledge_submitted`): the knowledge group stores its
        chunks as `knowledge` rows that pre_turn's vectors layer finds."""
        event = knowledge_submitted({**(body or {}), **fields})
        await self.publish_knowledge(event)
        return event

    async def publish_knowledge(self, event: KnowledgeSubmitted) -> Position:
        """Publish a validated document, keyed by agent|user."""
        key = f"{event.scope.agent_wallet}|{event.scope.user_address or ''}"
        return await self.publish(topics.KNOWLEDGE, event, key)

    async def record_checkpoint(
        self, body: dict[str, Any] | None = None, **fields: Any
    ) -> WorkflowCheckpointRecorded:
        """Record a workflow checkpoint (`agentWallet`/`workflowWallet`, `runId`,
        `userAddress`, `agent`, `type`, `messages`, `step`, `goal`, `success`,
        `qualityScore`; see `schemas.callers.checkpoint_recorded`)."""
        event = checkpoint_recorded({**(body or {}), **fields})
        await self.publish_checkpoint(event)
        return event

    async def publish_checkpoint(self, event: WorkflowCheckpointRecorded) -> Position:
        """Publish a validated checkpoint, keyed by workflow wallet|run (one run in order)."""
        key = f"{event.scope.agent_wallet}|{event.scope.thread_id or ''}"
        return await self.publish(topics.WORKFLOWS, event, key)

    async def reliability(
        self,
        agent: str,
        scope: dict[str, Any] | Scope,
        *,
        last: int = 50,
        timeout: float | None = None,
    ) -> ReliabilityReply:
        """Reliability of `agent` over the newest `last` step learnings and evaluations of
        `scope` (the workflow wallet as `agentWallet`, and the runs' `userAddress`)."""
        scope_model = scope if isinstance(scope, Scope) else Scope.parse(scope)
        request = ReliabilityRequest(scope=scope_model, agent=agent, last=last)
        return await self._request(
            topics.RELIABILITY, request, scope_model.agent_wallet, ReliabilityReply, timeout
        )

    async def context(
        self,
        query: str,
        scope: dict[str, Any] | Scope,
        *,
        timeout: float | None = None,
        **options: Any,
    ) -> ContextReply:
        """pre_turn: the packed Memory context. `options`: layers, limit, maxItems,
        maxItemChars, budget={"maxCharacters": n}, includeRaw."""
        scope_body = scope.wire() if isinstance(scope, Scope) else scope
        request = context_request({**scope_body, **options, "query": query})
        parse_filters(request.scope.filters)  # InputRejected before anything is published
        key = request.scope.agent_wallet
        return await self._request(topics.SEARCH, request, key, ContextReply, timeout)

    async def search_layers(
        self,
        query: str,
        scope: dict[str, Any] | Scope,
        *,
        layers: list[str] | None = None,
        limit: int = PER_LAYER_LIMIT,
        timeout: float | None = None,
    ) -> LayerSearchReply:
        """Raw layer hits (no packing)."""
        scope_model = scope if isinstance(scope, Scope) else Scope.parse(scope)
        parse_filters(scope_model.filters)
        request = LayerSearchRequest.model_validate(
            {
                "scope": scope_model,
                "query": query,
                "limit": limit,
                **({"layers": layers} if layers else {}),
            }
        )
        return await self._request(
            topics.LAYER_SEARCH, request, scope_model.agent_wallet, LayerSearchReply, timeout
        )

    async def item(
        self,
        op: str,
        item_id: str,
        scope: dict[str, Any] | Scope,
        *,
        timeout: float | None = None,
        **fields: Any,
    ) -> ItemReply:
        """get / update / delete / resolve one memory item within `scope`. A missing or
        out-of-scope item comes back with `not_found=True` (it is not an exception)."""
        scope_model = scope if isinstance(scope, Scope) else Scope.parse(scope)
        request = ItemRequest.model_validate(
            {"scope": scope_model, "op": op, "id": item_id, **fields}
        )
        return await self._exchange(
            topics.ITEMS, request, scope_model.agent_wallet, ItemReply, timeout
        )

    async def newest_items(
        self,
        scope: dict[str, Any] | Scope,
        *,
        limit: int = 50,
        timeout: float | None = None,
    ) -> ItemReply:
        """The scope's `limit` (1-200) newest active facts, newest first (`list` on
        `memory.items.v1`); a scope without `userAddress` reads only user-less facts."""
        scope_model = scope if isinstance(scope, Scope) else Scope.parse(scope)
        request = ItemRequest(scope=scope_model, op="list", limit=limit)
        return await self._exchange(
            topics.ITEMS, request, scope_model.agent_wallet, ItemReply, timeout
        )

    async def session(
        self,
        op: str,
        session_id: str,
        scope: dict[str, Any] | Scope,
        *,
        timeout: float | None = None,
        **fields: Any,
    ) -> SessionReply:
        """get / update one working-memory session within `scope` (`fields` for update:
        `context`, `entities`, `state`, `metadata`, `replace`; see `SessionRequest`). A
        missing or out-of-scope session comes back with `not_found=True`."""
        scope_model = scope if isinstance(scope, Scope) else Scope.parse(scope)
        request = SessionRequest.model_validate(
            {"scope": scope_model, "op": op, "session_id": session_id, **fields}
        )
        return await self._exchange(
            topics.SESSIONS, request, scope_model.agent_wallet, SessionReply, timeout
        )

    async def admin(
        self,
        op: str,
        scope: dict[str, Any] | Scope | None = None,
        *,
        timeout: float | None = None,
        **fields: Any,
    ) -> AdminReply:
        """One `memory.admin.v1` operation (patterns, skills, job records, stats, evals; see
        `AdminRequest`). Like `item`, a missing or out-of-scope target comes back with
        `not_found=True` and bad input with `error` (neither is raised); no reply within the
        timeout raises `TimeoutError`."""
        scope_model = scope if isinstance(scope, Scope) or scope is None else Scope.parse(scope)
        request = AdminRequest.model_validate({"op": op, "scope": scope_model, **fields})
        key = scope_model.agent_wallet if scope_model is not None else op
        return await self._exchange(topics.ADMIN, request, key, AdminReply, timeout)

    async def _exchange(
        self, topic: str, request: BaseModel, key: str, reply: type[A], timeout: float | None
    ) -> A:
        """Publish `request` with this client's reply topic and a deadline (when this client
        stops waiting), and wait for its answer."""
        correlation_id = uuid.uuid4().hex
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._pending[correlation_id] = future
        wait = timeout or self._timeout
        try:
            await self.publish(
                topic,
                request,
                key,
                reply_to=self.reply_topic,
                correlation_id=correlation_id,
                deadline=int((time.time() + wait) * 1000),
            )
            async with asyncio.timeout(wait):
                payload = await future
        finally:
            self._pending.pop(correlation_id, None)
        return reply.model_validate_json(payload)

    async def _request(
        self, topic: str, request: BaseModel, key: str, reply: type[R], timeout: float | None
    ) -> R:
        answer = await self._exchange(topic, request, key, reply, timeout)
        if answer.error:
            raise RequestFailed(answer.error)
        return answer
