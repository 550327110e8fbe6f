"""Load: N concurrent simulated agents against the pipeline over Kafka, for a bounded time.

    python -m benchmarks.load                          # from the repo root; starts its own stack
    python -m benchmarks.load --agents 32 --seconds 60 --think-ms 200
    python -m benchmarks.load --processes per-group    # one OS process per consumer group

The consumer groups run in a separate OS process (`python -m services run all`, or one
process per group with `--processes per-group`), the agents in this one, as asyncio tasks
sharing one `MemoryClient` (the SDK's recommendation: one per process; `--client-per-agent`
gives each agent its own, with its own reply topic). Until the deadline each agent loops:

1. pre_turn: `MemoryClient.context(<the user's message>, <its scope>)`, timed until the reply;
2. post_turn: a turn with that user message and an assistant reply (sometimes tool events,
   sometimes a fact such as "I live in <city>"), timed until the broker acknowledged it;
3. `--think-ms` of pause.

Printed: the machine, the configuration, per operation n / throughput / p50 / p95 / p99 / max
(ms) / errors by type, the turns published, consumer lag per group (end offset − committed
offset over the group's topics, sampled every `--sample-seconds`: the maximum during the run,
the value at the deadline, and how long after the deadline it took to reach 0), and an
exactly-once check: the turns stored in MongoDB (`transcript_turns` turn ids, their
messages, and the turn rows of `memory`) against the turns acknowledged, duplicates 0.

Set MNEMOSTREAM_KAFKA_BOOTSTRAP, MNEMOSTREAM_MONGO_URI and MNEMOSTREAM_REDIS_URL to run it
against servers of your own instead (new groups read the topics from the beginning there, so
the lag then includes older traffic).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import sys
import time
import uuid
from collections.abc import Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer

from benchmarks.load_stats import (
    OP_HEADER,
    Sample,
    StoredCheck,
    drain_time,
    format_op,
    format_seconds,
    max_lag,
    summarize,
)
from benchmarks.load_traffic import Tally, agent, group_processes, stored_turns
from benchmarks.pipeline import endpoints, free_port, state_metrics, tree_cpu_seconds
from schemas import topics
from schemas.inputs import turn_recorded
from services.endpoints import Endpoints
from services.groups.app import resolve_groups
from services.sdk.client import MemoryClient, RequestFailed
from services.stream.asyncapi import CHANNELS
from services.stream.metrics import group_lag
from services.stream.offsets import TopicPartition, committed, wait_processed


def consumers_of(groups: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The Kafka consumer groups (names without prefix, e.g. `facts.remember`) of the chosen
    `mnemostream run` groups, with the topics each reads."""
    chosen = set(groups)
    found: dict[str, list[str]] = {}
    for channel in CHANNELS:
        for consumer in channel.consumers:
            if consumer.split(".")[0] in chosen:
                found.setdefault(consumer, []).append(channel.topic)
    order = list(groups)
    ranked = sorted(found, key=lambda name: (order.index(name.split(".")[0]), name))
    return {name: tuple(found[name]) for name in ranked}


