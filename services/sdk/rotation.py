"""The SDK's reply topics: the client's reply topic is rotated when the broker stops serving it.

`benchmarks.soak` showed the local broker (Tansu) stop delivering a long, busy reply partition
after ~9,400 replies (records past the reader's position not delivered, to new consumers
too) while a NEW reply topic is served at once. So `ReplyTopics` keeps one `TopicReader` (a
supervised `ReplyReader`) per reply topic: new requests name the current topic in their
`reply_to`; when its reader sees records past its position not delivered, or a second stall
of any kind, or it delivered `max_replies` records, a new topic
`memory.replies.<client id>.<n>` is created (as the first one was) and becomes current. An
old topic is read on only while requests that named it wait (their replies come there), then
its reader is closed. Each topic has its own pending requests, so a reply is taken by the one
reader of the topic its request named: no request is lost to a rotation or answered twice.
`stats` (shared by the readers) counts `rotations`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.errors import KafkaError

from schemas import topics
from services.sdk.replies import ReaderStats, ReplyReader
from services.stream.topics import create_topics

__all__ = ["ReplyTopics", "TopicReader"]

log = logging.getLogger(__name__)


class TopicReader(ReplyReader):
    """The reader of one reply topic: counts the records it delivered, and calls `rotate`
    when the broker holds records it does not deliver or on its second stall."""

    def __init__(
        self,
        *args: Any,
        stats: ReaderStats,
        rotate: Callable[[TopicReader, str], None],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.stats = stats  # one count for all the client's reply topics
        self.delivered = 0
        self.stalls = 0
        self._rotate = rotate

    def _deliver(self, record: Any) -> None:
        self.delivered += 1
        super()._deliver(record)

    def _stall(self, consumer: AIOKafkaConsumer, quiet: float) -> str | None:
        cause = super()._stall(consumer, quiet)
        if cause is not None:
            self.stalls += 1
            if "not delivered" in cause or self.stalls >= 2:
                self._rotate(self, cause)
        return cause


class ReplyTopics:
    """The client's reply topics and their readers (see the module doc)."""

    def __init__(
        self,
        bootstrap: str,
        client_id: str,
        *,
        fetch_wait_ms: int,
        kafka_options: Mapping[str, Any],
        stall_seconds: float,
        max_replies: int,
    ) -> None:
        self._bootstrap = bootstrap
        self._client_id = client_id
        self._kafka_options = kafka_options
        self._options: dict[str, Any] = {
            "fetch_wait_ms": fetch_wait_ms,
            "kafka_options": kafka_options,
            "stall_seconds": stall_seconds,
        }
        self.max_replies = max_replies
        self.stats = ReaderStats()
        self.current = self._reader(topics.reply_topic(client_id))
        self.old: list[TopicReader] = []  # rotated away from, read while requests wait
        self._owner: dict[str, TopicReader] = {}  # correlation id → the reader of its topic
        self._rotation: asyncio.Task[None] | None = None
        self._retiring: set[asyncio.Task[None]] = set()

    def _reader(self, topic: str) -> TopicReader:
        return TopicReader(
            self._bootstrap, topic, {}, stats=self.stats, rotate=self._stalled, **self._options
        )

    @property
    def topic(self) -> str:
        """The reply topic new requests name."""
        topic: str = self.current.partition.topic
        return topic

    async def start(self) -> None:
        """Start the first topic's reader (the transport created its topic)."""
        await self.current.start()

    async def close(self) -> None:
        """Stop every reader (their waiting requests are cancelled) and any rotation."""
        for task in [self._rotation, *self._retiring]:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        for reader in [self.current, *self.old]:
            await reader.close()
        self.old.clear()
        self._owner.clear()

    def check(self) -> None:
        """`ReplyReaderFailed` when the current reader is failed."""
        self.current.check()

    def register(self, correlation_id: str, future: asyncio.Future[bytes]) -> str:
        """Wait for the reply to `correlation_id` on the current topic, which is returned (the
        request's `reply_to`); a topic that delivered `max_replies` records is rotated."""
        reader = self.current
        if reader.delivered >= self.max_replies:
            self._start_rotation(reader, f"{reader.delivered} replies on {self.topic}")
        reader.pending[correlation_id] = future
        self._owner[correlation_id] = reader
        reader.listen(True)
        topic: str = reader.partition.topic
        return topic

    def forget(self, correlation_id: str, answered: bool) -> None:
        """The request `correlation_id` stopped waiting (`answered` or not: then its reply is
        late); an old topic whose requests all stopped waiting is closed."""
        reader = self._owner.pop(correlation_id, None)
        if reader is None:
            return
        reader.pending.pop(correlation_id, None)
        if not answered:
            reader.expired(correlation_id)
        reader.listen(bool(reader.pending))
        if reader is not self.current and not reader.pending and reader in self.old:
            self.old.remove(reader)
            task = asyncio.create_task(reader.close(), name="mnemostream-reply-retire")
            self._retiring.add(task)
            task.add_done_callback(self._retiring.discard)
            log.info("reply topic %s drained and closed", reader.partition.topic)

    def _stalled(self, reader: TopicReader, cause: str) -> None:
        if reader is self.current:
            self._start_rotation(reader, cause)

    def _start_rotation(self, reader: TopicReader, cause: str) -> None:
        if self._rotation is None or self._rotation.done():
            self._rotation = asyncio.create_task(
                self._rotate(reader, cause), name="mnemostream-reply-rotate"
            )

    async def _rotate(self, reader: TopicReader, cause: str) -> None:
        """Create the next reply topic, start its reader and make it current (the old one is
        read on while its requests wait)."""
        if reader is not self.current:
            return
        topic = f"{topics.reply_topic(self._client_id)}.{self.stats.rotations + 1}"
        new = self._reader(topic)
        try:
            await create_topics(
                self._bootstrap,
                {topic: 1},
                kafka_options=self._kafka_options,
                retention_ms=topics.default_retention_ms,
            )
            await new.start()
        except (
            KafkaError,
            OSError,
            TimeoutError,
        ) as exc:  # the old topic stays current; the next stall tries again
            log.warning("reply topic %s not rotated to %s: %r", reader.partition.topic, topic, exc)
            await new.close()
            return
        except asyncio.CancelledError:  # the client is closing
            await new.close()
            raise
        self.current = new
        self.stats.rotations += 1
        self.stats.last_cause = f"reply topic rotated to {topic}: {cause}"
        log.warning("reply topic %s rotated to %s: %s", reader.partition.topic, topic, cause)
        if reader.pending:
            self.old.append(reader)
        else:
            await reader.close()
