"""Read-your-writes: whether the consumer groups have handled one write, read from their own
committed offsets (`services.stream.offsets`), never guessed from the clock.

A write travels through stages. A stage's group reads an event, writes what it must,
publishes its follow-up events (an `EmbeddingRequested`, a `MemoryChanged`) and only then
commits (at-least-once). So:

* the first stage has handled the write once its group has committed past the write's
  offset;
* a later stage reads a follow-up that was on its partition (the partition of the follow-up's
  key, `schemas.topics`) when the stage before it was done: it has handled the write once its
  group has committed up to that partition's end offset, read at that moment.

The end offset may include later events of other writes on the same partition: the wait can
only be longer than needed by what the group reads in order anyway, never shorter. It is read
(ListOffsets) after the follow-up was acknowledged, as `offsets.start_at_end` and the lag
gauge read it; what the local broker gets wrong is a new group's "latest" reset
(docs/operations.md#local-servers), which nothing here uses.

`Progress` keeps one admin client and one metadata consumer for all of a client's waits
(started on the first wait) and polls committed offsets every `poll_seconds`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError
from aiokafka.partitioner import murmur2

from services.stream.security import NO_OPTIONS

__all__ = ["NotProcessed", "Progress", "Stage"]

POLL_SECONDS = 0.01
"""Default pause between two reads of a group's committed offset (one round trip each)."""
PARTITIONS_TTL_SECONDS = 60.0
"""How long a topic's partition list is reused before it is read again (a topic whose
partitions were added is then followed on the partitions its publishers now use)."""


@dataclass(frozen=True, slots=True)
class Stage:
    """One consumer group's step on a write's way: `group` (the consumer name of
    `services.stream.asyncapi.CHANNELS`, `<prefix>.<group>` at run time) reads `topic`;
    `key` is the partition key of the event it reads there (`schemas.topics`), None for
    the write itself (the first stage: its own published position)."""

    group: str
    topic: str
    key: str | None = None


@dataclass(slots=True)
class _Waiting:
    """What a path is waiting on now (for the error message when time runs out)."""

    group_id: str = ""
    topic: str = ""
    partition: int = -1
    needed: int = 0
    done: int = -1


class NotProcessed(TimeoutError):
    """A consumer group did not get to a write in time. The write itself was published (it
    is not lost and must not be sent again): it is processed when the group catches up.
    `group_id`, `topic`, `partition`: where it is behind; `committed`: its committed offset
    there (-1: none, the group may not be running); `needed`: the offset it must reach."""

    def __init__(
        self,
        what: str,
        timeout: float,
        waiting: _Waiting,
    ) -> None:
        self.group_id = waiting.group_id
        self.topic = waiting.topic
        self.partition = waiting.partition
        self.committed = waiting.done
        self.needed = waiting.needed
        hint = " (no committed offset: is the group running?)" if waiting.done < 0 else ""
        super().__init__(
            f"{what} was published but not processed within {timeout:g} s: consumer group "
            f"{waiting.group_id} has committed {waiting.topic}[{waiting.partition}] up to "
            f"{waiting.done}, it needs {waiting.needed}{hint}"
        )


@dataclass(slots=True)
class _Clients:
    admin: AIOKafkaAdminClient
    metadata: AIOKafkaConsumer
    coordinators: dict[str, int] = field(default_factory=dict)


