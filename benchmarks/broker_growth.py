"""The local broker as a partition fills: one request-reply's latency against the records the
request partition holds (issue 28's soak: why a long run through one stack slows down).

    python -m benchmarks.broker_growth                     # from the repo root; its own broker
    python -m benchmarks.broker_growth --stages 0 2000 5000 10000 --json

A fresh broker of the local stack (`services.ops.stack`: Tansu, memory storage) with two
single-partition topics. Before each stage the request topic is filled up to `--stages` N
records, one record a batch (as a pre_turn is produced: one request, one batch; `--batched`
fills in batches of 500 instead); then `--pings` request-replies run: a record produced to
the request topic, read by a consumer positioned at its end that answers on the reply topic,
read there. The fetch waits are the search group's and the SDK's (10 and 5 ms). Prints each
stage's p50 / p95 (ms), the broker's CPU seconds over the stage's pings, and how long the
fill took; `--json` prints one object.

The broker is started and stopped here (by its PID). A broker whose fetch finds an offset by
an index (Apache Kafka) shows flat figures; one whose fetch scans the partition's batches
shows them grow with the stage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from benchmarks.pipeline import pct
from services.ops.stack.servers import free_port, launch, launch_spec

REQUESTS, REPLIES = "growth.requests", "growth.replies"
SEARCH_WAIT_MS, REPLY_WAIT_MS = 10, 5


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def fill(producer: AIOKafkaProducer, count: int, batched: bool) -> None:
    """`count` records of 300 bytes to the request topic: one a batch, or 500 a batch."""
    step = 500 if batched else 1
    for _ in range(0, count, step):
        sent = [await producer.send(REQUESTS, b"x" * 300) for _ in range(min(step, count))]
        await asyncio.gather(*sent)


async def pings(
    bootstrap: str, producer: AIOKafkaProducer, at: tuple[int, int], count: int
) -> list[float]:
    """`count` request-replies with the request reader at offset `at[0]` of the request
    topic and the reply reader at `at[1]` of the reply topic; their latencies (ms)."""
    asked, answered = TopicPartition(REQUESTS, 0), TopicPartition(REPLIES, 0)
    server = AIOKafkaConsumer(bootstrap_servers=bootstrap, fetch_max_wait_ms=SEARCH_WAIT_MS)
    client = AIOKafkaConsumer(bootstrap_servers=bootstrap, fetch_max_wait_ms=REPLY_WAIT_MS)
    await server.start()
    await client.start()
    try:
        server.assign([asked])
        server.seek(asked, at[0])
        client.assign([answered])
        client.seek(answered, at[1])

        async def answer() -> None:
            async for record in server:
                await producer.send(REPLIES, record.value)

        answering = asyncio.create_task(answer())
        replies = client.__aiter__()
        took: list[float] = []
        for n in range(count):
            began = time.perf_counter()
            await (await producer.send(REQUESTS, str(n).encode()))
            await asyncio.wait_for(replies.__anext__(), timeout=60)
            took.append((time.perf_counter() - began) * 1000)
        answering.cancel()
        return took
    finally:
        await server.stop()
        await client.stop()


async def run(args: argparse.Namespace, bootstrap: str, broker_pid: int) -> list[dict[str, Any]]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(REQUESTS, 1, 1), NewTopic(REPLIES, 1, 1)])
    finally:
        await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    await producer.start()
    stages: list[dict[str, Any]] = []
    held = answered = 0
    try:
        for target in args.stages:
            began = time.perf_counter()
            await fill(producer, max(0, target - held), args.batched)
            filled = time.perf_counter() - began
            held = max(held, target)
            cpu = cpu_seconds(broker_pid)
            took = await pings(bootstrap, producer, (held, answered), args.pings)
            cpu = cpu_seconds(broker_pid) - cpu
            held, answered = held + args.pings, answered + args.pings
            stage = {
                "records_held": held - args.pings,
                "p50_ms": round(pct(took, 50), 2),
                "p95_ms": round(pct(took, 95), 2),
                "broker_cpu_ms_per_ping": round(cpu * 1000 / args.pings, 2),
                "fill_s": round(filled, 2),
            }
            stages.append(stage)
            print(
                f"{stage['records_held']:>7} records held: request-reply p50 {stage['p50_ms']} "
                f"p95 {stage['p95_ms']} ms, broker CPU {stage['broker_cpu_ms_per_ping']} ms a "
                f"request-reply (filled in {filled:.1f} s)",
                file=sys.stderr if args.json else sys.stdout,
                flush=True,
            )
    finally:
        await producer.stop()
    return stages


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--stages", type=int, nargs="+", default=[0, 2000, 5000, 10000])
    parser.add_argument("--pings", type=int, default=150, help="request-replies a stage")
    parser.add_argument("--batched", action="store_true", help="fill 500 records a batch")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args()
    state = Path(tempfile.mkdtemp(prefix="mnemostream-broker-growth-"))
    port = free_port()
    broker = launch(launch_spec("kafka", port, state), state, state / "tansu.log", "wb")
    try:
        time.sleep(0.5)  # it starts in about 50 ms
        stages = asyncio.run(run(args, f"127.0.0.1:{port}", broker.pid))
    finally:
        broker.terminate()
        broker.wait(timeout=10)
    result = {
        "broker": "tansu (memory storage)",
        "batched": args.batched,
        "load_average": round(os.getloadavg()[0], 2),
        "stages": stages,
    }
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
