"""pre_turn latency with 1k and 10k memories in one tenant's scope, in-process and over Kafka.

    python -m benchmarks.retrieval                       # from the repo root; own local stack
    python -m benchmarks.retrieval --sizes 1000 10000 --requests 200
    python -m benchmarks.retrieval --sizes 10000 --json     # one JSON object on stdout

For each size, one tenant gets N memory rows (facts and session summaries, embedded with the
local MiniLM model: 2,000 distinct sentences, larger sizes reuse their vectors with new
texts) in MongoDB, plus a few turns of working/scene memory. Then, all six layers requested:

* in-process: `MemorySearch.context` against the real MongoDB-wire server and Redis, with a
  new query each time (query cache miss; the embedding cache is cold as well) and repeated
  (cache hit);
* over Kafka: the same through `MemoryClient.context` with the search and invalidation
  groups running in a separate process;
* right after a write (`--after-writes`, 20 requests), as in a live conversation: in-process,
  a turn of the tenant recorded and the query cache told before each request; over Kafka, a
  turn recorded with `MemoryClient.record_turn(wait=True)` (the transcripts and embeddings
  groups in a process of their own), then `context` of the same tenant.

With each after-write figure, how the exact index caught up (full loads of a tenant against
deltas, and the rows the deltas read back: a regression to full reloads shows here), the
search process's resident set (RSS, MiB) once it is done, and in-process the MongoDB
commands an after-write request sent (by collection: the round trips a write costs the next
read, whatever the machine's load). `--in-process-only` skips the figures over Kafka;
`--thread-turns N` makes the live thread N turns long first (the scene layer reads its newest).

Figures in milliseconds (p50/p95/p99). Set MNEMOSTREAM_KAFKA_BOOTSTRAP, MNEMOSTREAM_MONGO_URI
and MNEMOSTREAM_REDIS_URL to use your own servers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable

import numpy as np
from pydantic import SecretStr
from pymongo import monitoring

from benchmarks.pipeline import (
    endpoints,
    free_port,
    groups_process,
    line,
    pct,
    rss_mb,
    state_metrics,
)
from benchmarks.retrieval_texts import QUESTIONS, sentences
from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.adapters.mongo import MongoMemoryStore
from engine.records import MemoryRow, ScopeFields
from engine.retrieval.invalidation import invalidate
from engine.retrieval.vector_index import ExactVectorIndex, StateStats
from schemas.inputs import context_request, turn_recorded
from services.endpoints import Endpoints
from services.groups.transcripts import LAYERS as TURN_LAYERS
from services.runtime import open_runtime
from services.sdk.client import MemoryClient
from services.settings import Settings


async def seed(
    settings: Settings,
    agent: str,
    size: int,
    embedder: LocalMiniLMEmbedder,
    base: list[str],
    vectors: np.ndarray,
    thread_turns: int = 6,
) -> None:
    async with open_runtime(settings, embedder) as rt:
        store = MongoMemoryStore(rt.mongo[settings.mongo.db])
        now = int(time.time() * 1000)
        rng = random.Random(size)
        rows: list[MemoryRow] = []
        for i in range(size):
            j = i % len(base)
            text = base[j] if i < len(base) else f"{base[j][:-1]} (note {i})."
            rows.append(
                MemoryRow(
                    vector_id=f"bench_{agent}_{i}",
                    scope=ScopeFields(agent, "user", f"t{i % 50}", None, None),
                    content=text,
                    embedding=vectors[j],
                    embedding_model=embedder.model,
                    source="fact" if i % 3 == 0 else "session",
                    created_at=now - rng.randrange(0, 120) * 86_400_000,
                    metadata={"confidence": 0.8} if i % 3 == 0 else {},
                )
            )
        for start in range(0, size, 2000):
            await store.insert_many_if_absent(rows[start : start + 2000])
        for k in range(thread_turns):  # the live thread, as long as asked
            await rt.recorder.record(
                turn_recorded(
                    {
                        "agentWallet": agent,
                        "userAddress": "user",
                        "threadId": "live",
                        "userMessage": base[k % len(base)],
                        "assistantMessage": "Noted.",
                    }
                )
            )


async def in_process(
    settings: Settings, agent: str, requests: int, embedder: LocalMiniLMEmbedder
) -> tuple[list[float], list[float]]:
    misses: list[float] = []
    hits: list[float] = []
    async with open_runtime(settings, embedder) as rt:
        for i in range(requests):
            body = {
                "agentWallet": agent,
                "userAddress": "user",
                "threadId": "live",
                "query": f"{QUESTIONS[i % len(QUESTIONS)]} ({i})",
            }
            request = context_request(body)
            start = time.perf_counter()
            reply = await rt.search.context(request, int(time.time() * 1000))
            misses.append((time.perf_counter() - start) * 1000)
            assert not reply.cached
            start = time.perf_counter()
            reply = await rt.search.context(request, int(time.time() * 1000))
            hits.append((time.perf_counter() - start) * 1000)
            assert reply.cached
    return misses, hits


class StoreReads(monitoring.CommandListener):
    """Counts the MongoDB commands sent while `on` (by collection), for every client made
    after it was registered: the round trips a request costs, whatever the machine's load."""

    def __init__(self) -> None:
        self.on = False
        self.counts: Counter[str] = Counter()
        self.micros: Counter[str] = Counter()
        """The commands' durations as the driver saw them (send to reply), by the same key."""
        self._keys: dict[int, str] = {}

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if self.on:
            name = event.command_name
            target = event.command.get(name)
            key = f"{name} {target}" if isinstance(target, str) else name
            self.counts[key] += 1
            self._keys[event.request_id] = key

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        key = self._keys.pop(event.request_id, None)
        if key is not None:
            self.micros[key] += event.duration_micros

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        self._keys.pop(event.request_id, None)