class Progress:
    """Waits for consumer groups' progress on one broker. Concurrency-safe; `close()` stops
    its clients (it may be started again)."""

    def __init__(
        self,
        bootstrap: str,
        *,
        kafka_options: Mapping[str, Any] = NO_OPTIONS,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self._bootstrap = bootstrap
        self._kafka_options = kafka_options
        self._poll = poll_seconds
        self._clients: _Clients | None = None
        self._lock = asyncio.Lock()
        self._partitions: dict[str, tuple[float, list[int]]] = {}
        self._reads: dict[tuple[str, str, int], asyncio.Future[int]] = {}

    async def _started(self) -> _Clients:
        async with self._lock:
            if self._clients is None:
                admin = AIOKafkaAdminClient(
                    bootstrap_servers=self._bootstrap, **self._kafka_options
                )
                metadata = AIOKafkaConsumer(
                    bootstrap_servers=self._bootstrap,
                    enable_auto_commit=False,
                    **self._kafka_options,
                )
                try:
                    await admin.start()
                    await metadata.start()
                except BaseException:
                    await metadata.stop()
                    await admin.close()
                    raise
                self._clients = _Clients(admin, metadata)
            return self._clients

    async def close(self) -> None:
        async with self._lock:
            clients, self._clients = self._clients, None
        if clients is not None:
            await clients.metadata.stop()
            await clients.admin.close()

    async def committed(self, group_id: str, topic: str, partition: int) -> int:
        """The next offset `group_id` will read on the partition, as committed; -1 when it
        has committed none there. Concurrent waits on the same partition share one read in
        flight (a busy gateway's waits cost one round trip per partition, not one each)."""
        key = (group_id, topic, partition)
        read = self._reads.get(key)
        if read is None:
            read = asyncio.ensure_future(self._read_committed(group_id, topic, partition))
            self._reads[key] = read
            read.add_done_callback(lambda done: self._read_done(key, done))
        # shielded: one waiter's timeout must not cancel the read the others wait for
        return await asyncio.shield(read)

    def _read_done(self, key: tuple[str, str, int], done: asyncio.Future[int]) -> None:
        if self._reads.get(key) is done:
            del self._reads[key]
        if not done.cancelled():
            done.exception()  # retrieved here, so one nobody waits for any more is not logged

    async def _read_committed(self, group_id: str, topic: str, partition: int) -> int:
        clients = await self._started()
        tp = TopicPartition(topic, partition)
        coordinator = clients.coordinators.get(group_id)
        try:
            if coordinator is None:
                coordinator = await clients.admin.find_coordinator(group_id)
                clients.coordinators[group_id] = coordinator
            offsets = await clients.admin.list_consumer_group_offsets(
                group_id, coordinator, partitions=[tp]
            )
        except KafkaError:
            clients.coordinators.pop(group_id, None)  # asked again next time
            raise
        meta = offsets.get(tp)
        return -1 if meta is None else int(meta.offset)

    async def partition_of(self, topic: str, key: str) -> int:
        """The partition an event keyed `key` goes to on `topic`: the default partitioner's
        (murmur2 of the key over the topic's partitions, as the Java client and aiokafka
        compute it)."""
        read_at, partitions = self._partitions.get(topic, (0.0, []))
        if not partitions or time.monotonic() - read_at > PARTITIONS_TTL_SECONDS:
            clients = await self._started()
            await clients.metadata.topics()  # refreshes the cluster metadata
            found = clients.metadata.partitions_for_topic(topic)
            if not found:
                raise LookupError(f"topic {topic} does not exist")
            partitions = sorted(found)
            self._partitions[topic] = (time.monotonic(), partitions)
        index = int(murmur2(key.encode())) & 0x7FFFFFFF
        return partitions[index % len(partitions)]

    async def end(self, topic: str, partition: int) -> int:
        """The partition's end offset now (the offset of the next event)."""
        clients = await self._started()
        tp = TopicPartition(topic, partition)
        ends = await clients.metadata.end_offsets([tp])
        return int(ends[tp])

    async def _reach(self, waiting: _Waiting) -> None:
        while True:
            # a broker hiccup (a moving coordinator) is read again, within the timeout
            with contextlib.suppress(KafkaError):
                waiting.done = await self.committed(
                    waiting.group_id, waiting.topic, waiting.partition
                )
            if waiting.done >= waiting.needed:
                return
            await asyncio.sleep(self._poll)

    async def _follow(
        self, prefix: str, start: tuple[str, int, int], path: Sequence[Stage], waiting: _Waiting
    ) -> None:
        for stage in path:
            waiting.group_id, waiting.topic = f"{prefix}.{stage.group}", stage.topic
            waiting.partition, waiting.needed, waiting.done = -1, 0, -1
            if stage.key is None:
                topic, partition, offset = start
                waiting.topic, waiting.partition, waiting.needed = topic, partition, offset + 1
            else:
                waiting.partition = await self.partition_of(stage.topic, stage.key)
                waiting.needed = await self.end(stage.topic, waiting.partition)
            await self._reach(waiting)
        waiting.group_id = ""  # done

    async def wait(
        self,
        prefix: str,
        start: tuple[str, int, int],
        paths: Sequence[Sequence[Stage]],
        then: Sequence[Stage] = (),
        *,
        timeout: float,
        what: str,
    ) -> None:
        """Wait until every stage of `paths` (each path in order, the paths side by side),
        then every stage of `then`, has handled the write published at `start` (topic,
        partition, offset); `prefix`: the deployment's consumer group prefix. Raises
        `NotProcessed` (naming `what` and the group that is behind) after `timeout` seconds."""
        waits = [_Waiting() for _ in paths]
        last = _Waiting()
        try:
            async with asyncio.timeout(timeout):
                await asyncio.gather(
                    *(
                        self._follow(prefix, start, path, w)
                        for path, w in zip(paths, waits, strict=True)
                    )
                )
                await self._follow(prefix, start, then, last)
        except TimeoutError:
            behind = next((w for w in [*waits, last] if w.group_id), last)
            raise NotProcessed(what, timeout, behind) from None
