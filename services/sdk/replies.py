"""The SDK's reply reader: one private reply topic, read by a supervised consumer that never
ends or stalls silently (issue 28, "A client that cannot go deaf").

The transport registers each request's future in `pending` (correlation id → future); this
reader resolves it when a record with that `correlation_id` header arrives. The topic has one
partition, read without a consumer group (no join, no rebalance, no committed offset: the
reader keeps its own position, the offset after the last record it read) and fetched only
while a reply is awaited (`listen`).

Why a supervisor: before it, one `async for` over the consumer was the whole reader and
nothing watched it, while aiokafka 0.14 lets a consumer go quiet for good without a word:

* its iterator raises every error but `RecordTooLargeError` (`CorruptRecordException`,
  `OffsetOutOfRangeError`, authorization and coordination errors; `ConsumerStoppedError`
  ends it): the task ended, its exception unseen, and every later request timed out;
* its background fetch loop ends on an unexpected error (logged once; `Fetcher.error_future`
  has no reader) while `getone()` waits for ever for records nothing fetches: alive, deaf;
* a paused partition is not fetched until resumed: a reply awaited on a paused partition (a
  future registered without `listen(True)`, as `benchmarks/poison.py` does) never comes;
* a partition no longer assigned is not fetched at all.

Issue 28's run left no log telling which (its broker was fine: a fresh client was answered).
A group rebalance or `auto_offset_reset="latest"` (Tansu's wrong "latest" offsets) cannot be
it: there is no group, and the reader starts at the earliest offset. So the reader guards
against each way, and counts what it did (`stats`):

* the read loop is a task of its own, watched every `check_seconds`; when it ends or raises
  the consumer is replaced, at the reader's own position (nothing read twice or skipped):
  `restarts`; a record that kills it `SKIP_AFTER` times at one offset is skipped (its request
  times out, not every request): `repairs["skipped"]`;
* while replies are awaited the partition must be assigned and not paused, else it is
  assigned (at the reader's position) or resumed: `repairs["unassigned"]`, `["paused"]`;
* while replies are awaited and none came for `stall_seconds`, if the consumer answered no
  fetch in that time or the broker reported records past its position, it is replaced:
  `repairs["stalled"]` (a slow service is no stall: fetches answered, nothing to read); in
  the second case with a fetch wait 4 times longer (up to `MAX_FETCH_WAIT_MS`);
* when no consumer starts (`open_attempts` tries in a row) or `max_restarts` restarts in a
  row delivered nothing, the reader is failed: every waiting and every new request raises
  `ReplyReaderFailed` at once, naming the cause; it retries every `retry_seconds`, and the
  first consumer that starts clears the failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError
from cachetools import LRUCache
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, wait_chain, wait_fixed

__all__ = ["ReaderStats", "ReplyReader", "ReplyReaderFailed"]

log = logging.getLogger(__name__)

KEPT_EXPIRED = 10_000
"""How many timed-out correlation ids the reader remembers (to count late replies)."""

SKIP_AFTER = 3
"""Crashes at one offset after which the record there is skipped."""

MAX_FETCH_WAIT_MS = 320
"""The longest fetch wait a stall raises the reply fetch wait to (×4 a stall)."""


class ReplyReaderFailed(TimeoutError):
    """No reply can arrive: the client's reply reader is down (the message says why). Raised
    at once instead of after the request's timeout; a `TimeoutError`, so callers that handle
    a missing reply handle this too."""


@dataclass
class ReaderStats:
    """What the reply reader did since the client started."""

    replies: int = 0
    """Replies handed to their waiting request."""
    late_replies: int = 0
    """Replies that came after their request had stopped waiting (timed out, cancelled)."""
    unmatched: int = 0
    """Records with no waiting request that this client had sent (another client's)."""
    restarts: int = 0
    """Consumers replaced: the read loop ended or raised, or a stall."""
    repairs: Counter[str] = field(default_factory=Counter)
    """By kind: `paused`, `unassigned` (fixed in place), `stalled` (consumer replaced),
    `skipped` (a record that kept killing the reader)."""
    failures: int = 0
    """Times the reader was declared failed (requests then fail at once)."""
    last_cause: str | None = None
    """Why the reader was last restarted, repaired or failed."""
    fetch_wait_ms: int | None = None
    """The reply fetch wait a stall raised (None: never raised)."""
    rotations: int = 0
    """Reply topics rotated (`services.sdk.rotation`)."""

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "repairs": dict(self.repairs)}