STORE_READS = StoreReads()
monitoring.register(STORE_READS)


async def after_writes(
    settings: Settings, agent: str, requests: int, embedder: LocalMiniLMEmbedder
) -> tuple[list[float], StateStats | None, dict[str, float], dict[str, float]]:
    """pre_turn right after a turn of the same tenant was recorded (and the query cache told,
    as the invalidation group does, for the layers a turn writes): what a live conversation
    sees on every turn. The write changes the tenant's namespace token, so the exact index
    catches up (a delta). Also returns the store commands a request sent, and the ms they took
    as the driver saw them (summed: concurrent commands overlap), on average."""
    times: list[float] = []
    scope = {"agentWallet": agent, "userAddress": "user", "threadId": "live"}
    said = sentences(requests, seed=requests + 1)
    STORE_READS.counts.clear()
    STORE_READS.micros.clear()
    async with open_runtime(settings, embedder) as rt:
        # the tenant's first, full load is not what a write costs (it showed as the p99)
        warm_up = context_request({**scope, "query": "warm up"})
        await rt.search.context(warm_up, int(time.time() * 1000))
        for i in range(requests):
            turn = turn_recorded({**scope, "userMessage": said[i], "assistantMessage": "Noted."})
            await rt.recorder.record(turn)
            await invalidate(rt.cache, turn.scope, rt.search_policy, TURN_LAYERS)
            request = context_request({**scope, "query": f"{QUESTIONS[i % len(QUESTIONS)]} ({i})"})
            STORE_READS.on = True
            start = time.perf_counter()
            reply = await rt.search.context(request, int(time.time() * 1000))
            times.append((time.perf_counter() - start) * 1000)
            STORE_READS.on = False
            assert not reply.cached
        index = rt.search.index
        stats = index.stats() if isinstance(index, ExactVectorIndex) else None
    reads = {k: round(v / requests, 2) for k, v in sorted(STORE_READS.counts.items())}
    reads_ms = {k: round(v / requests / 1000, 2) for k, v in sorted(STORE_READS.micros.items())}
    return times, stats, reads, reads_ms


