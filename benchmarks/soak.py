"""Soak the SDK's reply reader: many request-replies through ONE long-lived `MemoryClient`.

    python -m benchmarks.soak --requests 50000                 # starts its own stack
    python -m benchmarks.soak --requests 50000 --concurrency 32 --load 2 --json

Issue 28: under heavy load one long-lived client stopped receiving replies after ~8,800
request-replies while a fresh client on the same stack was answered. This drives
`--requests` pre_turn requests (`MemoryClient.context`) through one client, `--concurrency`
at a time, while `--write-share` of them also publish a turn (so the query cache is
invalidated and the groups stay busy), with `--load` CPU burner processes (stopped by PID at
the end) and the consumer groups in their own process (`benchmarks.pipeline.groups_process`).

Printed (one JSON object with `--json`): requests, replies, lost (no reply within
`--timeout`), failed (other errors, by type), late replies (a reply that came after its
request had timed out), p50/p95/p99/max latency (ms), throughput, and the reply reader's
restarts and repairs (`Transport.reader_stats`). A deaf client shows as lost replies from
some request on; a healthy one as none.

Set MNEMOSTREAM_KAFKA_BOOTSTRAP, MNEMOSTREAM_MONGO_URI and MNEMOSTREAM_REDIS_URL to run it
against servers of your own instead.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from benchmarks.pipeline import endpoints, groups_process, pct, stop_all
from services.endpoints import Endpoints
from services.sdk.client import MemoryClient

CITIES = ["Lisbon", "Porto", "Oslo", "Kyoto", "Quito", "Tunis", "Hanoi", "Lima", "Riga", "Bern"]
HOBBIES = ["violin", "kayak", "chess", "orchids", "sourdough", "marathons", "pottery", "birds"]


@dataclass
class Tally:
    """What the requests met, in the order they finished."""

    latencies_ms: list[float] = field(default_factory=list)
    lost: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    first_lost_at: int | None = None
    last_lost_at: int | None = None
    done: int = 0
    writes: int = 0


@contextlib.contextmanager
def cpu_load(processes: int) -> Iterator[list[int]]:
    """`processes` busy-looping Python processes, stopped (by their PIDs) on exit."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)]
    try:
        yield [p.pid for p in procs]
    finally:
        stop_all(procs, timeout=10)


def question(rng: random.Random, distinct: int) -> str:
    """One of `distinct` questions: repeats hit the query cache until a write invalidates it."""
    n = rng.randrange(distinct)
    return f"What do you remember about {HOBBIES[n % len(HOBBIES)]} and {CITIES[n % 10]}? #{n}"


async def seed(client: MemoryClient, agent: str, users: int) -> None:
    """A few turns per user, visible before the soak starts (so replies carry memory)."""
    for user in range(users):
        for i in range(3):
            city, hobby = CITIES[(user + i) % 10], HOBBIES[(user * 3 + i) % len(HOBBIES)]
            await client.record_turn(
                {
                    "agentWallet": agent,
                    "userAddress": f"user{user}",
                    "threadId": f"t{i}",
                    "userMessage": f"I live in {city} and I love {hobby}.",
                    "assistantMessage": f"Noted: {city}, {hobby}.",
                },
                wait=True,
                timeout=120,
            )


async def warm_up(client: MemoryClient, agent: str) -> None:
    """Until the search group answers (the groups join, the embedder loads)."""
    scope = {"agentWallet": agent, "userAddress": "user0", "threadId": "t0"}
    deadline = time.monotonic() + 180
    while True:
        try:
            await client.context("warm up", scope, timeout=10)
            return
        except TimeoutError:
            if time.monotonic() > deadline:
                raise SystemExit("the search group did not answer within 180 s") from None


async def worker(
    client: MemoryClient,
    agent: str,
    args: argparse.Namespace,
    rng: random.Random,
    todo: Iterator[int],
    tally: Tally,
    stopping: asyncio.Event,
) -> None:
    for n in todo:
        if stopping.is_set():
            return
        user = rng.randrange(args.users)
        scope = {"agentWallet": agent, "userAddress": f"user{user}", "threadId": f"t{n % 3}"}
        text = question(rng, args.distinct)
        start = time.perf_counter()
        try:
            await client.context(text, scope, timeout=args.timeout)
        except TimeoutError as exc:
            tally.lost += 1
            tally.first_lost_at = n if tally.first_lost_at is None else tally.first_lost_at
            tally.last_lost_at = n
            if type(exc) is not TimeoutError:  # failed at once (the reader is gone), not late
                tally.errors[type(exc).__name__] += 1
        except Exception as exc:  # noqa: BLE001 - every failure is counted, the soak goes on
            tally.errors[type(exc).__name__] += 1
        else:
            tally.latencies_ms.append((time.perf_counter() - start) * 1000)
        tally.done += 1
        if rng.random() < args.write_share:
            city, hobby = rng.choice(CITIES), rng.choice(HOBBIES)
            try:
                await client.record_turn(
                    {
                        **scope,
                        "userMessage": f"Lately I think about {hobby} in {city}.",
                        "assistantMessage": "Good to know.",
                    }
                )
                tally.writes += 1
            except Exception as exc:  # noqa: BLE001
                tally.errors[f"write:{type(exc).__name__}"] += 1