class LagSampler:
    """Lag of each group = end offset − committed offset, summed over the partitions of its
    topics (`services.stream.metrics.group_lag`). Committed offsets are read before end offsets, so
    a message a group produced before committing its input is always seen."""

    def __init__(self, bootstrap: str, prefix: str, consumers: dict[str, tuple[str, ...]]):
        self._bootstrap = bootstrap
        self._prefix = prefix
        self._consumers = consumers
        self._consumer: Any = None
        self.failures = 0

    async def __aenter__(self) -> LagSampler:
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=self._bootstrap,
            client_id="mnemostream-load-lag",
            enable_auto_commit=False,
            request_timeout_ms=10_000,
        )
        await self._consumer.start()
        await self._consumer.topics()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self._consumer.stop()

    def _partitions(self, names: Sequence[str]) -> list[TopicPartition]:
        return [
            TopicPartition(topic, p)
            for topic in names
            for p in sorted(self._consumer.partitions_for_topic(topic) or ())
        ]

    async def sample(self) -> dict[str, int] | None:
        """{group: lag}, or None when the offsets could not be read (counted)."""
        try:
            parts = {g: self._partitions(t) for g, t in self._consumers.items()}
            done = await asyncio.gather(
                *(committed(self._bootstrap, f"{self._prefix}.{g}", parts[g]) for g in parts)
            )
            every = sorted({tp for tps in parts.values() for tp in tps})
            ends = await self._consumer.end_offsets(every)
            starts = await self._consumer.beginning_offsets(every)
        except Exception:  # noqa: BLE001 - a failed sample is counted and skipped
            self.failures += 1
            return None
        end = {(tp.topic, tp.partition): v for tp, v in ends.items()}
        begin = {(tp.topic, tp.partition): v for tp, v in starts.items()}
        return {
            g: sum(
                group_lag(
                    {(tp.topic, tp.partition): end[(tp.topic, tp.partition)] for tp in parts[g]},
                    offsets,
                    begin,
                ).values()
            )
            for g, offsets in zip(parts, done, strict=True)
        }


# --- the run ------------------------------------------------------------------------------------


async def warm_up(
    client: MemoryClient, ends: Endpoints, prefix: str, tag: str, groups: Sequence[str]
) -> None:
    """Until every turn-reading group processed a turn and (with search) pre_turn answers."""
    scope = {"agentWallet": f"0xwarm{tag}", "userAddress": "warm", "threadId": "warm"}
    event = turn_recorded({**scope, "userMessage": "warm up", "assistantMessage": "ok"})
    pos = await client.publish_turn(event)
    for consumer, names in consumers_of(groups).items():
        if topics.TURNS in names:
            await wait_processed(
                ends.kafka_bootstrap,
                f"{prefix}.{consumer}",
                topics.TURNS,
                pos.partition,
                pos.offset,
                timeout=180,
            )
    if "search" in groups:
        deadline = time.monotonic() + 120
        while True:
            try:
                await client.context("warm up", scope, timeout=5)
                break
            except (TimeoutError, RequestFailed):
                if time.monotonic() > deadline:
                    raise SystemExit("pre_turn was not answered within 120 s") from None


async def sample_until(
    sampler: LagSampler, samples: list[Sample], t0: float, stop: asyncio.Event, every: float
) -> None:
    while not stop.is_set():
        lags = await sampler.sample()
        if lags is not None:
            samples.append((time.monotonic() - t0, lags))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)


async def run(
    args: argparse.Namespace, ends: Endpoints, groups: list[str], tag: str
) -> dict[str, Any]:
    prefix, db = f"bench-load-{tag}", f"bench_load_{tag}"
    consumers = consumers_of(groups)
    wallets = [f"0xload{tag}a{i:03d}" for i in range(args.agents)]
    tally = Tally()
    samples: list[Sample] = []
    shared = MemoryClient(ends.kafka_bootstrap, timeout=args.timeout)
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(shared)
        await warm_up(shared, ends, prefix, tag, groups)
        clients = [shared] * args.agents
        if args.client_per_agent:
            clients = [
                await stack.enter_async_context(
                    MemoryClient(ends.kafka_bootstrap, timeout=args.timeout)
                )
                for _ in wallets
            ]
        sampler = await stack.enter_async_context(
            LagSampler(ends.kafka_bootstrap, prefix, consumers)
        )
        stop = asyncio.Event()
        t0, cpu0 = time.monotonic(), tree_cpu_seconds()
        sampling = asyncio.create_task(
            sample_until(sampler, samples, t0, stop, args.sample_seconds)
        )
        deadline = t0 + args.seconds
        await asyncio.gather(
            *(
                agent(c, w, random.Random(args.seed * 100_003 + i), args, deadline, tally)
                for i, (c, w) in enumerate(zip(clients, wallets, strict=True))
            )
        )
        ran = time.monotonic() - t0
        tally.cpu_busy_s = tree_cpu_seconds() - cpu0
        stop.set()
        await sampling
        # drain: sample often until every group is at lag 0, bounded
        drain_deadline = time.monotonic() + args.drain_timeout
        while time.monotonic() < drain_deadline:
            lags = await sampler.sample()
            if lags is not None:
                samples.append((time.monotonic() - t0, lags))
                if not any(lags.values()):
                    break
            await asyncio.sleep(0.25)

    check: StoredCheck | None = None
    if "transcripts" in groups:
        check = await stored_turns(ends.mongo_uri, db, wallets, tally)
    return report(args, groups, tally, samples, ran, sampler.failures, consumers, db, check)