async def after_writes_over_kafka(
    ends: Endpoints, tag: str, agent: str, requests: int, settle_ms: float = 0.0
) -> list[float]:
    """The same through the SDK, as an agent does: `record_turn(wait=True)` (returns once the
    turn is stored, embedded and the query cache told), then `context`; `settle_ms` between."""
    times: list[float] = []
    scope = {"agentWallet": agent, "userAddress": "user", "threadId": "live"}
    said = sentences(requests, seed=requests + 7)
    async with MemoryClient(
        ends.kafka_bootstrap, timeout=120, group_prefix=f"bench-{tag}"
    ) as client:
        for i in range(requests):
            await client.record_turn(
                {**scope, "userMessage": said[i], "assistantMessage": "Noted."},
                wait=True,
                timeout=120,
            )
            if settle_ms > 0:
                await asyncio.sleep(settle_ms / 1000)
            start = time.perf_counter()
            reply = await client.context(f"{QUESTIONS[i % len(QUESTIONS)]} (written {i})", scope)
            times.append((time.perf_counter() - start) * 1000)
            assert not reply.cached
    return times


async def over_kafka(ends: Endpoints, agent: str, requests: int) -> tuple[list[float], list[float]]:
    misses: list[float] = []
    hits: list[float] = []
    scope = {"agentWallet": agent, "userAddress": "user", "threadId": "live"}
    async with MemoryClient(ends.kafka_bootstrap, timeout=120) as client:
        await client.context("warm up", scope)  # the tenant's first, full load
        for i in range(requests):
            query = f"{QUESTIONS[i % len(QUESTIONS)]} (kafka {i})"
            start = time.perf_counter()
            await client.context(query, scope)
            misses.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            await client.context(query, scope)
            hits.append((time.perf_counter() - start) * 1000)
    return misses, hits


