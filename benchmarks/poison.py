"""Poison records: how fast each undecodable record reaches the DLQ, on every consuming topic.

    python -m benchmarks.poison            # starts its own stack; every group in this process
    python -m benchmarks.poison --json     # one JSON object

Each of five shapes (empty, not JSON, tombstone, invalid UTF-8 in a string, JSON nested
100,000 deep) is published with `content-type: application/json` to every topic an event
group reads, then to every request-reply topic with a reply address. Printed: poison records
tried per (group, topic), dead letters seen (exactly one each is the target), the time from
the broker's acknowledgement of the publish to the letter being readable on `memory.dlq.v1`
(p50 and max), and request-reply poison answered with an error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import time
import uuid
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from benchmarks.pipeline import endpoints
from schemas import topics
from services.endpoints import Endpoints
from services.groups.app import running_groups
from services.sdk.client import MemoryClient
from services.settings import Settings
from services.stream.asyncapi import CHANNELS
from services.stream.guard import DeadLetter

SHAPES: dict[str, bytes | None] = {
    "empty": b"",
    "not-json": b"\x89PNG\r\n\x1a\n not JSON",
    "tombstone": None,
    "invalid-utf8-in-string": b'{"scope": {"agentWallet": "0x\xff"}}',
    "nested-100000-deep": b"[" * 100_000 + b"]" * 100_000,
}
JSON = [("content-type", b"application/json")]


async def letters_seen(
    bootstrap: str, prefix: str, seen: dict[tuple[str, str, int, int], float], stop: asyncio.Event
) -> None:
    """Record when each letter of this run's groups becomes readable."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, fetch_max_wait_ms=20)
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topics.DLQ, 0)])
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=50)
            now = time.perf_counter()
            for records in batch.values():
                for record in records:
                    letter = DeadLetter.model_validate_json(record.value or b"")
                    if letter.group.startswith(prefix):
                        key = (letter.group, letter.source_topic, letter.partition, letter.offset)
                        seen.setdefault(key, now)
    finally:
        await consumer.stop()


async def run(ends: Endpoints) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:8]
    prefix = f"poison-{tag}"
    settings = Settings(
        kafka_bootstrap=ends.kafka_bootstrap,
        mongo_uri=ends.mongo_uri,
        redis_url=ends.redis_url,
        mongo_db=f"poison_{tag}",
        group_prefix=prefix,
        session_timeout_ms=2000,
        heartbeat_interval_ms=500,
        extractor="rules",
    )
    seen: dict[tuple[str, str, int, int], float] = {}
    stop = asyncio.Event()
    async with (
        running_groups(settings, ["all"], broker_logs=False) as rt,
        MemoryClient(ends.kafka_bootstrap, timeout=15) as client,
    ):
        watcher = asyncio.create_task(letters_seen(ends.kafka_bootstrap, prefix, seen, stop))
        producer = client._require_producer()
        sent: list[tuple[str, int, int, float]] = []
        for channel in [c for c in CHANNELS if c.consumers and c.reply is None]:
            for value in SHAPES.values():
                meta = await producer.send_and_wait(channel.topic, value, key=b"k", headers=JSON)
                sent.append((channel.topic, meta.partition, meta.offset, time.perf_counter()))
        expected = {
            (rt.group_id(consumer), topic, partition, offset): at
            for topic, partition, offset, at in sent
            for channel in CHANNELS
            if channel.topic == topic
            for consumer in channel.consumers
            if consumer.split(".")[0] != "extraction" or rt.extractor is not None
        }
        answered, requests = 0, 0
        for channel in [c for c in CHANNELS if c.reply is not None]:
            for value in SHAPES.values():
                requests += 1
                correlation = uuid.uuid4().hex
                future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
                client._pending[correlation] = future
                headers = [
                    *JSON,
                    ("reply_to", client.reply_topic.encode()),
                    ("correlation_id", correlation.encode()),
                ]
                await producer.send_and_wait(channel.topic, value, key=b"k", headers=headers)
                assert channel.reply is not None
                reply = channel.reply.model_validate_json(await asyncio.wait_for(future, 30))
                answered += bool(getattr(reply, "error", None))
        deadline = time.monotonic() + 60
        while not set(expected) <= set(seen) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        stop.set()
        await watcher
        await rt.mongo.drop_database(settings.mongo.db)
    delays = [(seen[k] - at) * 1000 for k, at in expected.items() if k in seen]
    pairs = sorted({(g, t) for g, t, _, _ in expected})
    return {
        "group_topic_pairs": len(pairs),
        "shapes": len(SHAPES),
        "poison_tried": len(expected),
        "dead_lettered": len(delays),
        "extra_letters": len(set(seen) - set(expected)),
        "dlq_ms_p50": round(statistics.median(delays), 1) if delays else None,
        "dlq_ms_max": round(max(delays), 1) if delays else None,
        "requests_tried": requests,
        "requests_answered_with_error": answered,
        "machine": f"{platform.machine()}, {platform.python_version()}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    with endpoints() as ends:
        result = asyncio.run(run(ends))
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"poison records: {result['poison_tried']} tried "
        f"({result['shapes']} shapes x {result['group_topic_pairs']} group/topic pairs), "
        f"{result['dead_lettered']} dead-lettered, {result['extra_letters']} extra letters"
    )
    print(
        f"publish ack -> letter readable: p50 {result['dlq_ms_p50']} ms, "
        f"max {result['dlq_ms_max']} ms"
    )
    print(
        f"request-reply poison: {result['requests_tried']} tried, "
        f"{result['requests_answered_with_error']} answered with an error"
    )


if __name__ == "__main__":
    main()