def reader_stats(client: MemoryClient) -> dict[str, Any]:
    stats = getattr(client, "reader_stats", None)
    return {} if stats is None else stats.as_dict()


async def progress(client: MemoryClient, tally: Tally, total: int, every: float) -> None:
    started = time.monotonic()
    while True:
        await asyncio.sleep(every)
        rate = tally.done / max(time.monotonic() - started, 1e-9)
        print(
            f"[soak] {tally.done}/{total} done, {tally.lost} lost, "
            f"{sum(tally.errors.values())} failed, {rate:.0f}/s, reader {reader_stats(client)}",
            file=sys.stderr,
            flush=True,
        )


async def soak(args: argparse.Namespace, ends: Endpoints, tag: str) -> dict[str, Any]:
    agent = f"0xSoak{uuid.uuid4().hex[:6]}"
    rng = random.Random(args.seed)
    tally = Tally()
    async with MemoryClient(
        ends.kafka_bootstrap,
        timeout=args.timeout,
        group_prefix=f"bench-{tag}",
        wait_timeout=120,
    ) as client:
        await warm_up(client, agent)
        await seed(client, agent, args.users)
        todo = iter(range(args.requests))
        ticker = asyncio.create_task(progress(client, tally, args.requests, args.every))
        # SIGTERM or SIGINT while driving: no new request, the report of those done is printed
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stopping.set)
        started = time.perf_counter()
        try:
            await asyncio.gather(
                *(
                    worker(client, agent, args, random.Random(rng.random()), todo, tally, stopping)
                    for _ in range(args.concurrency)
                )
            )
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
        seconds = time.perf_counter() - started
        await asyncio.sleep(args.timeout / 10)  # replies still on their way count as late
        stats = reader_stats(client)
    lat = tally.latencies_ms
    return {
        "command": "python -m benchmarks.soak " + " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}",
        "requests": args.requests,
        "done": tally.done,
        "interrupted": stopping.is_set(),
        "concurrency": args.concurrency,
        "timeout_s": args.timeout,
        "load_processes": args.load,
        "writes": tally.writes,
        "replies": len(lat),
        "lost": tally.lost,
        "first_lost_at": tally.first_lost_at,
        "last_lost_at": tally.last_lost_at,
        "failed": {k: v for k, v in tally.errors.items() if v},
        "late_replies": stats.get("late_replies"),
        "p50_ms": round(pct(lat, 50), 1) if lat else None,
        "p95_ms": round(pct(lat, 95), 1) if lat else None,
        "p99_ms": round(pct(lat, 99), 1) if lat else None,
        "max_ms": round(max(lat), 1) if lat else None,
        "seconds": round(seconds, 1),
        "per_second": round(tally.done / seconds, 1) if seconds else None,
        "reader": stats,
    }


def report(result: dict[str, Any]) -> str:
    reader = result["reader"] or {}
    return "\n".join(
        [
            f"soak: {result['command']}",
            f"machine: {result['machine']}; {result['load_processes']} CPU burner(s)",
            f"requests {result['done']} of {result['requests']}"
            f"{' (interrupted)' if result['interrupted'] else ''} ({result['concurrency']} at a "
            f"time, timeout "
            f"{result['timeout_s']:g} s, {result['writes']} turns written) in "
            f"{result['seconds']} s ({result['per_second']}/s)",
            f"replies {result['replies']}, lost {result['lost']} (first at request "
            f"{result['first_lost_at']}), failed {result['failed'] or 0}, late replies "
            f"{result['late_replies']}",
            f"latency ms: p50 {result['p50_ms']}  p95 {result['p95_ms']}  p99 {result['p99_ms']}"
            f"  max {result['max_ms']}",
            f"reply reader: {json.dumps(reader) if reader else 'no stats (older SDK)'}",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=50_000)
    parser.add_argument("--concurrency", type=int, default=32, help="requests in flight")
    parser.add_argument("--timeout", type=float, default=30, help="per request, seconds")
    parser.add_argument("--load", type=int, default=0, help="CPU burner processes")
    parser.add_argument("--write-share", type=float, default=0.25, help="turns per request")
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--distinct", type=int, default=400, help="distinct questions")
    parser.add_argument("--groups", nargs="+", default=["all"])
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--every", type=float, default=30, help="progress line, seconds")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    if args.requests < 1 or args.concurrency < 1:
        parser.error("--requests and --concurrency must be at least 1")
    # stopped by its PID (SIGTERM), or SIGINT even when started in the background: the burners,
    # the groups' process and the stack it started are stopped on the way out
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    tag = uuid.uuid4().hex[:8]
    with endpoints() as ends, groups_process(ends, tag, args.groups), cpu_load(args.load):
        result = asyncio.run(soak(args, ends, tag))
    print(json.dumps(result) if args.json else report(result))


if __name__ == "__main__":
    main()