def report(
    args: argparse.Namespace,
    groups: list[str],
    tally: Tally,
    samples: list[Sample],
    ran: float,
    sample_failures: int,
    consumers: dict[str, tuple[str, ...]],
    db: str,
    check: StoredCheck | None,
) -> dict[str, Any]:
    """Print the run's figures; the same as one JSON-ready object."""
    load = os.getloadavg()
    processes = "1 process" if args.processes == "one" else f"{len(groups)} processes"
    clients = "one client per agent" if args.client_per_agent else "1 shared client"
    print(
        f"machine: {platform.machine()} {platform.system()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, load average {load[0]:.2f} {load[1]:.2f}, "
        f"local MiniLM embedder, rule extractor"
    )
    print(
        f"config: {args.agents} agents x {args.users_per_agent} users, {args.seconds:g} s, "
        f"think {args.think_ms:g} ms, {clients}, "
        f"timeout {args.timeout:g} s, seed {args.seed}, groups {' '.join(args.groups)} "
        f"in {processes}, tool events {args.tool_share:.0%}, facts {args.fact_share:.0%}, "
        f"database {db}"
    )
    print(f"ran {ran:.1f} s (the last calls finish after the deadline)")
    print(OP_HEADER)
    pre = summarize("pre_turn request-reply", tally.pre_turn_ms, tally.pre_turn_errors, ran)
    ack = summarize("post_turn publish → ack", tally.ack_ms, tally.ack_errors, ran)
    print(format_op(pre))
    print(format_op(ack))
    print(
        f"turns published: {len(tally.published)} acknowledged ({len(tally.published) / ran:.1f}/s)"
        f", {len(tally.uncertain)} not acknowledged, {tally.facts} with a fact; "
        f"pre_turn cache hits {tally.pre_turn_cached}"
        + (f"; turn id collisions {tally.collisions}" if tally.collisions else "")
    )
    cycles = len(tally.published)
    cpu_ms = tally.cpu_busy_s * 1000 / cycles if cycles else None
    cores = os.cpu_count() or 1
    if cpu_ms:
        # closed loop: the machine's cycles a second are bounded by its cores over the CPU
        # a cycle (a pre_turn, a turn and all they cause) costs the benchmark's processes
        print(
            f"CPU: the stack used {tally.cpu_busy_s / ran / cores:.0%} of {cores} cores, "
            f"{cpu_ms:.1f} ms of CPU a cycle (pre_turn + turn, the groups, servers and "
            f"agents): at most "
            f"{cores * 1000 / cpu_ms:.0f} cycles/s on this machine"
        )
    run_samples = [s for s in samples if s[0] <= ran]
    print(
        f"consumer lag (messages, end − committed; {len(run_samples)} samples during the run, "
        f"every {args.sample_seconds:g} s; {sample_failures} failed samples):"
    )
    print(f"  {'group':<16} {'topics':<36} {'max':>6} {'at end':>7}  drained after the deadline")
    at_end = next((lags for t, lags in samples if t >= ran), {})
    for consumer, names in consumers.items():
        print(
            f"  {consumer:<16} {','.join(names):<36} {max_lag(samples, consumer):>6} "
            f"{at_end.get(consumer, 0):>7}  {format_seconds(drain_time(samples, consumer, ran))}"
        )
    drained = [drain_time(samples, c, ran) for c in consumers]
    every = None if any(d is None for d in drained) else max((d or 0.0 for d in drained), default=0)
    print(f"all groups drained {format_seconds(every)} after the deadline")
    figures: dict[str, Any] = {
        "agents": args.agents,
        "seconds": round(ran, 1),
        "cpus": os.cpu_count(),
        "load_average": round(load[0], 2),
        "pre_turn_ms": {k: round(getattr(pre, k), 1) for k in ("p50", "p95", "p99", "max")},
        "pre_turn_errors": pre.errors,
        "post_turn_ack_ms": {k: round(getattr(ack, k), 1) for k in ("p50", "p95", "p99")},
        "turns_per_second": round(len(tally.published) / ran, 1),
        "pre_turn_cache_hits": tally.pre_turn_cached,
        "drained_seconds": None if every is None else round(every, 1),
        "cpu_busy_share": round(tally.cpu_busy_s / ran / cores, 3),
        "cpu_ms_per_cycle": None if cpu_ms is None else round(cpu_ms, 1),
        "max_lag": {c: max_lag(samples, c) for c in consumers},
    }
    if check is None:
        print("exactly-once: skipped (the transcripts group did not run)")
        return figures
    figures["exactly_once"] = check.ok
    figures["stored_turns"] = check.stored
    figures["duplicates"] = check.duplicates
    print(
        f"exactly-once: acknowledged {check.published} turns, stored {check.stored} "
        f"(transcript turn ids), duplicates {check.duplicates}, missing {check.missing}, "
        f"unexpected {check.unexpected}; messages expected {check.messages_expected} stored "
        f"{check.messages_stored}; turn rows {check.turn_rows}, duplicates "
        f"{check.turn_row_duplicates} → {'OK' if check.ok else 'MISMATCH'}"
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=8, help="concurrent simulated agents")
    parser.add_argument("--seconds", type=float, default=30, help="how long the agents run")
    parser.add_argument("--think-ms", type=float, default=0, help="pause between turns")
    parser.add_argument("--users-per-agent", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--groups", nargs="+", default=["all"], help="groups to run, or all")
    parser.add_argument(
        "--processes",
        choices=("one", "per-group"),
        default="one",
        help="all groups in one process, or one process per group",
    )
    parser.add_argument("--client-per-agent", action="store_true", help="a MemoryClient each")
    parser.add_argument("--timeout", type=float, default=10, help="per call, seconds")
    parser.add_argument("--tool-share", type=float, default=0.3, help="turns with tool events")
    parser.add_argument("--fact-share", type=float, default=0.15, help="turns stating a fact")
    parser.add_argument("--sample-seconds", type=float, default=2, help="lag sampling period")
    parser.add_argument("--drain-timeout", type=float, default=300, help="wait for lag 0")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args()
    try:
        groups = resolve_groups(args.groups)
    except ValueError as exc:
        parser.error(str(exc))
    tag = uuid.uuid4().hex[:8]
    batches = [groups] if args.processes == "one" else [[g] for g in groups]
    port = free_port() if "search" in groups else None
    shown = sys.stderr if args.json else sys.stdout
    with (
        contextlib.redirect_stdout(shown),
        endpoints() as ends,
        group_processes(ends, f"bench_load_{tag}", f"bench-load-{tag}", batches, port),
    ):
        figures = asyncio.run(run(args, ends, groups, tag))
        if port is not None:
            # how the search process's exact index caught up: full loads against deltas
            state = state_metrics(port)
            figures["search_state"] = state
            print(f"search state: {state}")
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
