"""What sealing events costs (issue 31): stored turns/s without and with an event key, in the
same run, rounds alternating (plain, sealed, plain, sealed, …) on a shared, noisy machine.

    python -m benchmarks.sealing                         # from the repo root; own stack
    python -m benchmarks.sealing --turns 2000 --rounds 3 --json

Each round starts fresh consumer groups, each in its own `mnemostream run` process as a
deployment runs them, on a fresh database (their start-up and one warm-up turn are not
timed), publishes `--turns` turns (user + assistant, ~200 characters each) over
`--threads` threads with the SDK, `--concurrency` publishes in flight, and stops the clock
when the `transcripts` group has committed every turn (transcript, working buffer and
session row stored; embedding deferred, as `benchmarks.throughput`'s `stored_per_s`).

* **plain**: no event key; the SDK publishes to `memory.turns.v1`; groups: transcripts.
* **sealed**: `MNEMOSTREAM_EVENT_ENCRYPTION_KEY` set; the SDK publishes through
  `memory.ingress.v1` (`ingress=True`), the `sealing` group seals each turn under its
  tenant's key into `memory.turns.v1`, and the transcripts group opens it: the whole key
  path (the sealing and transcripts groups in two processes).

Reports each round's turns/s, the median of each mode and `sealed_vs_plain` (median ratio;
the goal is ≥ 0.90). With `--json`, exactly one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import platform
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from pymongo import AsyncMongoClient

from benchmarks.pipeline import endpoints, groups_process
from schemas import topics
from services.endpoints import Endpoints
from services.sdk.client import MemoryClient
from services.stream.offsets import end_offsets, start_at_end, wait_caught_up

WORDS = [
    "museum",
    "river",
    "walk",
    "dinner",
    "train",
    "ticket",
    "hotel",
    "breakfast",
    "garden",
    "market",
]


def body(agent: str, n: int, threads: int) -> dict[str, Any]:
    said = " ".join(WORDS[(n + i) % len(WORDS)] for i in range(16))
    return {
        "agentWallet": agent,
        "userAddress": f"user{n % threads}",
        "threadId": f"thread{n % threads}",
        "userMessage": f"Day {n}: please plan {said}.",
        "assistantMessage": f"Planned day {n}: {said}.",
    }


async def one_round(ends: Endpoints, sealed: bool, args: argparse.Namespace) -> float:
    """Stored turns/s of one round: each group in its own `mnemostream run` process."""
    tag = uuid.uuid4().hex[:8]
    processes = [["sealing"], ["transcripts"]] if sealed else [["transcripts"]]
    env = {"MNEMOSTREAM_EXTRACTOR": "none", "MNEMOSTREAM_EMBEDDING_DEFERRED": "true"}
    if sealed:
        env["MNEMOSTREAM_EVENT_ENCRYPTION_KEY"] = base64.b64encode(os.urandom(32)).decode()
    prefix, agent = f"bench-{tag}", f"0xseal{tag}"
    await start_at_end(
        ends.kafka_bootstrap,
        [
            (f"{prefix}.{g[0]}", t)
            for g, t in zip(processes, STAGES[-len(processes) :], strict=True)
        ],
    )
    with contextlib.ExitStack() as running:
        procs = [running.enter_context(groups_process(ends, tag, n, env)) for n in processes]
        async with MemoryClient(ends.kafka_bootstrap, timeout=30, ingress=sealed) as client:
            await client.record_turn(body(agent, -1, args.threads))  # the groups have joined
            await caught_up(ends, prefix, sealed, timeout=180)
            queue = iter(range(args.turns))

            async def publisher() -> None:
                for n in queue:
                    await client.record_turn(body(agent, n, args.threads))

            began, cpu = time.monotonic(), [cpu_seconds(p.pid) for p in procs]
            await asyncio.gather(*(publisher() for _ in range(args.concurrency)))
            published = time.monotonic() - began
            await caught_up(ends, prefix, sealed, timeout=900)
            seconds = time.monotonic() - began
            used = [cpu_seconds(p.pid) - c for p, c in zip(procs, cpu, strict=True)]
    groups = ", ".join(f"{n[0]} {u:.1f}" for n, u in zip(processes, used, strict=True))
    print(
        f"  published in {published:.2f} s, stored in {seconds:.2f} s; "
        f"CPU seconds of the groups: {groups}",
        file=sys.stderr,
    )
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(ends.mongo_uri, retryWrites=False)
    try:
        turns = mongo[f"bench_{tag}"]["transcript_turns"]
        stored = await turns.count_documents({"agentWallet": agent})
        await mongo.drop_database(f"bench_{tag}")
    finally:
        await mongo.close()
    if stored != args.turns + 1:
        raise RuntimeError(f"{stored} of {args.turns + 1} turns stored")
    return float(args.turns / seconds)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


STAGES = ((topics.INGRESS), (topics.TURNS))
"""The topic each process's group reads (the sealing group's, then the transcripts')."""


async def caught_up(ends: Endpoints, prefix: str, sealed: bool, timeout: float) -> None:
    """Until the groups have committed everything published so far, in order."""
    for group, topic in zip(("sealing", "transcripts"), STAGES, strict=True):
        if group == "sealing" and not sealed:
            continue
        done = await end_offsets(ends.kafka_bootstrap, [topic])
        await wait_caught_up(ends.kafka_bootstrap, f"{prefix}.{group}", done, timeout=timeout)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    rates: dict[str, list[float]] = {"plain": [], "sealed": []}
    with endpoints() as ends:
        for n in range(args.rounds * 2):
            mode = "plain" if n % 2 == 0 else "sealed"
            rate = await one_round(ends, mode == "sealed", args)
            rates[mode].append(rate)
            print(f"round {n + 1}: {mode:6} {rate:8.1f} stored turns/s", file=sys.stderr)
    plain, sealed = (statistics.median(rates[m]) for m in ("plain", "sealed"))
    return {
        "turns": args.turns,
        "rounds": args.rounds,
        "concurrency": args.concurrency,
        "plain_per_s": [round(r, 1) for r in rates["plain"]],
        "sealed_per_s": [round(r, 1) for r in rates["sealed"]],
        "plain_median_per_s": round(plain, 1),
        "sealed_median_per_s": round(sealed, 1),
        "sealed_vs_plain": round(sealed / plain, 3),
        "machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} cpus",
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each mode")
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args()
    result = asyncio.run(main(args))
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:22} {value}")
