"""The SDK's reply reader cannot go deaf silently (issue 28): on the real broker, a read loop
that is cancelled or raises is restarted and the waiting request still gets its reply; a
reader that cannot be restarted fails the waiting and the new requests at once, naming the
cause, and comes back when it can; a paused or unassigned partition, or a consumer that
stopped fetching, is repaired while a reply is awaited."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from pydantic import BaseModel

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from schemas.requests import ContextReply
from services.endpoints import Endpoints
from services.sdk.client import MemoryClient
from services.sdk.replies import ReplyReader, ReplyReaderFailed
from services.stream.topics import create_topics
from tests.support.pipeline import groups_running

pytestmark = pytest.mark.integration

SCOPE = {"agentWallet": "0xDeafNoMore", "userAddress": "alice", "threadId": "t1"}


class Ping(BaseModel):
    n: int


def reader_of(client: MemoryClient) -> ReplyReader:
    reader = client._reply_reader
    assert reader is not None
    return reader


@pytest.fixture
async def answered(stack: Endpoints, minilm: LocalMiniLMEmbedder) -> AsyncIterator[MemoryClient]:
    """A client whose reader checks for a stall after 1 s, with the search group answering
    its pre_turn requests (the first one answered already)."""
    async with (
        groups_running(stack, minilm, "replyreader", ["search"]),
        MemoryClient(stack.kafka_bootstrap, timeout=60, reply_stall_seconds=1) as client,
    ):
        assert (await client.context("warm up", SCOPE)).error is None
        yield client


async def pending_context(client: MemoryClient, query: str) -> asyncio.Task[ContextReply]:
    """A pre_turn request whose future is registered (and the partition resumed)."""
    task = asyncio.create_task(client.context(query, SCOPE))
    await asyncio.sleep(0)
    assert client._pending, "the request is waiting for its reply"
    return task


async def test_a_cancelled_read_loop_is_restarted_and_the_request_answered(
    answered: MemoryClient,
) -> None:
    reader = reader_of(answered)
    first = reader.read_task
    assert first is not None
    request = await pending_context(answered, "Where do I live?")
    first.cancel()
    reply = await asyncio.wait_for(request, 30)
    assert reply.error is None
    assert reader.stats.restarts >= 1
    assert reader.stats.last_cause == "the read loop was cancelled"
    assert reader.read_task is not first
    assert not reader.read_task.done()
    assert (await answered.context("And now?", SCOPE)).error is None


async def test_a_read_loop_that_raises_is_restarted_and_the_request_answered(
    answered: MemoryClient,
) -> None:
    """The consumer is stopped under the read loop: `getmany` raises, as it does for a
    corrupt record or an offset out of range."""
    reader = reader_of(answered)
    consumer = reader.consumer
    assert consumer is not None
    request = await pending_context(answered, "Which tram do I take?")
    await consumer.stop()
    reply = await asyncio.wait_for(request, 30)
    assert reply.error is None
    assert reader.stats.restarts >= 1
    assert "ConsumerStoppedError" in (reader.stats.last_cause or "")
    assert reader.consumer is not consumer
    assert answered._consumer is reader.consumer  # what the transport shows is the new one


async def test_a_cancelled_supervisor_is_started_again(answered: MemoryClient) -> None:
    reader = reader_of(answered)
    supervisor = reader.task
    assert supervisor is not None
    request = await pending_context(answered, "What did I order?")
    supervisor.cancel()
    reply = await asyncio.wait_for(request, 30)
    assert reply.error is None
    assert supervisor.cancelled()
    assert reader.task is not supervisor
    assert not reader.task.done()
    assert reader.stats.last_cause == "the reply supervisor cancelled"


async def test_a_paused_partition_with_a_reply_awaited_is_resumed(
    answered: MemoryClient,
) -> None:
    """A resume lost between registering a request and fetching (the partition stays
    paused) would leave the request waiting for ever: the watch resumes it."""
    reader = reader_of(answered)
    consumer = reader.consumer
    assert consumer is not None
    request = await pending_context(answered, "Where is the cat?")
    consumer.pause(reader.partition)
    reply = await asyncio.wait_for(request, 30)
    assert reply.error is None
    assert reader.stats.repairs["paused"] >= 1
    assert reader.stats.restarts == 0  # repaired in place


async def test_an_unassigned_partition_with_a_reply_awaited_is_reassigned(
    answered: MemoryClient,
) -> None:
    reader = reader_of(answered)
    consumer = reader.consumer
    assert consumer is not None
    request = await pending_context(answered, "What is my name?")
    consumer.assign([])
    assert reader.partition not in consumer.assignment()
    reply = await asyncio.wait_for(request, 30)
    assert reply.error is None
    assert reader.stats.repairs["unassigned"] >= 1
    assert consumer.assignment() == {reader.partition}


async def test_a_consumer_that_stopped_fetching_is_replaced(answered: MemoryClient) -> None:
    """The consumer's own fetch loop ends (as aiokafka's does on an unexpected error, with
    nothing to tell the reader): the read loop is alive and waits for ever. Replies awaited
    with no fetch answered for `reply_stall_seconds` are a stall: the consumer is replaced."""
    reader = reader_of(answered)
    consumer = reader.consumer
    assert consumer is not None
    fetch_loop = consumer._fetcher._fetch_task
    fetch_loop.cancel()
    await asyncio.sleep(0.1)
    assert fetch_loop.done()
    request = await pending_context(answered, "When is the match?")
    reply = await asyncio.wait_for(request, 30)
    assert reply.error is None
    assert reader.stats.repairs["stalled"] >= 1
    assert reader.stats.restarts >= 1
    assert "no fetch answered" in (reader.stats.last_cause or "")
    assert reader.consumer is not consumer


async def test_a_reply_after_its_timeout_is_counted_late(answered: MemoryClient) -> None:
    """The topic is fetched only while a reply is awaited: the late reply is read (and
    counted, not handed to anyone) when the next request is; it comes first (one tenant's
    requests are answered in order)."""
    with pytest.raises(TimeoutError):
        await answered.context("Too quick to answer?", SCOPE, timeout=0.001)
    assert answered.reader_stats.late_replies == 0
    replies = answered.reader_stats.replies
    assert (await answered.context("And this one?", SCOPE)).error is None
    assert answered.reader_stats.late_replies == 1
    assert answered.reader_stats.replies == replies + 1
    assert answered.reader_stats.unmatched == 0


def closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


async def test_a_reader_that_cannot_restart_fails_requests_at_once_naming_the_cause(
    stack: Endpoints,
) -> None:
    """No consumer can be started (the broker is unreachable for the reader): the request
    waiting fails long before its 60 s timeout, a new one fails at once without being
    published, both naming the cause; the reader comes back once it can start again."""
    unanswered = f"test.replyreader.{uuid.uuid4().hex[:10]}"
    await create_topics(stack.kafka_bootstrap, {unanswered: 1})
    async with MemoryClient(stack.kafka_bootstrap, timeout=60) as client:
        reader = reader_of(client)
        consumer = reader.consumer
        assert consumer is not None
        # a request nobody answers, so it is still waiting when the reader goes down
        waiting = asyncio.create_task(client._exchange(unanswered, Ping(n=1), "k", Ping, None))
        async with asyncio.timeout(10):
            while client.last_position is None or client.last_position.topic != unanswered:
                await asyncio.sleep(0.01)
        reader.bootstrap = closed_port()
        await consumer.stop()
        with pytest.raises(ReplyReaderFailed) as failed:
            await asyncio.wait_for(waiting, 30)
        assert "no consumer could be started" in str(failed.value)
        assert "KafkaConnectionError" in str(failed.value)
        assert client.reader_stats.failures == 1

        published = client.last_position
        with pytest.raises(ReplyReaderFailed) as refused:
            await asyncio.wait_for(client.context("Anyone there?", SCOPE), 2)
        assert "no consumer could be started" in str(refused.value)
        assert client.last_position == published  # refused before anything was published

        reader.bootstrap = stack.kafka_bootstrap
        async with asyncio.timeout(30):
            while reader.failure is not None:
                await asyncio.sleep(0.05)
        assert reader.consumer is not None
        assert reader.consumer is not consumer
        reader.check()  # requests are accepted again


async def test_undelivered_replies_rotate_the_reply_topic_and_lose_no_request(
    answered: MemoryClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The broker stops delivering the reply topic (benchmarks.soak: past ~9,400 replies),
    simulated by consumers of it that are given nothing: the reader rotates to a new topic,
    new requests are answered there, the request waiting on the old topic is answered there
    once its records are delivered again, then the old topic is closed; none twice."""
    old_topic = answered.reply_topic
    old_reader = reader_of(answered)
    old_reader._max_restarts = 100  # the simulated stall lasts: not failed meanwhile
    withheld = True
    getmany = AIOKafkaConsumer.getmany

    async def nothing_from_the_old_topic(
        self: AIOKafkaConsumer, *partitions: TopicPartition, timeout_ms: int = 0
    ) -> dict[TopicPartition, list[Any]]:
        if withheld and any(tp.topic == old_topic for tp in self.assignment()):
            await asyncio.sleep(timeout_ms / 1000)
            return {}
        return await getmany(self, *partitions, timeout_ms=timeout_ms)

    monkeypatch.setattr(AIOKafkaConsumer, "getmany", nothing_from_the_old_topic)
    await asyncio.sleep(1.2)  # the read loop's fetch under way (1 s at most) is over
    stats = answered.reader_stats
    replies = stats.replies
    waiting = await pending_context(answered, "Where do I live?")
    async with asyncio.timeout(30):
        while answered.reply_topic == old_topic:
            await asyncio.sleep(0.05)
    assert stats.rotations == 1
    assert answered.reply_topic == f"{old_topic}.1"
    assert "rotated" in (stats.last_cause or "")
    assert not waiting.done()
    assert old_reader.pending, "the old topic is read while its request waits"

    assert (await asyncio.wait_for(answered.context("And now?", SCOPE), 30)).error is None
    assert reader_of(answered) is not old_reader
    assert answered._reply_topics.current.delivered == 1  # on the new topic
    withheld = False
    assert (await asyncio.wait_for(waiting, 30)).error is None
    assert stats.replies == replies + 2
    assert stats.late_replies == 0
    assert stats.unmatched == 0
    async with asyncio.timeout(10):
        while old_reader.task is not None:  # drained: closed
            await asyncio.sleep(0.05)
    assert answered._reply_topics.old == []
    assert (await answered.context("Still there?", SCOPE)).error is None
    assert stats.replies == replies + 3
    assert stats.rotations == 1


async def test_a_reply_topic_is_rotated_after_max_replies(answered: MemoryClient) -> None:
    """`reply_topic_max_replies`: a topic that delivered that many records is rotated, so
    none grows long; requests waiting meanwhile are answered, none twice."""
    answered._reply_topics.max_replies = 2
    stats = answered.reader_stats
    replies = stats.replies
    first = answered.reply_topic
    answers = await asyncio.gather(*(answered.context(f"q{n}", SCOPE) for n in range(3)))
    for n in range(4):
        answers.append(await answered.context(f"then {n}", SCOPE))
    assert all(answer.error is None for answer in answers)
    assert stats.rotations >= 1
    assert answered.reply_topic != first
    assert stats.replies == replies + 7
    assert stats.late_replies == 0
    assert stats.unmatched == 0
    async with asyncio.timeout(10):
        while answered._reply_topics.old:
            await asyncio.sleep(0.05)