def over_kafka_figures(
    ends: Endpoints,
    tag: str,
    agent: str,
    size: int,
    requests: int,
    after: int,
    report: Callable[[int, str, str, list[float]], None],
    settle_ms: float = 0.0,
) -> dict[str, float] | None:
    """The figures over Kafka: the search and invalidation groups in one process, the
    writers in another, the SDK asking. Returns the search process's state counts over
    the after-write requests (None without them)."""
    port = free_port()
    with (
        groups_process(
            ends, tag, ["search", "invalidation"], {"MNEMOSTREAM_HTTP_PORT": str(port)}
        ) as searching,
        groups_process(ends, tag, ["transcripts", "embeddings"]),
    ):
        misses, hits = asyncio.run(over_kafka(ends, agent, requests))
        report(size, "over Kafka", "miss", misses)
        report(size, "over Kafka", "hit", hits)
        if after > 0:
            before = state_metrics(port)
            written = asyncio.run(after_writes_over_kafka(ends, tag, agent, after, settle_ms))
            report(size, "over Kafka", "miss after a write", written)
            now = state_metrics(port)
            counts = {
                k: now.get(k, 0) - before.get(k, 0) for k in ("full_loads", "deltas", "delta_rows")
            }
            state = {
                **counts,
                "state_mb": round(now.get("state_bytes", 0) / 2**20, 1),
                "rss_mb": round(rss_mb(searching.pid), 1),
            }
            return state
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument(
        "--after-writes",
        type=int,
        default=20,
        help="requests each right after a write to the tenant (0: none)",
    )
    settle = "over Kafka, the wait between a write and its request (default 0)"
    parser.add_argument("--settle-ms", type=float, default=0.0, help=settle)
    parser.add_argument(
        "--in-process-only", action="store_true", help="skip the figures over Kafka"
    )
    parser.add_argument(
        "--thread-turns", type=int, default=6, help="turns of the live thread before the runs"
    )
    args = parser.parse_args()
    out = sys.stderr if args.json else sys.stdout
    sizes: dict[str, dict[str, dict[str, float]]] = {}
    figures: dict[str, object] = {"cpus": os.cpu_count(), "sizes": sizes}

    def report(size: int, where: str, kind: str, values: list[float]) -> None:
        print(line(f"{size:>6} memories, {where}, cache {kind}", values), file=out)
        cell = sizes.setdefault(str(size), {})
        cell[f"{where.replace(' ', '_')}_{kind.replace(' ', '_')}"] = {
            "p50": round(pct(values, 50), 2),
            "p95": round(pct(values, 95), 2),
            "p99": round(pct(values, 99), 2),
        }

    embedder = LocalMiniLMEmbedder.load()
    base = sentences(2000)
    vectors = embedder.embed_sync(base)
    print(
        f"mnemostream retrieval benchmark on {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}; all six layers; exact vector index; "
        f"load average {os.getloadavg()[0]:.1f}",
        file=out,
    )
    figures["load_average"] = round(os.getloadavg()[0], 2)
    # the machine's speed today: one short query embedded alone (1 thread), which figures
    # of different days can be scaled by
    bare: list[float] = []
    for i in range(100):
        start = time.perf_counter()
        embedder.embed_sync([f"{QUESTIONS[i % len(QUESTIONS)]} (calibration {i})"])
        bare.append((time.perf_counter() - start) * 1000)
    figures["bare_query_embedding_ms"] = round(pct(bare, 50), 2)
    print(f"one query embedded alone, 1 thread: p50 {pct(bare, 50):.2f} ms", file=out)
    with endpoints() as ends:
        for size in args.sizes:
            tag = uuid.uuid4().hex[:8]
            settings = Settings(
                kafka_bootstrap=ends.kafka_bootstrap,
                mongo_uri=SecretStr(ends.mongo_uri),
                redis_url=SecretStr(ends.redis_url),
                mongo_db=f"bench_{tag}",
                group_prefix=f"bench-{tag}",
            )
            agent = f"0xRetrieval{tag}"
            asyncio.run(seed(settings, agent, size, embedder, base, vectors, args.thread_turns))
            # a tenant's memories were written before the conversation: past the index's
            # margin, a delta does not read the seeded rows back
            time.sleep(settings.search.state_margin_ms / 1000)
            # queries are embedded as the search group embeds them (its thread settings)
            serving = LocalMiniLMEmbedder.load(
                threads=settings.embedding.threads,
                query_threads=settings.embedding.query_threads,
            )
            misses, hits = asyncio.run(in_process(settings, agent, args.requests, serving))
            report(size, "in-process", "miss", misses)
            report(size, "in-process", "hit", hits)
            if not args.in_process_only:
                state = over_kafka_figures(
                    ends, tag, agent, size, args.requests, args.after_writes, report, args.settle_ms
                )
                if state is not None:
                    sizes[str(size)]["over_Kafka_after_writes_state"] = state
                    print(f"{size:>6} memories, over Kafka, search process: {state}", file=out)
            if args.after_writes > 0:
                written, stats, reads, reads_ms = asyncio.run(
                    after_writes(settings, agent, args.after_writes, serving)
                )
                report(size, "in-process", "miss after a write", written)
                if stats is not None:
                    state = {
                        "full_loads": stats.loads,
                        "deltas": stats.deltas,
                        "delta_rows": stats.delta_rows,
                        "state_mb": round(stats.bytes / 2**20, 1),
                        "store_commands_per_request": round(sum(reads.values()), 2),
                        "store_commands": reads,
                        "store_ms_per_request": round(sum(reads_ms.values()), 2),
                        "store_ms": reads_ms,
                    }
                    sizes[str(size)]["in-process_after_writes_state"] = state
                    print(f"{size:>6} memories, in-process: {state}", file=out)
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
