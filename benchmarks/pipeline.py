"""Benchmark the foundation pipeline over Kafka, with the local MiniLM embedder.

    python -m benchmarks.pipeline                  # from the repo root; starts its own stack
    python -m benchmarks.pipeline --turns 300 --visible 60 --requests 400

The consumer groups run in one separate process (`mnemostream run all`), the client in this
one, as an agent runtime would. Printed figures (milliseconds, p50/p95/p99):

* post_turn publish → ack: `MemoryClient.record_turn` until the broker acknowledged it;
* post_turn → visible in pre_turn: from publishing a turn that carries a unique word until a
  pre_turn reply contains it (pre_turn polled back to back);
* post_turn → extracted fact in pre_turn: from publishing "I just moved to <new city>" until
  the rule-based extractor's fact is in another thread's graph layer (extraction group →
  memory.facts.v1 → facts group → invalidation);
* pre_turn request-reply over Kafka, cache miss (a new query each time) and cache hit.

Set MNEMOSTREAM_KAFKA_BOOTSTRAP, MNEMOSTREAM_MONGO_URI and MNEMOSTREAM_REDIS_URL to run it
against servers of your own instead.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from services.endpoints import ENV_KAFKA, ENV_MONGO, ENV_REDIS, Endpoints
from services.ops.stack import start_stack, stop_stack
from services.sdk.client import MemoryClient
from services.stream.offsets import TopicPartition, committed, wait_processed

TOPICS = ["Lisbon", "sourdough", "greyhound", "marathon", "violin", "kayak", "orchid", "chess"]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def line(name: str, values: list[float]) -> str:
    return (
        f"{name:<42} n={len(values):<4} p50 {pct(values, 50):7.2f}  p95 {pct(values, 95):7.2f}"
        f"  p99 {pct(values, 99):7.2f}  mean {statistics.fmean(values):7.2f} ms"
    )


@contextmanager
def endpoints() -> Iterator[Endpoints]:
    kafka, mongo, redis = (os.environ.get(k) for k in (ENV_KAFKA, ENV_MONGO, ENV_REDIS))
    if kafka and mongo and redis:
        yield Endpoints(kafka, mongo, redis)
        return
    state = Path(tempfile.mkdtemp(prefix="mnemostream-bench-"))
    ends = start_stack(state)
    try:
        yield ends
    except BaseException:
        print(f"the local stack's data and logs are kept in {state}", file=sys.stderr)
        raise
    finally:
        stop_stack(state)
    # a finished run leaves nothing behind (a throughput run's store is ~100 MB)
    shutil.rmtree(state, ignore_errors=True)


@contextmanager
def groups(ends: Endpoints, tag: str) -> Iterator[None]:
    with groups_process(ends, tag, ["all"]):
        yield


@contextmanager
def groups_process(
    ends: Endpoints, tag: str, names: list[str], extra: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """The named consumer groups in one separate process, on database `bench_<tag>` (with
    `extra` environment variables); yields the process (its PID for RSS)."""
    env = {
        **os.environ,
        **ends.to_env(),
        "MNEMOSTREAM_MONGO_DB": f"bench_{tag}",
        "MNEMOSTREAM_GROUP_PREFIX": f"bench-{tag}",
        "MNEMOSTREAM_SESSION_TIMEOUT_MS": "2000",
        "MNEMOSTREAM_HEARTBEAT_INTERVAL_MS": "500",
        **(extra or {}),
    }
    subprocess.run(
        [sys.executable, "-m", "services", "db", "init"], env=env, check=True, capture_output=True
    )
    log_path = Path(tempfile.gettempdir()) / f"mnemostream-bench-{tag}-{'-'.join(names)}.log"
    log = log_path.open("wb")  # the groups' warnings and errors, for a failed run
    proc = subprocess.Popen(
        [sys.executable, "-m", "services", "run", *names, "--log-level", "warning"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def stop_all(procs: list[subprocess.Popen[bytes]], timeout: float = 30) -> None:
    """Terminate each process (by its PID), then wait for each, killing one that stays."""
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)


def rss_mb(pid: int) -> float:
    """The resident set of a process, in MiB (Linux /proc)."""
    for text in Path(f"/proc/{pid}/status").read_text().splitlines():
        if text.startswith("VmRSS:"):
            return int(text.split()[1]) / 1024
    return float("nan")


def state_metrics(port: int) -> dict[str, float]:
    """The search process's exact-index figures, from its /metrics."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    out: dict[str, float] = {}
    for name, key in (
        ('mnemostream_search_state_loads_total{kind="full"}', "full_loads"),
        ('mnemostream_search_state_loads_total{kind="delta"}', "deltas"),
        ("mnemostream_search_state_delta_rows_total", "delta_rows"),
        ("mnemostream_search_state_bytes", "state_bytes"),
        ("mnemostream_search_state_tenants", "state_tenants"),
    ):
        for row in text.splitlines():
            if row.startswith(name + " "):
                out[key] = float(row.split()[-1])
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def run(args: argparse.Namespace, ends: Endpoints, tag: str) -> None:
    agent = f"0xBench{uuid.uuid4().hex[:6]}"
    async with MemoryClient(ends.kafka_bootstrap, timeout=20) as client:
        # warm-up: the groups join, the embedder loads, the first request is answered
        scope = {"agentWallet": agent, "userAddress": "warm", "threadId": "warm"}
        await client.record_turn({**scope, "userMessage": "warm up", "assistantMessage": "ok"})
        deadline = time.monotonic() + 60
        while not (await client.context("warm up", scope)).items:
            if time.monotonic() > deadline:
                raise SystemExit("the pipeline did not answer within 60 s")
            await asyncio.sleep(0.2)

        acks: list[float] = []
        last: dict[int, int] = {}
        for i in range(args.turns):
            body = {
                "agentWallet": agent,
                "userAddress": f"user{i % 20}",
                "threadId": f"thread{i % 7}",
                "userMessage": f"I went {TOPICS[i % len(TOPICS)]} shopping, visit {i}.",
                "assistantMessage": "Thanks for telling me.",
            }
            start = time.perf_counter()
            await client.record_turn(body)
            acks.append((time.perf_counter() - start) * 1000)
            pos = client.last_position
            assert pos is not None
            last[pos.partition] = max(pos.offset, last.get(pos.partition, -1))
        # let the ingest backlog drain, so the next figure is latency, not queueing
        for partition, offset in last.items():
            await wait_processed(
                ends.kafka_bootstrap,
                f"bench-{tag}.transcripts",
                "memory.turns.v1",
                partition,
                offset,
                timeout=120,
            )

        visible: list[float] = []
        for i in range(args.visible):
            word = f"zq{uuid.uuid4().hex[:8]}"
            scope = {"agentWallet": agent, "userAddress": "vis", "threadId": f"vis{i}"}
            start = time.perf_counter()
            await client.record_turn(
                {
                    **scope,
                    "userMessage": f"My locker code is {word}.",
                    "assistantMessage": "Stored.",
                }
            )
            while word not in ((await client.context(f"locker code {word}", scope)).prompt or ""):
                if time.perf_counter() - start > 30:
                    raise SystemExit("a turn did not become visible within 30 s")
            visible.append((time.perf_counter() - start) * 1000)

        facts: list[float] = []
        for i in range(args.facts):
            city = "".join(
                random.choice("bcdfghklmnprstvz") + random.choice("aeiou") for _ in range(4)
            ).capitalize()
            scope = {"agentWallet": agent, "userAddress": "mover"}
            start = time.perf_counter()
            await client.record_turn(
                {
                    **scope,
                    "threadId": f"move{i}",
                    "userMessage": f"I just moved to {city}.",
                    "assistantMessage": "Congratulations!",
                }
            )
            turn_pos = client.last_position
            while True:
                reply = await client.context(
                    "Where do I live now?", {**scope, "threadId": "elsewhere"}, layers=["graph"]
                )
                if city in (reply.prompt or ""):
                    break
                if time.perf_counter() - start > 30:
                    pos = turn_pos
                    assert pos is not None
                    tp = [TopicPartition(pos.topic, pos.partition)]
                    done = {
                        g: await committed(ends.kafka_bootstrap, f"bench-{tag}.{g}", tp)
                        for g in ("transcripts", "extraction")
                    }
                    raise SystemExit(
                        f"the fact about {city} did not become visible within 30 s: {reply}; "
                        f"turn at {pos}, committed {done}"
                    )
            facts.append((time.perf_counter() - start) * 1000)

        misses: list[float] = []
        hits: list[float] = []
        scope = {"agentWallet": agent, "userAddress": "user3", "threadId": "thread3"}
        for i in range(args.requests):
            query = f"What did I go {TOPICS[i % len(TOPICS)]} shopping for, question {i}?"
            start = time.perf_counter()
            reply = await client.context(query, scope)
            misses.append((time.perf_counter() - start) * 1000)
            assert not reply.cached
            start = time.perf_counter()
            reply = await client.context(query, scope)
            hits.append((time.perf_counter() - start) * 1000)

    print(
        f"mnemostream pipeline benchmark on {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, local MiniLM embedder, groups in 1 process, "
        f"ingest fetch wait {os.environ.get('MNEMOSTREAM_FETCH_WAIT_MS', '100')} ms"
    )
    print(line("post_turn publish → ack", acks))
    print(line("post_turn → visible in pre_turn", visible))
    print(line("post_turn → extracted fact in pre_turn", facts))
    print(line("pre_turn request-reply (cache miss)", misses))
    print(line("pre_turn request-reply (cache hit)", hits))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--visible", type=int, default=60)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--facts", type=int, default=40)
    args = parser.parse_args()
    tag = uuid.uuid4().hex[:8]
    with endpoints() as ends, groups(ends, tag):
        asyncio.run(run(args, ends, tag))


if __name__ == "__main__":
    main()


def tree_cpu_seconds(root: int | None = None) -> float:
    """User + system CPU seconds used so far by `root` (this process by default) and every
    process below it, alive now (the groups, the servers it started): what the benchmark's
    own stack cost, whatever else the machine runs. Linux `/proc`; 0 where there is none."""
    root = os.getpid() if root is None else root
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        parents[int(entry.name)] = int(fields[1])
        used[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    total = 0.0
    for pid, seconds in used.items():
        at = pid
        while at not in (root, 0, 1) and at in parents:
            at = parents[at]
        if at == root:
            total += seconds
    return total