class ReplyReader:
    """Reads `topic` (partition 0) and resolves `pending[correlation_id]` with each reply's
    value. Start with `start()`, stop with `close()`; `listen(True)` while a reply is awaited."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        pending: dict[str, asyncio.Future[bytes]],
        *,
        fetch_wait_ms: int,
        kafka_options: Mapping[str, Any],
        stall_seconds: float = 5.0,
        check_seconds: float = 0.25,
        open_attempts: int = 4,
        max_restarts: int = 6,
        retry_seconds: float = 2.0,
    ) -> None:
        """`stall_seconds`: how long awaited replies may see no record before the consumer
        is checked for a stall. `check_seconds`: how often the watch runs while replies are
        awaited. `open_attempts`, `max_restarts`, `retry_seconds`: see the module doc."""
        self.bootstrap = bootstrap
        self.partition = TopicPartition(topic, 0)
        self.pending = pending
        self.stats = ReaderStats()
        self.consumer: AIOKafkaConsumer | None = None
        self.task: asyncio.Task[None] | None = None
        self.read_task: asyncio.Task[None] | None = None
        self.failure: ReplyReaderFailed | None = None
        self.stall_seconds = stall_seconds
        self._fetch_wait_ms = fetch_wait_ms
        self._kafka_options = kafka_options
        self._check_seconds = check_seconds
        self._open_attempts = open_attempts
        self._max_restarts = max_restarts
        self._retry_seconds = retry_seconds
        self._next_offset: int | None = None  # None: from the earliest offset
        self._last_record = time.monotonic()
        self._quiet_since = time.monotonic()
        self._fruitless = 0  # restarts in a row that delivered nothing
        self._crashes: Counter[int | None] = Counter()  # read loop deaths by offset
        self._expired: LRUCache[str, None] = LRUCache(maxsize=KEPT_EXPIRED)
        self._closing = False

    async def start(self) -> None:
        """Start the first consumer (its errors are raised: the client does not start) and
        the supervisor."""
        self._closing = False
        self.consumer = await self._new_consumer()
        self.task = self._supervise_soon(self.consumer)

    async def close(self) -> None:
        """Stop the supervisor and the consumer; cancel the requests still waiting."""
        self._closing = True
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        if self.consumer is not None:  # a supervisor cancelled before it ran did not stop it
            with contextlib.suppress(KafkaError, OSError):
                await self.consumer.stop()
        for future in self.pending.values():
            future.cancel()
        self.task = self.consumer = self.read_task = None

    def check(self) -> None:
        """`ReplyReaderFailed` when the reader is failed: no reply could arrive."""
        if self.failure is not None:
            raise ReplyReaderFailed(str(self.failure))

    def listen(self, on: bool) -> None:
        """Fetch the reply topic only while a reply is awaited (`on`). The local broker
        answers a waiting fetch only when its wait ends, so the fetch wait is short, and
        pausing the topic between requests keeps an idle client from fetching every few
        milliseconds. (A resume missed here is repaired by the watch.)"""
        consumer = self.consumer
        if consumer is None or self.partition not in consumer.assignment():
            return
        paused = self.partition in consumer.paused()
        if on and paused:
            consumer.resume(self.partition)
        elif not on and not paused:
            consumer.pause(self.partition)

    def expired(self, correlation_id: str) -> None:
        """The request `correlation_id` stopped waiting: its reply, if any, is late."""
        self._expired[correlation_id] = None

    # --- reading ----------------------------------------------------------------------

    async def _new_consumer(self) -> AIOKafkaConsumer:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=self._fetch_wait_ms,
            **self._kafka_options,
        )
        try:
            await consumer.start()
            consumer.assign([self.partition])
            if self._next_offset is not None:
                consumer.seek(self.partition, self._next_offset)
            if not self.pending:
                consumer.pause(self.partition)
        except BaseException:
            with contextlib.suppress(Exception):
                await consumer.stop()
            raise
        return consumer

    async def _read(self, consumer: AIOKafkaConsumer) -> None:
        """Hand every record to its request, forever (a consumer error ends it)."""
        while True:
            batches = await consumer.getmany(self.partition, timeout_ms=1000)
            for record in batches.get(self.partition, ()):
                self._next_offset = record.offset + 1
                self._last_record = time.monotonic()
                self._crashes.clear()
                self._fruitless = 0
                self._deliver(record)

    def _deliver(self, record: Any) -> None:
        """Resolve the request waiting for `record` (an aiokafka `ConsumerRecord`)."""
        correlation_id = ""
        for key, value in record.headers or ():
            if key == "correlation_id" and value is not None:
                correlation_id = bytes(value).decode("utf-8", errors="replace")
        if record.value is None:  # nothing to hand over: the request times out
            return
        future = self.pending.pop(correlation_id, None)
        if future is not None and not future.done():
            future.set_result(record.value)
            self.stats.replies += 1
        elif future is not None or correlation_id in self._expired:
            self._expired.pop(correlation_id, None)
            self.stats.late_replies += 1
        else:
            self.stats.unmatched += 1

    # --- supervision --------------------------------------------------------------------

    def _supervise_soon(self, consumer: AIOKafkaConsumer | None) -> asyncio.Task[None]:
        task = asyncio.create_task(self._supervise(consumer), name="mnemostream-replies")
        task.add_done_callback(self._supervisor_done)
        return task

    def _supervisor_done(self, task: asyncio.Task[None]) -> None:
        """The supervisor itself ended (cancelled or broken, not by `close`): start another,
        so the reader cannot end silently."""
        if self._closing or task is not self.task:
            return
        cause = "cancelled" if task.cancelled() else f"raised {task.exception()!r}"
        self._restarted(f"the reply supervisor {cause}")
        self.task = self._supervise_soon(None)

    async def _supervise(self, consumer: AIOKafkaConsumer | None) -> None:
        reader: asyncio.Task[None] | None = None
        try:
            while True:
                if consumer is None:
                    if self.failure is not None:  # failed by restarts that did not help
                        await asyncio.sleep(self._retry_seconds)
                    consumer = await self._open()
                self.consumer = consumer
                reader = asyncio.create_task(self._read(consumer), name="mnemostream-reply-read")
                self.read_task = reader
                cause = await self._watch(consumer, reader)
                await self._shut(consumer, reader)
                consumer = reader = None
                self._restarted(cause)
        finally:
            if consumer is not None:
                await self._shut(consumer, reader)

    async def _shut(self, consumer: AIOKafkaConsumer, reader: asyncio.Task[None] | None) -> None:
        if reader is not None and not reader.done():
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        with contextlib.suppress(KafkaError, OSError):
            await consumer.stop()

    async def _open(self) -> AIOKafkaConsumer:
        """A new consumer at the reader's position, retried 0.2, 0.4, 0.8 s … apart, then every
        `retry_seconds` with the reader failed (module doc)."""
        backoff = (wait_fixed(0.1 * 2**n) for n in range(1, self._open_attempts))
        async for attempt in AsyncRetrying(
            retry=retry_if_exception_type((KafkaError, OSError, TimeoutError)),
            wait=wait_chain(*backoff, wait_fixed(self._retry_seconds)),
            before_sleep=self._not_opened,
        ):
            with attempt:
                async with asyncio.timeout(max(10.0, self.stall_seconds)):
                    consumer = await self._new_consumer()
        if self.failure is not None:
            log.warning("reply reader of %s is back", self.partition.topic)
            self.failure = None
        return consumer

    def _not_opened(self, state: RetryCallState) -> None:
        failures = state.attempt_number
        exc = state.outcome.exception() if state.outcome is not None else None
        log.warning("reply reader: no consumer for %s (%r)", self.partition.topic, exc)
        if failures >= self._open_attempts:
            self._fail(f"no consumer could be started ({failures} tries): {exc!r}")

    async def _watch(self, consumer: AIOKafkaConsumer, reader: asyncio.Task[None]) -> str:
        """Returns why the consumer must be replaced; repairs what it can in place."""
        started = time.monotonic()
        while True:
            await asyncio.wait({reader}, timeout=self._check_seconds)
            if reader.done():
                return self._death(reader)
            if not self.pending:
                self._quiet_since = time.monotonic()
                continue
            if self.partition not in consumer.assignment():
                consumer.assign([self.partition])
                if self._next_offset is not None:
                    consumer.seek(self.partition, self._next_offset)
                self._repaired("unassigned", "the reply partition was not assigned")
            elif self.partition in consumer.paused():
                consumer.resume(self.partition)
                self._repaired("paused", "replies were awaited on a paused partition")
            else:
                quiet = time.monotonic() - max(started, self._quiet_since, self._last_record)
                stall = self._stall(consumer, quiet) if quiet > self.stall_seconds else None
                if stall is not None:
                    self.stats.repairs["stalled"] += 1
                    return stall

    def _stall(self, consumer: AIOKafkaConsumer, quiet: float) -> str | None:
        """Why replies awaited for `quiet` seconds did not come, if it is the consumer's
        fault: no fetch answered in `stall_seconds`, or records past its position."""
        polled = consumer.last_poll_timestamp(self.partition)
        if polled is None or time.time() - polled / 1000 > self.stall_seconds:
            return f"no fetch answered for {quiet:.1f} s while {len(self.pending)} waited"
        highwater = consumer.highwater(self.partition)
        if highwater is not None and highwater > (self._next_offset or 0):
            # the broker has the replies but its fetches return none (benchmarks.soak: past
            # ~9,400 replies under load, for new consumers too): give it a longer fetch wait
            self._fetch_wait_ms = min(MAX_FETCH_WAIT_MS, self._fetch_wait_ms * 4)
            self.stats.fetch_wait_ms = self._fetch_wait_ms
            return (
                f"records up to offset {highwater} not delivered from offset "
                f"{self._next_offset or 0} in {quiet:.1f} s (fetch wait now "
                f"{self._fetch_wait_ms} ms)"
            )
        return None

    def _death(self, reader: asyncio.Task[None]) -> str:
        """Why the read loop ended; a record that killed it `SKIP_AFTER` times is skipped."""
        if reader.cancelled():
            return "the read loop was cancelled"
        exc = reader.exception()
        if exc is None:  # pragma: no cover - the loop has no way out but an error
            return "the read loop ended"
        self._crashes[self._next_offset] += 1
        if self._next_offset is not None and self._crashes[self._next_offset] >= SKIP_AFTER:
            self._repaired("skipped", f"offset {self._next_offset} kept raising {exc!r}")
            self._crashes.clear()
            self._next_offset += 1
        return f"the read loop raised {exc!r}"

    def _repaired(self, kind: str, cause: str) -> None:
        self.stats.repairs[kind] += 1
        self.stats.last_cause = cause
        log.warning("reply reader of %s repaired: %s", self.partition.topic, cause)

    def _restarted(self, cause: str) -> None:
        self.stats.restarts += 1
        self.stats.last_cause = cause
        self._quiet_since = time.monotonic()
        log.warning("reply reader of %s restarted: %s", self.partition.topic, cause)
        if self.pending:  # an idle reader that restarts has nothing to deliver
            self._fruitless += 1
        if self._fruitless > self._max_restarts:
            self._fruitless = 0
            self._fail(f"{self._max_restarts} restarts in a row delivered nothing; last: {cause}")

    def _fail(self, cause: str) -> None:
        """Every waiting request and every new one fails at once with `cause`."""
        message = f"the reply reader of {self.partition.topic} is down: {cause}"
        if self.failure is None:
            self.stats.failures += 1
            log.error("%s", message)
        self.stats.last_cause = cause
        self.failure = ReplyReaderFailed(message)
        for future in list(self.pending.values()):
            if not future.done():
                future.set_exception(ReplyReaderFailed(message))
