"""Read-your-writes latency (issue 18 §4): how long `record_turn(..., wait=True)` and
`remember(..., wait=True)` take on an idle local stack, and whether the next pre_turn sees the
write at once.

    python -m benchmarks.read_your_writes                 # starts its own stack
    python -m benchmarks.read_your_writes --turns 200 --json   # one JSON object on stdout

Every consumer group runs in one separate process (`mnemostream run all`, deferred embedding:
a turn is visible once the `transcripts`, `embeddings` and `invalidation` groups are done with
it), the client in this one. The turns are sent one at a time (the stack is idle between
them): each figure is from the publish until `wait=True` returned — the broker's
acknowledgement, the groups' work and their commits, and the client's reading of their
committed offsets (every 10 ms). After each waited turn one pre_turn asks for its unique word:
`seen_at_once` counts the replies that had it (it should be all of them).

Set MNEMOSTREAM_KAFKA_BOOTSTRAP, MNEMOSTREAM_MONGO_URI and MNEMOSTREAM_REDIS_URL to run it
against servers of your own instead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
import uuid

from benchmarks.pipeline import endpoints, groups_process, pct
from services.endpoints import Endpoints
from services.sdk import MemoryClient

WARM_UP_TIMEOUT_S = 180.0


def figures(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50": round(pct(values, 50), 2),
        "p95": round(pct(values, 95), 2),
        "p99": round(pct(values, 99), 2),
        "max": round(max(values), 2),
    }


async def measure(ends: Endpoints, tag: str, turns: int, remembers: int) -> dict[str, object]:
    agent = f"0xRyw{uuid.uuid4().hex[:6]}"
    async with MemoryClient(
        ends.kafka_bootstrap, timeout=30, group_prefix=f"bench-{tag}", wait_timeout=30
    ) as client:
        # warm-up: the groups join, the embedder loads, one turn goes all the way through
        warm = {"agentWallet": agent, "userAddress": "warm", "threadId": "warm"}
        body = {**warm, "userMessage": "warm up", "assistantMessage": "ok"}
        await client.record_turn(body, wait=True, timeout=WARM_UP_TIMEOUT_S)
        await client.context("warm up", warm)

        waited: list[float] = []
        seen = 0
        for i in range(turns):
            word = f"zq{uuid.uuid4().hex[:8]}"
            scope = {"agentWallet": agent, "userAddress": f"u{i % 5}", "threadId": f"t{i % 7}"}
            start = time.perf_counter()
            await client.record_turn(
                {**scope, "userMessage": f"My locker code is {word}.", "assistantMessage": "OK."},
                wait=True,
            )
            waited.append((time.perf_counter() - start) * 1000)
            reply = await client.context(f"locker code {word}", scope)
            seen += word in (reply.prompt or "")

        remembered: list[float] = []
        for i in range(remembers):
            scope = {"agentWallet": agent, "userAddress": f"r{i % 5}"}
            start = time.perf_counter()
            await client.remember(
                {**scope, "content": f"Fact number {i} is {uuid.uuid4().hex}."}, wait=True
            )
            remembered.append((time.perf_counter() - start) * 1000)
    return {
        "record_turn_wait_ms": figures(waited),
        "remember_wait_ms": figures(remembered) if remembered else None,
        "seen_at_once": seen,
        "turns": turns,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=100, help="turns recorded with wait=True")
    parser.add_argument("--remembers", type=int, default=30, help="remembers with wait=True")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args()
    if args.turns < 1 or args.remembers < 0:
        parser.error("--turns must be at least 1 and --remembers at least 0")
    out = sys.stderr if args.json else sys.stdout
    print(
        f"mnemostream read-your-writes benchmark on {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}; load average {os.getloadavg()[0]:.1f}",
        file=out,
    )
    tag = uuid.uuid4().hex[:8]
    with endpoints() as ends, groups_process(ends, tag, ["all"]):
        result = asyncio.run(measure(ends, tag, args.turns, args.remembers))
    result["cpus"] = os.cpu_count()
    result["load_average"] = round(os.getloadavg()[0], 2)
    turn = result["record_turn_wait_ms"]
    assert isinstance(turn, dict)
    print(
        f"record_turn(wait=True)  n={turn['n']:<4} p50 {turn['p50']:7.2f}  p95 {turn['p95']:7.2f}"
        f"  p99 {turn['p99']:7.2f}  max {turn['max']:7.2f} ms; next pre_turn saw the turn "
        f"{result['seen_at_once']}/{result['turns']}",
        file=out,
    )
    kept = result["remember_wait_ms"]
    if isinstance(kept, dict):
        print(
            f"remember(wait=True)     n={kept['n']:<4} p50 {kept['p50']:7.2f}  p95 "
            f"{kept['p95']:7.2f}  p99 {kept['p99']:7.2f}  max {kept['max']:7.2f} ms",
            file=out,
        )
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
