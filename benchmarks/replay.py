"""Replay rate next to live ingest rate, with the local MiniLM embedder and rule extractor.

    python -m benchmarks.replay                    # from the repo root; starts its own stack
    python -m benchmarks.replay --turns 1000 --remembers 100

1. **Live ingest:** the writer groups (transcripts, embeddings, extraction, facts, patterns)
   run in this process; N turns and M remembers are published as fast as the broker
   acknowledges them, and the clock stops when every group has committed the last offset of
   every partition (facts included: they pass through the extraction group and
   `memory.facts.v1`; vectors: through `memory.embeddings.v1`).
   Rate = log records (turns + remembers + extracted-facts events) / seconds.
2. **Replay:** `services.ops.replay.replay` rebuilds the same records into another database
   under fresh groups. Rate = the same log records / seconds, group joins included.
3. **Verify:** the rebuilt database is compared with the live one (it must be equal).
4. **Sealing** (issue 31): replay turns/s of a sealed log against a plain one, on
   `benchmarks.sealing`'s alternating rounds of `--sealing-turns` turns (`--sealing-rounds`
   of each mode; 0: skipped; `--sealing-path`): each round's turns are stored by its
   groups, then replayed alone into a fresh database (`benchmarks.sealing_replay`); the
   rounds' stored turns/s too.

With `--json`, exactly one JSON object on stdout.

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
from typing import Any

from benchmarks import sealing
from benchmarks.pipeline import endpoints
from benchmarks.sealing_replay import ReplayRate
from engine.adapters.local_embedder import LocalMiniLMEmbedder
from schemas import topics
from services.endpoints import Endpoints
from services.groups.app import running_groups
from services.ops.replay import SOURCE_TOPICS, replay
from services.ops.verify import compare
from services.sdk.client import MemoryClient
from services.settings import Settings
from services.stream.offsets import end_offsets, wait_caught_up

CITIES = ("Porto", "Lisbon", "Madrid", "Oslo", "Tallinn", "Riga", "Ghent")
GROUPS = ("transcripts", "embeddings", "extraction", "facts", "patterns")


def turn(agent: str, n: int, now_ms: int) -> dict[str, object]:
    return {
        "agentWallet": agent,
        "userAddress": f"user{n % 5}",
        "threadId": f"thread{n % 11}",
        "userMessage": f"I live in {CITIES[n % len(CITIES)]}. Plan day {n} of my trip please.",
        "assistantMessage": f"Day {n} is planned: museum in the morning, river walk later.",
        "toolEvents": [
            {"name": tool, "status": "success", "timestamp": now_ms + n}
            for tool in ("search_flights", "book_hotel")[: 1 + n % 2]
        ],
        "occurredAt": now_ms - 1000 * n,
    }


async def live_ingest(
    settings: Settings, ends: Endpoints, agent: str, turns: int, remembers: int
) -> tuple[int, float]:
    """(log records, seconds) from the first publish until every group caught up."""
    model = LocalMiniLMEmbedder.load()
    async with (
        running_groups(settings, GROUPS, embedder=model, broker_logs=False) as rt,
        MemoryClient(ends.kafka_bootstrap, timeout=30) as client,
    ):
        before = await end_offsets(ends.kafka_bootstrap, SOURCE_TOPICS)
        now_ms = int(time.time() * 1000)
        began = time.monotonic()
        for n in range(turns):
            await client.record_turn(turn(agent, n, now_ms))
        for n in range(remembers):
            await client.remember(
                {
                    "agentWallet": agent,
                    "userAddress": f"user{n % 5}",
                    "content": f"Prefers seat {n}A.",
                }
            )
        published = await end_offsets(ends.kafka_bootstrap, SOURCE_TOPICS)
        for group in ("transcripts", "patterns", "extraction"):
            await wait_caught_up(
                ends.kafka_bootstrap, rt.group_id(group), _of(published, topics.TURNS), timeout=900
            )
        await wait_caught_up(
            ends.kafka_bootstrap,
            rt.group_id("facts.remember"),
            _of(published, topics.REMEMBER),
            timeout=900,
        )
        facts = await end_offsets(ends.kafka_bootstrap, [topics.FACTS])
        await wait_caught_up(ends.kafka_bootstrap, rt.group_id("facts"), facts, timeout=900)
        stored = time.monotonic() - began  # text durable: the embedding stage may lag
        vectors = await end_offsets(ends.kafka_bootstrap, [topics.EMBEDDINGS])
        await wait_caught_up(ends.kafka_bootstrap, rt.group_id("embeddings"), vectors, timeout=900)
        seconds = time.monotonic() - began
        print(f"stored in {stored:.1f} s, every vector filled in {seconds:.1f} s", file=sys.stderr)
        after = await end_offsets(ends.kafka_bootstrap, SOURCE_TOPICS)
    records = sum(after[k] - before.get(k, 0) for k in after)
    return records, seconds


def _of(offsets: dict[tuple[str, int], int], topic: str) -> dict[tuple[str, int], int]:
    return {k: v for k, v in offsets.items() if k[0] == topic}


async def main(args: argparse.Namespace) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:8]
    agent = f"0xbench{tag}"
    out: dict[str, Any] = {
        "machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} cpus",
        "python": platform.python_version(),
        "turns": args.turns,
        "remembers": args.remembers,
    }
    with endpoints() as ends:
        settings = Settings(
            kafka_bootstrap=ends.kafka_bootstrap,
            mongo_uri=ends.mongo_uri,
            redis_url=ends.redis_url,
            mongo_db=f"bench_replay_{tag}",
            group_prefix=f"bench-{tag}",
            extractor="rules",
            session_timeout_ms=2000,
            heartbeat_interval_ms=500,
        )
        records, seconds = await live_ingest(settings, ends, agent, args.turns, args.remembers)
        model = LocalMiniLMEmbedder.load()
        target = f"bench_rebuilt_{tag}"
        report = await replay(settings, target, embedder=model)
        checked = await compare(settings, settings.mongo.db, target)
        out.update(
            records=records,
            live_seconds=round(seconds, 1),
            live_per_s=round(records / seconds, 1),
            replay_seconds=round(report.seconds, 1),
            replay_records=report.records,
            replay_per_s=round(report.rate, 1),
            verify_equal=checked.equal,
        )
        if args.sealing_rounds > 0:
            rates = ReplayRate()
            stored = await sealing.compare_args(ends, args, "replay", rates)
            out["sealing"] = {**rates.result(), "turns": args.sealing_turns, "stored": stored}
    return out


def report(out: dict[str, Any]) -> None:
    """The figures as lines."""
    print(f"machine: {out['machine']}, python {out['python']}")
    print(
        f"log: {out['turns']} turns + {out['remembers']} remembers -> {out['records']} records "
        "(with facts events)"
    )
    print(
        f"live ingest  {out['live_per_s']:8.1f} records/s  ({out['live_seconds']:6.1f} s, 5 groups)"
    )
    print(
        f"replay       {out['replay_per_s']:8.1f} records/s  ({out['replay_seconds']:6.1f} s, "
        f"{out['replay_records']} records, group joins included)"
    )
    print(f"verify       {'equal' if out['verify_equal'] else 'DIFFERENT'}")
    if "sealing" in out:
        sealed, joins = out["sealing"], out["sealing"]["with_joins"]
        stored = sealed["stored"]
        print(
            f"sealing      replay turns/s plain {sealed['plain_per_s']}, sealed "
            f"{sealed['sealed_per_s']}: sealed/plain {sealed['sealed_vs_plain']} "
            f"(joins included: {joins['sealed_vs_plain']}); stored turns/s plain "
            f"{stored['plain_per_s']}, sealed {stored['sealed_per_s']}: "
            f"{stored['sealed_vs_plain']}; load average {stored['load_average']}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--remembers", type=int, default=50)
    sealing.add_arguments(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args()
    result = asyncio.run(main(args))
    if args.json:
        print(json.dumps(result))
    else:
        report(result)
